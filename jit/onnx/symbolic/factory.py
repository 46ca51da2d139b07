"""Tensors made from sizes: ``arange``, ``full``, ``empty``, ``eye``, ``linspace``.

Their sizes may be run-time values (a causal mask as large as the sequence), so they become
``Range``/``ConstantOfShape``/``EyeLike`` nodes rather than constants.
"""

from __future__ import annotations

import numpy as np


def arange(g, start, end=None, step=1, dtype=None, device=None):
    if end is None:
        start, end = 0, start
    out = g.out_dtype()
    return g.op("Range", g.scalar(start, out), g.scalar(end, out), g.scalar(step, out))


def _filled(g, sizes, fill, dtype):
    value = g.onnx.numpy_helper.from_array(np.array([fill], dtype=dtype.np))
    return g.op("ConstantOfShape", g.ints(sizes), value=value, dtype=dtype)


def full(g, size, fill_value, dtype=None, device=None):
    if not isinstance(fill_value, (int, float, bool)):
        out = g.out_dtype()
        return g.op("Expand", g.scalar(fill_value, out), g.ints(size))
    return _filled(g, size, fill_value, g.out_dtype())


def empty(g, size, dtype=None, device=None):
    return _filled(g, size, 0, g.out_dtype())


def eye(g, n, m=None, dtype=None, device=None):
    out = g.out_dtype()
    zeros = _filled(g, [n, n if m is None else m], 0, out)
    return g.op("EyeLike", zeros)


def linspace(g, start, end, steps, dtype=None, device=None):
    """PyTorch's two-sided formula (``start + i*step`` up to the middle, ``end - ...``
    after), so the endpoints are exact."""
    out = g.out_dtype()
    if steps == 1:
        return g.const([start], out)
    step = (end - start) / (steps - 1)
    index = np.arange(steps, dtype=np.float64)
    half = steps // 2
    values = np.where(index < half, start + step * index, end - step * (steps - 1 - index))
    return g.const(values, out)


TABLE = {
    "arange": arange,
    "full": full,
    "empty": empty,
    "eye": eye,
    "linspace": linspace,
}
