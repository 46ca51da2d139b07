"""The CPU mm and bmm kernels: every dtype, every operand layout, degenerate sizes.

Float inputs hold small integers, so every product and partial sum is exact in float32: results
must then equal numpy's bit for bit, whichever path (BLAS with or without CblasTrans, packing, the
C loop) computed them. A separate test checks ordinary random floats against float64.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from ember_backend_cpu._kernels import lib

import ember

NUMERIC = [
    ember.uint8,
    ember.int8,
    ember.int16,
    ember.int32,
    ember.int64,
    ember.float16,
    ember.bfloat16,
    ember.float32,
    ember.float64,
]
NP = {ember.bfloat16: ml_dtypes.bfloat16}


def np_dtype(dtype):
    return NP.get(dtype, dtype.np)


def values(shape, dtype, seed=0):
    """Small integers (exact in every dtype), non-negative for uint8."""
    low = 0 if dtype is ember.uint8 else -3
    return np.random.default_rng(seed).integers(low, 4, shape).astype(np_dtype(dtype))


def expected(a: np.ndarray, b: np.ndarray, dtype) -> np.ndarray:
    """PyTorch's result: integers accumulate in int64 (wrapping), floats exactly here."""
    wide = np.int64 if dtype.category == ember.int64.category else np.float64
    return np.matmul(a.astype(wide), b.astype(wide)).astype(np_dtype(dtype))


# ---- layouts: a tensor with the logical values of m (a matrix or a stack of them) ---------------
def _last2(m, fn):
    """Apply fn to the last two axes' transpose; keeps leading (batch) axes in place."""
    return fn(np.swapaxes(m, -1, -2))


LAYOUTS = {
    "contiguous": lambda m: ember.from_numpy(m.copy()),
    # column-major: BLAS gets CblasTrans
    "transposed": lambda m: ember.from_numpy(np.swapaxes(m, -1, -2).copy()).transpose(-1, -2),
    # a leading dimension larger than the row
    "padded": lambda m: ember.from_numpy(np.pad(m, [(0, 0)] * (m.ndim - 1) + [(0, 3)]))[
        ..., : m.shape[-1]
    ],
    # column-major with padding
    "transposed-padded": lambda m: ember.from_numpy(
        np.pad(np.swapaxes(m, -1, -2), [(0, 0)] * (m.ndim - 1) + [(0, 2)])
    )[..., : m.shape[-2]].transpose(-1, -2),
    # no unit stride at all: must be packed
    "strided": lambda m: ember.from_numpy(_spread(m))[..., ::2, ::3],
    # negative row stride
    "reversed-rows": lambda m: ember.from_numpy(np.flip(m, -2).copy()[..., ::-1, :]),
    # negative column stride
    "reversed-cols": lambda m: ember.from_numpy(np.flip(m, -1).copy()[..., ::-1]),
}


def _spread(m):
    big = np.zeros((*m.shape[:-2], 2 * m.shape[-2], 3 * m.shape[-1]), m.dtype)
    big[..., ::2, ::3] = m
    return big


def broadcast_rows(m):
    """m with every row equal to its first, as a stride-0 view (and the values it shows)."""
    view = ember.from_numpy(m[..., :1, :].copy()).expand(*m.shape)
    return view, np.broadcast_to(m[..., :1, :], m.shape)


def broadcast_cols(m):
    view = ember.from_numpy(m[..., :1].copy()).expand(*m.shape)
    return view, np.broadcast_to(m[..., :1], m.shape)


def check(a_np, b_np, a, b, dtype, op=ember.mm):
    got = op(a, b).numpy()
    want = expected(a_np, b_np, dtype)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


# ---- mm ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
@pytest.mark.parametrize("layout_a", LAYOUTS)
@pytest.mark.parametrize("layout_b", ["contiguous", "transposed", "strided", "reversed-rows"])
def test_mm_layouts(dtype, layout_a, layout_b):
    a_np, b_np = values((7, 5), dtype, 1), values((5, 6), dtype, 2)
    check(a_np, b_np, LAYOUTS[layout_a](a_np), LAYOUTS[layout_b](b_np), dtype)


@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
@pytest.mark.parametrize("layout_b", LAYOUTS)
def test_mm_layouts_of_b(dtype, layout_b):
    a_np, b_np = values((4, 9), dtype, 3), values((9, 3), dtype, 4)
    check(a_np, b_np, LAYOUTS["transposed"](a_np), LAYOUTS[layout_b](b_np), dtype)


@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
@pytest.mark.parametrize("which", ["a-rows", "a-cols", "b-rows", "b-cols"])
def test_mm_broadcast_operands(dtype, which):
    a_np, b_np = values((6, 4), dtype, 5), values((4, 5), dtype, 6)
    a, b = ember.from_numpy(a_np), ember.from_numpy(b_np)
    expand = broadcast_rows if which.endswith("rows") else broadcast_cols
    if which.startswith("a"):
        a, a_np = expand(a_np)
    else:
        b, b_np = expand(b_np)
    check(a_np, b_np, a, b, dtype)


@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
@pytest.mark.parametrize(
    ("n", "k", "p"),
    [(1, 1, 1), (1, 7, 1), (1, 5, 8), (8, 5, 1), (0, 3, 4), (3, 4, 0), (0, 0, 0), (70, 64, 90)],
)
def test_mm_shapes(dtype, n, k, p):
    a_np, b_np = values((n, k), dtype, 7), values((k, p), dtype, 8)
    check(a_np, b_np, LAYOUTS["transposed"](a_np), ember.from_numpy(b_np), dtype)
    check(a_np, b_np, ember.from_numpy(a_np), LAYOUTS["strided"](b_np), dtype)


@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_mm_k_zero_gives_zeros(dtype):
    # A recycled buffer holds garbage: the kernel must write the zeros, not assume them.
    for _ in range(3):
        ember.full((5, 6), 7, dtype=dtype)
    out = ember.mm(ember.empty((5, 0), dtype=dtype), ember.empty((0, 6), dtype=dtype)).numpy()
    assert out.shape == (5, 6) and (out.astype(np.float64) == 0).all()


@pytest.mark.parametrize("view", ["row", "column"])
def test_mm_single_row_or_column_with_odd_strides(view):
    """A 1 x k row with a big stride, a k x 1 column with a big stride: still BLAS-expressible."""
    big = values((8, 12), ember.float32, 9)
    base = ember.from_numpy(big)
    if view == "row":
        a, a_np = base[2:3, ::3], big[2:3, ::3]
        b_np = values((a_np.shape[1], 5), ember.float32, 10)
        check(a_np, b_np, a, ember.from_numpy(b_np), ember.float32)
    else:
        b, b_np = base[::2, 4:5], big[::2, 4:5]
        a_np = values((3, b_np.shape[0]), ember.float32, 11)
        check(a_np, b_np, ember.from_numpy(a_np), b, ember.float32)


@pytest.mark.parametrize(
    ("dtype", "bits"), [(ember.int8, 8), (ember.uint8, 8), (ember.int16, 16), (ember.int32, 32)]
)
def test_mm_integer_overflow_wraps(dtype, bits):
    info = np.iinfo(dtype.np)
    a_np = np.full((2, 300), info.max, dtype.np)
    b_np = np.full((300, 2), info.max, dtype.np)
    got = ember.mm(ember.from_numpy(a_np), ember.from_numpy(b_np)).numpy()
    total = (int(info.max) ** 2 * 300) % (1 << bits)
    want = np.array(total, np.uint64).astype(np.dtype(f"u{bits // 8}")).view(dtype.np)
    assert (got == want).all()


def test_mm_int64_wraps():
    a = ember.from_numpy(np.full((1, 3), 1 << 62, np.int64))
    b = ember.from_numpy(np.full((3, 1), 4, np.int64))
    assert ember.mm(a, b).item() == 0  # 3 * 2^64 wraps to 0


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_mm_random_floats(dtype, layout):
    rng = np.random.default_rng(12)
    a_np = rng.standard_normal((130, 257)).astype(dtype.np)
    b_np = rng.standard_normal((257, 65)).astype(dtype.np)
    got = ember.mm(LAYOUTS[layout](a_np), LAYOUTS["transposed"](b_np)).numpy()
    want = a_np.astype(np.float64) @ b_np.astype(np.float64)
    tol = 1e-4 if dtype is ember.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16], ids=str)
def test_mm_half_precision_rounds_a_float32_product(dtype):
    rng = np.random.default_rng(13)
    a_np = rng.standard_normal((33, 40)).astype(np_dtype(dtype))
    b_np = rng.standard_normal((40, 17)).astype(np_dtype(dtype))
    got = ember.mm(ember.from_numpy(a_np), LAYOUTS["transposed"](b_np)).numpy()
    want = (a_np.astype(np.float32) @ b_np.astype(np.float32)).astype(np_dtype(dtype))
    # float32 summation order differs between sgemm and numpy: at most one ulp after rounding.
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2)


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16], ids=str)
@pytest.mark.parametrize(
    ("sizes", "layout_a", "layout_b"),
    [
        ((1, 600, 1100, 40), "contiguous", "transposed"),  # k over two blocks, a ragged third
        ((1, 1030, 70, 1100), "transposed", "strided"),  # rows and columns over several blocks
        ((2, 520, 530, 20), "batch-broadcast", "reversed-batch"),
    ],
    ids=["k-blocks", "row-and-column-blocks", "batched"],
)
def test_half_products_larger_than_a_block(dtype, sizes, layout_a, layout_b):
    """Large float16/bfloat16 products go through sgemm block by block (512 x 512 x 1024),
    accumulating in float32 over all of k: with exact small-integer sums the result is the exact
    product rounded once, bit for bit. The size that switches to blocks is lowered to 0 here, so
    that these products, over several blocks, take that path (oneDNN, which takes bfloat16 ones
    first, is switched off)."""
    from ember_backend_cpu._kernels import ffi
    from ember_backend_cpu.kernels import linalg

    batch, n, k, p = sizes
    a_np, b_np = values((batch, n, k), dtype, 30), values((batch, k, p), dtype, 31)
    a, a_np = _batch_layout(layout_a, a_np)
    b, b_np = _batch_layout(layout_b, b_np)
    lib.ember_matmul_set_half_whole_max(0)
    linalg.use_dnnl(ffi, lib, False)
    try:
        if batch == 1:
            check(a_np[0], b_np[0], a[0], b[0], dtype)
        else:
            check(a_np, b_np, a, b, dtype, ember.bmm)
    finally:
        lib.ember_matmul_set_half_whole_max(1 << 24)
        linalg.use_dnnl(ffi, lib)


def test_mm_nan_and_inf_propagate():
    a = ember.from_numpy(np.array([[np.nan, 1.0], [np.inf, 1.0]], np.float32))
    b = ember.from_numpy(np.array([[1.0], [1.0]], np.float32))
    got = ember.mm(a, b).numpy()
    assert np.isnan(got[0, 0]) and np.isinf(got[1, 0])


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=str)
def test_products_share_the_openmp_pool_and_lapack_follows_the_thread_count(dtype):
    """Products split over ember's OpenMP threads with OpenBLAS single-threaded in each (float32
    with oneDNN off, float64 always): exact at every thread count, more slices than rows
    included. LU solves (inv) run on the OpenMP pool too (csrc/lapack.c), OpenBLAS staying at
    one thread; an eigendecomposition runs on OpenBLAS's pool with ember's thread count."""
    from ember_backend_cpu._kernels import ffi
    from ember_backend_cpu.kernels import linalg

    openblas = linalg.openblas_library()
    before = lib.ember_num_threads()
    linalg.use_dnnl(ffi, lib, False)
    try:
        for threads in (1, 3, before):
            lib.ember_set_num_threads(threads)
            for n, k, p in [(200, 300, 100), (2, 4000, 300), (300, 4000, 2)]:
                a_np, b_np = values((n, k), dtype, 14), values((k, p), dtype, 15)
                check(a_np, b_np, ember.from_numpy(a_np), LAYOUTS["transposed"](b_np), dtype)
            assert openblas.scipy_openblas_get_num_threads() == 1
            ember.linalg.inv(ember.eye(64, dtype=dtype) * 2)
            assert openblas.scipy_openblas_get_num_threads() == 1
            ember.linalg.eigh(ember.eye(64, dtype=dtype) * 2)
            assert openblas.scipy_openblas_get_num_threads() == threads
    finally:
        lib.ember_set_num_threads(before)
        linalg.use_dnnl(ffi, lib)


def test_bool_has_no_kernel():
    a = ember.from_numpy(np.ones((2, 2), bool))
    with pytest.raises(RuntimeError, match="not implemented"):
        ember.mm(a, a)


# ---- bmm -----------------------------------------------------------------------------------------
BATCH_LAYOUTS = {
    **LAYOUTS,
    # the batch dim innermost: no unit stride in the matrix dims
    "batch-last": lambda m: ember.from_numpy(np.moveaxis(m, 0, -1).copy()).permute(2, 0, 1),
    "reversed-batch": lambda m: ember.from_numpy(m[::-1].copy()[::-1]),
    "batch-broadcast": None,  # built in the test: needs the values changed
}


@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
@pytest.mark.parametrize("layout_a", BATCH_LAYOUTS)
@pytest.mark.parametrize("layout_b", ["contiguous", "transposed", "batch-last", "batch-broadcast"])
def test_bmm_layouts(dtype, layout_a, layout_b):
    check_bmm(dtype, layout_a, layout_b, (3, 4, 5, 6))


@pytest.mark.parametrize("dtype", [ember.int32, ember.float16, ember.float32], ids=str)
@pytest.mark.parametrize("layout_a", ["contiguous", "transposed", "batch-broadcast", "strided"])
@pytest.mark.parametrize("layout_b", ["transposed", "reversed-batch"])
@pytest.mark.parametrize(
    "sizes", [(3, 64, 48, 50), (2, 150, 140, 130)], ids=["batch-strided", "gemm-each"]
)
def test_bmm_layouts_large(dtype, layout_a, layout_b, sizes):
    # The two BLAS strategies (one gemm_batch_strided call; a gemm per matrix), and sizes above
    # the OpenMP threshold for the C loop.
    check_bmm(dtype, layout_a, layout_b, sizes)


def check_bmm(dtype, layout_a, layout_b, sizes):
    batch, n, k, p = sizes
    a_np, b_np = values((batch, n, k), dtype, 16), values((batch, k, p), dtype, 17)
    a, a_np = _batch_layout(layout_a, a_np)
    b, b_np = _batch_layout(layout_b, b_np)
    check(a_np, b_np, a, b, dtype, ember.bmm)


def _batch_layout(name, m):
    if name == "batch-broadcast":
        return ember.from_numpy(m[:1].copy()).expand(*m.shape), np.broadcast_to(m[:1], m.shape)
    return BATCH_LAYOUTS[name](m), m


@pytest.mark.parametrize("dtype", [ember.int32, ember.float16, ember.float32], ids=str)
@pytest.mark.parametrize(
    ("batch", "n", "k", "p"), [(0, 2, 3, 4), (3, 0, 2, 2), (3, 2, 0, 2), (3, 2, 2, 0), (1, 1, 1, 1)]
)
def test_bmm_degenerate_shapes(dtype, batch, n, k, p):
    a_np, b_np = values((batch, n, k), dtype, 18), values((batch, k, p), dtype, 19)
    check(a_np, b_np, ember.from_numpy(a_np), LAYOUTS["transposed"](b_np), dtype, ember.bmm)


@pytest.mark.parametrize("batch", [1, 64])
def test_bmm_random_floats(batch):
    rng = np.random.default_rng(20)
    a_np = rng.standard_normal((batch, 33, 47)).astype(np.float32)
    b_np = rng.standard_normal((batch, 47, 29)).astype(np.float32)
    got = ember.bmm(LAYOUTS["transposed"](a_np), ember.from_numpy(b_np)).numpy()
    want = a_np.astype(np.float64) @ b_np.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_matmul_composites_run_on_these_kernels():
    a_np, b_np = values((2, 3, 4, 5), ember.float32, 21), values((5, 6), ember.float32, 22)
    a, b = ember.from_numpy(a_np), ember.from_numpy(b_np)
    np.testing.assert_array_equal(ember.matmul(a, b).numpy(), a_np @ b_np)
    c_np = values((3, 5, 2), ember.float32, 23)
    np.testing.assert_array_equal(ember.matmul(a, ember.from_numpy(c_np)).numpy(), a_np @ c_np)
    v = values((5,), ember.float32, 24)
    np.testing.assert_array_equal(
        ember.mv(ember.from_numpy(b_np.T.copy()), ember.from_numpy(v)).numpy(), b_np.T @ v
    )
