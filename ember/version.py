"""``ember.version``: ``__version__``, and the GPU runtime serving ``cuda``, as PyTorch's
``torch.version``: ``cuda`` (e.g. "12.4") when the CUDA plugin serves it, ``hip`` (e.g.
"6.2.41133") when the ROCm plugin does, None otherwise.

Which plugin serves ``cuda`` is decided at run time (plugins.toml priorities, installed drivers),
so ``cuda`` and ``hip`` are read from that backend's runtime (its ``versions`` dict) on first
access, which initialises the ``cuda`` device like ``ember.cuda.is_available()``.
"""

from __future__ import annotations

__version__ = "0.1.0"
RUNTIMES = ("cuda", "hip")


def __getattr__(name: str):
    if name not in RUNTIMES:
        raise AttributeError(f"module 'ember.version' has no attribute {name!r}")
    from .dispatcher.devices import REGISTRY, DeviceUnavailableError

    try:
        runtime = REGISTRY.backend("cuda").runtime
    except (DeviceUnavailableError, RuntimeError):
        return None
    return getattr(runtime, "versions", {}).get(name)
