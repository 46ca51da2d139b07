"""Host-side planning of kernel launches: no pycuda, no device, so it is unit-tested anywhere.

- ``coalesce``: merge the dims of an iteration space that every operand walks contiguously, and
  drop size-1 dims, so most tensors index as 1-d or 2-d in the kernels.
- ``nd_args``: the ``em_nd`` struct (codegen/prelude.py) as the flat tuple pycuda packs.
- ``grid``: blocks for a grid-stride loop.
- ``reduce_plan``, ``rows_plan``, ``sort_plan``: the geometry of the reduction, line (scan,
  softmax) and sort kernels.
- ``blas_layout``: how a strided matrix reads as a column-major cuBLAS operand, if it does.
"""

from __future__ import annotations

import functools
import itertools
import math

from .codegen.prelude import MAX_DIMS, MAX_OPERANDS

BLOCK = 256  # threads per block of the grid-stride kernels
BLOCKS_PER_SM = 32  # enough blocks to fill an SM for the grid-stride loops
MAX_GRID_Y = 65535


def next_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def grid(n: int, sm_count: int, block: int = BLOCK) -> int:
    """Blocks for ``n`` work items of a grid-stride loop: enough to fill the device, no more."""
    return max(1, min(-(-n // block), sm_count * BLOCKS_PER_SM))


def coalesce(shape, strides):
    """``(shape, strides)`` with size-1 dims dropped and mergeable neighbours merged.

    ``strides`` is one sequence per operand (any unit; the same unit per operand). Dims d-1 and d
    merge when, for every operand, ``stride[d-1] == stride[d] * shape[d]``. The result has at
    least one dim (a scalar iteration space is shape ``(1,)``).
    """
    if len(shape) == 1 and shape[0] != 1:  # the common contiguous-or-not 1-d case: as it is
        return tuple(shape), [tuple(s) for s in strides]
    dims = [(size, [s[d] for s in strides]) for d, size in enumerate(shape) if size != 1]
    if not dims:
        return (1,), [(0,) for _ in strides]
    merged = [dims[0]]
    for size, st in dims[1:]:
        prev_size, prev_st = merged[-1]
        if all(prev_st[k] == st[k] * size for k in range(len(st))):
            merged[-1] = (prev_size * size, st)
        else:
            merged.append((size, st))
    shape_out = tuple(size for size, _ in merged)
    strides_out = [tuple(st[k] for _, st in merged) for k in range(len(strides))]
    return shape_out, strides_out


def split_outer(shape, strides, max_dims: int = MAX_DIMS):
    """Yield ``(offsets, inner shape, inner strides)`` covering an iteration space of more than
    ``max_dims`` dims: the leading dims become a host loop (offsets per operand), the rest one
    launch each. At most ``max_dims`` dims: a single piece with zero offsets."""
    lead = max(0, len(shape) - max_dims)
    inner_shape = tuple(shape[lead:])
    inner = [tuple(s[lead:]) for s in strides]
    for index in itertools.product(*(range(n) for n in shape[:lead])):
        yield [sum(i * s[d] for d, i in enumerate(index)) for s in strides], inner_shape, inner


def nd_args(shape, strides, scalars=()) -> tuple:
    """The ``em_nd`` struct: shape, byte strides per operand, scalar bits, n, ndim, pad.

    Memoized: a training loop launches the same few geometries over and over, and building the
    padded tuple was a visible part of a tiny launch's host time."""
    return _nd_args(tuple(shape), tuple(map(tuple, strides)), tuple(scalars))


@functools.lru_cache(maxsize=4096)
def _nd_args(shape: tuple, strides: tuple, scalars: tuple) -> tuple:
    ndim = len(shape)
    if ndim > MAX_DIMS or len(strides) > MAX_OPERANDS:
        raise ValueError(f"em_nd holds {MAX_DIMS} dims and {MAX_OPERANDS} operands")
    out = list(shape) + [1] * (MAX_DIMS - ndim)
    for k in range(MAX_OPERANDS):
        row = list(strides[k]) if k < len(strides) else []
        out += row + [0] * (MAX_DIMS - len(row))
    bits = list(scalars) + [0] * (MAX_OPERANDS - len(scalars))
    return (*out, *bits, math.prod(shape), ndim, 0)


def padded(values, length: int = MAX_DIMS, fill: int = 0) -> list:
    values = list(values)
    if len(values) > length:
        raise ValueError(f"at most {length} dims after coalescing, got {len(values)}")
    return values + [fill] * (length - len(values))


def reduce_plan(shape, x_strides, out_strides, dims, sm_count: int) -> dict:
    """Geometry of a reduction of x (``x_strides`` in bytes) over ``dims`` into an output of x's
    rank (``out_strides`` in elements). Returns the ``em_red`` fields and ``grid``.
    """
    kept = [(s, (x_strides[d], out_strides[d])) for d, s in enumerate(shape) if d not in dims]
    red = [(s, (x_strides[d],)) for d, s in enumerate(shape) if d in dims]
    kshape, kstr = coalesce(
        [s for s, _ in kept], [[st[0] for _, st in kept], [st[1] for _, st in kept]]
    )
    rshape, rstr = coalesce([s for s, _ in red], [[st[0] for _, st in red]])
    n_out, n_red = math.prod(kshape), math.prod(rshape)
    if kshape == (1,):
        kshape, kstr = (), [(), ()]
    if rshape == (1,):
        rshape, rstr = (), [()]
    # Reduce along threads next to each other when the reduced elements are the closest ones.
    inner = bool(rshape) and (not kshape or abs(rstr[0][-1]) <= abs(kstr[0][-1]))
    if inner:
        lanes = min(BLOCK, next_pow2(n_red))
    else:
        lanes = max(1, BLOCK // next_pow2(n_out)) if n_out < BLOCK else 1
        lanes = min(lanes, next_pow2(n_red))
    outputs_per_block = BLOCK // lanes
    blocks_x = -(-n_out // outputs_per_block)
    splits = 1
    target = sm_count * 4
    per_thread = 64  # reduced elements a thread should at least fold before splitting pays
    if blocks_x < target and n_red > lanes * per_thread:
        splits = min(-(-target // blocks_x), -(-n_red // (lanes * per_thread)), MAX_GRID_Y)
    chunk = -(-n_red // splits) if n_red else 0
    if chunk:
        splits = -(-n_red // chunk)
    return {
        "oshape": kshape,
        "ostride_x": kstr[0],
        "ostride_o": kstr[1],
        "rshape": rshape,
        "rstride": rstr[0],
        "n_out": n_out,
        "n_red": n_red,
        "chunk": chunk,
        "r_lanes": lanes,
        "inner": int(inner),
        "grid": (blocks_x, max(splits, 1)),
    }


def red_args(plan: dict) -> tuple:
    """The ``em_red`` struct of a plan, flat."""
    return (
        *padded(plan["oshape"], fill=1),
        *padded(plan["ostride_x"]),
        *padded(plan["ostride_o"]),
        *padded(plan["rshape"], fill=1),
        *padded(plan["rstride"]),
        plan["n_out"],
        plan["n_red"],
        plan["chunk"],
        len(plan["oshape"]),
        len(plan["rshape"]),
        plan["r_lanes"],
        plan["inner"],
    )


ROW_BLOCK_MIN = 64  # lines at least this long get a block each; shorter ones a thread


def rows_plan(shape, dim: int, x_strides, o_strides, sm_count: int) -> tuple[tuple, int, int]:
    """``(em_rows args, grid, block)`` for kernels that walk lines along ``dim`` (byte
    strides)."""
    other = [d for d in range(len(shape)) if d != dim]
    lshape, (lx, lo) = coalesce(
        [shape[d] for d in other], [[x_strides[d] for d in other], [o_strides[d] for d in other]]
    )
    n_lines = math.prod(lshape)
    if lshape == (1,):
        lshape, lx, lo = (), (), ()
    length = shape[dim] if shape else 1
    mode = 1 if length >= ROW_BLOCK_MIN else 0
    args = (
        *padded(lshape, fill=1),
        *padded(lx),
        *padded(lo),
        n_lines,
        length,
        x_strides[dim] if shape else 0,
        o_strides[dim] if shape else 0,
        len(lshape),
        mode,
    )
    blocks = min(n_lines, sm_count * BLOCKS_PER_SM) if mode else grid(n_lines, sm_count)
    return args, max(blocks, 1), BLOCK


def sort_steps(length: int, chunk: int) -> list[tuple]:
    """The bitonic schedule for lines of ``length`` (a power of two) elements.

    ``("block", k_lo, k_hi, j_first)`` runs in shared memory on chunks of ``min(length,
    chunk)``; ``("step", k, j)`` is one global launch.
    """
    if length < 2:
        return []
    c = min(length, chunk)
    steps = [("block", 2, c, 1)]
    k = 2 * c
    while k <= length:
        j = k // 2
        while j >= c:
            steps.append(("step", k, j))
            j //= 2
        steps.append(("block", k, k, c // 2))
        k *= 2
    return steps


# ``gemm``'s transpose arguments (``runtime.make_blas().gemm``): cuBLAS's values; another BLAS
# maps them to its own (rocBLAS: 111, 112).
OP_N, OP_T, OP_C = 0, 1, 2  # cublasOperation_t


def blas_layout(rows: int, cols: int, s0: int, s1: int):
    """How a ``rows x cols`` matrix with element strides ``(s0, s1)`` reads in column-major BLAS
    terms: ``("rows", ld)`` (row-major: each row contiguous, ld = s0), ``("cols", ld)``
    (column-major, ld = s1), or None (copy it first). Strides of size-1 dims are free."""
    if cols <= 1:
        s1 = 1
    if rows <= 1:
        s0 = max(cols, 1)
    if s1 == 1 and s0 >= max(1, cols):
        return "rows", s0
    if s0 == 1 and s1 >= max(1, rows):
        return "cols", s1
    return None
