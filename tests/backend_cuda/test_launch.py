"""Host-side logic of the CUDA backend, without a device: dim coalescing, the em_nd struct,
reduction / line / sort geometry, cuBLAS layouts, scalar bits and the uniform clamp value."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from ember_backend_gpu import launch
from ember_backend_gpu.codegen import elementwise, reduce
from ember_backend_gpu.codegen.prelude import MAX_DIMS
from ember_backend_gpu.kernels import _args
from ember_backend_gpu.kernels.random import below


def test_coalesce_merges_contiguous_dims_and_drops_ones():
    shape, strides = launch.coalesce((2, 1, 3, 4), [(12, 99, 4, 1), (12, 0, 4, 1)])
    assert shape == (24,)
    assert strides == [(1,), (1,)]
    # A transposed operand keeps the dims apart; a broadcast one (stride 0) merges with itself.
    shape, strides = launch.coalesce((3, 4), [(4, 1), (1, 3), (0, 0)])
    assert shape == (3, 4)
    assert strides == [(4, 1), (1, 3), (0, 0)]
    assert launch.coalesce((), [()]) == ((1,), [(0,)])
    assert launch.coalesce((1, 1), [(5, 7)]) == ((1,), [(0,)])


@pytest.mark.parametrize("shape", [(5,), (2, 3), (4, 1, 3), (2, 3, 4, 5)])
def test_coalesced_offsets_match_numpy(shape):
    """Unravelling a linear index over the coalesced space gives numpy's element offsets."""
    base = np.arange(math.prod(shape) * 2).reshape(*shape[:-1], shape[-1] * 2)[..., ::2]
    strides = [s // base.itemsize for s in base.strides]
    cshape, (cstrides,) = launch.coalesce(shape, [strides])
    flat = base.reshape(-1)
    for i in range(math.prod(shape)):
        rest, off = i, 0
        for size, stride in zip(reversed(cshape), reversed(cstrides)):
            off += (rest % size) * stride
            rest //= size
        assert base.base.reshape(-1)[off] == flat[i]


def test_split_outer_covers_high_rank_spaces():
    shape = (2,) * 18
    strides = [tuple(2**k for k in reversed(range(18)))]
    pieces = list(launch.split_outer(shape, strides, max_dims=16))
    assert len(pieces) == 4
    assert sorted(p[0][0] for p in pieces) == [0, 2**16, 2**17, 2**17 + 2**16]
    assert all(len(p[1]) == 16 for p in pieces)
    assert len(list(launch.split_outer((3, 4), [(4, 1)]))) == 1


def test_nd_args_match_the_struct_format():
    args = launch.nd_args((3, 4), [(16, 4), (0, 8)], [0, 7])
    fmt = elementwise.ND
    assert len(args) == len(struct.unpack(fmt, struct.pack(fmt, *args)))
    assert struct.calcsize(fmt) == 688  # sizeof(em_nd) in the prelude
    assert args[:2] == (3, 4) and args[MAX_DIMS : MAX_DIMS + 2] == (16, 4)
    assert args[-3:] == (12, 2, 0)
    with pytest.raises(ValueError):
        launch.nd_args((1,) * 17, [(0,) * 17])


def test_grid_fills_the_device_but_no_more():
    assert launch.grid(1, 132) == 1
    assert launch.grid(257, 132) == 2
    assert launch.grid(10**9, 132) == 132 * launch.BLOCKS_PER_SM


def _plan(shape, dims, sm=132):
    x = np.empty(shape, np.float32)
    out_strides = np.empty([1 if d in dims else s for d, s in enumerate(shape)], np.float32)
    elem = [s // 4 for s in out_strides.strides]
    return launch.reduce_plan(shape, x.strides, elem, set(dims), sm)


def test_reduce_plan_inner_and_outer():
    inner = _plan((1000, 512), (1,))
    assert inner["inner"] == 1 and inner["n_out"] == 1000 and inner["n_red"] == 512
    assert inner["r_lanes"] == 256 and inner["grid"] == (1000, 1)
    outer = _plan((512, 1000), (0,))
    assert outer["inner"] == 0 and outer["r_lanes"] == 1
    full = _plan((1 << 26,), (0,))  # sum of 64M: one output, split over many blocks
    blocks, splits = full["grid"]
    assert blocks == 1 and splits > 100 and splits * full["chunk"] >= 1 << 26
    assert len(launch.red_args(full)) == len(struct.unpack(reduce.RED, b"\0" * 680))
    assert struct.calcsize(reduce.RED) == 680


def test_reduce_plan_of_empty_and_scalar():
    empty = _plan((0, 3), (0,))
    assert empty["n_red"] == 0 and empty["n_out"] == 3 and empty["grid"][1] == 1
    scalar = launch.reduce_plan((), (), (), set(), 8)
    assert scalar["n_out"] == 1 and scalar["n_red"] == 1


def test_rows_plan_modes():
    args, blocks, threads = launch.rows_plan((8, 4096), 1, (16384, 4), (16384, 4), 100)
    assert args[-1] == 1 and blocks == 8 and threads == launch.BLOCK
    args, blocks, _ = launch.rows_plan((100000, 10), 1, (40, 4), (40, 4), 100)
    assert args[-1] == 0 and args[-6] == 100000  # a thread per short line


def _bitonic(keys: np.ndarray, chunk: int) -> np.ndarray:
    """Run sort_steps' schedule in numpy with the kernels' compare-exchange rule."""
    p = len(keys)
    pos = np.arange(p)

    def exchange(k, j):
        for i in range(p):
            partner = i ^ j
            if partner > i:
                after = (keys[i], pos[i]) > (keys[partner], pos[partner])
                if after == ((i & k) == 0):
                    keys[[i, partner]] = keys[[partner, i]]
                    pos[[i, partner]] = pos[[partner, i]]

    for step in launch.sort_steps(p, chunk):
        if step[0] == "step":
            exchange(step[1], step[2])
        else:
            _, k_lo, k_hi, j_first = step
            k = k_lo
            while k <= k_hi:
                j = j_first if k == k_lo else k // 2
                while j > 0:
                    exchange(k, j)
                    j //= 2
                k *= 2
    return pos


@pytest.mark.parametrize("p, chunk", [(1, 4), (2, 4), (8, 8), (64, 8), (128, 4)])
def test_sort_schedule_sorts_stably(p, chunk):
    rng = np.random.default_rng(p)
    keys = rng.integers(0, 5, p).astype(np.uint64)
    order = _bitonic(keys.copy(), chunk)
    assert list(order) == list(np.argsort(keys, kind="stable"))


@pytest.mark.parametrize(
    "rows, cols, strides, expected",
    [
        (3, 4, (4, 1), ("rows", 4)),
        (3, 4, (1, 3), ("cols", 3)),
        (3, 4, (8, 1), ("rows", 8)),
        (3, 4, (0, 1), None),  # broadcast rows: copy
        (3, 4, (4, -1), None),
        (1, 4, (0, 1), ("rows", 4)),  # a single row's stride is free
        (3, 1, (1, 0), ("rows", 1)),
        (3, 4, (2, 2), None),
    ],
)
def test_blas_layout(rows, cols, strides, expected):
    assert launch.blas_layout(rows, cols, *strides) == expected


def test_scalar_bits_round_like_the_cpu():
    assert _args.scalar_bits(1.0, 8) == 0x3F800000
    assert _args.scalar_bits(-1, 1) == 0xFF  # uint8 truncation
    assert _args.scalar_bits(-2, 5) == (1 << 64) - 2
    assert _args.scalar_bits(True, 0) == 1
    assert _args.scalar_bits(1.0, 6) == 0x3C00
    assert _args.scalar_bits(1.0, 7) == 0x3F80
    assert _args.scalar_bits(float("nan"), 7) & 0x7FC0 == 0x7FC0
    assert _args.scalar_bits(1.00390625, 7) == 0x3F80  # a tie rounds to even


@pytest.mark.parametrize("token, code", [("f16", 6), ("bf16", 7), ("f32", 8), ("f64", 9)])
def test_uniform_clamp_matches_the_cpu(token, code):
    cpu = pytest.importorskip("ember_backend_cpu.kernels.random")
    for high in (1.0, 0.0, -1.0, 0.1, 3.0, 1e-30, 1e40, 65504.0, 70000.0, float("inf")):
        assert below(high, token) == cpu.below(high, code), (token, high)
