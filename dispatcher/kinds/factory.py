"""Runners for factories and random fills: allocate, then a fill/arange/Philox kernel."""

from __future__ import annotations

import math

from ember import _dtype as dt
from ember._random import generator_for
from ember._tensor import Tensor, empty

from ..memory import normalize_device
from ..overlap import check_internal
from ..promotion import scalar_dtype
from ._common import broadcast_shapes, fill
from ._limits import check_shape


def _size(op, size, dtype) -> tuple:
    """``size`` as a tuple of ints that a new ``dtype`` storage can have (see check_shape)."""
    if isinstance(size, int):
        size = (size,)
    try:
        size = tuple(int(s.__index__()) for s in size)
    except (AttributeError, TypeError):
        raise TypeError(f"{op.name}(): size must be a tuple of ints, got {size!r}") from None
    check_shape(op.name, size, dtype.itemsize)
    return size


def empty_(op, size, dtype=None, device=None):
    dtype = dtype or dt.DEFAULTS.float
    return empty(_size(op, size, dtype), dtype, normalize_device(device))


def full(op, size, fill_value, dtype=None, device=None):
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    dtype = dtype or scalar_dtype(fill_value)
    from ._common import OPS  # fill_ refuses values the dtype cannot hold

    out = empty(_size(op, size, dtype), dtype, normalize_device(device))
    return OPS["fill_"](out, fill_value)


def _scalar(value):
    return value.item() if isinstance(value, Tensor) else value


def arange(op, start, end=None, step=1, dtype=None, device=None):
    start, end, step = _scalar(start), _scalar(end), _scalar(step)
    if end is None:
        start, end = 0, start
    if dtype is None:
        floaty = any(isinstance(v, float) for v in (start, end, step))
        dtype = dt.DEFAULTS.float if floaty else dt.int64
    count, start, step = _arange_count(start, end, step, dtype)
    check_shape("arange", (count,), dtype.itemsize)
    dev = normalize_device(device)
    out = empty((count,), dtype, dev)
    if count:
        op.kernel(dev.type, dtype)(out, start, step)
    return out


def _arange_count(start, end, step, dtype) -> tuple:
    """``(count, start, step)`` as PyTorch's ``compute_arange_size``: an integer dtype takes the
    bounds and step truncated to integers (its accumulation type), and int64 counts in integers
    (``(end - start + step - sign) / step``, truncated), the other dtypes in double from the
    values as given (``ceil((end - start) / step)``)."""
    if step == 0:
        raise RuntimeError("arange(): step must be nonzero")
    if (end - start) / step < 0 and end != start:
        raise RuntimeError(
            f"arange(): upper bound ({end}) and lower bound ({start}) inconsistent with step sign "
            f"({step})"
        )
    ints = dtype.category == dt.INTEGRAL
    xstart, xend, xstep = (int(v) for v in (start, end, step)) if ints else (start, end, step)
    if dtype is dt.int64 and xstep == 0:  # a fractional step truncated (PyTorch checks it so)
        raise ValueError("step must be nonzero")
    if dtype is dt.int64:
        span = xend - xstart + xstep - (1 if xstep > 0 else -1)
        count = abs(span) // abs(xstep) * (1 if (span >= 0) == (xstep > 0) else -1)
    else:
        count = math.ceil((end - start) / step)
    return max(0, count), xstart, xstep


def linspace(op, start, end, steps, dtype=None, device=None):
    start, end = _scalar(start), _scalar(end)
    if steps < 0:
        raise RuntimeError(f"linspace(): number of steps must be non-negative, got {steps}")
    dtype = dtype or dt.DEFAULTS.float
    if dtype.category == dt.INTEGRAL and not isinstance(start, complex):
        start, end = int(start), int(end)  # PyTorch's scalar_start/end: the dtype's values
    check_shape("linspace", (int(steps),), dtype.itemsize)
    dev = normalize_device(device)
    out = empty((int(steps),), dtype, dev)
    if steps == 1:  # PyTorch gives [start]; kernels may count the last element from the end
        fill(out, start)
    elif steps:
        op.kernel(dev.type, dtype)(out, start, end)
    return out


# Philox blocks (four 32-bit words) per element group: see docs/random.md.
def _per_block(dtype, wide: bool = False) -> int:
    return 2 if (dtype is dt.float64 or wide) else 4


def _random_fill(op, x, a, b, generator, wide=False):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op.name}(): self must be a Tensor")
    check_internal(op.name, x)
    n = math.prod(x._shape)
    gen = generator or generator_for(x._storage.device)
    if n:
        per = _per_block(x._dtype, wide)
        seed, offset = gen.take(-(-n // per))
        op.kernel(x._storage.device.type, x._dtype)(x, seed, offset, a, b)
    x._storage.version += 1
    return x


def uniform_(op, x, low=0.0, high=1.0, generator=None):
    if x._dtype.is_complex:  # PyTorch's complex uniform_: each part from [low, high)
        from .complex import view_as_real

        uniform_(op, view_as_real(None, x), low, high, generator)
        return x
    if x._dtype.category != dt.FLOATING:
        raise RuntimeError(f'"uniform_" not implemented for {x._dtype.name}')
    if low > high:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={low} > to={high}"
        )
    return _random_fill(op, x, float(low), float(high), generator)


def normal_(op, x, mean=0.0, std=1.0, generator=None):
    if x._dtype.is_complex:
        # PyTorch's complex normal: each part gets half the variance, so E|z|^2 is std^2.
        from .complex import view_as_real

        normal_(op, view_as_real(None, x), mean, std / math.sqrt(2), generator)
        return x
    if x._dtype.category != dt.FLOATING:
        raise RuntimeError(f'"normal_" not implemented for {x._dtype.name}')
    if std < 0:
        raise RuntimeError(f"normal_(): expected std >= 0.0, but found std {std}")
    return _random_fill(op, x, float(mean), float(std), generator)


def _default_high(dtype) -> int:
    """random_() with no bounds: every integer the dtype represents exactly, from zero."""
    if dtype.category == dt.FLOATING:
        return 1 + (1 << {dt.float16: 11, dt.bfloat16: 8, dt.float32: 24, dt.float64: 53}[dtype])
    if dtype is dt.bool_:
        return 2
    import numpy as np

    return int(np.iinfo(dtype.np).max) + 1


def random_(op, x, low=0, high=None, generator=None):
    """Integers uniform in [low, high); ``x.random_(to)`` means [0, to)."""
    if high is None:
        low, high = (0, low) if low else (0, _default_high(x._dtype))
    if high <= low:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    if x._dtype.category == dt.INTEGRAL:
        import numpy as np

        info = np.iinfo(x._dtype.np)
        if low < info.min or high - 1 > info.max:
            raise RuntimeError(
                f"random_ expects 'from' and 'to - 1' to be in the range of {x._dtype.name} "
                f"[{info.min}, {info.max}], got from={low}, to={high}"
            )
    wide = (high - low) > (1 << 32)
    return _random_fill(op, x, int(low), int(high), generator, wide)


# Samplers with a variable number of draws (docs/random.md): one Philox block number per call;
# element i then owns the counters (block, i, 1), (block, i, 2), ...
_MAX_SAMPLER_ELEMENTS = 1 << 32


def _sample(op, params, generator):
    first = params[0]
    for p in params:
        if not isinstance(p, Tensor):
            raise TypeError(f"{op.name}(): expected Tensor arguments, got {type(p).__name__}")
        if p._dtype.category != dt.FLOATING:
            raise RuntimeError(f'"{op.name}" not implemented for {p._dtype.name}')
        if p._dtype is not first._dtype:  # binomial's count and prob: PyTorch's TensorIterator
            raise RuntimeError(
                f"Found dtype {dt.SCALAR_NAMES[p._dtype]} but expected "
                f"{dt.SCALAR_NAMES[first._dtype]}"
            )
    dtype, device = first._dtype, first._storage.device
    shape = broadcast_shapes(op.name, *(p._shape for p in params))
    n = math.prod(shape)
    if n >= _MAX_SAMPLER_ELEMENTS:
        raise RuntimeError(f"{op.name}(): at most 2^32 - 1 elements per call, got {n} {shape}")
    params = [p.expand(shape).contiguous() for p in params]
    out = empty(tuple(shape), dtype, device)
    if n:
        seed, block = (generator or generator_for(device)).take(1)
        op.kernel(device.type, dtype)(out, seed, block, *params)
    return out


def _standard_gamma(op, self, generator=None):
    return _sample(op, [self], generator)


def poisson(op, self, generator=None):
    readable = isinstance(self, Tensor) and self._storage.device.type != "meta"
    if readable and self.numel() and not bool((self >= 0).all()):  # NaN too
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return _sample(op, [self], generator)


def binomial(op, count, prob, generator=None):
    return _sample(op, [count, prob], generator)
