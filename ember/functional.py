"""``ember.functional``: the names of ``torch.functional``, as ember's functions.

Most are ember's top-level functions re-exported (``torch.functional.einsum is torch.einsum``;
``tensordot`` and ``lu`` are ember.linalg's). ``chain_matmul`` and ``unravel_index`` are composed
here from ember ops (matmul, integer division), so they run on every device and differentiate.
PyTorch's ``stft``/``istft``, ``pca_lowrank`` and ``svd_lowrank`` are not in ember yet.
"""

from __future__ import annotations

import functools
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
    lu,
    meshgrid,
    norm,
    split,
    tensordot,
    unique,
    unique_consecutive,
)

__all__ = [
    "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes",
    "broadcast_tensors", "cartesian_prod", "cdist", "chain_matmul", "einsum", "lu", "meshgrid",
    "norm", "split", "tensordot", "unique", "unique_consecutive", "unravel_index",
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
