"""cuBLAS through cffi's ABI mode: the library is opened at run time, nothing is compiled.

``libcublas`` comes from the ``nvidia-cublas`` wheel when installed, else from the CUDA toolkit
($CUDA_HOME/lib64, /usr/local/cuda/lib64) or the loader's search path. One handle per device,
created in the device's primary context and bound to the current stream before each call.
float32 uses ``cublasSgemm_v2`` (TF32 only when ``ember.backends.cuda.matmul.allow_tf32`` is
set, then ``cublasGemmEx`` with CUBLAS_COMPUTE_32F_FAST_TF32), float16/bfloat16
``cublasGemmEx`` with float32 accumulation (transposes: ember_backend_gpu.launch.OP_N/OP_T are
cuBLAS's values), float64 ``cublasDgemm_v2``; batches go through
``cublasGemmStridedBatchedEx``; complex64/complex128 ``cublasGemmEx`` (CUDA_C_32F/64F, with
CUBLAS_OP_C for conjugate views, see ember_backend_gpu/kernels/linalg.py). ``trsm``
(``cublas[SD]trsm_v2``) serves ember.linalg's triangular solves.
"""

from __future__ import annotations

from ember_backend_gpu.libraries import BlasHandles, open_library

from .toolkit import library_paths

CDEF = """
typedef struct cublasContext *cublasHandle_t;
typedef struct CUstream_st *cudaStream_t;
int cublasCreate_v2(cublasHandle_t *handle);
int cublasDestroy_v2(cublasHandle_t handle);
int cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId);
int cublasSgemm_v2(cublasHandle_t handle, int transa, int transb, int m, int n, int k,
                   const float *alpha, const void *A, int lda, const void *B, int ldb,
                   const float *beta, void *C, int ldc);
int cublasDgemm_v2(cublasHandle_t handle, int transa, int transb, int m, int n, int k,
                   const double *alpha, const void *A, int lda, const void *B, int ldb,
                   const double *beta, void *C, int ldc);
int cublasGemmEx(cublasHandle_t handle, int transa, int transb, int m, int n, int k,
                 const void *alpha, const void *A, int Atype, int lda, const void *B, int Btype,
                 int ldb, const void *beta, void *C, int Ctype, int ldc, int computeType,
                 int algo);
int cublasStrsm_v2(cublasHandle_t handle, int side, int uplo, int trans, int diag, int m, int n,
                   const float *alpha, const void *A, int lda, void *B, int ldb);
int cublasDtrsm_v2(cublasHandle_t handle, int side, int uplo, int trans, int diag, int m, int n,
                   const double *alpha, const void *A, int lda, void *B, int ldb);
int cublasGemmStridedBatchedEx(cublasHandle_t handle, int transa, int transb, int m, int n,
                               int k, const void *alpha, const void *A, int Atype, int lda,
                               long long strideA, const void *B, int Btype, int ldb,
                               long long strideB, const void *beta, void *C, int Ctype, int ldc,
                               long long strideC, int batchCount, int computeType, int algo);
"""

GEMM_DEFAULT = -1
# cudaDataType_t (library_types.h) and cublasComputeType_t (cublas_api.h) values.
DATA_TYPE = {"float32": 0, "float64": 1, "float16": 2, "bfloat16": 14, "complex64": 4,
             "complex128": 5}  # fmt: skip
# The scalar type of alpha and beta (cuBLAS's scale type for each compute type).
SCALE_TYPE = {"float64": "double", "complex64": "float", "complex128": "double"}
COMPUTE_32F, COMPUTE_32F_FAST_TF32, COMPUTE_64F = 68, 77, 70
STATUS = {
    1: "CUBLAS_STATUS_NOT_INITIALIZED",
    3: "CUBLAS_STATUS_ALLOC_FAILED",
    7: "CUBLAS_STATUS_INVALID_VALUE",
    8: "CUBLAS_STATUS_ARCH_MISMATCH",
    11: "CUBLAS_STATUS_MAPPING_ERROR",
    13: "CUBLAS_STATUS_EXECUTION_FAILED",
    14: "CUBLAS_STATUS_INTERNAL_ERROR",
    15: "CUBLAS_STATUS_NOT_SUPPORTED",
    16: "CUBLAS_STATUS_LICENSE_ERROR",
}


def library_candidates() -> list[str]:
    """Paths to try for libcublas, best first."""
    return library_paths("cublas")


class Cublas(BlasHandles):
    """The few cuBLAS calls ember uses, for every device of one runtime."""

    NAME = "cuBLAS"
    HANDLE_TYPE, STREAM_TYPE = "cublasHandle_t", "cudaStream_t"
    CREATE, SET_STREAM = "cublasCreate_v2", "cublasSetStream_v2"
    STATUS = STATUS
    COMPLEX = True  # gemm takes complex64/complex128 and OP_C

    def __init__(self, runtime):
        ffi, lib, self.path = open_library(
            CDEF,
            library_candidates() or ["libcublas.so"],
            "cuBLAS",
            "Install it with `pip install nvidia-cublas` or the CUDA toolkit's libcublas",
        )
        super().__init__(runtime, ffi, lib)
        self._alphas = {}

    def _alpha(self, dtype: str, negate: bool):
        """``(alpha, beta)`` pointers: alpha 1 (or -1), beta 0, in ``dtype``'s scale type."""
        key = (SCALE_TYPE.get(dtype, "float"), 2 if dtype.startswith("complex") else 1, negate)
        found = self._alphas.get(key)
        if found is None:
            kind, parts, _ = key
            one = [-1.0 if negate else 1.0] + [0.0] * (parts - 1)
            new = self.ffi.new
            found = self._alphas[key] = (new(f"{kind}[]", one), new(f"{kind}[]", parts))
        return found

    def gemm(
        self, index, dtype: str, ta, tb, m, n, k, a, lda, sa, b, ldb, sb, c, ldc, sc, batch: int,
        negate: bool = False,
    ) -> None:  # fmt: skip
        """Column-major ``C = op(A) op(B)`` (``-op(A) op(B)`` when ``negate``) for ``batch``
        matrices (strides in elements)."""
        handle = self.handle(index)
        lib, cast = self.lib, self.ffi.cast
        pa, pb, pc = cast("void *", a), cast("void *", b), cast("void *", c)
        one, zero = self._alpha(dtype, negate)
        tf32 = bool(self.runtime.flags.get("matmul.allow_tf32", False))
        if dtype in ("float64", "complex128"):
            compute = COMPUTE_64F
        else:
            compute = COMPUTE_32F_FAST_TF32 if dtype == "float32" and tf32 else COMPUTE_32F
        if batch == 1 and dtype == "float32" and not tf32:
            status = lib.cublasSgemm_v2(
                handle, ta, tb, m, n, k, one, pa, lda, pb, ldb, zero, pc, ldc
            )
            return self._check(status, "cublasSgemm_v2")
        if batch == 1 and dtype == "float64":
            status = lib.cublasDgemm_v2(
                handle, ta, tb, m, n, k, one, pa, lda, pb, ldb, zero, pc, ldc
            )
            return self._check(status, "cublasDgemm_v2")
        kind = DATA_TYPE[dtype]
        if batch == 1:
            status = lib.cublasGemmEx(
                handle,
                ta,
                tb,
                m,
                n,
                k,
                one,
                pa,
                kind,
                lda,
                pb,
                kind,
                ldb,
                zero,
                pc,
                kind,
                ldc,
                compute,
                GEMM_DEFAULT,
            )
            return self._check(status, "cublasGemmEx")
        status = lib.cublasGemmStridedBatchedEx(
            handle,
            ta,
            tb,
            m,
            n,
            k,
            one,
            pa,
            kind,
            lda,
            sa,
            pb,
            kind,
            ldb,
            sb,
            zero,
            pc,
            kind,
            ldc,
            sc,
            batch,
            compute,
            GEMM_DEFAULT,
        )
        return self._check(status, "cublasGemmStridedBatchedEx")

    def trsm(self, index, dtype: str, batch, m, n, left, upper, trans, unit, a, a_bs, b) -> None:
        """Column-major ``op(A) X = B`` (left) or ``X op(A) = B`` in place of B (m x n, packed),
        for ``batch`` matrices; A's batch stride ``a_bs`` is in elements (0: one A)."""
        handle = self.handle(index)
        one, _ = self._scalars[dtype]
        fn = self.lib.cublasStrsm_v2 if dtype == "float32" else self.lib.cublasDtrsm_v2
        item = 4 if dtype == "float32" else 8
        # cublasSideMode_t, cublasFillMode_t, cublasOperation_t, cublasDiagType_t values
        flags = (0 if left else 1, 1 if upper else 0, 1 if trans else 0, 1 if unit else 0)
        lda, ldb = max(1, m if left else n), max(1, m)
        cast = self.ffi.cast
        for i in range(batch):
            status = fn(
                handle,
                *flags,
                m,
                n,
                one,
                cast("void *", a + i * a_bs * item),
                lda,
                cast("void *", b + i * m * n * item),
                ldb,
            )
            self._check(status, "trsm")
