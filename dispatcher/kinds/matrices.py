"""What every ember.linalg runner shares: PyTorch's argument checks and messages, batches of
matrices laid out for LAPACK, and the check of LAPACK's ``info`` that raises LinAlgError.

Layout: LAPACK wants each matrix column-major. A batch of ``rows x cols`` matrices is handed to a
kernel as a ``[B, cols, rows]`` tensor whose last two dims are contiguous (matrix ``i`` packed at
``i * rows * cols``): the batch dims are folded into one. Results go back to the user as the
``(*batch, rows, cols)`` view of that buffer with column-major strides, as PyTorch's do.
"""

from __future__ import annotations

import itertools
import math

from ember import _dtype as dt
from ember._tensor import Tensor, contiguous_strides, empty, is_contiguous, make

from ._common import OPS, broadcast_shapes, common_device, expand_to


class LinAlgError(RuntimeError):
    """A linear-algebra routine failed: a singular or non-positive-definite input, or no
    convergence. The message names the batch element, as ``torch.linalg.LinAlgError``'s does."""


LinAlgError.__module__ = "ember.linalg"

# PyTorch's ScalarType names, which its linalg messages print.
SCALAR_NAMES = {
    "bool": "Bool",
    "uint8": "Byte",
    "int8": "Char",
    "int16": "Short",
    "int32": "Int",
    "int64": "Long",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "float32": "Float",
    "float64": "Double",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
}
LOW_PRECISION = frozenset(("float16", "bfloat16", "complex32"))
DTYPES = frozenset((dt.float32, dt.float64))  # the dtypes LAPACK computes in (complex to come)


def display(op) -> str:
    """The name PyTorch's messages give the op (``linalg.inv`` for linalg_inv_ex)."""
    return op.info.get("display", op.name)


def check_tensor(name: str, t, what: str = "A") -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}: argument '{what}' must be Tensor, not {type(t).__name__}")


def check_dtype(name: str, t: Tensor) -> None:
    d = t._dtype
    if not (d.is_floating_point or d.is_complex):
        raise RuntimeError(
            f"{name}: Expected a floating point or complex tensor as input. Got "
            f"{SCALAR_NAMES.get(d.name, d.name)}"
        )
    if d.name in LOW_PRECISION:
        raise RuntimeError(
            f"{name}: Low precision dtypes not supported. Got {SCALAR_NAMES.get(d.name, d.name)}"
        )


def check_matrix(name: str, t, square: bool = False, what: str = "A") -> None:
    """PyTorch's checks of a batch of matrices: a tensor, 2 or more dims, float or complex of
    single or double precision, square when asked."""
    check_tensor(name, t, what)
    if len(t._shape) < 2:
        raise RuntimeError(f"{name}: The input tensor {what} must have at least 2 dimensions.")
    check_dtype(name, t)
    if square and t._shape[-1] != t._shape[-2]:
        raise RuntimeError(
            f"{name}: A must be batches of square matrices, but they are {t._shape[-2]} by "
            f"{t._shape[-1]} matrices"
        )


def check_same(name: str, a: Tensor, b: Tensor, what: str = "B") -> None:
    """Same dtype and device for a second operand (PyTorch does not promote in linalg)."""
    if a._dtype is not b._dtype:
        raise RuntimeError(
            f"{name}: Expected A and {what} to have the same dtype, but found A of type "
            f"{SCALAR_NAMES.get(a._dtype.name)} and {what} of type "
            f"{SCALAR_NAMES.get(b._dtype.name)} instead."
        )
    common_device(name, (a, b))


def batch_size(batch: tuple) -> int:
    return math.prod(batch)


def view(t: Tensor, shape: tuple, strides: tuple) -> Tensor:
    """A view of ``t``'s storage (below autograd: no graph)."""
    shape, strides = tuple(shape), tuple(strides)
    return make(t._storage, shape, strides, t._offset, t._dtype, is_contiguous(shape, strides))


def column_major(a: Tensor, batch: tuple | None = None, dtype=None) -> Tensor:
    """A fresh ``[B, cols, rows]`` buffer holding ``a``'s matrices column-major (broadcast over
    ``batch`` when given, converted to ``dtype`` when given): what a LAPACK kernel may overwrite."""
    rows, cols = a._shape[-2:]
    batch = tuple(a._shape[:-2]) if batch is None else tuple(batch)
    src = a if tuple(a._shape[:-2]) == batch else expand_to(a, (*batch, rows, cols))
    flipped = view(src, (*batch, cols, rows), (*src._stride[:-2], src._stride[-1], src._stride[-2]))
    dtype = dtype or a._dtype
    buf = empty((*batch, cols, rows), dtype, a._storage.device)
    if buf._storage._nbytes:
        OPS["copy_"].kernel(a._storage.device.type, dtype)(buf, flipped)
    return view(buf, (batch_size(batch), cols, rows), contiguous_strides((1, cols, rows)))


def as_matrices(buf: Tensor, batch: tuple, rows: int, cols: int) -> Tensor:
    """The ``(*batch, rows, cols)`` column-major view of a ``[B, cols, rows]`` buffer."""
    strides = contiguous_strides((*batch, cols, rows))
    return view(buf, (*batch, rows, cols), (*strides[:-2], strides[-1], strides[-2]))


def as_batch(t: Tensor, batch: tuple, tail: tuple) -> Tensor:
    """A contiguous ``[B, *tail]`` tensor viewed as ``(*batch, *tail)``."""
    shape = (*batch, *tail)
    return view(t, shape, contiguous_strides(shape))


def _folded_stride(shape: tuple, strides: tuple) -> int | None:
    """One stride that walks every batch dim in order, or None when there is none."""
    dims = [(n, s) for n, s in zip(shape, strides) if n != 1]
    if not dims:
        return 0
    if all(s == 0 for _, s in dims):
        return 0
    for (_, outer), (n, inner) in itertools.pairwise(dims):
        if outer != inner * n:
            return None
    return dims[-1][1]


def read_only(a: Tensor, batch: tuple, row_major_ok: bool = False) -> Tensor:
    """``a`` broadcast over ``batch`` as a ``[B, cols, rows]`` operand a kernel only reads: a view
    when its matrices are column-major (or row-major, when the kernel can read those: then the
    last dim is the strided one) and one stride walks its batch; a column-major copy otherwise."""
    rows, cols = a._shape[-2:]
    src = expand_to(a, (*batch, rows, cols)) if tuple(a._shape[:-2]) != tuple(batch) else a
    rs, cs = src._stride[-2:]
    col_major = (rs == 1 or rows <= 1) and (cs == max(rows, 1) or cols <= 1)
    row_major = row_major_ok and (cs == 1 or cols <= 1) and (rs == max(cols, 1) or rows <= 1)
    step = _folded_stride(tuple(batch), src._stride[:-2])
    if step is None or not (col_major or row_major):
        return column_major(a, batch)
    if col_major:
        return view(src, (batch_size(batch), cols, rows), (step, max(rows, 1), 1))
    # The same logical [B, cols, rows] operand, its strides saying the matrices are row-major.
    return view(src, (batch_size(batch), cols, rows), (step, 1, max(cols, 1)))


def vector_batch(t: Tensor, batch: tuple) -> Tensor:
    """A ``(*batch, n)`` vector operand (pivots, tau) as ``[B, n]``, broadcast or copied."""
    n = t._shape[-1]
    src = expand_to(t, (*batch, n)) if tuple(t._shape[:-1]) != tuple(batch) else t
    step = _folded_stride(tuple(batch), src._stride[:-1])
    if step is not None and (src._stride[-1] == 1 or n <= 1):
        return view(src, (batch_size(batch), n), (step, 1))
    out = empty((*batch, n), t._dtype, t._storage.device)
    if out._storage._nbytes:
        OPS["copy_"].kernel(t._storage.device.type, t._dtype)(out, src)
    return view(out, (batch_size(batch), n), (n, 1))


def broadcast_batch(name: str, *tensors, tails=None) -> tuple:
    """The broadcast batch shape of operands whose last ``tails[i]`` dims are not batch dims."""
    tails = tails or (2,) * len(tensors)
    shapes = [tuple(t._shape[: len(t._shape) - k]) for t, k in zip(tensors, tails)]
    return broadcast_shapes(name, *shapes)


def host_ints(t: Tensor):
    """A small integer tensor (info, rank) as numpy on the host (one device read). Through
    ``numpy()``, which every layer sees: a raw view of the storage (host_array) read the wrong
    pivots of a vmapped lu_unpack (tests/autograd/test_vmap_ops.py)."""
    import numpy as np

    t = t.detach()
    return np.asarray(t.cpu().numpy() if t._storage.device.type != "cpu" else t.numpy())


def raise_info(info, name: str, message, batched: bool, error=LinAlgError) -> None:
    """Raise ``error`` for the first matrix whose ``info`` (a tensor, or host integers from a
    kernel) is non-zero: ``message(code)`` says why, and a batched call names the (flat) batch
    element, as PyTorch does."""
    if isinstance(info, Tensor):
        # A meta info has no values: nothing to raise, as PyTorch's _linalg_check_errors on meta
        if not info._storage._nbytes or info._storage.device.type == "meta":
            return
        info = host_ints(info)
    import numpy as np

    codes = np.asarray(info).reshape(-1)
    if not codes.any():
        return
    bad = codes.nonzero()[0]
    first = int(bad[0])
    where = f"(Batch element {first}): " if batched else ""
    raise error(f"{name}: {where}{message(int(codes[first]))}")
