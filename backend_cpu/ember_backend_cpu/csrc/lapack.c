/* Batched LAPACK calls for ember.linalg: getrf, getrs, potrf, trsm, geqrf, orgqr, gesdd, syevd,
 * the least-squares drivers, sytrf, sytrs and geev.
 *
 * The routines are OpenBLAS's LAPACK from the scipy-openblas32 wheel (Fortran symbols such as
 * scipy_dgetrf_, 32-bit integers), handed over as addresses by the Python glue exactly as the BLAS
 * is for matmul.c: nothing links against the wheel at build time. No factorization is written
 * here: this file only loops over the batch, sizes the workspaces LAPACK asks for, and clears the
 * triangle potrf leaves untouched.
 *
 * Fortran passes every argument by reference, and gfortran appends one hidden length (size_t)
 * per character argument: they are passed, as the Fortran ABI expects.
 *
 * Each routine's pointer type and driver is written once per scalar kind by a macro. The real
 * kinds (s, d) are instantiated below; complex kinds (c, z) get their own macro where LAPACK's
 * signature differs (rwork arguments, ungqr/heevd names) and slot into the same tables.
 */
#include "ember_cpu.h"
#include "api_lapack.h"

#include <stdlib.h>

/* kernels/lapack.py ROUTINES lists the same names in the same order. */
enum {
    R_GETRF, R_GETRS, R_POTRF, R_TRSM, R_GEQRF, R_ORGQR, R_GESDD, R_SYEVD,
    R_GELS, R_GELSY, R_GELSD, R_GELSS, R_SYTRF, R_SYTRS, R_GEEV, R_COUNT
};
enum { K_S, K_D, K_C, K_Z, K_COUNT };

static void *routines[K_COUNT][R_COUNT];

static int kind_of(int dtype) {
    return dtype == EM_F32 ? K_S : dtype == EM_F64 ? K_D : -1;
}

void ember_lapack_set(int dtype, int routine, intptr_t address) {
    int k = kind_of(dtype);
    if (k >= 0 && routine >= 0 && routine < R_COUNT) routines[k][routine] = (void *)address;
}

void ember_blas_follow_threads(void); /* matmul.c: OpenBLAS follows ember's thread count */

typedef size_t flen; /* gfortran's hidden CHARACTER length */

static int max1(int v) { return v > 1 ? v : 1; }
static int min2(int a, int b) { return a < b ? a : b; }

/* LAPACK's optimal workspace size from a query, rounded up: single precision rounds large sizes
 * down, and a workspace one element short is an error. */
static int work_size(double query) { return max1((int)(query * (1 + 1e-6)) + 1); }

/* Clear the triangle potrf does not reference (column-major n x n). */
#define CLEAR_TRIANGLE(T)                                                                        \
    static void clear_triangle_##T(T *a, int n, int upper) {                                     \
        for (int64_t j = 0; j < n; j++) {                                                        \
            if (upper)                                                                           \
                for (int64_t r = j + 1; r < n; r++) a[j * n + r] = 0;                            \
            else                                                                                 \
                for (int64_t r = 0; r < j; r++) a[j * n + r] = 0;                                \
        }                                                                                        \
    }
CLEAR_TRIANGLE(float)
CLEAR_TRIANGLE(double)

#define REAL_TYPES(L, T)                                                                         \
    typedef void (*getrf_##L)(const int *, const int *, T *, const int *, int *, int *);         \
    typedef void (*getrs_##L)(const char *, const int *, const int *, const T *, const int *,    \
                              const int *, T *, const int *, int *, flen);                       \
    typedef void (*potrf_##L)(const char *, const int *, T *, const int *, int *, flen);         \
    typedef void (*trsm_##L)(int, int, int, int, int, int, int, T, const T *, int, T *, int);    \
    typedef void (*geqrf_##L)(const int *, const int *, T *, const int *, T *, T *, const int *, \
                              int *);                                                            \
    typedef void (*orgqr_##L)(const int *, const int *, const int *, T *, const int *,           \
                              const T *, T *, const int *, int *);                               \
    typedef void (*gesdd_##L)(const char *, const int *, const int *, T *, const int *, T *,     \
                              T *, const int *, T *, const int *, T *, const int *, int *,       \
                              int *, flen);                                                      \
    typedef void (*syevd_##L)(const char *, const char *, const int *, T *, const int *, T *,    \
                              T *, const int *, int *, const int *, int *, flen, flen);          \
    typedef void (*gels_##L)(const char *, const int *, const int *, const int *, T *,           \
                             const int *, T *, const int *, T *, const int *, int *, flen);      \
    typedef void (*gelsy_##L)(const int *, const int *, const int *, T *, const int *, T *,      \
                              const int *, int *, const T *, int *, T *, const int *, int *);    \
    typedef void (*gelsd_##L)(const int *, const int *, const int *, T *, const int *, T *,      \
                              const int *, T *, const T *, int *, T *, const int *, int *,       \
                              int *);                                                            \
    typedef void (*gelss_##L)(const int *, const int *, const int *, T *, const int *, T *,      \
                              const int *, T *, const T *, int *, T *, const int *, int *);      \
    typedef void (*sytrf_##L)(const char *, const int *, T *, const int *, int *, T *,           \
                              const int *, int *, flen);                                         \
    typedef void (*sytrs_##L)(const char *, const int *, const int *, const T *, const int *,    \
                              const int *, T *, const int *, int *, flen);                       \
    typedef void (*geev_##L)(const char *, const char *, const int *, T *, const int *, T *,     \
                             T *, T *, const int *, T *, const int *, T *, const int *, int *,   \
                             flen, flen);

REAL_TYPES(s, float)
REAL_TYPES(d, double)

/* The routine of kind K as type L_name, or EM_UNSUPPORTED from the enclosing driver. */
#define ROUTINE(var, L, K, name, R)                                                              \
    name##_##L var = (name##_##L)routines[K][R];                                                 \
    if (!var) return EM_UNSUPPORTED

/* ---- LU, Cholesky, triangular solves ------------------------------------------------------
 * These run on OpenMP's pool only, OpenBLAS single-threaded, as matmul.c's products do: a batch
 * one matrix per thread, one large solve its right-hand sides split over the threads, one
 * factorization on the calling thread. OpenBLAS's own pool next to OpenMP's cost more than it
 * gave on two cores: its idle workers spin for a while after each call, holding the core an
 * OpenMP worker of the next elementwise op needs (and the reverse), and the backward of cholesky
 * switched OpenBLAS between one thread (its products) and two (its solves) on every call: at
 * 64 x 32 x 32 it took 8-60 ms on two threads against 0.8 ms on one. */
void ember_blas_one_thread(void); /* matmul.c */

/* The cost model of a batch: each LAPACK call costs its multiply-adds plus SOLVE_CALL_WORK (what a
 * call of a small matrix costs beyond its arithmetic: argument checks, pivot searches, row swaps,
 * the unblocked kernels' dispatch). Measured on one core (docs/threads.md): getrf of 8 x 8 0.33 us
 * (170 multiply-adds), 16 x 16 1.27 us (1365), 32 x 32 3.25 us (10923); a call of 1024 + its
 * multiply-adds runs at 3-4 per ns from 8 x 8 to 32 x 32, so the model's work is time within
 * 2x. Work from SOLVE_PARALLEL_WORK (about 40 us on one core) splits over the threads: a team
 * of awake workers costs a few microseconds, a woken one tens (GOMP_SPINCOUNT, docs/threads.md),
 * so two threads gain from there: 64 matrices of 16 x 16 and up (64 x 32 x 32, issue 14's
 * batched solve, was on one thread under the old 4M multiply-add cutoff: 1.62x PyTorch's time on
 * two threads). Each matrix of a batch is one LAPACK call on one thread whatever the split, so
 * a batch's results are the same for every thread count (tests/linalg/test_solve_threads.py). */
#define SOLVE_CALL_WORK 1024
#define SOLVE_PARALLEL_WORK ((int64_t)1 << 17)

static int solve_threads(int64_t work) {
    return work >= SOLVE_PARALLEL_WORK ? omp_get_max_threads() : 1;
}

/* Work of `batch` calls of `madds` multiply-adds each. */
static int64_t batch_work(int64_t batch, int64_t madds) {
    return batch * (madds + SOLVE_CALL_WORK);
}

/* Multiply-adds of an LU of an m x n matrix (n^3 / 3 when square). */
static int64_t lu_madds(int64_t m, int64_t n) {
    int64_t k = m < n ? m : n;
    return m * n * k - (m + n) * k * k / 2 + k * k * k / 3;
}

/* A factorization of `batch` matrices of `madds` multiply-adds each: OpenMP threads over the
 * batch, or 1 (no team). */
static int factor_threads(int64_t batch, int64_t madds) {
    ember_blas_one_thread();
    return batch > 1 ? solve_threads(batch_work(batch, madds)) : 1;
}

/* The OpenMP parts of a solve with `cols` independent right-hand sides per matrix: `*per_matrix`
 * says whether the parts are matrices of the batch (else slices of one matrix's columns). */
static int solve_parts(int64_t batch, int64_t cols, int64_t work, int *per_matrix) {
    ember_blas_one_thread();
    int threads = solve_threads(work);
    *per_matrix = batch > 1 || threads == 1;
    if (*per_matrix) return threads;
    return cols < threads ? (int)cols : threads;
}

#define SOLVE_DRIVERS(L, T, K)                                                                   \
    static int getrf_run_##L(int64_t batch, int m, int n, T *a, int *ipiv, int *info) {          \
        ROUTINE(f, L, K, getrf, R_GETRF);                                                        \
        int lda = max1(m);                                                                       \
        int64_t size = (int64_t)m * n, k = min2(m, n);                                           \
        int threads = factor_threads(batch, lu_madds(m, n));                                     \
        _Pragma("omp parallel for schedule(static) if (threads > 1)")                            \
        for (int64_t i = 0; i < batch; i++) f(&m, &n, a + i * size, &lda, ipiv + i * k, info + i); \
        return EM_OK;                                                                            \
    }                                                                                            \
    static void getrs_one_##L(getrs_##L f, char t, int n, int nrhs, const T *lu, const int *ipiv, \
                              T *b, int *info) {                                                 \
        int ld = max1(n);                                                                        \
        f(&t, &n, &nrhs, lu, &ld, ipiv, b, &ld, info, 1);                                        \
    }                                                                                            \
    static int getrs_run_##L(int64_t batch, int n, int nrhs, int trans, const T *lu,             \
                             int64_t lu_bs, const int *ipiv, int64_t ipiv_bs, T *b, int *info) { \
        ROUTINE(f, L, K, getrs, R_GETRS);                                                        \
        char t = "NTC"[trans];                                                                   \
        int per_matrix;                                                                          \
        int64_t work = batch_work(batch, (int64_t)n * n * nrhs);                                 \
        int parts = solve_parts(batch, nrhs, work, &per_matrix);                                 \
        int64_t size = (int64_t)n * nrhs;                                                        \
        if (per_matrix) {                                                                        \
            _Pragma("omp parallel for schedule(static) if (parts > 1)")                          \
            for (int64_t i = 0; i < batch; i++)                                                  \
                getrs_one_##L(f, t, n, nrhs, lu + i * lu_bs, ipiv + i * ipiv_bs, b + i * size,   \
                              info + i);                                                         \
            return EM_OK;                                                                        \
        }                                                                                        \
        int codes[parts];                                                                        \
        _Pragma("omp parallel for schedule(static) if (parts > 1)")                              \
        for (int q = 0; q < parts; q++) {                                                        \
            int lo = (int)((int64_t)nrhs * q / parts), hi = (int)((int64_t)nrhs * (q + 1) / parts); \
            getrs_one_##L(f, t, n, hi - lo, lu, ipiv, b + (int64_t)lo * max1(n), codes + q);     \
        }                                                                                        \
        info[0] = codes[0];                                                                      \
        for (int q = 1; q < parts; q++)                                                          \
            if (codes[q]) info[0] = codes[q];                                                    \
        return EM_OK;                                                                            \
    }                                                                                            \
    static int potrf_run_##L(int64_t batch, int n, int upper, T *a, int *info) {                 \
        ROUTINE(f, L, K, potrf, R_POTRF);                                                        \
        char uplo = upper ? 'U' : 'L';                                                           \
        int ld = max1(n);                                                                        \
        int threads = factor_threads(batch, (int64_t)n * n * n / 6);                             \
        _Pragma("omp parallel for schedule(static) if (threads > 1)")                            \
        for (int64_t i = 0; i < batch; i++) {                                                    \
            f(&uplo, &n, a + i * (int64_t)n * n, &ld, info + i, 1);                              \
            clear_triangle_##T(a + i * (int64_t)n * n, n, upper);                                \
        }                                                                                        \
        return EM_OK;                                                                            \
    }                                                                                            \
    /* cblas enums: column-major 102, left 141 / right 142, upper 121 / lower 122, no-trans 111 \
     * / trans 112, non-unit 131 / unit 132. B is m x n column-major (leading dimension ldb). */ \
    static void trsm_one_##L(trsm_##L f, int m, int n, int left, int upper, int trans, int unit, \
                             const T *a, T *b, int ldb) {                                        \
        f(102, left ? 141 : 142, upper ? 121 : 122, trans ? 112 : 111, unit ? 132 : 131, m, n,   \
          1, a, max1(left ? m : n), b, ldb);                                                     \
    }                                                                                            \
    static int trsm_run_##L(int64_t batch, int m, int n, int left, int upper, int trans,         \
                            int unit, const T *a, int64_t a_bs, T *b) {                          \
        ROUTINE(f, L, K, trsm, R_TRSM);                                                          \
        int64_t size = (int64_t)m * n, order = left ? m : n;                                     \
        int per_matrix;                                                                          \
        /* The independent parts of one solve: B's columns (left), or its rows (right). */       \
        int64_t sides = left ? n : m;                                                            \
        int parts = solve_parts(batch, sides, batch_work(batch, size * order), &per_matrix);     \
        if (per_matrix) {                                                                        \
            _Pragma("omp parallel for schedule(static) if (parts > 1)")                          \
            for (int64_t i = 0; i < batch; i++)                                                  \
                trsm_one_##L(f, m, n, left, upper, trans, unit, a + i * a_bs, b + i * size,      \
                             max1(m));                                                           \
            return EM_OK;                                                                        \
        }                                                                                        \
        _Pragma("omp parallel for schedule(static) if (parts > 1)")                              \
        for (int q = 0; q < parts; q++) {                                                        \
            int64_t lo = sides * q / parts, hi = sides * (q + 1) / parts;                        \
            if (left)                                                                            \
                trsm_one_##L(f, m, (int)(hi - lo), 1, upper, trans, unit, a, b + lo * max1(m),   \
                             max1(m));                                                           \
            else                                                                                 \
                trsm_one_##L(f, (int)(hi - lo), n, 0, upper, trans, unit, a, b + lo, max1(m));   \
        }                                                                                        \
        return EM_OK;                                                                            \
    }

SOLVE_DRIVERS(s, float, K_S)
SOLVE_DRIVERS(d, double, K_D)

/* ---- QR ----------------------------------------------------------------------------------- */
#define QR_DRIVERS(L, T, K)                                                                      \
    static int geqrf_run_##L(int64_t batch, int m, int n, T *a, T *tau, int *info) {             \
        ROUTINE(f, L, K, geqrf, R_GEQRF);                                                        \
        int lda = max1(m), lwork = -1;                                                           \
        int64_t size = (int64_t)m * n, k = min2(m, n);                                           \
        T query = 0;                                                                             \
        f(&m, &n, a, &lda, tau, &query, &lwork, info);                                           \
        lwork = work_size(query);                                                                \
        T *work = malloc(sizeof(T) * lwork);                                                     \
        if (!work) return EMBER_LAPACK_NO_MEMORY;                                                \
        for (int64_t i = 0; i < batch; i++)                                                      \
            f(&m, &n, a + i * size, &lda, tau + i * k, work, &lwork, info + i);                  \
        free(work);                                                                              \
        return EM_OK;                                                                            \
    }                                                                                            \
    static int orgqr_run_##L(int64_t batch, int m, int n, int k, T *a, const T *tau,             \
                             int64_t tau_bs, int *info) {                                        \
        ROUTINE(f, L, K, orgqr, R_ORGQR);                                                        \
        int lda = max1(m), lwork = -1;                                                           \
        int64_t size = (int64_t)m * n;                                                           \
        T query = 0;                                                                             \
        f(&m, &n, &k, a, &lda, tau, &query, &lwork, info);                                       \
        lwork = work_size(query);                                                                \
        T *work = malloc(sizeof(T) * lwork);                                                     \
        if (!work) return EMBER_LAPACK_NO_MEMORY;                                                \
        for (int64_t i = 0; i < batch; i++)                                                      \
            f(&m, &n, &k, a + i * size, &lda, tau + i * tau_bs, work, &lwork, info + i);         \
        free(work);                                                                              \
        return EM_OK;                                                                            \
    }

QR_DRIVERS(s, float, K_S)
QR_DRIVERS(d, double, K_D)

/* ---- SVD and symmetric eigendecomposition ------------------------------------------------- */
#define SPECTRAL_DRIVERS(L, T, K)                                                                \
    static int gesdd_run_##L(int64_t batch, int m, int n, char job, T *a, T *s, T *u, T *vt,     \
                             int *info) {                                                        \
        ROUTINE(f, L, K, gesdd, R_GESDD);                                                        \
        int k = min2(m, n), lda = max1(m), ldu = max1(m), lwork = -1;                            \
        int ucols = job == 'A' ? m : k, ldvt = max1(job == 'A' ? n : k);                         \
        int64_t size = (int64_t)m * n;                                                           \
        int64_t u_bs = job == 'N' ? 0 : (int64_t)m * ucols;                                      \
        int64_t vt_bs = job == 'N' ? 0 : (int64_t)(job == 'A' ? n : k) * n;                      \
        T query = 0, dummy = 0;                                                                  \
        if (job == 'N') u = vt = &dummy;                                                         \
        int *iwork = malloc(sizeof(int) * (8 * (size_t)k + 1));                                  \
        if (!iwork) return EMBER_LAPACK_NO_MEMORY;                                               \
        f(&job, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, &query, &lwork, iwork, info, 1);         \
        lwork = work_size(query);                                                                \
        T *work = malloc(sizeof(T) * lwork);                                                     \
        if (!work) {                                                                             \
            free(iwork);                                                                         \
            return EMBER_LAPACK_NO_MEMORY;                                                       \
        }                                                                                        \
        for (int64_t i = 0; i < batch; i++)                                                      \
            f(&job, &m, &n, a + i * size, &lda, s + i * k, u + i * u_bs, &ldu, vt + i * vt_bs,   \
              &ldvt, work, &lwork, iwork, info + i, 1);                                          \
        free(work);                                                                              \
        free(iwork);                                                                             \
        return EM_OK;                                                                            \
    }                                                                                            \
    static int syevd_run_##L(int64_t batch, int n, int upper, int vectors, T *a, T *w,           \
                             int *info) {                                                        \
        ROUTINE(f, L, K, syevd, R_SYEVD);                                                        \
        char jobz = vectors ? 'V' : 'N', uplo = upper ? 'U' : 'L';                               \
        int lda = max1(n), lwork = -1, liwork = -1, iquery = 0;                                  \
        T query = 0;                                                                             \
        f(&jobz, &uplo, &n, a, &lda, w, &query, &lwork, &iquery, &liwork, info, 1, 1);           \
        lwork = work_size(query);                                                                \
        liwork = max1(iquery);                                                                   \
        T *work = malloc(sizeof(T) * lwork);                                                     \
        int *iwork = malloc(sizeof(int) * liwork);                                               \
        int status = work && iwork ? EM_OK : EMBER_LAPACK_NO_MEMORY;                             \
        for (int64_t i = 0; i < batch && !status; i++)                                           \
            f(&jobz, &uplo, &n, a + i * (int64_t)n * n, &lda, w + i * n, work, &lwork, iwork,    \
              &liwork, info + i, 1, 1);                                                          \
        free(work);                                                                              \
        free(iwork);                                                                             \
        return status;                                                                           \
    }

SPECTRAL_DRIVERS(s, float, K_S)
SPECTRAL_DRIVERS(d, double, K_D)

/* ---- least squares ------------------------------------------------------------------------ */
/* One call of the chosen driver (lwork = -1 asks for the workspace size). */
#define LSTSQ_CALL(L, T, K)                                                                      \
    static int lstsq_call_##L(int driver, int m, int n, int nrhs, T *a, T *b, int ldb, T rcond,  \
                              int *jpvt, T *s, int *rank, T *work, int lwork, int *iwork,        \
                              int *info) {                                                       \
        int lda = max1(m);                                                                       \
        if (driver == 0) {                                                                       \
            ROUTINE(f, L, K, gels, R_GELS);                                                      \
            f("N", &m, &n, &nrhs, a, &lda, b, &ldb, work, &lwork, info, 1);                      \
        } else if (driver == 1) {                                                                \
            ROUTINE(f, L, K, gelsy, R_GELSY);                                                    \
            f(&m, &n, &nrhs, a, &lda, b, &ldb, jpvt, &rcond, rank, work, &lwork, info);          \
        } else if (driver == 2) {                                                                \
            ROUTINE(f, L, K, gelsd, R_GELSD);                                                    \
            f(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, work, &lwork, iwork, info);      \
        } else {                                                                                 \
            ROUTINE(f, L, K, gelss, R_GELSS);                                                    \
            f(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, work, &lwork, info);             \
        }                                                                                        \
        return EM_OK;                                                                            \
    }

#define LSTSQ_DRIVER(L, T, K)                                                                    \
    LSTSQ_CALL(L, T, K)                                                                          \
    static int lstsq_run_##L(int driver, int64_t batch, int m, int n, int nrhs, double rcond,    \
                             T *a, T *b, int64_t *rank, T *s, int *info) {                       \
        int k = min2(m, n), ldb = max1(m > n ? m : n), lwork = -1, r = 0, iquery = 0;            \
        T query = 0;                                                                             \
        int *jpvt = calloc((size_t)max1(n), sizeof(int));                                        \
        if (!jpvt) return EMBER_LAPACK_NO_MEMORY;                                                \
        int status = lstsq_call_##L(driver, m, n, nrhs, a, b, ldb, (T)rcond, jpvt, s, &r,        \
                                    &query, -1, &iquery, info);                                  \
        lwork = work_size(query);                                                                \
        T *work = malloc(sizeof(T) * lwork);                                                     \
        int *iwork = malloc(sizeof(int) * (size_t)max1(iquery));                                 \
        if (!status && !(work && iwork)) status = EMBER_LAPACK_NO_MEMORY;                        \
        for (int64_t i = 0; i < batch && !status; i++) {                                         \
            for (int j = 0; j < n; j++) jpvt[j] = 0; /* gelsy: every column free to pivot */     \
            r = driver == 0 ? k : 0;                                                             \
            status = lstsq_call_##L(driver, m, n, nrhs, a + i * (int64_t)m * n,                  \
                                    b + i * (int64_t)ldb * nrhs, ldb, (T)rcond, jpvt,            \
                                    s ? s + i * k : NULL, &r, work, lwork, iwork, info + i);     \
            if (rank) rank[i] = r;                                                               \
        }                                                                                        \
        free(work);                                                                              \
        free(iwork);                                                                             \
        free(jpvt);                                                                              \
        return status;                                                                           \
    }

LSTSQ_DRIVER(s, float, K_S)
LSTSQ_DRIVER(d, double, K_D)

/* ---- symmetric indefinite (LDL^T) and general eigenproblems ------------------------------- */
#define LDL_EIG_DRIVERS(L, T, K)                                                                 \
    static int sytrf_run_##L(int64_t batch, int n, int upper, T *a, int *ipiv, int *info) {      \
        ROUTINE(f, L, K, sytrf, R_SYTRF);                                                        \
        char uplo = upper ? 'U' : 'L';                                                           \
        int lda = max1(n), lwork = -1;                                                           \
        T query = 0;                                                                             \
        f(&uplo, &n, a, &lda, ipiv, &query, &lwork, info, 1);                                    \
        lwork = work_size(query);                                                                \
        T *work = malloc(sizeof(T) * lwork);                                                     \
        if (!work) return EMBER_LAPACK_NO_MEMORY;                                                \
        for (int64_t i = 0; i < batch; i++)                                                      \
            f(&uplo, &n, a + i * (int64_t)n * n, &lda, ipiv + i * n, work, &lwork, info + i, 1); \
        free(work);                                                                              \
        return EM_OK;                                                                            \
    }                                                                                            \
    static int sytrs_run_##L(int64_t batch, int n, int nrhs, int upper, const T *a,              \
                             int64_t a_bs, const int *ipiv, int64_t ipiv_bs, T *b, int *info) {  \
        ROUTINE(f, L, K, sytrs, R_SYTRS);                                                        \
        char uplo = upper ? 'U' : 'L';                                                           \
        int ld = max1(n);                                                                        \
        for (int64_t i = 0; i < batch; i++)                                                      \
            f(&uplo, &n, &nrhs, a + i * a_bs, &ld, ipiv + i * ipiv_bs,                           \
              b + i * (int64_t)n * nrhs, &ld, info + i, 1);                                      \
        return EM_OK;                                                                            \
    }                                                                                            \
    static int geev_run_##L(int64_t batch, int n, int vectors, T *a, T *wr, T *wi, T *vr,        \
                            int *info) {                                                         \
        ROUTINE(f, L, K, geev, R_GEEV);                                                          \
        char jobvl = 'N', jobvr = vectors ? 'V' : 'N';                                           \
        int lda = max1(n), ldvl = 1, ldvr = vectors ? max1(n) : 1, lwork = -1;                   \
        T query = 0, dummy = 0;                                                                  \
        int64_t vr_bs = vectors ? (int64_t)n * n : 0;                                            \
        if (!vectors) vr = &dummy;                                                               \
        f(&jobvl, &jobvr, &n, a, &lda, wr, wi, &dummy, &ldvl, vr, &ldvr, &query, &lwork, info,   \
          1, 1);                                                                                 \
        lwork = work_size(query);                                                                \
        T *work = malloc(sizeof(T) * lwork);                                                     \
        if (!work) return EMBER_LAPACK_NO_MEMORY;                                                \
        for (int64_t i = 0; i < batch; i++)                                                      \
            f(&jobvl, &jobvr, &n, a + i * (int64_t)n * n, &lda, wr + i * n, wi + i * n, &dummy,  \
              &ldvl, vr + i * vr_bs, &ldvr, work, &lwork, info + i, 1, 1);                       \
        free(work);                                                                              \
        return EM_OK;                                                                            \
    }

LDL_EIG_DRIVERS(s, float, K_S)
LDL_EIG_DRIVERS(d, double, K_D)

/* ---- entry points: dtype -> scalar kind --------------------------------------------------- */
#define BY_KIND(call_s, call_d)                                                                  \
    do {                                                                                         \
        if (batch == 0) return EM_OK;                                                            \
        ember_blas_follow_threads();                                                             \
        switch (kind_of(dtype)) {                                                                \
        case K_S: return call_s;                                                                 \
        case K_D: return call_d;                                                                 \
        default: return EM_UNSUPPORTED;                                                          \
        }                                                                                        \
    } while (0)
#define P(T, v) ((T *)(v))
#define I32(v) ((int *)(v))

int ember_lapack_getrf(int dtype, int64_t batch, int m, int n, intptr_t a, intptr_t ipiv,
                       intptr_t info) {
    BY_KIND(getrf_run_s(batch, m, n, P(float, a), I32(ipiv), I32(info)),
            getrf_run_d(batch, m, n, P(double, a), I32(ipiv), I32(info)));
}

int ember_lapack_getrs(int dtype, int64_t batch, int n, int nrhs, int trans, intptr_t lu,
                       int64_t lu_bs, intptr_t ipiv, int64_t ipiv_bs, intptr_t b,
                       intptr_t info) {
    if (trans < 0 || trans > 2) return EM_BAD_ARGUMENT;
    BY_KIND(getrs_run_s(batch, n, nrhs, trans, P(float, lu), lu_bs, I32(ipiv), ipiv_bs,
                        P(float, b), I32(info)),
            getrs_run_d(batch, n, nrhs, trans, P(double, lu), lu_bs, I32(ipiv), ipiv_bs,
                        P(double, b), I32(info)));
}

int ember_lapack_potrf(int dtype, int64_t batch, int n, int upper, intptr_t a, intptr_t info) {
    BY_KIND(potrf_run_s(batch, n, upper, P(float, a), I32(info)),
            potrf_run_d(batch, n, upper, P(double, a), I32(info)));
}

int ember_lapack_trsm(int dtype, int64_t batch, int m, int n, int left, int upper, int trans,
                      int unit, intptr_t a, int64_t a_bs, intptr_t b) {
    if (m == 0 || n == 0) return EM_OK;
    BY_KIND(trsm_run_s(batch, m, n, left, upper, trans, unit, P(float, a), a_bs, P(float, b)),
            trsm_run_d(batch, m, n, left, upper, trans, unit, P(double, a), a_bs, P(double, b)));
}

int ember_lapack_geqrf(int dtype, int64_t batch, int m, int n, intptr_t a, intptr_t tau,
                       intptr_t info) {
    BY_KIND(geqrf_run_s(batch, m, n, P(float, a), P(float, tau), I32(info)),
            geqrf_run_d(batch, m, n, P(double, a), P(double, tau), I32(info)));
}

int ember_lapack_orgqr(int dtype, int64_t batch, int m, int n, int k, intptr_t a, intptr_t tau,
                       int64_t tau_bs, intptr_t info) {
    BY_KIND(orgqr_run_s(batch, m, n, k, P(float, a), P(float, tau), tau_bs, I32(info)),
            orgqr_run_d(batch, m, n, k, P(double, a), P(double, tau), tau_bs, I32(info)));
}

int ember_lapack_gesdd(int dtype, int64_t batch, int m, int n, int job, intptr_t a, intptr_t s,
                       intptr_t u, intptr_t vt, intptr_t info) {
    if (job != 'N' && job != 'S' && job != 'A') return EM_BAD_ARGUMENT;
    BY_KIND(gesdd_run_s(batch, m, n, (char)job, P(float, a), P(float, s), P(float, u),
                        P(float, vt), I32(info)),
            gesdd_run_d(batch, m, n, (char)job, P(double, a), P(double, s), P(double, u),
                        P(double, vt), I32(info)));
}

int ember_lapack_syevd(int dtype, int64_t batch, int n, int upper, int vectors, intptr_t a,
                       intptr_t w, intptr_t info) {
    BY_KIND(syevd_run_s(batch, n, upper, vectors, P(float, a), P(float, w), I32(info)),
            syevd_run_d(batch, n, upper, vectors, P(double, a), P(double, w), I32(info)));
}

int ember_lapack_gels(int dtype, int driver, int64_t batch, int m, int n, int nrhs, double rcond,
                      intptr_t a, intptr_t b, intptr_t rank, intptr_t s, intptr_t info) {
    if (driver < 0 || driver > 3) return EM_BAD_ARGUMENT;
    BY_KIND(lstsq_run_s(driver, batch, m, n, nrhs, rcond, P(float, a), P(float, b),
                        P(int64_t, rank), P(float, s), I32(info)),
            lstsq_run_d(driver, batch, m, n, nrhs, rcond, P(double, a), P(double, b),
                        P(int64_t, rank), P(double, s), I32(info)));
}

int ember_lapack_sytrf(int dtype, int64_t batch, int n, int upper, intptr_t a, intptr_t ipiv,
                       intptr_t info) {
    BY_KIND(sytrf_run_s(batch, n, upper, P(float, a), I32(ipiv), I32(info)),
            sytrf_run_d(batch, n, upper, P(double, a), I32(ipiv), I32(info)));
}

int ember_lapack_sytrs(int dtype, int64_t batch, int n, int nrhs, int upper, intptr_t a,
                       int64_t a_bs, intptr_t ipiv, int64_t ipiv_bs, intptr_t b, intptr_t info) {
    BY_KIND(sytrs_run_s(batch, n, nrhs, upper, P(float, a), a_bs, I32(ipiv), ipiv_bs,
                        P(float, b), I32(info)),
            sytrs_run_d(batch, n, nrhs, upper, P(double, a), a_bs, I32(ipiv), ipiv_bs,
                        P(double, b), I32(info)));
}

int ember_lapack_geev(int dtype, int64_t batch, int n, int vectors, intptr_t a, intptr_t wr,
                      intptr_t wi, intptr_t vr, intptr_t info) {
    BY_KIND(geev_run_s(batch, n, vectors, P(float, a), P(float, wr), P(float, wi), P(float, vr),
                       I32(info)),
            geev_run_d(batch, n, vectors, P(double, a), P(double, wr), P(double, wi),
                       P(double, vr), I32(info)));
}
