"""``ember.functional``: the names of ``torch.functional``, as ember's functions.

Most are ember's top-level functions re-exported (``torch.functional.einsum is torch.einsum``).
``chain_matmul``, ``tensordot`` and ``unravel_index`` are composed here from ember ops (matmul,
permute, reshape, integer division), so they run on every device and differentiate. PyTorch's
``stft``/``istft``, ``lu``, ``pca_lowrank`` and ``svd_lowrank`` are not in ember yet.
"""

from __future__ import annotations

import functools
import math
import warnings

import ember
from ember import (
    atleast_1d,
    atleast_2d,
    atleast_3d,
    block_diag,
    broadcast_shapes,
    broadcast_tensors,
    cartesian_prod,
    cdist,
    einsum,
    meshgrid,
    norm,
    split,
    unique,
    unique_consecutive,
)

__all__ = [
    "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes",
    "broadcast_tensors", "cartesian_prod", "cdist", "chain_matmul", "einsum", "meshgrid", "norm",
    "split", "tensordot", "unique", "unique_consecutive", "unravel_index",
]  # fmt: skip


def chain_matmul(*matrices, out=None):
    """The product of 2-D ``matrices`` (PyTorch's deprecated ``chain_matmul``)."""
    warnings.warn(
        "ember.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
        "ember.linalg.multi_dot instead, which accepts a list of two or more tensors rather than "
        "multiple parameters.",
        UserWarning,
        stacklevel=2,
    )
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    result = matrices[0].clone() if len(matrices) == 1 else functools.reduce(ember.matmul, matrices)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _tensordot_dims(a, b, dims):
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        return list(range(a.dim() - dims, a.dim())), list(range(dims))
    if isinstance(dims, ember.Tensor):
        dims = dims.tolist()
    dims_a, dims_b = dims
    as_list = lambda d: [d] if isinstance(d, int) else list(d)  # noqa: E731
    return as_list(dims_a), as_list(dims_b)


def tensordot(a, b, dims=2, out=None):
    """Contract ``a``'s ``dims[0]`` with ``b``'s ``dims[1]`` (or the last/first ``dims``)."""
    dims_a, dims_b = _tensordot_dims(a, b, dims)
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    dims_a = [d % a.dim() for d in dims_a]
    dims_b = [d % b.dim() for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {a.shape[da]} in dim "
                f"{da} and second has size {b.shape[db]} in dim {db}"
            )
    free_a = [d for d in range(a.dim()) if d not in dims_a]
    free_b = [d for d in range(b.dim()) if d not in dims_b]
    k = math.prod(a.shape[d] for d in dims_a)
    left = a.permute(*free_a, *dims_a).reshape(-1, k)
    right = b.permute(*dims_b, *free_b).reshape(k, -1)
    shape = [a.shape[d] for d in free_a] + [b.shape[d] for d in free_b]
    result = ember.matmul(left, right).reshape(shape)
    if out is not None:
        out.copy_(result)
        return out
    return result


def unravel_index(indices, shape):
    """Flat ``indices`` as a tuple of coordinate tensors into ``shape`` (row-major)."""
    if isinstance(shape, int):
        shape = (shape,)
    if not isinstance(indices, ember.Tensor):
        indices = ember.tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype == ember.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(tuple(shape)))
    coords = []
    rest = indices.to(ember.int64)
    for size in reversed(shape):
        coords.append(ember.remainder(rest, size))
        rest = ember.div(rest, size, rounding_mode="floor")
    return tuple(reversed(coords))
