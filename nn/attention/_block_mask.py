"""BlockMask, flex_attention's block-sparse mask, and create_block_mask, as PyTorch's.

Rows of Q_BLOCK_SIZE queries list the KV_BLOCK_SIZE key blocks they touch:
``kv_num_blocks`` (..., rows) counts them and ``kv_indices`` (..., rows, cols) names them,
the partial blocks (where mask_mod must be applied) apart from the full ones
(``full_kv_*``); the ``q_*`` tensors are the transpose, for a backward over keys. Ember's
attention is the eager one, which evaluates ``mask_mod`` at every element as PyTorch's eager
path does; the block lists serve ``to_dense``, ``sparsity`` and printing.
"""

# ruff: noqa: N803, N806 - PyTorch's argument names (B, H, Q_LEN, KV_LEN, BLOCK_SIZE)
from __future__ import annotations

import functools
import itertools
import math
import operator
import warnings

import ember
from ember import Tensor

from ._mods import (
    _get_mod_type,
    _mask_mod_signature,
    _ModificationType,
    _sliced_mask_mod_error,
    create_mask,
    noop_mask,
)

_DEFAULT_SPARSE_BLOCK_SIZE = 128
_LARGE_SPARSE_BLOCK_SIZE = 1 << 30


def _ordered_to_dense(num_blocks_in_row: Tensor, col_indices: Tensor, num_cols: int) -> Tensor:
    """The (..., rows, num_cols) int32 0/1 matrix of the blocks each row lists."""
    entries = ember.arange(col_indices.shape[-1], device=col_indices.device)
    listed = entries < num_blocks_in_row.unsqueeze(-1)
    # the entries past a row's count go to one spare column, dropped after
    columns = ember.where(listed, col_indices.long(), num_cols)
    dense = ember.zeros(*col_indices.shape[:-1], num_cols + 1, dtype=ember.int32,
                        device=col_indices.device)  # fmt: skip
    dense.scatter_(-1, columns, 1)
    return dense[..., :num_cols].contiguous()


def _dense_to_ordered(dense_mask: Tensor) -> tuple[Tensor, Tensor]:
    """Each row's block count and its blocks' columns, listed ones first (int32 both)."""
    dense_mask = dense_mask.to(dtype=ember.int32)
    num_blocks_in_row = dense_mask.sum(dim=-1)
    col_indices = ember.argsort(dense_mask, dim=-1, descending=True, stable=True)
    return num_blocks_in_row.to(ember.int32), col_indices.to(ember.int32)


def _transpose_ordered(num_blocks_in_row: Tensor, col_indices: Tensor):
    dense = _ordered_to_dense(num_blocks_in_row, col_indices, col_indices.shape[-1])
    return _dense_to_ordered(dense.transpose(-2, -1))


def _adjust_num_blocks_and_indices(num_blocks, indices, new_num_rows: int, new_num_cols: int):
    indices = indices[:, :, :new_num_rows, :new_num_cols]
    num_blocks = num_blocks[:, :, :new_num_rows]
    num_blocks = ember.where(num_blocks < new_num_cols, num_blocks, new_num_cols)
    num_blocks = ember.sum(indices < num_blocks[:, :, :, None], dim=-1).to(ember.int32)
    return num_blocks, indices


def _shape_or_none(x):
    return x.shape if x is not None else None


class BlockMask:
    """flex_attention's block-sparse mask (PyTorch's format, a cross between BCSR and dense):
    ``kv_num_blocks[..., row]`` blocks of KV_BLOCK_SIZE keys, named by
    ``kv_indices[..., row, :]``, take part for each row of Q_BLOCK_SIZE queries; the
    ``full_kv_*`` pair lists the blocks no element of which is masked; ``q_*`` and
    ``full_q_*`` are their transposes. ``mask_mod`` decides each element.

    Example:
        >>> bm = create_block_mask(lambda b, h, q, kv: q >= kv, None, None, 256, 256,
        ...                        device="cpu")
        >>> bm.shape, bm.sparsity()
        ((1, 1, 256, 256), 25.0)
    """

    _TENSOR_ATTRS = [
        "kv_num_blocks",
        "kv_indices",
        "full_kv_num_blocks",
        "full_kv_indices",
        "q_num_blocks",
        "q_indices",
        "full_q_num_blocks",
        "full_q_indices",
        "dq_write_order",
        "dq_write_order_full",
        "dq_kv_order",
    ]
    _CONTEXT_ATTRS = ["seq_lengths", "BLOCK_SIZE", "mask_mod", "dq_kv_order_spt"]

    def __init__(
        self,
        seq_lengths: tuple[int, int],
        kv_num_blocks: Tensor,
        kv_indices: Tensor,
        full_kv_num_blocks: Tensor | None,
        full_kv_indices: Tensor | None,
        q_num_blocks: Tensor | None,
        q_indices: Tensor | None,
        full_q_num_blocks: Tensor | None,
        full_q_indices: Tensor | None,
        BLOCK_SIZE: tuple[int, int] = (_DEFAULT_SPARSE_BLOCK_SIZE, _DEFAULT_SPARSE_BLOCK_SIZE),
        mask_mod: _mask_mod_signature = noop_mask,
        *,
        dq_write_order: Tensor | None = None,
        dq_write_order_full: Tensor | None = None,
        dq_kv_order: Tensor | None = None,
        dq_kv_order_spt: bool | None = None,
    ) -> None:
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError(
                "full_kv_num_blocks and full_kv_indices must be both provided or omitted"
            )
        if (full_q_num_blocks is None) != (full_q_indices is None):
            raise AssertionError(
                "full_q_num_blocks and full_q_indices must be both provided or omitted"
            )
        if dq_write_order_full is not None and dq_write_order is None:
            raise ValueError("dq_write_order_full requires dq_write_order")
        self.seq_lengths = seq_lengths
        self.kv_num_blocks = kv_num_blocks
        self.kv_indices = kv_indices
        self.full_kv_num_blocks = full_kv_num_blocks
        self.full_kv_indices = full_kv_indices
        self.q_num_blocks = q_num_blocks
        self.q_indices = q_indices
        self.full_q_num_blocks = full_q_num_blocks
        self.full_q_indices = full_q_indices
        self.dq_write_order = dq_write_order
        self.dq_write_order_full = dq_write_order_full
        self.dq_kv_order = dq_kv_order
        self.dq_kv_order_spt = dq_kv_order_spt
        self.BLOCK_SIZE = BLOCK_SIZE
        self.mask_mod = mask_mod

    @classmethod
    def from_kv_blocks(
        cls,
        kv_num_blocks: Tensor,
        kv_indices: Tensor,
        full_kv_num_blocks: Tensor | None = None,
        full_kv_indices: Tensor | None = None,
        BLOCK_SIZE: int | tuple[int, int] = _DEFAULT_SPARSE_BLOCK_SIZE,
        mask_mod: _mask_mod_signature | None = None,
        seq_lengths: tuple[int, int] | None = None,
        compute_q_blocks: bool = True,
        *,
        dq_write_order: Tensor | None = None,
        dq_write_order_full: Tensor | None = None,
        dq_kv_order: Tensor | bool | None = None,
    ) -> BlockMask:
        """A BlockMask from its key-block lists, the query-block lists computed (as their
        transposes) unless ``compute_q_blocks`` is False.

        Args:
            kv_num_blocks (Tensor): Number of kv_blocks in each Q_BLOCK_SIZE row tile.
            kv_indices (Tensor): Indices of key-value blocks in each Q_BLOCK_SIZE row tile.
            full_kv_num_blocks (Tensor, optional): Number of full kv_blocks in each row tile.
            full_kv_indices (Tensor, optional): Indices of full key-value blocks in each row.
            BLOCK_SIZE (int or tuple[int, int]): Size of KV_BLOCK_SIZE x Q_BLOCK_SIZE tiles.
            mask_mod (Callable, optional): the element mask (default: noop_mask).
            seq_lengths (tuple[int, int], optional): (Q_LEN, KV_LEN); default: whole blocks.
            compute_q_blocks (bool): whether to compute the q_* lists.

        Returns:
            BlockMask
        """
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError(
                "full_kv_num_blocks and full_kv_indices must be both provided or omitted"
            )
        q_num_blocks = q_indices = full_q_num_blocks = full_q_indices = None
        if compute_q_blocks:
            q_num_blocks, q_indices = _transpose_ordered(kv_num_blocks, kv_indices)
            if full_kv_num_blocks is not None:
                full_q_num_blocks, full_q_indices = _transpose_ordered(
                    full_kv_num_blocks, full_kv_indices
                )
        if isinstance(BLOCK_SIZE, int):
            BLOCK_SIZE = (BLOCK_SIZE, BLOCK_SIZE)
        if seq_lengths is None:
            seq_lengths = (
                kv_indices.shape[-2] * BLOCK_SIZE[0],
                kv_indices.shape[-1] * BLOCK_SIZE[1],
            )
        if dq_kv_order is not None and not isinstance(dq_kv_order, (bool, Tensor)):
            raise ValueError("dq_kv_order must be a bool, Tensor, or None")
        return cls(
            seq_lengths,
            kv_num_blocks,
            kv_indices,
            full_kv_num_blocks,
            full_kv_indices,
            q_num_blocks,
            q_indices,
            full_q_num_blocks,
            full_q_indices,
            BLOCK_SIZE=BLOCK_SIZE,
            mask_mod=mask_mod if mask_mod is not None else noop_mask,
            dq_write_order=dq_write_order,
            dq_write_order_full=dq_write_order_full,
            dq_kv_order=dq_kv_order if isinstance(dq_kv_order, Tensor) else None,
            dq_kv_order_spt=dq_kv_order if isinstance(dq_kv_order, bool) else None,
        )

    def as_tuple(self, flatten: bool = True) -> tuple:
        """The attributes in PyTorch's order; ``flatten`` spreads seq_lengths and BLOCK_SIZE."""
        if flatten:
            block_size = tuple(self.BLOCK_SIZE)
            seq_lengths = tuple(self.seq_lengths)
        else:
            block_size = (self.BLOCK_SIZE,)
            seq_lengths = (self.seq_lengths,)
        tensors = tuple(getattr(self, name) for name in self._TENSOR_ATTRS)
        return (*seq_lengths, *tensors, self.dq_kv_order_spt, *block_size, self.mask_mod)

    @property
    def shape(self) -> tuple[int, ...]:
        *batch_dims, _, _ = self.kv_indices.shape
        return tuple(batch_dims) + tuple(self.seq_lengths)

    def __str__(self) -> str:
        s = f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, \n"
        s += self.to_string().strip()
        return s + "\n)"

    def __repr__(self) -> str:
        mask_mod = getattr(self.mask_mod, "__name__", self.mask_mod)
        return (
            f"BlockMask(\n"
            f"    kv_num_blocks={self.kv_num_blocks.shape},\n"
            f"    kv_indices={self.kv_indices.shape},\n"
            f"    full_kv_num_blocks={_shape_or_none(self.full_kv_num_blocks)},\n"
            f"    full_kv_indices={_shape_or_none(self.full_kv_indices)},\n"
            f"    q_num_blocks={_shape_or_none(self.q_num_blocks)},\n"
            f"    q_indices={_shape_or_none(self.q_indices)},\n"
            f"    full_q_num_blocks={_shape_or_none(self.full_q_num_blocks)},\n"
            f"    full_q_indices={_shape_or_none(self.full_q_indices)},\n"
            f"    BLOCK_SIZE={self.BLOCK_SIZE},\n"
            f"    shape={self.shape},\n"
            f"    sparsity={self.sparsity():.2f}%,\n"
            f"    mask_mod={mask_mod}\n"
            f")"
        )

    def __getitem__(self, index) -> BlockMask:
        """The mask of some batches, heads and query-block rows (``block_mask[b, h]``); an
        integer keeps its dim (of size 1), as PyTorch's. The slice's ``mask_mod`` raises: set
        it from the original mask's."""
        if self.dq_kv_order is not None:
            raise NotImplementedError(
                "Slicing BlockMask with tensor dq_kv_order is not supported yet. "
                "Construct a new BlockMask with matching precomputed dq_write_order metadata."
            )
        index = index if isinstance(index, tuple) else (index,)
        padded = (*index, slice(None), slice(None), slice(None))[:3]
        sizes = self.kv_num_blocks.shape[:3]
        index = tuple(
            (slice(i + n, i + n + 1) if -n <= i < 0 else slice(i, i + 1))
            if isinstance(i, int)
            else i
            for i, n in zip(padded, sizes, strict=True)
        )
        full = self.full_kv_num_blocks is not None
        sliced = BlockMask.from_kv_blocks(
            self.kv_num_blocks[index],
            self.kv_indices[index],
            self.full_kv_num_blocks[index] if full else None,
            self.full_kv_indices[index] if full else None,
            BLOCK_SIZE=self.BLOCK_SIZE,
            mask_mod=_sliced_mask_mod_error,
            seq_lengths=self.seq_lengths,
            compute_q_blocks=self.q_indices is not None,
        )
        sliced.dq_kv_order_spt = self.dq_kv_order_spt
        return sliced

    def _adjust(self, new_q_len: int, new_kv_len: int) -> BlockMask:
        """The mask cropped (at the top left) to new sequence lengths."""
        rows = (new_q_len + self.BLOCK_SIZE[0] - 1) // self.BLOCK_SIZE[0]
        cols = (new_kv_len + self.BLOCK_SIZE[1] - 1) // self.BLOCK_SIZE[1]
        kv = _adjust_num_blocks_and_indices(self.kv_num_blocks, self.kv_indices, rows, cols)
        full = (None, None)
        if self.full_kv_num_blocks is not None:
            full = _adjust_num_blocks_and_indices(
                self.full_kv_num_blocks, self.full_kv_indices, rows, cols
            )
        return self.from_kv_blocks(
            *kv,
            *full,
            BLOCK_SIZE=self.BLOCK_SIZE,
            mask_mod=self.mask_mod,
            seq_lengths=(new_q_len, new_kv_len),
            compute_q_blocks=self.q_indices is not None,
        )

    def numel(self) -> int:
        """Returns the number of elements (not accounting for sparsity) in the mask."""
        return functools.reduce(operator.mul, self.shape, 1)

    def sparsity(self) -> float:
        """Computes the percentage of blocks that are sparse (i.e. not computed)"""
        computed_blocks = self.kv_num_blocks.sum()
        if self.full_kv_num_blocks is not None:
            computed_blocks = computed_blocks + self.full_kv_num_blocks.sum()
        computed_size = computed_blocks.item() * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1]
        return 100 * (1 - computed_size / self.numel())

    def to_dense(self) -> Tensor:
        """Returns a dense block that is equivalent to the block mask."""
        dense = _ordered_to_dense(self.kv_num_blocks, self.kv_indices, self.kv_indices.shape[-1])
        if self.full_kv_num_blocks is not None:
            cols = self.full_kv_indices.shape[-1]
            dense = dense | _ordered_to_dense(self.full_kv_num_blocks, self.full_kv_indices, cols)
        return dense

    def to_string(self, grid_size: int | tuple[int, int] = (20, 20), limit: int = 4) -> str:
        """Returns a string representation of the block mask. Quite nifty.

        If grid_size is -1, prints out an uncompressed version. Warning, it can be quite big!
        """
        dense_mask = self.to_dense()
        *batch_dims, num_rows, num_cols = dense_mask.shape
        if grid_size == -1:
            max_rows, max_cols = num_rows, num_cols
        elif isinstance(grid_size, int):
            max_rows = max_cols = grid_size
        else:
            max_rows, max_cols = grid_size
        row_step = max(1, math.ceil(num_rows / max_rows))
        col_step = max(1, math.ceil(num_cols / max_cols))
        total_vis = []
        for count, batch_idx in enumerate(itertools.product(*[range(i) for i in batch_dims])):
            if count == limit:
                total_vis.append("...")
                total_vis.append("To print out more, set BlockMask.to_string(limit=N)")
                total_vis.append(
                    "You can also index (BlockMask[batch, head]) to choose a specific batch or head"
                )
                break
            total_vis.append(_block_vis(dense_mask[batch_idx], batch_idx, row_step, col_step))
        return "\n".join(total_vis)

    def to(self, device) -> BlockMask:
        """A copy with its tensors on ``device``."""
        tensors = {
            name: getattr(self, name).to(device) if getattr(self, name) is not None else None
            for name in self._TENSOR_ATTRS
        }
        return BlockMask(
            self.seq_lengths,
            **tensors,
            BLOCK_SIZE=self.BLOCK_SIZE,
            mask_mod=self.mask_mod,
            dq_kv_order_spt=self.dq_kv_order_spt,
        )


def _block_vis(mask: Tensor, batch_idx: tuple, row_step: int, col_step: int) -> str:
    """One (rows, cols) block matrix drawn two characters a cell: full, empty or partial."""
    vis = f"{batch_idx}\n"
    rows, cols = mask.shape
    for r in range(0, rows, row_step):
        for c in range(0, cols, col_step):
            share = mask[r : r + row_step, c : c + col_step].float().mean().item()
            vis += ("█" if share == 1 else " " if share == 0 else "░") * 2
        vis += "\n"
    return vis


def _round_up_to_multiple(x: int, multiple: int) -> int:
    return (x + multiple - 1) // multiple * multiple


def _convert_mask_to_block_mask(
    mask: Tensor,
    Q_BLOCK_SIZE: int = _DEFAULT_SPARSE_BLOCK_SIZE,
    KV_BLOCK_SIZE: int = _DEFAULT_SPARSE_BLOCK_SIZE,
    separate_full_blocks: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """The (B, H, rows, cols) int8 maps of partial blocks (and of full ones, when
    ``separate_full_blocks``) of a boolean (B, H, Q, KV) mask."""
    if mask.dtype != ember.bool:
        raise AssertionError(f"mask.dtype must be torch.bool, got {mask.dtype}")
    while mask.dim() < 4:
        mask = mask.unsqueeze(0)
    pad_kv = _round_up_to_multiple(mask.shape[-1], KV_BLOCK_SIZE) - mask.shape[-1]
    pad_q = _round_up_to_multiple(mask.shape[-2], Q_BLOCK_SIZE) - mask.shape[-2]
    mask = ember.nn.functional.pad(mask, (0, pad_kv, 0, pad_q))
    B, H, Q, KV = mask.shape
    mask = mask.view(B, H, Q // Q_BLOCK_SIZE, Q_BLOCK_SIZE, KV // KV_BLOCK_SIZE, KV_BLOCK_SIZE)
    block_sum = mask.permute(0, 1, 2, 4, 3, 5).sum(dim=[-2, -1])
    if not separate_full_blocks:
        return (block_sum > 0).to(dtype=ember.int8), None
    full_sum = Q_BLOCK_SIZE * KV_BLOCK_SIZE
    partial = (block_sum > 0) & (block_sum < full_sum)
    return partial.to(dtype=ember.int8), (block_sum == full_sum).to(dtype=ember.int8)


def create_block_mask(
    mask_mod: _mask_mod_signature,
    B: int | None,
    H: int | None,
    Q_LEN: int,
    KV_LEN: int,
    device=None,
    BLOCK_SIZE: int | tuple[int, int] = _DEFAULT_SPARSE_BLOCK_SIZE,
    _compile=False,
    separate_full_blocks: bool = True,
    compute_dq_write_order: bool = False,
    dq_kv_order: bool = True,
) -> BlockMask:
    """A BlockMask from a mask_mod, evaluated at every (b, h, q_idx, kv_idx).

    Args:
        mask_mod (Callable): ``(b, h, q_idx, kv_idx) -> bool tensor``, True where a query
            may attend to a key.
        B (int): Batch size (None: 1, broadcast over batches).
        H (int): Number of query heads (None: 1, broadcast over heads).
        Q_LEN (int): Sequence length of query.
        KV_LEN (int): Sequence length of key/value.
        device: where to build it (default: the current accelerator, else the CPU).
        BLOCK_SIZE (int or tuple[int, int]): (Q, KV) block size; an int for both.
        _compile (bool): deprecated; warns and changes nothing (ember runs eagerly).
        separate_full_blocks (bool): list fully unmasked blocks apart (``full_kv_*``).
        compute_dq_write_order (bool): deterministic-backward metadata of PyTorch's FLASH
            kernel; not in ember (NotImplementedError).
        dq_kv_order (bool): its order.

    Returns:
        BlockMask

    Example:
        >>> def causal_mask(b, h, q_idx, kv_idx):
        ...     return q_idx >= kv_idx
        >>> block_mask = create_block_mask(causal_mask, 1, 1, 512, 512, device="cpu")
        >>> out = flex_attention(q, k, v, block_mask=block_mask)
    """
    if device is None:
        device = ember.accelerator.current_accelerator() or "cpu"
    if _get_mod_type(mask_mod) != _ModificationType.MASK_MOD:
        raise AssertionError(f"create-block_mask requires a mask_mod function! Got {mask_mod}")
    B = 1 if B is None else B
    H = 1 if H is None else H
    if isinstance(BLOCK_SIZE, int):
        Q_BLOCK_SIZE = KV_BLOCK_SIZE = BLOCK_SIZE
    else:
        Q_BLOCK_SIZE, KV_BLOCK_SIZE = BLOCK_SIZE
    if _compile:
        warnings.warn(
            "_compile flag on create_block_mask was originally added to work around a "
            "torch.compile limitation. That limitation has since been addressed. So, to "
            "compile create_block_mask, we suggest doing torch.compile(create_block_mask). "
            "This still works for now, but will be removed in the future.",
            DeprecationWarning,
            stacklevel=2,
        )
    if not isinstance(dq_kv_order, bool):
        raise ValueError("dq_kv_order must be a bool when using create_block_mask")
    if compute_dq_write_order:
        raise NotImplementedError(
            "create_block_mask(compute_dq_write_order=True): the dQ write order is metadata "
            "for PyTorch's deterministic FLASH backward kernel, which ember does not have"
        )
    mask = create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device)
    partial, full = _convert_mask_to_block_mask(
        mask, Q_BLOCK_SIZE, KV_BLOCK_SIZE, separate_full_blocks
    )
    partial_kv = _dense_to_ordered(partial)
    full_kv = _dense_to_ordered(full) if full is not None else (None, None)
    return BlockMask.from_kv_blocks(
        *partial_kv,
        *full_kv,
        BLOCK_SIZE=(Q_BLOCK_SIZE, KV_BLOCK_SIZE),
        mask_mod=mask_mod,
        seq_lengths=(Q_LEN, KV_LEN),
    )


def _create_empty_block_mask(query: Tensor, key: Tensor) -> BlockMask:
    """flex_attention's mask when none is given: one block over everything."""
    device = query.device
    return BlockMask.from_kv_blocks(
        kv_num_blocks=ember.ones([1, 1, 1], dtype=ember.int32, device=device),
        kv_indices=ember.zeros([1, 1, 1, 1], dtype=ember.int32, device=device),
        BLOCK_SIZE=_LARGE_SPARSE_BLOCK_SIZE,
        seq_lengths=(1, 1),
    )
