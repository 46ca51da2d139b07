"""Matrix products without cuBLAS: every numeric dtype (cuBLAS has no integer GEMM, and this is
also the path when cuBLAS cannot load). One module, ``linalg``; and ``linalg.triangle``, which
clears the triangle cuSOLVER's potrf leaves as it was (ember.linalg.cholesky returns zeros there).

16x16 output tiles through shared memory; integers accumulate in 64 bits (wrapping, so the
stored low bits are the CPU's), float16/bfloat16/float32 in float, float64 in double.
"""

from __future__ import annotations

from .dtypes import family
from .prelude import traits

MM = "qqqq" + "qqq" + "qqq"  # struct em_mm
MM_ARGS = "PPP" + MM

COMMON = r"""
struct em_mm {
    em_i64 batch, n, k, p;
    em_i64 sa0, sa1, sa2; /* bytes: a[batch, row, col] */
    em_i64 sb0, sb1, sb2;
};
template <class T> struct em_mm_acc { typedef em_u64 type; };
template <> struct em_mm_acc<em_f16_t> { typedef float type; };
template <> struct em_mm_acc<em_bf16_t> { typedef float type; };
template <> struct em_mm_acc<em_f32_t> { typedef float type; };
template <> struct em_mm_acc<em_f64_t> { typedef double type; };

template <class T>
EM_DEV void em_matmul(char *out, const char *a, const char *b, const em_mm &m) {
    typedef typename T::st st;
    typedef typename em_mm_acc<T>::type acc;
    __shared__ acc ta[16][16];
    __shared__ acc tb[16][16];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const em_i64 row = (em_i64)blockIdx.y * 16 + ty, col = (em_i64)blockIdx.x * 16 + tx;
    for (em_i64 bi = blockIdx.z; bi < m.batch; bi += gridDim.z) {
        acc sum = 0;
        for (em_i64 k0 = 0; k0 < m.k; k0 += 16) {
            em_i64 ka = k0 + tx, kb = k0 + ty;
            ta[ty][tx] = row < m.n && ka < m.k
                ? (acc)T::ld(*(const st *)(a + bi * m.sa0 + row * m.sa1 + ka * m.sa2)) : (acc)0;
            tb[ty][tx] = kb < m.k && col < m.p
                ? (acc)T::ld(*(const st *)(b + bi * m.sb0 + kb * m.sb1 + col * m.sb2)) : (acc)0;
            __syncthreads();
#pragma unroll
            for (int k = 0; k < 16; k++) sum += ta[ty][k] * tb[k][tx];
            __syncthreads();
        }
        if (row < m.n && col < m.p)
            ((st *)out)[(bi * m.n + row) * m.p + col] = T::sv((typename T::ct)sum);
    }
}
"""


def _module() -> tuple[str, list]:
    parts, kernels = [COMMON], []
    for d in family("NUM"):
        name = f"em_matmul_{d.token}"
        parts.append(
            f"EM_KERNEL {name}(char *out, const char *a, const char *b, em_mm m) {{\n"
            f"    em_matmul<{traits(d.token)}>(out, a, b, m);\n}}\n"
        )
        kernels.append((name, MM_ARGS))
    return "".join(parts), kernels


TRIANGLE_ARGS = "Pqqq"
TRIANGLE = r"""
/* Zero the triangle above (upper = 0) or below (upper = 1) the diagonal of `batch` packed
 * column-major n x n matrices. */
template <class T>
EM_DEV void em_clear_triangle(char *a, em_i64 batch, em_i64 n, em_i64 upper) {
    typename T::st *m = (typename T::st *)a;
    EM_FOR_EACH(k, batch * n * n) {
        em_i64 col = (k / n) % n, row = k % n;
        if (upper ? row > col : row < col) m[k] = T::sv((typename T::ct)0);
    }
}
"""


def _triangle_module() -> tuple[str, list]:
    parts, kernels = [TRIANGLE], []
    for d in family("FLOAT")[2:]:  # float32 and float64: the dtypes the solvers compute in
        name = f"em_clear_triangle_{d.token}"
        parts.append(
            f"EM_KERNEL {name}(char *a, em_i64 batch, em_i64 n, em_i64 upper) {{\n"
            f"    em_clear_triangle<{traits(d.token)}>(a, batch, n, upper);\n}}\n"
        )
        kernels.append((name, TRIANGLE_ARGS))
    return "".join(parts), kernels


def modules() -> dict:
    return {"linalg": _module, "linalg.triangle": _triangle_module}
