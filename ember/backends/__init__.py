"""``ember.backends``: per-device-type switches, as ``torch.backends.cuda.matmul.allow_tf32``.

Each device type has one flat dict of flags (``FLAGS["cuda"]["matmul.allow_tf32"]``); the
attribute paths below read and write it, and the registry hands the same dict to the backend's
runtime as ``runtime.flags`` when it loads, so a change applies to the next kernel call. A new
switch is one entry in a ``Switches`` table.
"""

from __future__ import annotations

FLAGS: dict[str, dict] = {}


def flags(device_type: str) -> dict:
    """The live flag dict of a device type (what its runtime reads)."""
    return FLAGS.setdefault(device_type, {})


class Switches:
    """Attributes backed by ``flags(device_type)[prefix + name]``, with defaults."""

    def __init__(self, device_type: str, prefix: str, defaults: dict):
        object.__setattr__(self, "_where", (device_type, prefix, dict(defaults)))

    def __getattr__(self, name: str):
        device_type, prefix, defaults = self._where
        if name not in defaults:
            raise AttributeError(f"ember.backends has no switch {prefix}{name} ({device_type})")
        return flags(device_type).get(prefix + name, defaults[name])

    def __setattr__(self, name: str, value) -> None:
        device_type, prefix, defaults = self._where
        if name not in defaults:
            raise AttributeError(f"ember.backends has no switch {prefix}{name} ({device_type})")
        flags(device_type)[prefix + name] = type(defaults[name])(value)

    def __repr__(self) -> str:
        device_type, prefix, defaults = self._where
        values = ", ".join(f"{n}={getattr(self, n)!r}" for n in defaults)
        return f"<ember.backends switches {device_type}:{prefix} {values}>"


class _Cuda:
    matmul = Switches("cuda", "matmul.", {"allow_tf32": False})


cuda = _Cuda()
# Accepted so that PyTorch scripts setting them run; no ember backend uses cuDNN.
cudnn = Switches("cuda", "cudnn.", {"enabled": True, "benchmark": False,
                                     "deterministic": False, "allow_tf32": True})  # fmt: skip
