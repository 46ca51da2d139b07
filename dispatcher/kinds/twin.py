"""Ops on PyTorch's limited-support dtypes, computed in a *twin* dtype the kernels know.

PyTorch runs a few ops on float8 and uint16/32/64 (comparisons, where, selections, bitwise ops
on the unsigned ones...). A float8 op there upcasts to float32, computes, and rounds the result
back once, so its twin is float32 (values). An unsigned dtype's twin is the signed integer of its
width holding the same bits: equality, bitwise ops, wrapping products and data movement give the
same bits in either. Ops that order values (sort) see the bits with the sign bit flipped, which
orders signed integers as the unsigned ones. Sums and products (int64 results in PyTorch) take
uint16/uint32 values widened to int64 and uint64's bits as int64 (both wrap alike).

Some calls run where PyTorch's kernels would refuse the dtype, because PyTorch never reaches a
kernel of it: a reduction given a ``dtype=`` casts its input to that dtype first
(``make_reduction``; the *casts* rows); max/min/kthvalue/aminmax along a dim, cumsum and cumprod
of a 0-dim tensor copy its one value (the *scalar* mode); index_add with an empty index returns
self's values, and a reduction or scan of an empty input computes nothing (the *empty* modes).
Which ops and dtypes run this way is ``optable/limited.py``'s table; every other op refuses them
with PyTorch's error.
"""

from __future__ import annotations

from ember import _dtype as dt
from ember._tensor import Tensor, make

from ..opdef import Promotion
from ..promotion import promote_types
from ._common import OPS, cast

_SIGNED = {2: dt.int16, 4: dt.int32, 8: dt.int64}
# the modes: the same bits, the bits in signed order, the values widened to int64, and the same
# bits for some calls only (the others are refused, as PyTorch's kernel refuses them): a 0-dim
# input along a dim, an empty index, an empty input
BITS, ORDERED, WIDENED = "bits", "ordered", "widened"
SCALAR, EMPTY_INDEX, EMPTY_INPUT = "scalar", "empty index", "empty input"
ONE_ELEMENT = "one element"  # a reduction over dims of size 1 only (PyTorch's vector norm)
_CONDITIONAL = (SCALAR, EMPTY_INDEX, EMPTY_INPUT, ONE_ELEMENT)
# ops whose results are never in the input's dtype (flags, counts, positions)
_NO_VALUES = (Promotion.ALWAYS_BOOL, Promotion.LONG)


def _reinterpret(t: Tensor, dtype) -> Tensor:
    return make(t._storage, t._shape, t._stride, t._offset, dtype, t._contig)


def _flip_sign(t: Tensor) -> Tensor:
    """The bits with the sign bit flipped (signed order <-> unsigned order)."""
    return OPS["bitwise_xor"](t, -(1 << (8 * t._dtype.itemsize - 1)))


def to_twin(t: Tensor, mode: str) -> Tensor:
    if t._dtype in dt.FLOAT8:
        return cast(t, dt.float32)
    if mode is WIDENED and t._dtype.itemsize < 8:
        return cast(t, dt.int64)
    bits = _reinterpret(t, _SIGNED[t._dtype.itemsize])
    return _flip_sign(bits) if mode is ORDERED else bits


def from_twin(t: Tensor, dtype, mode: str) -> Tensor:
    if dtype in dt.FLOAT8:
        return cast(t, dtype)
    return _reinterpret(_flip_sign(t) if mode is ORDERED else t, dtype)


def _limited_dtype(op, args):
    """The limited dtype among the tensor arguments (PyTorch's promotion errors for a mix)."""
    found = None
    floats = []
    for i in op.tensor_positions:
        value = args[i] if i < len(args) else None
        for t in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(t, Tensor):
                if t._dtype in dt.LIMITED_SET:
                    found = t._dtype
                if t._dtype.category == dt.FLOATING:
                    floats.append(t._dtype)
    for other in floats:
        promote_types(floats[0], other)  # float8 with another float: PyTorch's RuntimeError
    return found


def _convert(value, mode: str):
    if isinstance(value, Tensor) and value._dtype in dt.LIMITED_SET:
        return to_twin(value, mode)
    if isinstance(value, (list, tuple)):
        return type(value)(_convert(v, mode) for v in value)
    return value


def _limited_shapes(op, args):
    """The shapes of the limited-dtype tensor arguments."""
    for i in op.tensor_positions:
        value = args[i] if i < len(args) else None
        if isinstance(value, Tensor) and value._dtype in dt.LIMITED_SET:
            yield value._shape


def _given(op, args, name: str):
    """The call's argument ``name``; None when the op has none or it was not given."""
    names = [arg.name for arg in op.schema.args]
    position = names.index(name) if name in names else len(args)
    return args[position] if position < len(args) else None


def _runs(op, args, mode: str) -> bool:
    """Whether PyTorch runs this call in ``mode``: always, but for the conditional modes a 0-dim
    input along a dim (aminmax's dim is optional), an empty ``index`` (index_add adds nothing),
    an empty input (a reduction of nothing), a reduction over size-1 dims only."""
    if mode is SCALAR:
        return not any(_limited_shapes(op, args)) and _given(op, args, "dim") is not None
    if mode is EMPTY_INDEX:
        index = _given(op, args, "index")
        return isinstance(index, Tensor) and 0 in index._shape
    if mode is EMPTY_INPUT:
        return any(0 in shape for shape in _limited_shapes(op, args))
    if mode is ONE_ELEMENT:
        return all(
            _reduces_ones(shape, _given(op, args, "dim")) for shape in _limited_shapes(op, args)
        )
    return True


def _reduces_ones(shape: tuple, dim) -> bool:
    """Whether every dim a reduction over ``dim`` (None: all) reduces has size 1."""
    if dim is None:
        return all(n == 1 for n in shape)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return bool(shape) and all(shape[d] == 1 for d in dims if -len(shape) <= d < len(shape))


def _cast_to(value, dtype):
    if isinstance(value, Tensor) and value._dtype in dt.LIMITED_SET:
        return cast(value, dtype)
    return value


def _back(op, result, dtype, twin, mode: str):
    if op.promotion in _NO_VALUES or mode is WIDENED:
        return result
    names = [name for _typ, name in op.schema.returns]
    if isinstance(result, tuple):
        items = [
            _back_one(r, dtype, twin, mode) if i >= len(names) or names[i] != "indices" else r
            for i, r in enumerate(result)
        ]
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    if isinstance(result, list):
        return [_back_one(r, dtype, twin, mode) for r in result]
    return _back_one(result, dtype, twin, mode)


def _back_one(r, dtype, twin, mode: str):
    if isinstance(r, Tensor) and r._dtype is twin:
        return from_twin(r, dtype, mode)
    return r


def _rounded(value, dtype):
    """A comparison rounds a Python float to the tensor's float8 dtype first, as PyTorch's."""
    if type(value) is not float:
        return value
    import ember  # the public factory: this runs below it, at call time only

    return float(ember.tensor(value).to(dtype).item())


def _run_twin(op, inner, args, dtype, mode: str):
    twin = dt.float32 if dtype in dt.FLOAT8 else _SIGNED[dtype.itemsize]
    args_ = _convert(args, mode)
    if dtype in dt.FLOAT8 and op.promotion is Promotion.ALWAYS_BOOL:
        args_ = tuple(_rounded(a, dtype) for a in args_)
    result = inner(op, *args_)
    if op.mutates and isinstance(args[0], Tensor):
        if dtype in dt.FLOAT8:  # the twin was a copy: write its values back
            OPS["copy_"](args[0], result)
        return args[0]  # the unsigned twin is a view of the same bits
    return _back(op, result, dtype, twin, mode)


class Twins:
    """The limited ``dtypes`` a row computes through their twins, in ``mode``.

    Not a wrapper of the row's runner: the runner refuses a limited dtype before any work, and
    ``Op.refused`` (every caller of a runner sends its NotImplementedError there) calls
    ``run``, so the common call of mul, eq, where, sum... pays nothing for the twin."""

    __slots__ = ("casts", "modes")

    def __init__(self, modes: tuple, casts: bool = False):
        self.modes = modes  # (dtypes, mode) pairs, the first that runs the call wins
        self.casts = casts  # a given ``dtype=`` takes any limited input (PyTorch casts first)

    def run(self, op, args, error: NotImplementedError):
        """The op on ``args`` in the twin dtype, when the refusal ``error`` was for the dtypes
        of a mode that runs the call; ``error`` again otherwise."""
        dtype = _limited_dtype(op, args)
        if dtype is None:
            raise error
        if self.casts and (given := _given(op, args, "dtype")) is not None:
            if given in dt.LIMITED_SET:  # PyTorch casts to it, then its kernel refuses it
                raise error
            return op.runner(op, *(_cast_to(a, given) for a in args))
        for dtypes, mode in self.modes:
            if dtype in dtypes and _runs(op, args, mode):
                mode = BITS if mode in _CONDITIONAL else mode
                return _run_twin(op, op.runner, args, dtype, mode)
        raise error


def runner(op):
    """``op``'s runner with the twin refusal path, for callers that bind a runner once and call
    it later (compiler/replay.py); the eager callers catch the refusal themselves."""
    inner = op.runner
    if op.twins is None:
        return inner

    def run(op, *args):
        try:
            return inner(op, *args)
        except NotImplementedError as error:
            return op.refused(args, error)

    return run
