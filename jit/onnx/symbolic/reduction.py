"""Reductions and scans: sums, means, extrema, arg-extrema, variance, norms, softmax, cumsum.

ONNX moved the ``axes`` of most Reduce* ops from an attribute to an input in opset 18
(``ReduceSum`` in 13); ``reduce`` writes whichever the target opset wants.
"""

from __future__ import annotations

import math

from ember import _dtype as dt

from ..builder import V

_AXES_INPUT_SINCE = {"ReduceSum": 13}


def _axes(dim) -> list[int] | None:
    if dim is None:
        return None
    return [dim] if isinstance(dim, int) else list(dim)


def reduce(g, op_type: str, x: V, dim, keepdim: bool, **extra) -> V:
    """``op_type`` over ``dim`` (an int, a list, or None: every dim)."""
    axes = _axes(dim)
    keep = 1 if keepdim else 0
    if not axes:  # None or []: PyTorch reduces everything
        return g.op(op_type, x, keepdims=keep, **extra)
    if g.opset >= _AXES_INPUT_SINCE.get(op_type, 18):
        return g.op(op_type, x, g.const(axes, dt.int64), keepdims=keep, **extra)
    return g.op(op_type, x, axes=axes, keepdims=keep, **extra)


def simple(op_type: str):
    """sum/mean/amax/amin/prod: the input cast to the result dtype, then ``op_type``."""

    def rule(g, x, dim=None, keepdim=False, *_dtype):
        return reduce(g, op_type, g.cast(x, g.out_dtype()), dim, keepdim)

    return rule


def _boolean(op_type: str):
    """all/any: ``ReduceMin``/``ReduceMax`` over 0/1 (ONNX reduces no bools before opset 20)."""

    def rule(g, x, dim=None, keepdim=False):
        ones = g.cast(g.cast(x, dt.bool_), dt.int32)
        return g.cast(reduce(g, op_type, ones, dim, keepdim), dt.bool_)

    return rule


def _arg(op_type: str):
    def rule(g, x, dim=None, keepdim=False):
        if dim is None:
            flat = g.op("Reshape", x, g.const([-1], dt.int64))
            return g.op(op_type, flat, axis=0, keepdims=0, dtype=dt.int64)
        return g.op(op_type, x, axis=dim, keepdims=int(keepdim), dtype=dt.int64)

    return rule


def _extremum(reduce_op: str, arg_op: str):
    """max(x, dim) / min(x, dim): values and indices."""

    def rule(g, x, dim, keepdim=False):
        values = reduce(g, reduce_op, x, dim, keepdim)
        indices = g.op(arg_op, x, axis=dim, keepdims=int(keepdim), dtype=dt.int64)
        return values, indices

    return rule


def logsumexp(g, x, dim, keepdim=False):
    return reduce(g, "ReduceLogSumExp", g.cast(x, g.out_dtype()), dim, keepdim)


def _moments(g, x, dim, correction, keepdim) -> V:
    """The variance with ``correction`` (Bessel's by default), over a count taken at run time."""
    x = g.cast(x, g.out_dtype())
    mean = reduce(g, "ReduceMean", x, dim, True)
    centered = g.op("Sub", x, mean)
    total = reduce(g, "ReduceSum", g.op("Mul", centered, centered), dim, keepdim)
    count = g.op("Div", g.op("Size", x, dtype=dt.int64), g.op("Size", total, dtype=dt.int64))
    correction = 1 if correction is None else correction
    count = g.op("Sub", g.cast(count, x.dtype), g.const(correction, x.dtype))
    return g.op("Div", total, g.op("Max", count, g.const(0, x.dtype)))


def var(g, x, dim=None, correction=1, keepdim=False):
    return _moments(g, x, dim, correction, keepdim)


def std(g, x, dim=None, correction=1, keepdim=False):
    return g.op("Sqrt", _moments(g, x, dim, correction, keepdim))


def norm(g, x, p="fro", dim=None, keepdim=False, dtype=None):
    x = g.cast(x, g.out_dtype())
    if p in ("fro", 2, 2.0, None):
        return reduce(g, "ReduceL2", x, dim, keepdim)
    if p in (1, 1.0):
        return reduce(g, "ReduceL1", x, dim, keepdim)
    if p in (math.inf, -math.inf):
        return reduce(g, "ReduceMax" if p > 0 else "ReduceMin", g.op("Abs", x), dim, keepdim)
    if p == 0:
        nonzero = g.cast(
            g.op("Not", g.op("Equal", x, g.const(0, x.dtype), dtype=dt.bool_)), x.dtype
        )
        return reduce(g, "ReduceSum", nonzero, dim, keepdim)
    if isinstance(p, str):
        raise g.unsupported(f"norm with p={p!r}")
    powered = g.op("Pow", g.op("Abs", x), g.const(p, x.dtype))
    return g.op("Pow", reduce(g, "ReduceSum", powered, dim, keepdim), g.const(1 / p, x.dtype))


def count_nonzero(g, x, dim=None):
    zero = g.const(0, x.dtype)
    nonzero = g.op("Not", g.op("Equal", x, zero, dtype=dt.bool_))
    return reduce(g, "ReduceSum", g.cast(nonzero, dt.int64), dim, False)


def softmax_like(op_type: str):
    def rule(g, x, dim, dtype=None):
        return g.op(op_type, g.cast(x, g.out_dtype()), axis=dim)

    return rule


def cumsum(g, x, dim, dtype=None):
    return g.op("CumSum", g.cast(x, g.out_dtype()), g.const(dim, dt.int64))


TABLE = {
    "sum": simple("ReduceSum"),
    "mean": simple("ReduceMean"),
    "amax": simple("ReduceMax"),
    "amin": simple("ReduceMin"),
    "prod": simple("ReduceProd"),
    "all": _boolean("ReduceMin"),
    "any": _boolean("ReduceMax"),
    "argmax": _arg("ArgMax"),
    "argmin": _arg("ArgMin"),
    "max": _extremum("ReduceMax", "ArgMax"),
    "min": _extremum("ReduceMin", "ArgMin"),
    "logsumexp": logsumexp,
    "var": var,
    "std": std,
    "norm": norm,
    "count_nonzero": count_nonzero,
    "softmax": softmax_like("Softmax"),
    "log_softmax": softmax_like("LogSoftmax"),
    "cumsum": cumsum,
}
