"""The collectives of ``torch.distributed``: reductions, broadcasts, gathers, scatters,
all-to-all. Each stages its tensors and makes one call of the group's backend (hookspecs.py).
"""

from __future__ import annotations

from ._launch import (
    check_blocks,
    check_root_list,
    check_tensor,
    check_tensor_list,
    concat,
    copy_blocks,
    flat_like,
    group_for,
    group_root,
    launch,
    staged,
)
from ._types import ReduceOp, op_name


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``tensor`` across the group in place; every rank gets the result.

    Args:
        tensor: input and output (any dtype; same shape and dtype on every rank).
        op: a ``ReduceOp``.
        group: the process group (default: the world).
        async_op: return a ``Work`` instead of waiting.

    Example:
        >>> t = ember.ones(4) * (dist.get_rank() + 1)
        >>> dist.all_reduce(t)   # on 2 ranks: tensor([3., 3., 3., 3.])
    """
    check_tensor(tensor, "tensor")
    pg, name = group_for(group, "all_reduce"), op_name(op)
    if pg is None:
        return None

    def start(comm, memory):
        buf = staged(tensor, memory)
        return comm.all_reduce(buf.buffer, name), buf.writeback

    return launch(pg, "all_reduce", [tensor], start, async_op, [tensor])


def broadcast(tensor, src=None, group=None, async_op: bool = False, group_src=None):
    """Copy ``tensor`` of rank ``src`` (a world rank; or ``group_src``) into every rank's."""
    check_tensor(tensor, "tensor")
    pg = group_for(group, "broadcast")
    if pg is None:
        return None
    root = group_root(pg, src, group_src, "src")

    def start(comm, memory):
        buf = staged(tensor, memory, read_only=pg.rank() == root)
        return comm.broadcast(buf.buffer, root), buf.writeback

    return launch(pg, "broadcast", [tensor], start, async_op, [tensor])


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op: bool = False, group_dst=None):
    """Reduce ``tensor`` across the group into rank ``dst``'s (others' are left as they are)."""
    check_tensor(tensor, "tensor")
    pg, name = group_for(group, "reduce"), op_name(op)
    if pg is None:
        return None
    root = group_root(pg, dst, group_dst, "dst")

    def start(comm, memory):
        buf = staged(tensor, memory, read_only=pg.rank() != root)
        return comm.reduce(buf.buffer, name, root), buf.writeback

    return launch(pg, "reduce", [tensor], start, async_op, [tensor])


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """Every rank's ``tensor`` into ``tensor_list`` (one tensor per rank, in rank order)."""
    check_tensor_list(tensor_list, "tensor_list")
    check_tensor(tensor, "tensor")
    pg = group_for(group, "all_gather")
    if pg is None:
        return None
    check_blocks("all_gather", tensor_list, tensor, pg.size(), "tensor_list")

    def start(comm, memory):
        flat = flat_like(tensor, pg.size())
        send, recv = staged(tensor, memory, read_only=True), staged(flat, memory)

        def finish():
            recv.writeback()
            copy_blocks(flat, tensor_list)

        return comm.all_gather(send.buffer, recv.buffer), finish

    return launch(pg, "all_gather", [tensor, *tensor_list], start, async_op, tensor_list, [tensor])


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """Every rank's ``input_tensor`` concatenated (or stacked) into ``output_tensor``, whose
    size is the group size times the input's."""
    check_tensor(output_tensor, "output_tensor")
    check_tensor(input_tensor, "input_tensor")
    pg = group_for(group, "all_gather_into_tensor")
    if pg is None:
        return None
    _check_multiple(
        "all_gather_into_tensor", output_tensor, input_tensor, pg.size(), "output", "input"
    )

    def start(comm, memory):
        send, recv = staged(input_tensor, memory, read_only=True), staged(output_tensor, memory)
        return comm.all_gather(send.buffer, recv.buffer), recv.writeback

    tensors = [output_tensor, input_tensor]
    return launch(
        pg, "all_gather_into_tensor", tensors, start, async_op, [output_tensor], [input_tensor]
    )


def gather(tensor, gather_list=None, dst=None, group=None, async_op: bool = False, group_dst=None):
    """Every rank's ``tensor`` into ``gather_list`` on rank ``dst`` (only there)."""
    check_tensor(tensor, "tensor")
    pg = group_for(group, "gather")
    if pg is None:
        return None
    root = group_root(pg, dst, group_dst, "dst")
    on_root = pg.rank() == root
    check_root_list("gather", pg, root, gather_list, tensor, "gather_list", "destination")

    def start(comm, memory):
        send = staged(tensor, memory, read_only=True)
        if not on_root:
            return comm.gather(send.buffer, None, root), None
        flat = flat_like(tensor, pg.size())
        recv = staged(flat, memory)

        def finish():
            recv.writeback()
            copy_blocks(flat, gather_list)

        return comm.gather(send.buffer, recv.buffer, root), finish

    return launch(pg, "gather", [tensor], start, async_op, gather_list or [], [tensor])


def scatter(
    tensor, scatter_list=None, src=None, group=None, async_op: bool = False, group_src=None
):
    """Rank ``src``'s ``scatter_list[i]`` into rank i's ``tensor``."""
    check_tensor(tensor, "tensor")
    pg = group_for(group, "scatter")
    if pg is None:
        return None
    root = group_root(pg, src, group_src, "src")
    on_root = pg.rank() == root
    check_root_list("scatter", pg, root, scatter_list, tensor, "scatter_list", "source")

    def start(comm, memory):
        recv = staged(tensor, memory)
        send = staged(concat(scatter_list), memory, read_only=True) if on_root else None
        return comm.scatter(send and send.buffer, recv.buffer, root), recv.writeback

    return launch(pg, "scatter", [tensor], start, async_op, [tensor])


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``input_list[i]`` across the group into rank i's ``output``."""
    check_tensor(output, "output")
    check_tensor_list(input_list, "input_list")
    pg, name = group_for(group, "reduce_scatter"), op_name(op)
    if pg is None:
        return None
    check_blocks("reduce_scatter", input_list, output, pg.size(), "input_list")

    def start(comm, memory):
        send, recv = staged(concat(input_list), memory, read_only=True), staged(output, memory)
        return comm.reduce_scatter(send.buffer, recv.buffer, name), recv.writeback

    return launch(
        pg, "reduce_scatter", [output, *input_list], start, async_op, [output], input_list
    )


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``input`` (the group size times ``output``'s size) across the group; rank i gets
    block i in ``output``."""
    check_tensor(output, "output")
    check_tensor(input, "input")
    pg, name = group_for(group, "reduce_scatter_tensor"), op_name(op)
    if pg is None:
        return None
    _check_multiple("reduce_scatter_tensor", input, output, pg.size(), "input", "output")

    def start(comm, memory):
        send, recv = staged(input, memory, read_only=True), staged(output, memory)
        return comm.reduce_scatter(send.buffer, recv.buffer, name), recv.writeback

    return launch(pg, "reduce_scatter_tensor", [output, input], start, async_op, [output], [input])


def all_to_all_single(
    output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False
):
    """Split ``input`` along dim 0 and send block i to rank i; ``output`` receives rank i's
    block i-th. Split sizes (rows per rank) default to equal splits."""
    check_tensor(output, "output")
    check_tensor(input, "input")
    pg = group_for(group, "all_to_all_single")
    if pg is None:
        return None
    if output.dtype != input.dtype:
        raise ValueError(f"all_to_all_single: output is {output.dtype} but input is {input.dtype}")
    send_counts = _split_counts(input, input_split_sizes, pg.size(), "input")
    recv_counts = _split_counts(output, output_split_sizes, pg.size(), "output")

    def start(comm, memory):
        send, recv = staged(input, memory, read_only=True), staged(output, memory)
        return comm.all_to_all(send.buffer, recv.buffer, send_counts, recv_counts), recv.writeback

    tensors = [output, input]
    return launch(pg, "all_to_all_single", tensors, start, async_op, [output], [input])


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op: bool = False):
    """Send ``input_tensor_list[i]`` to rank i; receive rank i's into ``output_tensor_list[i]``."""
    check_tensor_list(output_tensor_list, "output_tensor_list")
    check_tensor_list(input_tensor_list, "input_tensor_list")
    pg = group_for(group, "all_to_all")
    if pg is None:
        return None
    for name, tensors in (("output", output_tensor_list), ("input", input_tensor_list)):
        if len(tensors) != pg.size():
            raise ValueError(f"all_to_all: {name}_tensor_list needs {pg.size()} tensors")
    send_counts = [t.numel() for t in input_tensor_list]
    recv_counts = [t.numel() for t in output_tensor_list]

    def start(comm, memory):
        flat = concat(output_tensor_list)
        send = staged(concat(input_tensor_list), memory, read_only=True)
        recv = staged(flat, memory)

        def finish():
            recv.writeback()
            copy_blocks(flat, output_tensor_list)

        return comm.all_to_all(send.buffer, recv.buffer, send_counts, recv_counts), finish

    tensors = [*output_tensor_list, *input_tensor_list]
    return launch(pg, "all_to_all", tensors, start, async_op, output_tensor_list)


def _check_multiple(op: str, big, small, size: int, big_name: str, small_name: str) -> None:
    if big.dtype != small.dtype:
        raise ValueError(f"{op}: {big_name} is {big.dtype} but {small_name} is {small.dtype}")
    if big.numel() != size * small.numel():
        raise ValueError(
            f"{op}: {big_name} tensor must have world_size ({size}) times the elements of the "
            f"{small_name} tensor ({small.numel()}), got {big.numel()} (shapes "
            f"{tuple(big.shape)} and {tuple(small.shape)})"
        )


def _split_counts(tensor, splits, size: int, name: str) -> list[int]:
    """Element counts per rank from row counts along dim 0."""
    rows = tensor.shape[0] if tensor.ndim else 1
    per_row = tensor.numel() // rows if rows else 0
    if not splits:
        if rows % size:
            raise ValueError(
                f"all_to_all_single: {name} has {rows} rows along dim 0, not divisible by the "
                f"group size {size}; pass {name}_split_sizes"
            )
        return [rows // size * per_row] * size
    if len(splits) != size or sum(splits) != rows:
        raise ValueError(
            f"all_to_all_single: {name}_split_sizes {list(splits)} must have {size} entries "
            f"summing to dim 0 of {name} ({rows})"
        )
    return [int(s) * per_row for s in splits]
