"""``ember.autocast``: regions where ops run in an op-specific dtype, as ``torch.autocast``.

The context manager only sets thread-local state (``dispatcher/autocast.py``); the casting is the
Autocast dispatch layer's, following the per-op policy in ``dispatcher/optable/autocast_policy.py``.
"""

from __future__ import annotations

import collections.abc
import functools
import warnings

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from ..dispatcher import autocast as state
from ..dispatcher.devices import REGISTRY
from ..dispatcher.optable.autocast_policy import SUPPORTED_DTYPES
from ..dispatcher.plugins import BACKENDS_GROUP

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]

BUILTIN_DEVICE_TYPES = ("cpu", "cuda", "xpu")


def is_autocast_available(device_type: str) -> bool:
    """Whether ``device_type`` has autocast: cpu, cuda, xpu and plugin device types."""
    if device_type in BUILTIN_DEVICE_TYPES:
        return True
    records = REGISTRY.host.records(BACKENDS_GROUP)
    return any(record.ok and device_type in record.device_types for record in records)


def cuda_available() -> bool:
    from .._accelerator import module

    return module("cuda").is_available()


class autocast:  # noqa: N801 - PyTorch's name
    """A region (context manager or decorator) where ops run in mixed precision.

    Ops with an autocast policy cast their floating inputs on ``device_type``: matrix products
    and convolutions to ``dtype``, losses, exp/log and reductions that need range to float32,
    cat/stack/addcmul to the widest input. Other ops run in their inputs' dtypes. Wrap the
    forward pass and the loss; backward runs in the dtypes forward chose.

    Args:
        device_type: ``"cpu"``, ``"cuda"``, ``"xpu"`` or a plugin device type.
        dtype: the lower precision (default ``ember.get_autocast_dtype(device_type)``:
            bfloat16 on cpu, float16 on cuda and xpu).
        enabled: False makes a region without autocast (nestable inside one).
        cache_enabled: cache the casts of parameters inside the region (default: on).

    Example:
        >>> with ember.autocast("cpu", dtype=ember.bfloat16):
        ...     loss = loss_fn(model(x), y)
        >>> loss.backward()
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        if not is_autocast_available(device_type):
            raise RuntimeError(
                f"User specified an unsupported autocast device_type '{device_type}'"
            )
        self.fast_dtype = state.get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = (
            state.is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        )
        if enabled:
            enabled = self._check_enabled()
        self._enabled = enabled

    def _check_enabled(self) -> bool:
        if self.device == "cuda" and not cuda_available():
            warnings.warn("CUDA is not available. Disabling autocast.", stacklevel=3)
            return False
        if self.fast_dtype not in SUPPORTED_DTYPES:
            name = self.device.upper()
            warnings.warn(
                f"In {name} autocast, but the target dtype is not supported. Disabling "
                f"autocast.\n{name} Autocast only supports dtypes of "
                + ", ".join(map(str, SUPPORTED_DTYPES))
                + " currently.",
                stacklevel=3,
            )
            return False
        return True

    def __enter__(self):
        self.prev_cache_enabled = state.is_autocast_cache_enabled()
        self.prev = state.is_autocast_enabled(self.device)
        self.prev_fastdtype = state.get_autocast_dtype(self.device)
        state.set_autocast_enabled(self.device, bool(self._enabled))
        state.set_autocast_dtype(self.device, self.fast_dtype)
        state.autocast_increment_nesting()
        state.set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if state.autocast_decrement_nesting() == 0:
            state.clear_autocast_cache()
        state.set_autocast_enabled(self.device, self.prev)
        state.set_autocast_dtype(self.device, self.prev_fastdtype)
        state.set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                "Did you mean to use autocast as a context manager? For example:\n"
                "    with ember.autocast(device_type=...):\n"
                "        output = model(input)"
            )

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_autocast


def _cast(value, device_type: str, dtype):
    """Floating tensors on ``device_type`` (not float64) in ``value``, cast to ``dtype``;
    containers are walked, strings and arrays pass."""
    if isinstance(value, Tensor):
        eligible = (
            value.dtype.is_floating_point
            and value.device.type == device_type
            and value.dtype is not dt.float64
        )
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {
            _cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()
        }
    if isinstance(value, collections.abc.Iterable):
        iterable = (_cast(v, device_type, dtype) for v in value)
        return type(value)(iterable) if isinstance(value, (list, tuple)) else iterable
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorator for the ``forward`` of an ``ember.autograd.Function``.

    With ``cast_inputs``, inside an autocast region the floating tensor inputs are cast to it and
    ``forward`` runs with autocast off; without, ``forward`` runs in the current autocast state.
    Either way ``custom_bwd`` makes ``backward`` run in the state forward ran in.
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = state.get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = state.is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if not state.is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(
                *_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs)
            )

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for the ``backward`` of an ``ember.autograd.Function`` whose ``forward`` has
    ``custom_fwd``: backward runs with the autocast state forward ran with."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
