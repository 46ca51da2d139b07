"""Process-wide runtime switches with PyTorch's top-level names, and the build flags PyTorch
exposes as module attributes (``torch.has_lapack``...).

Each switch keeps its state where ember already has it: the deterministic debug mode is
``use_deterministic_algorithms``'s state (ember/_determinism.py), anomaly mode is autograd's
thread-local mode (autograd/anomaly.py).
"""

from __future__ import annotations

import builtins

from . import _determinism, backends
from .autograd.anomaly import is_anomaly_check_nan_enabled, set_anomaly_enabled

_warn_always = {"enabled": False}


def set_warn_always(b: bool, /) -> None:
    """Ask warnings PyTorch gives once per process to be given every time (recorded for
    programs that read it back with ``is_warn_always_enabled``)."""
    if not isinstance(b, bool):
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _warn_always["enabled"] = b


def is_warn_always_enabled() -> bool:
    return _warn_always["enabled"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode: builtins.int | str) -> None:
    """``use_deterministic_algorithms`` by level: "default" or 0 (off), "warn" or 1 (on, warn
    only), "error" or 2 (on).

    Raises:
        TypeError: ``debug_mode`` is neither str nor int.
        RuntimeError: an unknown level.
    """
    if not isinstance(debug_mode, (builtins.int, str)):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(
                "invalid value of debug_mode, expected one of `default`, "
                f"`warn`, `error`, but got {debug_mode}"
            )
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode == 0:
        _determinism.use_deterministic_algorithms(False)
    elif debug_mode == 1:
        _determinism.use_deterministic_algorithms(True, warn_only=True)
    elif debug_mode == 2:
        _determinism.use_deterministic_algorithms(True)
    else:
        raise RuntimeError(
            f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}"
        )


def get_deterministic_debug_mode() -> builtins.int:
    """0, 1 or 2, as ``set_deterministic_debug_mode`` takes them."""
    if not _determinism.are_deterministic_algorithms_enabled():
        return 0
    return 1 if _determinism.is_deterministic_algorithms_warn_only_enabled() else 2


def set_flush_denormal(mode: bool) -> bool:
    """Whether denormal floats can be flushed to zero; PyTorch sets the x86 FTZ/DAZ bits of
    the calling thread and answers True. ember's CPU kernels are C called through cffi, and
    neither they nor Python can set those control bits, so ember answers False, as PyTorch
    does on a CPU without the feature, and changes nothing."""
    if not isinstance(mode, bool):
        raise RuntimeError(f"flush_denormal expects a bool, but got {type(mode).__name__}")
    return False


def init_num_threads() -> None:
    """PyTorch initialises the calling thread's OpenMP/MKL thread count. ember's CPU plugin
    applies ``set_num_threads`` to its OpenMP pool itself, so there is nothing to do."""


# Build flags PyTorch has as plain module attributes. ember's CPU plugin always brings LAPACK
# (scipy-openblas) and ember.fft; MKL and OpenMP as ember.backends reports them.
BUILD_FLAGS = {
    "has_lapack": True,
    "has_spectral": True,
    "has_mkl": backends.mkl.is_available(),
    "has_openmp": backends.openmp.is_available(),
}

FUNCTIONS = {
    "set_warn_always": set_warn_always,
    "is_warn_always_enabled": is_warn_always_enabled,
    "set_deterministic_debug_mode": set_deterministic_debug_mode,
    "get_deterministic_debug_mode": get_deterministic_debug_mode,
    "set_flush_denormal": set_flush_denormal,
    "init_num_threads": init_num_threads,
    "set_anomaly_enabled": set_anomaly_enabled,
    "is_anomaly_check_nan_enabled": is_anomaly_check_nan_enabled,
}
