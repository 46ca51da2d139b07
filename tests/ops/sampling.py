"""The vocabulary of sample inputs: tensor arguments with a memory layout, and their values.

A sample describes each tensor argument as an ``Arr``: the values (a numpy array, which is also
what the numpy reference gets) and a *layout*, the memory arrangement the ember tensor is built
with. Any values can be built in any layout, fresh for every call, on any device:

- ``contiguous``: row-major;
- ``transposed``: the values stored transposed, viewed back through a permutation;
- ``sliced``: every other element of a wider last dim (a strided view with an offset);
- ``negative``: stored reversed along dim 0, viewed with a negative stride;
- ``expanded``: stride-0 dims (the values must be a ``np.broadcast_to`` of a smaller array).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import ember
from ember.dispatcher.kinds.view import negative_stride_view
from ember.dispatcher.optable import OPS

LARGE = 40_000  # elements: above the CPU backend's OpenMP threshold (EM_PARALLEL_THRESHOLD)
INT_RANGE = (-9, 9)
FLOAT_RANGE = (-4.0, 4.0)
LAYOUTS = ("contiguous", "transposed", "sliced", "negative", "expanded")


@dataclass(frozen=True)
class Arr:
    """A tensor argument: its values and the layout to build it with."""

    values: np.ndarray
    layout: str = "contiguous"

    def __post_init__(self):
        if self.layout not in LAYOUTS:
            raise ValueError(f"unknown layout {self.layout!r}")
        if not layout_fits(self.values.shape, self.layout):
            raise ValueError(f"layout {self.layout} does not fit shape {self.values.shape}")

    def __repr__(self) -> str:
        return f"{self.values.dtype}{list(self.values.shape)}:{self.layout}"


@dataclass(frozen=True)
class Seed:
    """A ``Generator`` argument, built fresh (and so identical) at every materialisation."""

    value: int


@dataclass
class Sample:
    """Arguments for one call, in schema order, and what the test should expect.

    ``dtype``: the expected dtype of the (first) result when the op's promotion rule applied to
    the parametrised dtype would not give it (factories with a dtype argument, casts...).
    """

    args: tuple
    desc: str = ""
    dtype: object = None

    def __repr__(self) -> str:
        return self.desc or ", ".join(_describe(a) for a in self.args)

    def complete(self, op) -> Sample:
        """This sample with the schema defaults of ``op`` appended."""
        return Sample(complete(op, self.args), self.desc, self.dtype)

    def ember_args(self, device: str) -> tuple:
        return tuple(to_ember(a, device) for a in self.args)

    def numpy_args(self, upcast: bool = True, ints_too: bool = False) -> tuple:
        return tuple(to_numpy(a, upcast, ints_too) for a in self.args)


def _describe(arg) -> str:
    if isinstance(arg, (list, tuple)) and any(isinstance(a, Arr) for a in arg):
        return "[" + ", ".join(_describe(a) for a in arg) + "]"
    return repr(arg)


def layout_fits(shape: tuple, layout: str) -> bool:
    if layout in ("contiguous", "expanded"):
        return True
    if layout == "transposed":
        return len(shape) >= 2
    return len(shape) >= 1


# ---- values ---------------------------------------------------------------------------------
def int_bounds(dtype, low=None, high=None) -> tuple[int, int]:
    """Inclusive integer bounds: the requested range (default INT_RANGE) within the dtype."""
    info = np.iinfo(dtype.np)
    lo = INT_RANGE[0] if low is None else math.ceil(low)
    hi = INT_RANGE[1] if high is None else math.floor(high)
    lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
    if lo > hi:
        raise ValueError(f"no {dtype.name} values in [{low}, {high}]")
    return lo, hi


def values(dtype, shape, rng, low=None, high=None, nonzero=False, zeros=0.0) -> np.ndarray:
    """Random values of ``dtype``: floats uniform in [low, high) (default FLOAT_RANGE), integers
    uniform in the inclusive integer range, bools fair. ``nonzero`` keeps zero out; ``zeros`` is
    a fraction of entries set to exactly zero."""
    shape = tuple(shape)
    if dtype is ember.bool:
        out = np.asarray(rng.random(shape) < 0.5)
        if nonzero:
            out[...] = True
    elif dtype.is_floating_point:
        lo, hi = FLOAT_RANGE if low is None else (low, high)
        raw = np.asarray(rng.uniform(lo, hi, shape))
        if nonzero:
            small = np.abs(raw) < 0.25
            raw[small] = np.where(raw[small] < 0, -0.25, 0.25) if lo < 0 < hi else (lo + hi) / 2
        out = raw.astype(dtype.np)
    else:
        lo, hi = int_bounds(dtype, low, high)
        out = np.asarray(rng.integers(lo, hi + 1, shape)).astype(dtype.np)
        if nonzero:
            out[out == 0] = 1 if hi >= 1 else -1
    if zeros:
        out[rng.random(shape) < zeros] = 0
    return out


def scalar(dtype, rng, low=None, high=None, nonzero=False, zeros=0.0):
    """A Python number of ``dtype``'s category (bool, int or float)."""
    value = values(dtype, (), rng, low, high, nonzero, zeros).item()
    return round(value, 3) if isinstance(value, float) and value != round(value, 3) else value


def integral_floats(dtype, shape, rng, low=-3, high=3) -> np.ndarray:
    """Small whole numbers in ``dtype``: sums and products of them are exact in any order."""
    return rng.integers(low, high + 1, tuple(shape)).astype(dtype.np)


def arr(dtype, shape, rng, layout="contiguous", **kw) -> Arr:
    """An ``Arr`` of random values; ``expanded`` draws one row and broadcasts it along dim 0."""
    shape = tuple(shape)
    if layout == "expanded" and shape:
        row = values(dtype, (1,) + shape[1:], rng, **kw)
        return Arr(np.broadcast_to(row, shape), layout)
    return Arr(values(dtype, shape, rng, **kw), layout)


# ---- materialisation ------------------------------------------------------------------------
def _on(buffer: np.ndarray, device: str):
    t = ember.from_numpy(np.array(buffer, order="C"))  # ascontiguousarray makes 0-d arrays 1-d
    return t if device == "cpu" else t.to(device)


def build(a: Arr, device: str):
    """A fresh ember tensor holding ``a.values`` in ``a.layout`` on ``device``."""
    v = a.values
    if a.layout == "contiguous":
        return _on(v, device)
    if a.layout == "transposed":
        order = tuple(range(v.ndim - 1, -1, -1))
        return OPS["permute"](_on(v.transpose(order), device), order)
    if a.layout == "sliced":
        buffer = np.zeros(v.shape[:-1] + (2 * v.shape[-1] + 1,), v.dtype)
        buffer[..., 1::2] = v
        return OPS["slice"](_on(buffer, device), -1, 1, None, 2)
    if a.layout == "negative":
        stored = np.array(v[::-1], order="C")
        if device == "cpu":
            return ember.from_numpy(stored[::-1])
        t = _on(stored, device)
        if not v.shape[0]:
            return t
        return negative_stride_view(t, (0,))  # as_strided refuses negative strides (torch)
    # expanded: keep one element along every stride-0 dim, then broadcast back.
    small = v[tuple(slice(0, 1) if s == 0 else slice(None) for s in v.strides)]
    return OPS["expand"](_on(small, device), v.shape)


def to_ember(arg, device: str):
    if isinstance(arg, Arr):
        return build(arg, device)
    if isinstance(arg, Seed):
        return ember.Generator(device).manual_seed(arg.value)
    if isinstance(arg, list) and any(isinstance(a, Arr) for a in arg):
        return [to_ember(a, device) for a in arg]
    return arg


def to_numpy(arg, upcast: bool = True, ints_too: bool = False):
    """The reference's view of an argument: ``upcast`` computes floats in float64, and with
    ``ints_too`` integers and bools as well (ops that compute them in floating point)."""
    if isinstance(arg, Arr):
        v = arg.values
        kinds = "fVbiu" if ints_too else "fV"
        return v.astype(np.float64) if upcast and v.dtype.kind in kinds else np.array(v)
    if isinstance(arg, Seed):
        return None
    if isinstance(arg, list) and any(isinstance(a, Arr) for a in arg):
        return [to_numpy(a, upcast, ints_too) for a in arg]
    return arg


def _default(arg):
    return tuple(arg.default) if isinstance(arg.default, list) else arg.default


def call_args(op, **named) -> tuple:
    """Every positional argument in ``op``'s schema order, from keyword values and defaults.

    Names the op does not have are dropped, so one family generator can describe arguments for
    ops that take a subset (``count_nonzero`` has no ``keepdim``).
    """
    out = []
    for arg in op.schema.args:
        if arg.name in named:
            out.append(named[arg.name])
        elif arg.has_default:
            out.append(_default(arg))
        else:
            raise KeyError(f"{op.name}: no sample value for required argument '{arg.name}'")
    return tuple(out)


def complete(op, args: tuple) -> tuple:
    """``args`` followed by the schema defaults of the arguments not given: ops are called with
    every argument, as the generated ``ember.*`` functions call them."""
    rest = op.schema.args[len(args) :]
    missing = [a.name for a in rest if not a.has_default]
    if missing:
        raise TypeError(f"{op.name}: sample lacks required arguments {missing}")
    return tuple(args) + tuple(_default(a) for a in rest)
