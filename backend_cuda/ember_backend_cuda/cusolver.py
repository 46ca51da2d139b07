"""cuSOLVER (dense) through cffi's ABI mode, for ember.linalg on CUDA: the library is opened at run
time, nothing is compiled, as cuBLAS is (cublas.py).

``libcusolver`` comes from the ``nvidia-cusolver`` wheel when installed, else from the CUDA
toolkit or the loader's search path. One handle per device, bound to the current stream before
each call; workspaces come from the runtime's per-stream scratch. Matrices are column-major and
packed, as the kernel glue (ember_backend_gpu/kernels/lapack.py) lays them out; the routines are
called once per matrix of a batch. float32 and float64 (S and D); complex (C and Z) slot in with
the same signatures.
"""

from __future__ import annotations

from ember_backend_gpu.libraries import BlasHandles, open_library

from .toolkit import library_paths

_ROUTINES = """
int cusolverDn{L}getrf_bufferSize(cusolverDnHandle_t h, int m, int n, {T} *A, int lda, int *lwork);
int cusolverDn{L}getrf(cusolverDnHandle_t h, int m, int n, {T} *A, int lda, {T} *work, int *ipiv,
                       int *info);
int cusolverDn{L}getrs(cusolverDnHandle_t h, int trans, int n, int nrhs, const {T} *A, int lda,
                       const int *ipiv, {T} *B, int ldb, int *info);
int cusolverDn{L}potrf_bufferSize(cusolverDnHandle_t h, int uplo, int n, {T} *A, int lda,
                                  int *lwork);
int cusolverDn{L}potrf(cusolverDnHandle_t h, int uplo, int n, {T} *A, int lda, {T} *work,
                       int lwork, int *info);
int cusolverDn{L}geqrf_bufferSize(cusolverDnHandle_t h, int m, int n, {T} *A, int lda,
                                  int *lwork);
int cusolverDn{L}geqrf(cusolverDnHandle_t h, int m, int n, {T} *A, int lda, {T} *tau, {T} *work,
                       int lwork, int *info);
int cusolverDn{L}orgqr_bufferSize(cusolverDnHandle_t h, int m, int n, int k, const {T} *A,
                                  int lda, const {T} *tau, int *lwork);
int cusolverDn{L}orgqr(cusolverDnHandle_t h, int m, int n, int k, {T} *A, int lda,
                       const {T} *tau, {T} *work, int lwork, int *info);
int cusolverDn{L}syevd_bufferSize(cusolverDnHandle_t h, int jobz, int uplo, int n, const {T} *A,
                                  int lda, const {T} *W, int *lwork);
int cusolverDn{L}syevd(cusolverDnHandle_t h, int jobz, int uplo, int n, {T} *A, int lda, {T} *W,
                       {T} *work, int lwork, int *info);
int cusolverDn{L}gesvdj_bufferSize(cusolverDnHandle_t h, int jobz, int econ, int m, int n,
                                   const {T} *A, int lda, const {T} *S, const {T} *U, int ldu,
                                   const {T} *V, int ldv, int *lwork, gesvdjInfo_t params);
int cusolverDn{L}gesvdj(cusolverDnHandle_t h, int jobz, int econ, int m, int n, {T} *A, int lda,
                        {T} *S, {T} *U, int ldu, {T} *V, int ldv, {T} *work, int lwork,
                        int *info, gesvdjInfo_t params);
"""
CDEF = (
    """
typedef struct cusolverDnContext *cusolverDnHandle_t;
typedef struct gesvdjInfo *gesvdjInfo_t;
typedef struct CUstream_st *cudaStream_t;
int cusolverDnCreate(cusolverDnHandle_t *handle);
int cusolverDnDestroy(cusolverDnHandle_t handle);
int cusolverDnSetStream(cusolverDnHandle_t handle, cudaStream_t streamId);
int cusolverDnCreateGesvdjInfo(gesvdjInfo_t *info);
int cusolverDnDestroyGesvdjInfo(gesvdjInfo_t info);
"""
    + _ROUTINES.format(L="S", T="float")
    + _ROUTINES.format(L="D", T="double")
)
LETTERS = {"float32": ("S", "float"), "float64": ("D", "double")}
# cublasFillMode_t, cublasOperation_t, cusolverEigMode_t values.
LOWER, UPPER = 0, 1
EIG_NOVECTOR, EIG_VECTOR = 0, 1
STATUS = {
    1: "CUSOLVER_STATUS_NOT_INITIALIZED",
    2: "CUSOLVER_STATUS_ALLOC_FAILED",
    3: "CUSOLVER_STATUS_INVALID_VALUE",
    4: "CUSOLVER_STATUS_ARCH_MISMATCH",
    6: "CUSOLVER_STATUS_EXECUTION_FAILED",
    7: "CUSOLVER_STATUS_INTERNAL_ERROR",
    8: "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED",
}


def library_candidates() -> list[str]:
    """Paths to try for libcusolver, best first."""
    return library_paths("cusolver")


class Cusolver(BlasHandles):
    """The dense cuSOLVER routines ember.linalg uses, for every device of one runtime. Every
    method takes device addresses of packed column-major batches and loops over the batch."""

    NAME = "cuSOLVER"
    HANDLE_TYPE, STREAM_TYPE = "cusolverDnHandle_t", "cudaStream_t"
    CREATE, SET_STREAM = "cusolverDnCreate", "cusolverDnSetStream"
    STATUS = STATUS

    def __init__(self, runtime):
        ffi, lib, self.path = open_library(
            CDEF,
            library_candidates() or ["libcusolver.so"],
            "cuSOLVER",
            "Install it with `pip install nvidia-cusolver` or the CUDA toolkit's libcusolver",
        )
        super().__init__(runtime, ffi, lib)
        self._blas = None

    def trsm(self, *args) -> None:
        """Triangular solves are BLAS: cuBLAS's trsm (see Cublas.trsm)."""
        if self._blas is None:
            self._blas = self.runtime.make_blas()
        self._blas.trsm(*args)

    def _fn(self, dtype: str, name: str):
        return getattr(self.lib, f"cusolverDn{LETTERS[dtype][0]}{name}")

    def _ptr(self, dtype: str, address: int):
        return self.ffi.cast(f"{LETTERS[dtype][1]} *", address)

    def _ints(self, address: int):
        return self.ffi.cast("int *", address)

    def _workspace(self, index: int, dtype: str, query, *args) -> tuple:
        """(address, size in elements) of a workspace of the size ``query(*args, &lwork)`` asks."""
        size = self.ffi.new("int *")
        self._check(query(*args, size), "bufferSize")
        itemsize = 4 if dtype == "float32" else 8
        return self.runtime.scratch(index, max(size[0], 1) * itemsize), max(size[0], 1)

    def getrf(self, index, dtype, batch, m, n, a, ipiv, info):
        h, lda, k, size = self.handle(index), max(1, m), min(m, n), m * n * self._item(dtype)
        work, _ = self._workspace(
            index, dtype, self._fn(dtype, "getrf_bufferSize"), h, m, n, self._ptr(dtype, a), lda
        )
        for i in range(batch):
            status = self._fn(dtype, "getrf")(
                h,
                m,
                n,
                self._ptr(dtype, a + i * size),
                lda,
                self._ptr(dtype, work),
                self._ints(ipiv + 4 * i * k),
                self._ints(info + 4 * i),
            )
            self._check(status, "getrf")

    def getrs(self, index, dtype, batch, n, nrhs, trans, lu, lu_bs, ipiv, ipiv_bs, b, info):
        h, ld, item = self.handle(index), max(1, n), self._item(dtype)
        for i in range(batch):
            status = self._fn(dtype, "getrs")(
                h,
                trans,
                n,
                nrhs,
                self._ptr(dtype, lu + i * lu_bs * item),
                ld,
                self._ints(ipiv + 4 * i * ipiv_bs),
                self._ptr(dtype, b + i * n * nrhs * item),
                ld,
                self._ints(info + 4 * i),
            )
            self._check(status, "getrs")

    def potrf(self, index, dtype, batch, n, upper, a, info):
        h, ld, size = self.handle(index), max(1, n), n * n * self._item(dtype)
        uplo = UPPER if upper else LOWER
        work, lwork = self._workspace(
            index, dtype, self._fn(dtype, "potrf_bufferSize"), h, uplo, n, self._ptr(dtype, a), ld
        )
        for i in range(batch):
            status = self._fn(dtype, "potrf")(
                h,
                uplo,
                n,
                self._ptr(dtype, a + i * size),
                ld,
                self._ptr(dtype, work),
                lwork,
                self._ints(info + 4 * i),
            )
            self._check(status, "potrf")

    def geqrf(self, index, dtype, batch, m, n, a, tau, info):
        h, lda, k, item = self.handle(index), max(1, m), min(m, n), self._item(dtype)
        work, lwork = self._workspace(
            index, dtype, self._fn(dtype, "geqrf_bufferSize"), h, m, n, self._ptr(dtype, a), lda
        )
        for i in range(batch):
            status = self._fn(dtype, "geqrf")(
                h,
                m,
                n,
                self._ptr(dtype, a + i * m * n * item),
                lda,
                self._ptr(dtype, tau + i * k * item),
                self._ptr(dtype, work),
                lwork,
                self._ints(info + 4 * i),
            )
            self._check(status, "geqrf")

    def orgqr(self, index, dtype, batch, m, n, k, a, tau, tau_bs, info):
        h, lda, item = self.handle(index), max(1, m), self._item(dtype)
        work, lwork = self._workspace(
            index,
            dtype,
            self._fn(dtype, "orgqr_bufferSize"),
            h,
            m,
            n,
            k,
            self._ptr(dtype, a),
            lda,
            self._ptr(dtype, tau),
        )
        for i in range(batch):
            status = self._fn(dtype, "orgqr")(
                h,
                m,
                n,
                k,
                self._ptr(dtype, a + i * m * n * item),
                lda,
                self._ptr(dtype, tau + i * tau_bs * item),
                self._ptr(dtype, work),
                lwork,
                self._ints(info + 4 * i),
            )
            self._check(status, "orgqr")

    def syevd(self, index, dtype, batch, n, upper, vectors, a, w, info):
        h, ld, item = self.handle(index), max(1, n), self._item(dtype)
        jobz, uplo = (EIG_VECTOR if vectors else EIG_NOVECTOR), (UPPER if upper else LOWER)
        work, lwork = self._workspace(
            index,
            dtype,
            self._fn(dtype, "syevd_bufferSize"),
            h,
            jobz,
            uplo,
            n,
            self._ptr(dtype, a),
            ld,
            self._ptr(dtype, w),
        )
        for i in range(batch):
            status = self._fn(dtype, "syevd")(
                h,
                jobz,
                uplo,
                n,
                self._ptr(dtype, a + i * n * n * item),
                ld,
                self._ptr(dtype, w + i * n * item),
                self._ptr(dtype, work),
                lwork,
                self._ints(info + 4 * i),
            )
            self._check(status, "syevd")

    def gesvdj(self, index, dtype, batch, m, n, econ, vectors, a, s, u, v, info):
        """Jacobi SVD (no m >= n restriction, unlike gesvd): U is m x ucols (ldu = m), V is
        n x vcols (ldv = n), ucols = vcols = min(m, n) when ``econ``."""
        h, item, k = self.handle(index), self._item(dtype), min(m, n)
        jobz = EIG_VECTOR if vectors else EIG_NOVECTOR
        ucols, vcols = (k, k) if econ else (m, n)
        params = self.ffi.new("gesvdjInfo_t *")
        self._check(self.lib.cusolverDnCreateGesvdjInfo(params), "CreateGesvdjInfo")
        try:
            args = (
                h,
                jobz,
                int(econ),
                m,
                n,
                self._ptr(dtype, a),
                max(1, m),
                self._ptr(dtype, s),
                self._ptr(dtype, u),
                max(1, m),
                self._ptr(dtype, v),
                max(1, n),
            )
            size = self.ffi.new("int *")
            self._check(self._fn(dtype, "gesvdj_bufferSize")(*args, size, params[0]), "bufferSize")
            lwork = max(size[0], 1)
            work = self.runtime.scratch(index, lwork * item)
            for i in range(batch):
                status = self._fn(dtype, "gesvdj")(
                    h,
                    jobz,
                    int(econ),
                    m,
                    n,
                    self._ptr(dtype, a + i * m * n * item),
                    max(1, m),
                    self._ptr(dtype, s + i * k * item),
                    self._ptr(dtype, u + i * m * ucols * item if vectors else u),
                    max(1, m),
                    self._ptr(dtype, v + i * n * vcols * item if vectors else v),
                    max(1, n),
                    self._ptr(dtype, work),
                    lwork,
                    self._ints(info + 4 * i),
                    params[0],
                )
                self._check(status, "gesvdj")
        finally:
            self.lib.cusolverDnDestroyGesvdjInfo(params[0])

    @staticmethod
    def _item(dtype: str) -> int:
        return 4 if dtype == "float32" else 8
