"""Products: matmul and its special cases, addmm/baddbmm, outer, einsum, trace."""

from __future__ import annotations


def matmul(g, a, b):
    out = g.out_dtype()
    return g.op("MatMul", g.cast(a, out), g.cast(b, out))


def _scaled_sum(g, product, x, beta, alpha):
    """``beta * x + alpha * product``; ``beta == 0`` ignores ``x`` (NaNs included)."""
    out = product.dtype
    if alpha != 1:
        product = g.op("Mul", product, g.tensor(alpha, out))
    if beta == 0:
        return product
    x = g.cast(x, out)
    if beta != 1:
        x = g.op("Mul", x, g.tensor(beta, out))
    return g.op("Add", product, x)


def addmm(g, x, a, b, beta=1, alpha=1):
    return _scaled_sum(g, matmul(g, a, b), x, beta, alpha)


def outer(g, a, b):
    out = g.out_dtype()
    return g.op("Mul", g.unsqueeze(g.cast(a, out), 1), g.unsqueeze(g.cast(b, out), 0))


def einsum(g, equation, tensors):
    out = g.out_dtype()
    return g.op("Einsum", *(g.cast(t, out) for t in tensors), equation=equation)


def trace(g, x):
    diagonal = g.op("Mul", x, g.op("EyeLike", x))
    return g.cast(g.op("ReduceSum", diagonal, keepdims=0), g.out_dtype())


TABLE = {
    "mm": matmul,
    "matmul": matmul,
    "bmm": matmul,
    "mv": matmul,
    "dot": matmul,
    "addmm": addmm,
    "baddbmm": addmm,
    "outer": outer,
    "einsum": einsum,
    "trace": trace,
}
