"""Memory overlap between a written-to tensor and its inputs: PyTorch's rules (MemoryOverlap.cpp).

A write must not race with itself or with what it reads. The kernels walk elements in their own
order, so ``x[1:] = x[:-1]`` or ``a.add_(a.t())`` would read values the same call already wrote.
PyTorch refuses these calls rather than give order-dependent numbers, and so does ember:

- internal overlap: two elements of the written-to tensor share memory (a stride-0 dim);
- an input that overlaps the output *partly* (elementwise ops, copies): the output being exactly
  the input, same elements in the same layout (``x.add_(x)``), is fine, since each element is
  read before it is written;
- for index ops (scatter, put_, index_put_...), any overlap at all.

Like PyTorch, only layouts that cover a block of memory exactly once ("non-overlapping and
dense": contiguous up to a permutation of dims) are compared; others are too hard to tell and
are let through. Tensors on different storages never overlap, so the checks start with one
identity test and cost nothing in the common case.
"""

from __future__ import annotations

from ember._storage import read_only_error
from ember._tensor import Tensor

NO, FULL, PARTIAL, TOO_HARD = "no", "full", "partial", "too hard"

_SHARED = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer to "
    "a single memory location. Please clone() the tensor before performing the operation."
)
_INTERNAL = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)


def _numel(t: Tensor) -> int:
    n = 1
    for size in t._shape:
        n *= size
    return n


def is_dense(t: Tensor) -> bool:
    """Whether ``t``'s elements fill a block of memory exactly once, in some order of dims
    (PyTorch's is_non_overlapping_and_dense; negative strides, which ember allows, count by
    their magnitude)."""
    if t._contig:
        return True
    expected = 1
    for step, size in sorted((abs(st), n) for n, st in zip(t._shape, t._stride) if n != 1):
        if step != expected:
            return False
        expected *= size
    return True


def _span(t: Tensor) -> tuple[int, int]:
    """The first and one-past-the-last element of storage that ``t`` touches."""
    low = high = t._offset
    for size, step in zip(t._shape, t._stride):
        if step < 0:
            low += (size - 1) * step
        else:
            high += (size - 1) * step
    return low, high + 1


def status(out: Tensor, other: Tensor) -> str:
    """How ``other`` overlaps ``out``: NO, FULL (same memory, same layout), PARTIAL or
    TOO_HARD (a layout that is not dense: PyTorch does not tell)."""
    if out is other:
        return FULL
    if out._storage is not other._storage or not _numel(out) or not _numel(other):
        return NO
    if not is_dense(out) or not is_dense(other):
        return TOO_HARD
    out_low, out_high = _span(out)
    low, high = _span(other)
    if out_low == low and out_high == high:
        # Same bytes in another order (a.t() into a) is the race partial overlap means.
        same = out._dtype.itemsize == other._dtype.itemsize and out._stride == other._stride
        return FULL if same else PARTIAL
    return PARTIAL if out_low < high and low < out_high else NO


def _layout(t: Tensor) -> str:
    return f"shape {list(t._shape)}, strides {list(t._stride)}, storage offset {t._offset}"


def _detail(out: Tensor, other: Tensor, what: str) -> str:
    return f" (written-to tensor: {_layout(out)}; {what}: {_layout(other)})"


def check_internal(op_name: str, out: Tensor) -> None:
    """The check of every tensor an op writes into: its memory must be writable (not from a
    read-only numpy array, which a kernel would corrupt or crash on), and its elements must not
    share memory (broadcast views). An empty tensor gets no writes (numpy gives empty arrays
    stride 0, and from_numpy keeps it)."""
    if out._storage.readonly:
        raise read_only_error(op_name)
    if out._contig:
        return
    for size, step in zip(out._shape, out._stride):
        if step == 0 and size > 1:
            if 0 in out._shape:
                return
            raise RuntimeError(f"{op_name}: {_INTERNAL}")


def check_partial(op_name: str, out: Tensor, other, what: str = "input") -> None:
    """Refuse an input that overlaps the written-to tensor partly (elementwise ops, copy_)."""
    if (
        isinstance(other, Tensor)
        and other._storage is out._storage
        and status(out, other) == PARTIAL
    ):
        raise RuntimeError(f"{op_name}: {_SHARED}{_detail(out, other, what)}")


def check_none(op_name: str, out: Tensor, other, what: str = "input") -> None:
    """Refuse an input that shares any memory with the written-to tensor (index ops)."""
    if (
        isinstance(other, Tensor)
        and other._storage is out._storage
        and status(out, other) in (FULL, PARTIAL)
    ):
        raise RuntimeError(f"{op_name}: {_SHARED}{_detail(out, other, what)}")


CHECKS = {"partial": check_partial, "any": check_none}


def check_inputs(op_name: str, out: Tensor, inputs, rule: str | None) -> None:
    """Check every tensor in ``inputs`` (tensors, lists of tensors, anything else) against
    ``out`` by ``rule``: "partial", "any" or None (no check)."""
    check = CHECKS.get(rule)
    if check is None:
        return
    for value in inputs:
        if value.__class__ is list or value.__class__ is tuple:
            for item in value:
                check(op_name, out, item)
        else:
            check(op_name, out, value)
