"""``ember.functional``: the names of ``torch.functional``, as ember's functions.

Most are ember's top-level functions re-exported (``torch.functional.einsum is torch.einsum``;
``tensordot`` and ``lu`` are ember.linalg's). ``chain_matmul`` is composed
here from ember ops (matmul), so it runs on every device and differentiates.
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
    istft,
    lu,
    meshgrid,
    norm,
    pca_lowrank,
    split,
    stft,
    svd_lowrank,
    tensordot,
    unique,
    unique_consecutive,
    unravel_index,
)

__all__ = [
    "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes",
    "broadcast_tensors", "cartesian_prod", "cdist", "chain_matmul", "einsum", "istft", "lu",
    "meshgrid", "norm", "pca_lowrank", "split", "stft", "svd_lowrank", "tensordot", "unique",
    "unique_consecutive", "unravel_index",
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
