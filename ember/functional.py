"""``ember.functional``: the names of ``torch.functional``, as ember's functions.

Most are ember's top-level functions re-exported (``torch.functional.einsum is torch.einsum``;
``tensordot`` and ``lu`` are ember.linalg's; ``chain_matmul`` is ember/_torch_entry.py's).
"""

from __future__ import annotations

from ember import (
    atleast_1d,
    atleast_2d,
    atleast_3d,
    block_diag,
    broadcast_shapes,
    broadcast_tensors,
    cartesian_prod,
    cdist,
    chain_matmul,
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
