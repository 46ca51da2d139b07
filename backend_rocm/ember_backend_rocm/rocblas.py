"""rocBLAS through cffi's ABI mode, for mm/bmm on floating dtypes.

rocBLAS rather than hipBLAS: on AMD GPUs hipBLAS is a thin layer over rocBLAS, and
``rocblas_gemm_strided_batched_ex`` has kept its signature and enum values from ROCm 5 through 6,
whereas ``hipblasGemmEx`` changed its type arguments (hipblasDatatype_t to hipDataType) between
hipBLAS releases, which an ABI-mode declaration cannot follow safely. One call serves every dtype
and batch: float16/bfloat16 accumulate in float32, float32 and float64 in their own type. When
librocblas is absent, ``make_blas`` raises OSError and the glue warns once and runs ember's own
tiled kernel (``em_matmul_*``) instead.
"""

from __future__ import annotations

from ember_backend_gpu.libraries import BlasHandles, open_library

from .hip import library_candidates

CDEF = """
typedef struct _rocblas_handle *rocblas_handle;
typedef struct ihipStream_t *hipStream_t;
int rocblas_create_handle(rocblas_handle *handle);
int rocblas_set_stream(rocblas_handle handle, hipStream_t stream);
int rocblas_gemm_strided_batched_ex(
    rocblas_handle handle, int transA, int transB, int m, int n, int k, const void *alpha,
    const void *a, int a_type, int lda, int64_t stride_a, const void *b, int b_type, int ldb,
    int64_t stride_b, const void *beta, const void *c, int c_type, int ldc, int64_t stride_c,
    void *d, int d_type, int ldd, int64_t stride_d, int batch_count, int compute_type, int algo,
    int32_t solution_index, uint32_t flags);
"""

OPERATION_NONE = 111  # rocblas_operation_none; transpose is 112 (ember's OP_N/OP_T are 0/1)
DATATYPE = {"float16": 150, "float32": 151, "float64": 152, "bfloat16": 168}
ALGO_STANDARD = 0
STATUS = {
    1: "rocblas_status_invalid_handle",
    2: "rocblas_status_not_implemented",
    3: "rocblas_status_invalid_pointer",
    4: "rocblas_status_invalid_size",
    5: "rocblas_status_memory_error",
    6: "rocblas_status_internal_error",
    11: "rocblas_status_invalid_value",
}


class Rocblas(BlasHandles):
    """``gemm`` with ``Cublas.gemm``'s signature (ember_backend_cuda/cublas.py)."""

    NAME = "rocBLAS"
    HANDLE_TYPE, STREAM_TYPE = "rocblas_handle", "hipStream_t"
    CREATE, SET_STREAM = "rocblas_create_handle", "rocblas_set_stream"
    STATUS = STATUS

    def __init__(self, runtime):
        ffi, lib, self.path = open_library(
            CDEF,
            library_candidates("rocblas"),
            "rocBLAS (librocblas)",
            "Install ROCm's rocblas package for fast matrix products",
        )
        super().__init__(runtime, ffi, lib)

    def gemm(
        self, index, dtype: str, ta, tb, m, n, k, a, lda, sa, b, ldb, sb, c, ldc, sc, batch: int
    ) -> None:
        """Column-major ``C = op(A) op(B)`` for ``batch`` matrices (strides in elements)."""
        handle = self.handle(index)
        cast = self.ffi.cast
        kind = DATATYPE[dtype]
        compute = DATATYPE["float64" if dtype == "float64" else "float32"]
        one, zero = self._scalars["float64" if dtype == "float64" else "float32"]
        pc = cast("void *", c)
        status = self.lib.rocblas_gemm_strided_batched_ex(
            handle, OPERATION_NONE + ta, OPERATION_NONE + tb, m, n, k, one,
            cast("void *", a), kind, lda, sa, cast("void *", b), kind, ldb, sb, zero,
            pc, kind, ldc, sc, pc, kind, ldc, sc, batch, compute, ALGO_STANDARD, 0, 0,
        )  # fmt: skip
        self._check(status, "rocblas_gemm_strided_batched_ex")
