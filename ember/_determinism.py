"""Process-wide numerics switches with PyTorch's names: deterministic algorithms and the float32
matmul precision.

ember's CPU and xpu kernels are deterministic already, so ``use_deterministic_algorithms`` only
records the mode for programs that read it back. The matmul precision is the same switch as
``ember.backends.cuda.matmul.allow_tf32`` (as in PyTorch): "high" and "medium" let cuBLAS use
TF32 for float32 GEMMs, "highest" does not.
"""

from __future__ import annotations

import warnings

from . import backends

_deterministic = {"mode": False, "warn_only": False}
_PRECISIONS = ("highest", "high", "medium")
_precision = {"value": "highest"}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record whether programs ask for deterministic algorithms, as PyTorch's switch.

    Raises:
        TypeError: ``mode`` or ``warn_only`` is not a bool.
    """
    for name, value in (("mode", mode), ("warn_only", warn_only)):
        if not isinstance(value, bool):
            raise TypeError(
                f"_set_deterministic_algorithms(): argument '{name}' must be bool, "
                f"not {type(value).__name__}"
            )
    _deterministic.update(mode=mode, warn_only=warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """Whether ``use_deterministic_algorithms(True)`` is in force."""
    return _deterministic["mode"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether deterministic mode was set with ``warn_only=True``."""
    return _deterministic["warn_only"]


def set_float32_matmul_precision(precision: str) -> None:
    """Set the float32 matmul precision: "highest" (default), "high" or "medium".

    Another value warns and changes nothing, as PyTorch.
    """
    if precision not in _PRECISIONS:
        warnings.warn(
            f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
            "setFloat32MatmulPrecision call has no effect.",
            UserWarning,
            stacklevel=2,
        )
        return
    _precision["value"] = precision
    backends.cuda.matmul.allow_tf32 = precision != "highest"


def get_float32_matmul_precision() -> str:
    """The current float32 matmul precision (follows ``backends.cuda.matmul.allow_tf32``)."""
    tf32 = backends.cuda.matmul.allow_tf32
    if tf32 and _precision["value"] == "highest":
        return "high"
    return _precision["value"] if tf32 else "highest"


__all__ = [
    "are_deterministic_algorithms_enabled",
    "get_float32_matmul_precision",
    "is_deterministic_algorithms_warn_only_enabled",
    "set_float32_matmul_precision",
    "use_deterministic_algorithms",
]
