"""CPU index kernels for complex64/complex128: gather, scatter, take, put_, index_select,
index_add and nonzero through numpy's indexing (the C plugin's index kernels are per real dtype).

Same arguments as the C kernels (``optable/data.py`` names them in ``kernel_args``); bounds are
checked by numpy's indexing, which raises IndexError naming the bad index.
"""

from __future__ import annotations

import numpy as np

from ember._tensor import host_array


def _along(index, dim: int) -> tuple:
    """The fancy index that picks ``index[i...]`` along ``dim`` and ``i`` elsewhere (gather's and
    scatter's element rule)."""
    grid = list(np.indices(index.shape, sparse=True))
    grid[dim] = index
    return tuple(grid)


def _fit(values, shape):
    """``values`` cut to ``shape`` (scatter's src may be larger than its index); scalars kept."""
    if np.ndim(values) == 0:
        return values
    return values[tuple(slice(0, n) for n in shape)]


def _arrays(*tensors) -> list:
    """Host arrays with 0-d ones as 1-element vectors (views: writes reach the tensor), as
    PyTorch's gather/scatter read 0-d operands."""
    return [np.atleast_1d(host_array(t)) for t in tensors]


def gather(out, x, dim, index):
    out, x, index = _arrays(out, x, index)
    out[...] = x[_along(index, dim)]


def scatter(out, dim, index, src):
    out, index, src = _arrays(out, index, src)
    out[_along(index, dim)] = _fit(src, index.shape)


def scatter_add(out, dim, index, src):
    out, index, src = _arrays(out, index, src)
    np.add.at(out, _along(index, dim), _fit(src, index.shape))


def index_select(out, x, dim, index):
    source = host_array(x)
    if source.ndim == 0:  # a 0-d input is a 1-element vector (index 0 or -1)
        source = source.reshape(1)
    host_array(out)[...] = np.take(source, host_array(index), axis=dim).reshape(out.shape)


def index_add(out, dim, index, source, alpha):
    target = host_array(out)
    values = host_array(source) * alpha
    if target.ndim == 0:
        target, values = target.reshape(1), values.reshape(1)
    np.add.at(target, (slice(None),) * dim + (host_array(index),), values)


def take(out, x, index):
    host_array(out)[...] = np.ravel(host_array(x))[host_array(index)]


def put_(x, index, source, accumulate):
    target = host_array(x)
    flat = np.ravel(target)  # a copy when x is strided: written back below
    if accumulate:
        np.add.at(flat, np.ravel(host_array(index)), np.ravel(host_array(source)))
    else:
        flat[np.ravel(host_array(index))] = np.ravel(host_array(source))
    if not np.shares_memory(flat, target):
        target[...] = flat.reshape(target.shape)


def nonzero(out, x):
    host_array(out)[...] = np.argwhere(host_array(x))


KERNELS = {
    "gather": gather,
    "scatter": scatter,
    "scatter_add": scatter_add,
    "index_select": index_select,
    "index_add": index_add,
    "take": take,
    "put_": put_,
    "nonzero": nonzero,
}
