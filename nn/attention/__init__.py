"""``ember.nn.attention``: which kernel ``scaled_dot_product_attention`` may use, as
``torch.nn.attention`` (``with sdpa_kernel(SDPBackend.MATH): ...``).

The choice lives in ``ember.backends.cuda.sdp`` (PyTorch keeps it in ``torch.backends.cuda``
for every device); nn/functional/attention.py reads it on the CPU, where PyTorch has a flash
and a math path (EFFICIENT_ATTENTION and CUDNN_ATTENTION are CUDA kernels)."""

from __future__ import annotations

import contextlib
import enum

from ember import backends

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.IntEnum):
    """The attention kernels, with PyTorch's values."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


# each backend's switch in ember.backends.cuda.sdp (OVERRIDEABLE: a third-party kernel's slot,
# which no ember backend fills)
SWITCHES = {
    SDPBackend.MATH: "math",
    SDPBackend.FLASH_ATTENTION: "flash",
    SDPBackend.EFFICIENT_ATTENTION: "mem_efficient",
    SDPBackend.CUDNN_ATTENTION: "cudnn",
}


def enabled() -> list:
    """The backends switched on now, in SDPBackend's order."""
    return [b for b, name in SWITCHES.items() if getattr(backends.cuda.sdp, name)]


def _switch_to(chosen) -> None:
    for backend, name in SWITCHES.items():
        setattr(backends.cuda.sdp, name, backend in chosen)


@contextlib.contextmanager
def sdpa_kernel(backends: list | SDPBackend, set_priority: bool = False):
    """Only ``backends`` may run scaled_dot_product_attention inside the block; the previous
    switches come back on exit. ``set_priority`` (an order among the allowed kernels) changes
    nothing on the CPU, whose one fused kernel is always tried before the math path."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(
            "Backend must be an instance of SDPBackend or a list of SDPBackend instances, "
            f"got {type(backends).__name__}"
        )
    chosen = [backends] if isinstance(backends, SDPBackend) else list(dict.fromkeys(backends))
    previous = enabled()
    try:
        _switch_to(chosen)
        yield {}
    finally:
        _switch_to(previous)
