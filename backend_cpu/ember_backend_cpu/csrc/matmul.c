/* Matrix products for mm and bmm.
 *
 * float32 goes to oneDNN when it is loaded (matmul_dnnl.c, below); float64, and float32 that
 * oneDNN refuses, go to OpenBLAS from the scipy-openblas32 wheel. Nothing links against it:
 * pip builds this extension in an isolated environment whose paths disappear, so the Python glue
 * dlopens the wheel's library at run time and hands its function pointers to
 * ember_matmul_set_blas. An operand whose layout BLAS can express (rows or columns contiguous,
 * with a leading dimension) is passed in place, column-major ones with CblasTrans; the others
 * (broadcast, negative or two non-unit strides) are packed first. bfloat16 goes to oneDNN when
 * it is loaded (matmul_dnnl.c); float16, and bfloat16 without oneDNN, go through sgemm on
 * float32 copies, block by block for products larger than one block (see
 * matmul_half_blocked), accumulating in float32 and rounding once. Integers, and every dtype when
 * OpenBLAS is missing or a size exceeds its 32-bit ints, use a C loop: integers accumulate in
 * int64 and wrap like PyTorch.
 *
 * Products run OpenBLAS single-threaded inside ember's OpenMP pool, a slice of the result per
 * thread (blas_parallel); LAPACK, whose BLAS calls are inside it, runs on OpenBLAS's own pool.
 */
#include "ember_cpu.h"
#include "api_core.h"
#include "api_linalg.h"
#include "matmul_dnnl.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };

/* cblas_?gemm with OpenBLAS's 32-bit blasint (enums are ints). */
#define GEMM_TYPES(T, S)                                                                         \
    typedef void (*gemm_##T)(int, int, int, int, int, int, S, const S *, int, const S *, int, S,  \
                             S *, int);
GEMM_TYPES(f32, float)
GEMM_TYPES(f64, double)

static struct {
    gemm_f32 gemm_f32;
    gemm_f64 gemm_f64;
    void (*set_num_threads)(int);
    int threads; /* the thread count OpenBLAS was last given (0: never) */
} blas;

void ember_matmul_set_blas(intptr_t sgemm, intptr_t dgemm, intptr_t set_num_threads) {
    blas.gemm_f32 = (gemm_f32)sgemm;
    blas.gemm_f64 = (gemm_f64)dgemm;
    blas.set_num_threads = (void (*)(int))set_num_threads;
    blas.threads = 0;
}

/* OpenBLAS's thread count: `n` threads of its own pool (0: ember's count). Cheap: it only calls
 * OpenBLAS when the count changes. */
static void blas_threads(int n) {
#ifdef _OPENMP
    if (n == 0) n = omp_get_max_threads();
#endif
    if (blas.set_num_threads && n > 0 && n != blas.threads) {
        blas.set_num_threads(n);
        blas.threads = n;
    }
}

/* LAPACK (lapack.c) runs on OpenBLAS's own pool with ember's thread count
 * (ember.set_num_threads, EMBER_NUM_THREADS): a factorization's BLAS calls are inside it. */
void ember_blas_follow_threads(void) { blas_threads(0); }

/* Products run OpenBLAS single-threaded, one call per OpenMP thread on a slice of the result
 * (blas_parallel below), so that one pool, OpenMP's, has the cores: with OpenBLAS's pool next
 * to it, on two cores, a float64 product next to elementwise ops took 4x its time, each pool's
 * waiting workers holding the core the other needed. */
static void blas_one_thread(void) { blas_threads(1); }

/* lapack.c's batched solves: one matrix per OpenMP thread (see there). */
void ember_blas_one_thread(void) { blas_one_thread(); }

static int pool_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* A stack of `batch` matrices: element (m, i, j) is at ptr + m * bs + i * rs + j * cs elements. */
typedef struct {
    const char *ptr;
    int64_t bs, rs, cs;
} em_operand;

/* The same matrices as BLAS sees them: transposition, leading dimension and batch stride. */
typedef struct {
    const char *ptr;
    int trans;
    int64_t ld, bs;
} em_blas_operand;

/* CBLAS_NO_TRANS or CBLAS_TRANS and the leading dimension that describe a rows x cols matrix
 * with strides (rs, cs) in row-major BLAS, or 0 when none does. A size-1 dimension's stride is
 * free, so it never disqualifies a layout. */
static int blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int64_t *ld) {
    int trans = 0;
    if ((cols == 1 || cs == 1) && (rows == 1 || rs >= cols)) {
        trans = CBLAS_NO_TRANS;
        *ld = rows == 1 ? cols : rs;
    } else if ((rows == 1 || rs == 1) && (cols == 1 || cs >= rows)) {
        trans = CBLAS_TRANS;
        *ld = cols == 1 ? rows : cs;
    }
    return *ld <= INT_MAX ? trans : 0;
}

/* `copies` matrices of m, converted to dtype `to`, in a new contiguous buffer (NULL: no memory). */
static void *pack(int to, int from, int64_t copies, int64_t rows, int64_t cols,
                  const em_operand *m, int *status) {
    void *buf = malloc((size_t)(copies * rows * cols * em_itemsize(to)));
    if (!buf) {
        *status = EMBER_MATMUL_NO_MEMORY;
        return NULL;
    }
    int64_t shape[3] = {copies, rows, cols}, strides[3] = {m->bs, m->rs, m->cs};
    *status = ember_copy(to, from, 0, 3, shape, (intptr_t)buf, NULL, (intptr_t)m->ptr, strides);
    return buf;
}

/* A broadcast batch (stride 0) is packed once, not `batch` times. */
static int64_t distinct_copies(int64_t batch, const em_operand *m) {
    return m->bs == 0 ? 1 : batch;
}

/* Describe m to BLAS as dtype `to`, packing it into *scratch when its layout (or dtype) needs.
 * A column-major operand converted to another dtype is converted as it is stored (a contiguous
 * read, where packing it row-major transposed it element by element) and handed to BLAS
 * transposed: linear's bfloat16 product at 128x512x512 went from 1.4x sgemm's time to 1.1x. */
static int blas_operand(int dtype, int to, int64_t batch, int64_t rows, int64_t cols,
                        const em_operand *m, em_blas_operand *op, void **scratch) {
    int64_t ld = 0;
    int trans = blas_layout(rows, cols, m->rs, m->cs, &ld);
    if (trans && to == dtype) {
        *op = (em_blas_operand){m->ptr, trans, ld, batch == 1 ? 0 : m->bs};
        return EM_OK;
    }
    int status = EM_OK;
    int64_t copies = distinct_copies(batch, m);
    if (trans == CBLAS_TRANS) {
        em_operand stored = {m->ptr, m->bs, m->cs, m->rs};
        *scratch = pack(to, dtype, copies, cols, rows, &stored, &status);
        *op = (em_blas_operand){*scratch, CBLAS_TRANS, rows, copies == 1 ? 0 : rows * cols};
        return status;
    }
    *scratch = pack(to, dtype, copies, rows, cols, m, &status);
    *op = (em_blas_operand){*scratch, CBLAS_NO_TRANS, cols, copies == 1 ? 0 : rows * cols};
    return status;
}

static int fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* Products smaller than this (n * k * p) run on the calling thread. */
#define BLAS_PARALLEL_WORK ((int64_t)1 << 17)

/* C[rows, cols] (leading dimension ldc) = op(A) @ op(B), one gemm per OpenMP thread on a slice
 * of C's rows, or of its columns when it has more of those. A row slice of op(A) starts `r`
 * rows in: r * lda elements for a row-major A, r for a transposed one (likewise for B's
 * columns). beta is 0 or 1 (accumulate into C). */
#define BLAS_PARALLEL(T, S)                                                                          static void blas_parallel_##T(int ta, int tb, int64_t rows, int64_t cols, int64_t k,                                            const S *A, int64_t lda, const S *B, int64_t ldb, S beta, S *C,                                   int64_t ldc) {                                                          int parts = rows * cols * k >= BLAS_PARALLEL_WORK ? pool_threads() : 1;                           int by_rows = rows >= cols;                                                                       int64_t along = by_rows ? rows : cols;                                                            if (parts > along) parts = (int)along;                                                            _Pragma("omp parallel for schedule(static) if (parts > 1)")                                      for (int q = 0; q < parts; q++) {                                                                     int64_t lo = along * q / parts, hi = along * (q + 1) / parts;                                     const S *a = A, *b = B;                                                                           S *c = C;                                                                                         int64_t r = rows, n = cols;                                                                       if (by_rows) {                                                                                        a += ta == CBLAS_NO_TRANS ? lo * lda : lo;                                                        c += lo * ldc;                                                                                    r = hi - lo;                                                                                  } else {                                                                                              b += tb == CBLAS_NO_TRANS ? lo : lo * ldb;                                                        c += lo;                                                                                          n = hi - lo;                                                                                  }                                                                                                 blas.gemm_##T(CBLAS_ROW_MAJOR, ta, tb, (int)r, (int)n, (int)k, 1, a, (int)lda, b,                               (int)ldb, beta, c, (int)ldc);                                                   }                                                                                             }
BLAS_PARALLEL(f32, float)
BLAS_PARALLEL(f64, double)

/* A stack of products: one matrix per thread when there are at least as many as threads (and
 * they are not tiny), else each product split over the threads. */
#define BLAS_PRODUCT(T, S)                                                                           static void blas_product_##T(int64_t batch, int64_t n, int64_t k, int64_t p,                                                   const em_blas_operand *a, const em_blas_operand *b, S *c) {              blas_one_thread();                                                                                int threads = pool_threads();                                                                     if (batch >= threads && batch * n * k * p >= BLAS_PARALLEL_WORK) {                                    _Pragma("omp parallel for schedule(static)")                                                     for (int64_t m = 0; m < batch; m++)                                                                   blas.gemm_##T(CBLAS_ROW_MAJOR, a->trans, b->trans, (int)n, (int)p, (int)k, 1,                                   (const S *)a->ptr + m * a->bs, (int)a->ld,                                                        (const S *)b->ptr + m * b->bs, (int)b->ld, 0, c + m * n * p,                                      (int)p);                                                                        return;                                                                                       }                                                                                                 for (int64_t m = 0; m < batch; m++)                                                                   blas_parallel_##T(a->trans, b->trans, n, p, k, (const S *)a->ptr + m * a->bs, a->ld,                                (const S *)b->ptr + m * b->bs, b->ld, 0, c + m * n * p, p);             }
BLAS_PRODUCT(f32, float)
BLAS_PRODUCT(f64, double)

static int matmul_blas(int dtype, int64_t batch, int64_t n, int64_t k, int64_t p, intptr_t out,
                       const em_operand *a, const em_operand *b) {
    int to = dtype == EM_F64 ? EM_F64 : EM_F32;
    em_blas_operand A, B;
    void *scratch_a = NULL, *scratch_b = NULL, *scratch_c = NULL;
    char *c = (char *)out;
    int status = blas_operand(dtype, to, batch, n, k, a, &A, &scratch_a);
    if (!status) status = blas_operand(dtype, to, batch, k, p, b, &B, &scratch_b);
    if (!status && to != dtype) {
        c = scratch_c = malloc((size_t)(batch * n * p * em_itemsize(to)));
        if (!c) status = EMBER_MATMUL_NO_MEMORY;
    }
    if (!status) {
        if (to == EM_F64)
            blas_product_f64(batch, n, k, p, &A, &B, (double *)c);
        else
            blas_product_f32(batch, n, k, p, &A, &B, (float *)c);
        if (scratch_c)
            status = ember_copy(dtype, to, batch * n * p, 0, NULL, out, NULL, (intptr_t)c, NULL);
    }
    free(scratch_a);
    free(scratch_b);
    free(scratch_c);
    return status;
}

/* ---- addmm: the bias copied into the result, then one gemm with beta 1 --------------------- */
#define ADDMM(T, S)                                                                               \
    static int addmm_##T(int64_t n, int64_t k, int64_t p, S *out, const S *bias,                 \
                         int64_t bias_rows, const em_operand *a, const em_operand *b) {          \
        em_blas_operand A, B;                                                                     \
        void *scratch_a = NULL, *scratch_b = NULL;                                                \
        int status = blas_operand(EMC_##T, EMC_##T, 1, n, k, a, &A, &scratch_a);                 \
        if (!status) status = blas_operand(EMC_##T, EMC_##T, 1, k, p, b, &B, &scratch_b);        \
        if (!status) {                                                                            \
            for (int64_t r = 0; r < n; r++)                                                       \
                memcpy(out + r * p, bias + (bias_rows == 1 ? 0 : r * p), (size_t)p * sizeof(S)); \
            if (k > 0) {                                                                          \
                blas_one_thread();                                                                \
                blas_parallel_##T(A.trans, B.trans, n, p, k, (const S *)A.ptr, A.ld,             \
                                  (const S *)B.ptr, B.ld, 1, out, p);                            \
            }                                                                                     \
        }                                                                                         \
        free(scratch_a);                                                                          \
        free(scratch_b);                                                                          \
        return status;                                                                            \
    }
ADDMM(f32, float)
ADDMM(f64, double)

int ember_addmm(int dtype, int64_t n, int64_t k, int64_t p, intptr_t out, intptr_t bias,
                int64_t bias_rows, intptr_t a, const int64_t *sa, intptr_t b, const int64_t *sb) {
    if (!fits_int(n) || !fits_int(k) || !fits_int(p) || (bias_rows != 1 && bias_rows != n))
        return EM_UNSUPPORTED;
    em_operand A = {(const char *)a, 0, sa[0], sa[1]};
    em_operand B = {(const char *)b, 0, sb[0], sb[1]};
    if (dtype == EM_F32 && blas.gemm_f32)
        return addmm_f32(n, k, p, (float *)out, (const float *)bias, bias_rows, &A, &B);
    if (dtype == EM_F64 && blas.gemm_f64)
        return addmm_f64(n, k, p, (double *)out, (const double *)bias, bias_rows, &A, &B);
    return EM_UNSUPPORTED;
}

/* ---- large float16 / bfloat16 products --------------------------------------------------------
 * OpenBLAS (scipy-openblas32) has no half-precision GEMM. Products whose float32 copies would
 * take more than half_whole_max elements go block by block: an MC x KC block of a and a KC x NC
 * block of b are converted to float32 right before sgemm multiplies them, accumulating into an
 * MC x NC float32 block of the result over all of k (beta 1 after the first k block), which is
 * rounded to the output dtype once. Accumulation is float32 end to end, as PyTorch's; the
 * scratch is three blocks (5 MiB) whatever the sizes, where whole copies take 3 x 64 MiB at
 * 4096^3. Smaller products convert whole operands (matmul_blas): one sgemm call and no
 * re-conversion, measured 1.2-1.5x faster at linear-layer sizes (128x784x512, 1024x512x128). */
#define HALF_MC 512
#define HALF_KC 512
#define HALF_NC 1024
static int64_t half_whole_max = (int64_t)1 << 24; /* elements: 64 MiB of float32 copies */

void ember_matmul_set_half_whole_max(int64_t elements) { half_whole_max = elements; }

static int half_whole_fits(int64_t batch, int64_t n, int64_t k, int64_t p) {
    return batch * (n * k + k * p + n * p) <= half_whole_max;
}

/* A rows x cols block of dtype `from` at src (element strides rs, cs) as contiguous float32 at
 * dst, in the order it is stored: row-major (returns CBLAS_NO_TRANS, leading dimension cols)
 * or, for a column-major operand, column-major (CBLAS_TRANS, leading dimension rows), so the
 * conversion reads memory in order. *status gets the copy's status. */
static int to_float_block(int from, const char *src, int64_t rows, int64_t cols, int64_t rs,
                          int64_t cs, float *dst, int column_major, int *status) {
    int64_t shape[2] = {rows, cols}, strides[2] = {rs, cs};
    if (column_major) {
        shape[0] = cols, shape[1] = rows, strides[0] = cs, strides[1] = rs;
    }
    *status = ember_copy(EM_F32, from, 0, 2, shape, (intptr_t)dst, NULL, (intptr_t)src, strides);
    return column_major ? CBLAS_TRANS : CBLAS_NO_TRANS;
}

static int column_major(int64_t rows, int64_t cols, const em_operand *m) {
    int64_t ld = 0;
    return blas_layout(rows, cols, m->rs, m->cs, &ld) == CBLAS_TRANS;
}

/* One MC x NC block of out[m]: the sum over k blocks, then one rounding into `dtype`. */
static int half_block(int dtype, int64_t k, int64_t p, const char *am, const char *bm, char *om,
                      const em_operand *a, const em_operand *b, int64_t i0, int64_t j0,
                      int64_t mc, int64_t nc, float *pa, float *pb, float *pc) {
    int item = em_itemsize(dtype), status = EM_OK, sa = EM_OK, sb = EM_OK;
    int a_cols = column_major(mc, k, a), b_cols = column_major(k, nc, b);
    for (int64_t l0 = 0; l0 < k && !status; l0 += HALF_KC) {
        int64_t kc = k - l0 < HALF_KC ? k - l0 : HALF_KC;
        int ta = to_float_block(dtype, am + (i0 * a->rs + l0 * a->cs) * item, mc, kc, a->rs,
                                a->cs, pa, a_cols, &sa);
        int tb = to_float_block(dtype, bm + (l0 * b->rs + j0 * b->cs) * item, kc, nc, b->rs,
                                b->cs, pb, b_cols, &sb);
        status = sa ? sa : sb;
        if (!status)
            blas_parallel_f32(ta, tb, mc, nc, kc, pa, a_cols ? mc : kc, pb, b_cols ? kc : nc,
                              l0 ? 1 : 0, pc, nc);
    }
    int64_t shape[2] = {mc, nc}, so[2] = {p, 1};
    if (!status)
        status = ember_copy(dtype, EM_F32, 0, 2, shape, (intptr_t)(om + (i0 * p + j0) * item), so,
                            (intptr_t)pc, NULL);
    return status;
}

static int matmul_half_blocked(int dtype, int64_t batch, int64_t n, int64_t k, int64_t p,
                               intptr_t out, const em_operand *a, const em_operand *b) {
    float *pa = malloc(sizeof(float) * HALF_MC * HALF_KC);
    float *pb = malloc(sizeof(float) * HALF_KC * HALF_NC);
    float *pc = malloc(sizeof(float) * HALF_MC * HALF_NC);
    int item = em_itemsize(dtype), status = pa && pb && pc ? EM_OK : EMBER_MATMUL_NO_MEMORY;
    blas_one_thread();
    for (int64_t m = 0; m < batch && !status; m++) {
        const char *am = a->ptr + m * a->bs * item, *bm = b->ptr + m * b->bs * item;
        char *om = (char *)out + m * n * p * item;
        for (int64_t j0 = 0; j0 < p && !status; j0 += HALF_NC)
            for (int64_t i0 = 0; i0 < n && !status; i0 += HALF_MC)
                status = half_block(dtype, k, p, am, bm, om, a, b, i0, j0,
                                    n - i0 < HALF_MC ? n - i0 : HALF_MC,
                                    p - j0 < HALF_NC ? p - j0 : HALF_NC, pa, pb, pc);
    }
    free(pa);
    free(pb);
    free(pc);
    return status;
}

/* ---- small float products: a direct loop ----------------------------------------------------
 * minGPT's attention multiplies 192 matrices of 6x16 by 16x6 (and the like in its backward):
 * 110k multiply-adds in all. On an AVX2 EPYC oneDNN (matmul_dnnl.c, primitive cached) took
 * 150-220 us of thread CPU for that stack and OpenBLAS 260 us (one gemm call per matrix, each
 * ~1.3 us of setup for 576 multiply-adds); this loop takes 37 us. Which products run here:
 * small_fits; the stack is split over the OpenMP pool by matrices from small.parallel
 * multiply-adds in all (EM_PARALLEL_THRESHOLD's order: not measured on the loaded two-core
 * machine). benchmarks/small_matmul_grid.c compares the paths (docs/eager_overhead.md, Round 13).
 *
 * Summation runs in l order for each output element, as a dot product would: NaN and inf
 * propagate as in BLAS. */
#define SMALL_DIM 64

static struct {
    int64_t work, parallel;
} small = {8192, 65536};

void ember_matmul_set_small(int64_t work, int64_t parallel) {
    small.work = work;
    small.parallel = parallel;
}

/* The loop when every side is at most SMALL_DIM and the matrices have at most small.work / 8
 * multiply-adds each, or at most small.work when packing b (below) is cheap next to the
 * products: b's rows used in place, or narrow, or many rows of a to reuse them. In
 * benchmarks/small_matmul_grid.c's grid (round 12) this picked within 6% of the fastest path
 * (geometric mean over 1000 shapes); wider limits lost more to oneDNN than they won. */
static int small_fits(int64_t n, int64_t k, int64_t p, const em_operand *b) {
    int64_t work = n * k * p;
    if (n > SMALL_DIM || k > SMALL_DIM || p > SMALL_DIM || work > small.work) return 0;
    int in_place = b->cs == 1 && (p == 8 || p == 16 || p == 32 || p == 64);
    return work <= small.work / 8 || in_place || p <= 16 || n >= 8;
}

/* b's matrix m as rows of W elements: in place when its rows are W contiguous elements (a
 * pointer to them, stride *ld), else packed into bp, the p real ones then zeros, so that the row
 * loops below work on whole vectors. Packing costs about what n = VL rows of products do: at
 * n = 2 it was most of the time, hence the in-place case. */
#define SMALL_PACK(T, S, W)                                                                       \
    static const S *small_pack_##T##_##W(const S *bm, const em_operand *b, int64_t k, int64_t p, \
                                         S *bp, int64_t *ld) {                                    \
        if (p == W && b->cs == 1) {                                                               \
            *ld = b->rs;                                                                          \
            return bm;                                                                            \
        }                                                                                         \
        for (int64_t l = 0; l < k; l++) {                                                         \
            S *row = bp + l * W;                                                                  \
            const S *from = bm + l * b->rs;                                                       \
            if (b->cs == 1)                                                                       \
                for (int64_t j = 0; j < p; j++) row[j] = from[j];                                 \
            else                                                                                  \
                for (int64_t j = 0; j < p; j++) row[j] = from[j * b->cs];                         \
            for (int64_t j = p; j < W; j++) row[j] = 0;                                           \
        }                                                                                         \
        *ld = W;                                                                                  \
        return bp;                                                                                \
    }

/* out[m] for matrices lo..hi of the stack, R output rows at a time, each row W / VL vectors of
 * accumulators (GCC's generic vectors: 32 bytes, two SSE registers in the default clone), so
 * that each packed b row is loaded once for R rows; a last partial block repeats its first row
 * rather than reading past a. Left to itself, gcc vectorised the l loop with gathers instead
 * (0.77 us a 6x16x6 product, against 0.1 us here). */
#define SMALL_KERNEL(T, S, W, R)                                                                  \
    SMALL_PACK(T, S, W)                                                                           \
    static EM_CLONES void small_##T##_##W(int64_t lo, int64_t hi, int64_t n, int64_t k,          \
                                          int64_t p, S *out, const em_operand *a,                \
                                          const em_operand *b) {                                  \
        typedef S vec __attribute__((vector_size(32)));                                           \
        typedef S uvec __attribute__((vector_size(32), aligned(sizeof(S)))); /* unaligned */      \
        enum { VL = 32 / sizeof(S), NV = W / VL };                                                \
        vec bv[SMALL_DIM * NV];                                                                   \
        const S *bm = NULL;                                                                       \
        int64_t ldb = 0;                                                                          \
        for (int64_t m = lo; m < hi; m++) {                                                       \
            if (m == lo || b->bs != 0)                                                            \
                bm = small_pack_##T##_##W((const S *)b->ptr + m * b->bs, b, k, p, (S *)bv, &ldb); \
            const S *am = (const S *)a->ptr + m * a->bs;                                          \
            S *o = out + m * n * p;                                                               \
            for (int64_t i0 = 0; i0 < n; i0 += R) {                                               \
                int64_t rows = n - i0 < R ? n - i0 : R;                                           \
                const S *ar[R];                                                                   \
                vec acc[R][NV];                                                                   \
                for (int r = 0; r < R; r++) {                                                     \
                    ar[r] = am + (i0 + (r < rows ? r : 0)) * a->rs;                               \
                    for (int v = 0; v < NV; v++) acc[r][v] = (vec){0};                            \
                }                                                                                 \
                for (int64_t l = 0; l < k; l++) {                                                 \
                    const uvec *br = (const uvec *)(bm + l * ldb);                                \
                    for (int r = 0; r < R; r++) {                                                 \
                        const S av = ar[r][l * a->cs];                                            \
                        for (int v = 0; v < NV; v++) acc[r][v] += av * br[v];                     \
                    }                                                                             \
                }                                                                                 \
                for (int64_t r = 0; r < rows; r++) {                                              \
                    const S *row = (const S *)acc[r];                                             \
                    for (int64_t j = 0; j < p; j++) o[(i0 + r) * p + j] = row[j];                 \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }

/* The narrowest kernel that holds a row of p, split over the pool by matrices when the stack
 * has enough work. */
#define SMALL_PRODUCT(T, S)                                                                       \
    SMALL_KERNEL(T, S, 8, 4)                                                                      \
    SMALL_KERNEL(T, S, 16, 4)                                                                     \
    SMALL_KERNEL(T, S, 32, 2)                                                                     \
    SMALL_KERNEL(T, S, 64, 1)                                                                     \
    static void small_stack_##T(int64_t batch, int64_t n, int64_t k, int64_t p, S *out,          \
                                const em_operand *a, const em_operand *b) {                      \
        void (*fn)(int64_t, int64_t, int64_t, int64_t, int64_t, S *, const em_operand *,          \
                   const em_operand *) = p <= 8    ? small_##T##_8                                \
                                         : p <= 16 ? small_##T##_16                               \
                                         : p <= 32 ? small_##T##_32                               \
                                                   : small_##T##_64;                              \
        int parts = batch * n * k * p >= small.parallel ? pool_threads() : 1;                     \
        if (parts > batch) parts = (int)batch;                                                    \
        _Pragma("omp parallel for schedule(static) if (parts > 1)")                               \
        for (int q = 0; q < parts; q++)                                                           \
            fn(batch * q / parts, batch * (q + 1) / parts, n, k, p, out, a, b);                   \
    }
SMALL_PRODUCT(f32, float)
SMALL_PRODUCT(f64, double)

/* ---- the C loop ----------------------------------------------------------------------------
 * out[r, j] for rows r of the folded (batch * n) output: a's row times b, packed contiguous in
 * the accumulator type, MM_TILE output columns at a time so the accumulators stay in registers
 * and L1 (the j loop vectorises). */
#define MM_TILE 256

#define ACC_u8 i64
#define ACC_i8 i64
#define ACC_i16 i64
#define ACC_i32 i64
#define ACC_i64 i64
#define ACC_f16 f32
#define ACC_bf16 f32
#define ACC_f32 f32
#define ACC_f64 f64

typedef void (*mm_rows)(int64_t r, int64_t n, int64_t k, int64_t p, char *out,
                        const em_operand *a, const void *b, int64_t b_bs);

#define LOOP_PRODUCT(T, A)                                                                       \
    static EM_CLONES void rows_##T(int64_t r, int64_t n, int64_t k, int64_t p, char *out,         \
                                   const em_operand *a, const void *b, int64_t b_bs) {            \
        typedef ST_##A acc_t;                                                                      \
        const ST_##T *ar = (const ST_##T *)a->ptr + (r / n) * a->bs + (r % n) * a->rs;             \
        const acc_t *bm = (const acc_t *)b + (r / n) * b_bs;                                       \
        ST_##T *o = (ST_##T *)out + r * p;                                                         \
        acc_t acc[MM_TILE];                                                                        \
        for (int64_t j0 = 0; j0 < p; j0 += MM_TILE) {                                              \
            int64_t w = p - j0 < MM_TILE ? p - j0 : MM_TILE;                                       \
            for (int64_t j = 0; j < w; j++) acc[j] = 0;                                            \
            for (int64_t l = 0; l < k; l++) {                                                      \
                const acc_t av = (acc_t)LD_##T(ar[l * a->cs]);                                     \
                const acc_t *br = bm + l * p + j0;                                                 \
                for (int64_t j = 0; j < w; j++) acc[j] += av * br[j];                              \
            }                                                                                      \
            for (int64_t j = 0; j < w; j++) o[j0 + j] = SV_##T(acc[j]);                            \
        }                                                                                          \
    }
/* Two steps so that ACC_##T expands before LOOP_PRODUCT pastes it. */
#define LOOP_PRODUCT_(T, A) LOOP_PRODUCT(T, A)
#define LOOP_OF(T, unused) LOOP_PRODUCT_(T, ACC_##T)
EM_FOR_NUM(LOOP_OF, 0)

#define ROWS_ENTRY(T, unused) [EMC_##T] = rows_##T,
static const mm_rows ROWS[EM_NDTYPES] = {EM_FOR_NUM(ROWS_ENTRY, 0)};

static int acc_dtype(int dtype) {
    return dtype == EM_F64 ? EM_F64 : dtype >= EM_F16 ? EM_F32 : EM_I64;
}

static int matmul_loop(int dtype, int64_t batch, int64_t n, int64_t k, int64_t p, intptr_t out,
                       const em_operand *a, const em_operand *b) {
    int status = EM_OK;
    int64_t copies = distinct_copies(batch, b);
    void *packed = pack(acc_dtype(dtype), dtype, copies, k, p, b, &status);
    if (!status) {
        mm_rows fn = ROWS[dtype];
        int64_t rows = batch * n, b_bs = copies == 1 ? 0 : k * p;
#pragma omp parallel for schedule(static) if (rows * k * p >= EM_PARALLEL_THRESHOLD)
        for (int64_t r = 0; r < rows; r++) fn(r, n, k, p, (char *)out, a, packed, b_bs);
    }
    free(packed);
    return status;
}

int ember_matmul(int dtype, int64_t batch, int64_t n, int64_t k, int64_t p, intptr_t out,
                 intptr_t a, const int64_t *sa, intptr_t b, const int64_t *sb) {
    if (dtype < 0 || dtype >= EM_NDTYPES || !ROWS[dtype]) return EM_UNSUPPORTED;
    if (batch == 0 || n == 0 || p == 0) return EM_OK;
    if (k == 0) return ember_fill(dtype, batch * n * p, 0, NULL, out, NULL, 0.0, 0);
    em_operand A = {(const char *)a, sa[0], sa[1], sa[2]};
    em_operand B = {(const char *)b, sb[0], sb[1], sb[2]};
    if (dtype == EM_F32 && small_fits(n, k, p, &B)) {
        small_stack_f32(batch, n, k, p, (float *)out, &A, &B);
        return EM_OK;
    }
    if (dtype == EM_F64 && small_fits(n, k, p, &B)) {
        small_stack_f64(batch, n, k, p, (double *)out, &A, &B);
        return EM_OK;
    }
    int has_blas = dtype == EM_F64 ? blas.gemm_f64 != NULL
                                   : dtype >= EM_F16 && blas.gemm_f32 != NULL;
    if ((dtype == EM_BF16 || dtype == EM_F32) && em_matmul_dnnl(dtype, batch, n, k, p, (void *)out, (const void *)a,
                                           sa, (const void *)b, sb) == EM_OK)
        return EM_OK;
    if (has_blas && fits_int(n) && fits_int(k) && fits_int(p)) {
        if ((dtype == EM_F16 || dtype == EM_BF16) && !half_whole_fits(batch, n, k, p))
            return matmul_half_blocked(dtype, batch, n, k, p, out, &A, &B);
        return matmul_blas(dtype, batch, n, k, p, out, &A, &B);
    }
    return matmul_loop(dtype, batch, n, k, p, out, &A, &B);
}
