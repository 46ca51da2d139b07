/* Fused kernels for nn ops that otherwise decompose into several passes: softmax/log_softmax
 * along a dim, im2col/col2im (unfold/fold, the core of convolutions), and 2-D max pooling.
 *
 * Inputs are contiguous (the glue makes them so: these ops read every element, so a copy costs
 * little next to a strided inner loop), outputs are fresh contiguous tensors. Half types load
 * through float; accumulation is in float (double for float64).
 */
#include <stdlib.h>

#include "ember_cpu.h"
#include "api_index.h" /* EM_NO_MEMORY */
#include "api_nn.h"
#include "vmath.h"

/* ---- softmax / log_softmax ------------------------------------------------------------------
 * The tensor is seen as (outer, n, inner) around the softmax dim; each thread takes rows. A row
 * is first loaded into a buffer e in the compute type (float for half types, whose conversions
 * inside the exp loop kept it scalar), then four vectorisable passes: the max, the
 * exponentials in place, their sum, the output. The max and the sum run in vector lanes: a
 * single running max or sum is a dependency chain that GCC keeps scalar without -ffast-math
 * (even written as 16 lanes it unrolled them into scalar code), and the softmax of a 1024 x 128
 * attention score took 5x PyTorch's time. exp is vmath's vectorisable one (libm's double exp made
 * this 30x slower than PyTorch's). Without memory for the buffer, the row is skipped and the
 * kernel reports no memory. */
#define SMX_EXP_f32 em_exp_f32
#define SMX_EXP_f64 em_exp_f64
#define SMX_LOG_f32 logf
#define SMX_LOG_f64 log
#define ROW_BYTES 64

/* The max and the sum of a row. GCC keeps a float max reduction scalar without -ffast-math,
 * and lowered a max over GCC vector types lane by lane (-ftrapping-math's ordered compares): 160
 * us for 1024 rows of 128, 5x PyTorch's whole softmax. As sign-magnitude integers flipped to
 * two's complement, floats order like their keys, and an integer max vectorises: 6 us. NaN is
 * tracked beside it (a quiet compare) and wins. The sum keeps 16 float (8 double) lanes as two
 * 32-byte GCC vectors: one 64-byte vector, which AVX2 lacks, went through the stack every
 * iteration and was read back in 8-byte pieces (a store-forwarding stall per load): layer_norm
 * of 1024 rows of 128 floats took 540 us on an AVX2 EPYC against PyTorch's 98. The lanes and
 * their final order are the same, so are the bits. */
#define ROW_REDUCTIONS(C, S, I)                                                               \
    typedef C row_half_##S __attribute__((vector_size(ROW_BYTES / 2)));                           \
    enum { ROW_W_##S = ROW_BYTES / sizeof(C) };                                                   \
    /* the sign bit alone: the smallest I */                                                      \
    static const I row_min_##S = (I)((uint64_t)1 << (8 * sizeof(I) - 1));                         \
    EM_VINLINE I row_key_##S(I bits) {                                                            \
        return bits ^ ((bits >> (8 * sizeof(I) - 1)) & ~row_min_##S);                             \
    }                                                                                             \
    /* the largest of v[0..n), n >= 1, NaN winning */                                             \
    EM_VINLINE C row_max_##S(const C *v, int64_t n) {                                             \
        I best = row_min_##S;                                                                     \
        int nan = 0;                                                                              \
        for (int64_t k = 0; k < n; k++) {                                                         \
            I bits;                                                                               \
            memcpy(&bits, v + k, sizeof bits);                                                    \
            I key = row_key_##S(bits);                                                            \
            best = key > best ? key : best;                                                       \
            nan |= v[k] != v[k];                                                                  \
        }                                                                                         \
        I bits = row_key_##S(best); /* the map is its own inverse */                              \
        C peak;                                                                                   \
        memcpy(&peak, &bits, sizeof peak);                                                        \
        return nan ? (C)NAN : peak;                                                               \
    }                                                                                             \
    /* the sum of v[0..n), or of the squares (a constant where it is inlined) */                \
    EM_VINLINE C row_sum_##S(const C *v, int64_t n, int squares) {                                \
        row_half_##S lo = {0}, hi = {0}, x, y;                                                    \
        C total = 0;                                                                              \
        int64_t k = 0;                                                                            \
        for (; k + ROW_W_##S <= n; k += ROW_W_##S) {                                              \
            memcpy(&x, v + k, ROW_BYTES / 2);                                                     \
            memcpy(&y, v + k + ROW_W_##S / 2, ROW_BYTES / 2);                                     \
            lo += squares ? x * x : x;                                                            \
            hi += squares ? y * y : y;                                                            \
        }                                                                                         \
        for (int j = 0; j < ROW_W_##S / 2; j++) total += lo[j];                                   \
        for (int j = 0; j < ROW_W_##S / 2; j++) total += hi[j];                                   \
        for (; k < n; k++) total += squares ? v[k] * v[k] : v[k];                                 \
        return total;                                                                             \
    }                                                                                             \
    /* row_sum of v and of its squares in one pass: the same lanes and order, so the same bits */ \
    EM_VINLINE void row_sums_##S(const C *v, int64_t n, C *sum, C *squares) {                     \
        row_half_##S lo = {0}, hi = {0}, qlo = {0}, qhi = {0}, x, y;                              \
        C total = 0, total2 = 0;                                                                  \
        int64_t k = 0;                                                                            \
        for (; k + ROW_W_##S <= n; k += ROW_W_##S) {                                              \
            memcpy(&x, v + k, ROW_BYTES / 2);                                                     \
            memcpy(&y, v + k + ROW_W_##S / 2, ROW_BYTES / 2);                                     \
            lo += x;                                                                              \
            hi += y;                                                                              \
            qlo += x * x;                                                                         \
            qhi += y * y;                                                                         \
        }                                                                                         \
        for (int j = 0; j < ROW_W_##S / 2; j++) total += lo[j];                                   \
        for (int j = 0; j < ROW_W_##S / 2; j++) total += hi[j];                                   \
        for (int j = 0; j < ROW_W_##S / 2; j++) total2 += qlo[j];                                 \
        for (int j = 0; j < ROW_W_##S / 2; j++) total2 += qhi[j];                                 \
        for (; k < n; k++) {                                                                      \
            total += v[k];                                                                        \
            total2 += v[k] * v[k];                                                                \
        }                                                                                         \
        *sum = total;                                                                             \
        *squares = total2;                                                                        \
    }                                                                                             \
    /* the sum of a[k] * b[k] over k < n, in the same lanes */                                    \
    EM_VINLINE C row_dot_##S(const C *a, const C *b, int64_t n) {                                 \
        row_half_##S lo = {0}, hi = {0}, xa, xb, ya, yb;                                          \
        C total = 0;                                                                              \
        int64_t k = 0;                                                                            \
        for (; k + ROW_W_##S <= n; k += ROW_W_##S) {                                              \
            memcpy(&xa, a + k, ROW_BYTES / 2);                                                    \
            memcpy(&xb, b + k, ROW_BYTES / 2);                                                    \
            memcpy(&ya, a + k + ROW_W_##S / 2, ROW_BYTES / 2);                                    \
            memcpy(&yb, b + k + ROW_W_##S / 2, ROW_BYTES / 2);                                    \
            lo += xa * xb;                                                                        \
            hi += ya * yb;                                                                        \
        }                                                                                         \
        for (int j = 0; j < ROW_W_##S / 2; j++) total += lo[j];                                   \
        for (int j = 0; j < ROW_W_##S / 2; j++) total += hi[j];                                   \
        for (; k < n; k++) total += a[k] * b[k];                                                  \
        return total;                                                                             \
    }
ROW_REDUCTIONS(float, f32, int32_t)
ROW_REDUCTIONS(double, f64, int64_t)
#define SMX_S_f16 f32
#define SMX_S_bf16 f32
#define SMX_S_f32 f32
#define SMX_S_f64 f64
#define SMX_(name, S) name##_##S
#define SMX(name, S) SMX_(name, S)

/* Runs the statement (the variadic part) for every row r < rows on the OpenMP pool, each
 * thread with a scratch buffer `e` of n elements of type C; `missing` (an int, 0 before) is
 * set when a thread had no memory for it, and that thread's rows are skipped. */
#define ROWS_WITH_SCRATCH(C, rows, n, missing, ...)                                               \
    _Pragma("omp parallel if ((rows) * (n) > EM_PARALLEL_THRESHOLD) reduction(|| : missing)")     \
    {                                                                                             \
        C *e = (C *)malloc((size_t)(n) * sizeof(C));                                              \
        missing = e == NULL;                                                                      \
        _Pragma("omp for schedule(static)")                                                       \
        for (int64_t r = 0; r < (rows); r++)                                                      \
            if (e) {                                                                              \
                __VA_ARGS__;                                                                      \
            }                                                                                     \
        free(e);                                                                                  \
    }

/* One row, `inner` apart. Inlined with its arguments as locals: in the OpenMP region's body they
 * would be fields of the shared-data struct, which the stores to e[] may alias for all GCC
 * knows, so every loop reloaded them and none vectorised. */
#define SOFTMAX_ROW(T, unused)                                                                    \
    EM_VINLINE void softmax_row_##T(ST_##T *dst, const ST_##T *row, int64_t n, int64_t inner,     \
                                    CT_##T *restrict e, int take_log) {                           \
        typedef CT_##T ct;                                                                        \
        for (int64_t k = 0; k < n; k++) e[k] = LD_##T(row[k * inner]);                           \
        ct peak = SMX(row_max, SMX_S_##T)(e, n);                                                  \
        if (isinf(peak) && peak < 0) peak = 0; /* all -inf: avoid (-inf) - (-inf) */              \
        for (int64_t k = 0; k < n; k++) e[k] = SMX(SMX_EXP, SMX_S_##T)(e[k] - peak);              \
        ct total = SMX(row_sum, SMX_S_##T)(e, n, 0);                                                 \
        if (take_log) {                                                                           \
            ct shift = peak + SMX(SMX_LOG, SMX_S_##T)(total);                                     \
            for (int64_t k = 0; k < n; k++) dst[k * inner] = SV_##T(LD_##T(row[k * inner]) - shift); \
        } else {                                                                                  \
            ct scale = 1 / total;                                                                 \
            for (int64_t k = 0; k < n; k++) dst[k * inner] = SV_##T(e[k] * scale);               \
        }                                                                                         \
    }
EM_FOR_FLOAT(SOFTMAX_ROW, 0)

#define SOFTMAX_KERNEL(T, unused)                                                                 \
    static EM_CLONES_WIDE int softmax_##T(ST_##T *out, const ST_##T *x, int64_t outer, int64_t n,  \
                                          int64_t inner, int take_log) {                          \
        int64_t rows = outer * inner;                                                             \
        int missing = 0;                                                                          \
        ROWS_WITH_SCRATCH(CT_##T, rows, n, missing, {                                             \
            int64_t o = r / inner, i = r % inner, at = o * n * inner + i;                         \
            if (inner == 1)                                                                       \
                softmax_row_##T(out + at, x + at, n, 1, e, take_log);                             \
            else                                                                                  \
                softmax_row_##T(out + at, x + at, n, inner, e, take_log);                         \
        })                                                                                        \
        return missing ? EM_NO_MEMORY : EM_OK;                                                    \
    }
EM_FOR_FLOAT(SOFTMAX_KERNEL, 0)

#define SOFTMAX_CASE(T, unused)                                                                   \
    case EMC_##T:                                                                                 \
        return softmax_##T((ST_##T *)out, (const ST_##T *)x, outer, n, inner, take_log);

int ember_softmax(int dtype, intptr_t out, intptr_t x, int64_t outer, int64_t n, int64_t inner,
                  int take_log) {
    if (outer * n * inner == 0) return EM_OK;
    switch (dtype) { EM_FOR_FLOAT(SOFTMAX_CASE, 0) }
    return EM_UNSUPPORTED;
}

/* ---- softmax / log_softmax backward ------------------------------------------------------------
 * From the gradient g and the forward's output y, along the same rows: y (g - sum(g y)) for
 * softmax, g - exp(y) sum(g) for log_softmax; one row load, one vectorised sum, one output pass,
 * where the decompositions took four or five whole-tensor ops. */
#define SOFTMAX_BACKWARD_ROW(T, unused)                                                           \
    EM_VINLINE void softmax_backward_row_##T(ST_##T *dst, const ST_##T *grad, const ST_##T *y,   \
                                             int64_t n, int64_t inner, CT_##T *restrict e,       \
                                             int take_log) {                                     \
        typedef CT_##T ct;                                                                        \
        if (take_log) {                                                                           \
            for (int64_t k = 0; k < n; k++) e[k] = LD_##T(grad[k * inner]);                       \
            ct total = SMX(row_sum, SMX_S_##T)(e, n, 0);                                          \
            for (int64_t k = 0; k < n; k++)                                                       \
                dst[k * inner] = SV_##T(e[k] - SMX(SMX_EXP, SMX_S_##T)(LD_##T(y[k * inner])) * total); \
        } else {                                                                                  \
            for (int64_t k = 0; k < n; k++) e[k] = LD_##T(grad[k * inner]) * LD_##T(y[k * inner]); \
            ct total = SMX(row_sum, SMX_S_##T)(e, n, 0);                                          \
            for (int64_t k = 0; k < n; k++)                                                       \
                dst[k * inner] = SV_##T(e[k] - LD_##T(y[k * inner]) * total);                     \
        }                                                                                         \
    }
EM_FOR_FLOAT(SOFTMAX_BACKWARD_ROW, 0)

#define SOFTMAX_BACKWARD_KERNEL(T, unused)                                                        \
    static EM_CLONES_WIDE int softmax_backward_##T(ST_##T *out, const ST_##T *g, const ST_##T *y, \
                                                   int64_t outer, int64_t n, int64_t inner,      \
                                                   int take_log) {                               \
        int64_t rows = outer * inner;                                                             \
        int missing = 0;                                                                          \
        ROWS_WITH_SCRATCH(CT_##T, rows, n, missing, {                                             \
            int64_t o = r / inner, i = r % inner, at = o * n * inner + i;                         \
            if (inner == 1)                                                                       \
                softmax_backward_row_##T(out + at, g + at, y + at, n, 1, e, take_log);            \
            else                                                                                  \
                softmax_backward_row_##T(out + at, g + at, y + at, n, inner, e, take_log);        \
        })                                                                                        \
        return missing ? EM_NO_MEMORY : EM_OK;                                                    \
    }
EM_FOR_FLOAT(SOFTMAX_BACKWARD_KERNEL, 0)

#define SOFTMAX_BACKWARD_CASE(T, unused)                                                          \
    case EMC_##T:                                                                                 \
        return softmax_backward_##T((ST_##T *)out, (const ST_##T *)grad, (const ST_##T *)y,       \
                                    outer, n, inner, take_log);

int ember_softmax_backward(int dtype, intptr_t out, intptr_t grad, intptr_t y, int64_t outer,
                           int64_t n, int64_t inner, int take_log) {
    if (outer * n * inner == 0) return EM_OK;
    switch (dtype) { EM_FOR_FLOAT(SOFTMAX_BACKWARD_CASE, 0) }
    return EM_UNSUPPORTED;
}

/* ---- layer_norm -------------------------------------------------------------------------------
 * Rows of n elements (the normalised dims, contiguous). Mean and variance in the compute type
 * (float for half types, as PyTorch's), the variance from the centred row (no cancellation),
 * then out = (x - mean) * rstd * w + b; w and b are NULL or n elements of x's dtype. Four passes
 * over the row (the mean; the centred copy; its sum and sum of squares together; the output,
 * which subtracts the correction), where the decomposition took eight ops (two means, five
 * elementwise passes and a rsqrt) and this kernel's first form seven passes. */
#define LN_SQRT_f32 sqrtf
#define LN_SQRT_f64 sqrt
#define LAYER_NORM_ROW(T, unused)                                                                 \
    EM_VINLINE void layer_norm_row_##T(ST_##T *dst, const ST_##T *row, int64_t n,                 \
                                       const ST_##T *w, const ST_##T *b, CT_##T eps,              \
                                       CT_##T *restrict e, ST_##T *mean_out,                      \
                                       ST_##T *rstd_out) {                                        \
        typedef CT_##T ct;                                                                        \
        ct mean;                                                                                  \
        if (sizeof(ST_##T) == sizeof(ct)) { /* float, double: sum the row where it is */          \
            mean = SMX(row_sum, SMX_S_##T)((const ct *)row, n, 0) / (ct)n;                        \
            for (int64_t k = 0; k < n; k++) e[k] = LD_##T(row[k]) - mean;                         \
        } else {                                                                                  \
            for (int64_t k = 0; k < n; k++) e[k] = LD_##T(row[k]);                                \
            mean = SMX(row_sum, SMX_S_##T)(e, n, 0) / (ct)n;                                      \
            for (int64_t k = 0; k < n; k++) e[k] -= mean;                                         \
        }                                                                                         \
        /* the rounding of a large mean, corrected from the centred row (small, summed exactly \
         * enough): with mean 1000, float32's sum was 5e-5 off after normalising */             \
        ct c, squares;                                                                            \
        SMX(row_sums, SMX_S_##T)(e, n, &c, &squares);                                             \
        c /= (ct)n;                                                                               \
        ct var = squares / (ct)n - c * c;                                                         \
        ct rstd = 1 / SMX(LN_SQRT, SMX_S_##T)((var > 0 ? var : 0) + eps);                         \
        if (mean_out) { /* native_layer_norm's statistics, for its backward */                    \
            *mean_out = SV_##T(mean + c);                                                         \
            *rstd_out = SV_##T(rstd);                                                             \
        }                                                                                         \
        if (w && b)                                                                               \
            for (int64_t k = 0; k < n; k++)                                                       \
                dst[k] = SV_##T((e[k] - c) * rstd * LD_##T(w[k]) + LD_##T(b[k]));                 \
        else if (w)                                                                               \
            for (int64_t k = 0; k < n; k++) dst[k] = SV_##T((e[k] - c) * rstd * LD_##T(w[k]));   \
        else if (b)                                                                               \
            for (int64_t k = 0; k < n; k++) dst[k] = SV_##T((e[k] - c) * rstd + LD_##T(b[k]));   \
        else                                                                                      \
            for (int64_t k = 0; k < n; k++) dst[k] = SV_##T((e[k] - c) * rstd);                  \
    }
EM_FOR_FLOAT(LAYER_NORM_ROW, 0)

#define LAYER_NORM_KERNEL(T, unused)                                                              \
    static EM_CLONES_WIDE int layer_norm_##T(ST_##T *out, ST_##T *mean, ST_##T *rstd,             \
                                             const ST_##T *x, int64_t rows, int64_t n,            \
                                             const ST_##T *w, const ST_##T *b, double eps) {      \
        int missing = 0;                                                                          \
        ROWS_WITH_SCRATCH(CT_##T, rows, n, missing,                                               \
                          layer_norm_row_##T(out + r * n, x + r * n, n, w, b, (CT_##T)eps, e,     \
                                             mean ? mean + r : NULL, mean ? rstd + r : NULL))     \
        return missing ? EM_NO_MEMORY : EM_OK;                                                    \
    }
EM_FOR_FLOAT(LAYER_NORM_KERNEL, 0)

#define LAYER_NORM_CASE(T, unused)                                                                \
    case EMC_##T:                                                                                 \
        return layer_norm_##T((ST_##T *)out, (ST_##T *)mean, (ST_##T *)rstd, (const ST_##T *)x,  \
                              rows, n, (const ST_##T *)weight, (const ST_##T *)bias, eps);

int ember_layer_norm(int dtype, intptr_t out, intptr_t mean, intptr_t rstd, intptr_t x,
                     int64_t rows, int64_t n, intptr_t weight, intptr_t bias, double eps) {
    if (rows * n == 0) return EM_OK;
    switch (dtype) { EM_FOR_FLOAT(LAYER_NORM_CASE, 0) }
    return EM_UNSUPPORTED;
}

/* ---- native_layer_norm_backward -------------------------------------------------------------
 * PyTorch's CPU formula (aten/src/ATen/native/cpu/layer_norm_kernel.cpp) from the forward's
 * mean and rstd: with gw = dy * w and x^ = (x - mean) * rstd,
 * dx = rstd * (gw - mean(gw) - x^ * mean(gw * x^)) per row, dw = sum over rows of dy * x^,
 * db = sum over rows of dy. Two passes: rows in parallel for dx (scratch of 2n per thread),
 * then columns in parallel for dw and db, 64 columns at a time so that the sums over rows run
 * in vector lanes along the columns. One call where the closed form in ember ops took 22. */
#define LNB_COLS 64
#define LAYER_NORM_BACKWARD_ROW(T, unused)                                                        \
    EM_VINLINE void layer_norm_backward_row_##T(ST_##T *dx, const ST_##T *dy, const ST_##T *x,    \
                                                int64_t n, const ST_##T *w, CT_##T mean,          \
                                                CT_##T rstd, CT_##T *restrict e) {                \
        typedef CT_##T ct;                                                                        \
        ct *restrict gw = e, *restrict xh = e + n;                                                \
        for (int64_t k = 0; k < n; k++) gw[k] = w ? LD_##T(dy[k]) * LD_##T(w[k]) : LD_##T(dy[k]); \
        for (int64_t k = 0; k < n; k++) xh[k] = (LD_##T(x[k]) - mean) * rstd;                     \
        /* both sums in vector lanes: a scalar running sum is a chain of n dependent adds */    \
        ct inv_n = (ct)1 / (ct)n, sum_g = SMX(row_sum, SMX_S_##T)(gw, n, 0);                      \
        ct sum_gx = SMX(row_dot, SMX_S_##T)(gw, xh, n);                                           \
        ct mean_g = sum_g * inv_n, mean_gx = sum_gx * inv_n;                                      \
        for (int64_t k = 0; k < n; k++)                                                           \
            dx[k] = SV_##T(rstd * (gw[k] - mean_g - xh[k] * mean_gx));                            \
    }                                                                                             \
    /* dw and db of columns [j0, j0 + m), m <= LNB_COLS */                                        \
    EM_VINLINE void layer_norm_backward_cols_##T(ST_##T *dw, ST_##T *db, const ST_##T *dy,        \
                                                 const ST_##T *x, const ST_##T *mean,             \
                                                 const ST_##T *rstd, int64_t rows, int64_t n,     \
                                                 int64_t j0, int64_t m) {                         \
        typedef CT_##T ct;                                                                        \
        ct sw[LNB_COLS] = {0}, sb[LNB_COLS] = {0};                                                \
        for (int64_t r = 0; r < rows; r++) {                                                      \
            const ST_##T *gr = dy + r * n + j0, *xr = x + r * n + j0;                             \
            ct mu = LD_##T(mean[r]), rs = LD_##T(rstd[r]);                                        \
            for (int64_t k = 0; k < m; k++) {                                                     \
                ct g = LD_##T(gr[k]);                                                             \
                sw[k] += g * ((LD_##T(xr[k]) - mu) * rs);                                         \
                sb[k] += g;                                                                       \
            }                                                                                     \
        }                                                                                         \
        if (dw)                                                                                   \
            for (int64_t k = 0; k < m; k++) dw[j0 + k] = SV_##T(sw[k]);                           \
        if (db)                                                                                   \
            for (int64_t k = 0; k < m; k++) db[j0 + k] = SV_##T(sb[k]);                           \
    }
EM_FOR_FLOAT(LAYER_NORM_BACKWARD_ROW, 0)

#define LAYER_NORM_BACKWARD_KERNEL(T, unused)                                                     \
    static EM_CLONES int layer_norm_backward_##T(ST_##T *dx, ST_##T *dw, ST_##T *db,              \
                                                 const ST_##T *dy, const ST_##T *x,               \
                                                 const ST_##T *mean, const ST_##T *rstd,          \
                                                 const ST_##T *w, int64_t rows, int64_t n) {      \
        int missing = 0;                                                                          \
        if (dx) {                                                                                 \
            ROWS_WITH_SCRATCH(CT_##T, rows, 2 * n, missing,                                       \
                              layer_norm_backward_row_##T(dx + r * n, dy + r * n, x + r * n, n,   \
                                                          w, LD_##T(mean[r]), LD_##T(rstd[r]),    \
                                                          e))                                     \
        }                                                                                         \
        if (dw || db) {                                                                           \
            int64_t blocks = (n + LNB_COLS - 1) / LNB_COLS;                                       \
            _Pragma("omp parallel for schedule(static) if (rows * n > EM_PARALLEL_THRESHOLD)")    \
            for (int64_t j = 0; j < blocks; j++) {                                                \
                int64_t j0 = j * LNB_COLS, m = n - j0 < LNB_COLS ? n - j0 : LNB_COLS;             \
                layer_norm_backward_cols_##T(dw, db, dy, x, mean, rstd, rows, n, j0, m);          \
            }                                                                                     \
        }                                                                                         \
        return missing ? EM_NO_MEMORY : EM_OK;                                                    \
    }
EM_FOR_FLOAT(LAYER_NORM_BACKWARD_KERNEL, 0)

#define LAYER_NORM_BACKWARD_CASE(T, unused)                                                       \
    case EMC_##T:                                                                                 \
        return layer_norm_backward_##T((ST_##T *)dx, (ST_##T *)dw, (ST_##T *)db,                  \
                                       (const ST_##T *)dy, (const ST_##T *)x,                     \
                                       (const ST_##T *)mean, (const ST_##T *)rstd,                \
                                       (const ST_##T *)weight, rows, n);

int ember_layer_norm_backward(int dtype, intptr_t dx, intptr_t dw, intptr_t db, intptr_t dy,
                              intptr_t x, intptr_t mean, intptr_t rstd, intptr_t weight,
                              int64_t rows, int64_t n) {
    if (rows * n == 0) return EM_OK;
    switch (dtype) { EM_FOR_FLOAT(LAYER_NORM_BACKWARD_CASE, 0) }
    return EM_UNSUPPORTED;
}

/* ---- im2col / col2im ---------------------------------------------------------------------------
 * im2col: x (N, C, H, W) -> cols (N, C*kh*kw, OH*OW); col2im sums cols back into (N, C, H, W).
 * geometry: kh, kw, dh, dw (dilation), ph, pw (padding), sh, sw (stride). Each (n, c, ki, kj) row
 * of cols is independent for im2col; col2im writes one (n, c) plane per task, so no races. */
typedef struct {
    int64_t n, c, h, w, oh, ow, kh, kw, dh, dw, ph, pw, sh, sw;
} em_conv_geometry;

static int conv_geometry(const int64_t *g, em_conv_geometry *out) {
    em_conv_geometry q = {g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11],
                          g[12], g[13]};
    if (q.kh <= 0 || q.kw <= 0 || q.sh <= 0 || q.sw <= 0 || q.dh <= 0 || q.dw <= 0) return 0;
    *out = q;
    return 1;
}

static inline int64_t em_ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -(-a / b); }
static inline int64_t em_clamp_i64(int64_t v, int64_t lo, int64_t hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

#define IM2COL_KERNEL(T, unused)                                                                  \
    static EM_CLONES void im2col_##T(ST_##T *cols, const ST_##T *x, em_conv_geometry g) {         \
        int64_t rows = g.n * g.c * g.kh * g.kw, plane = g.oh * g.ow;                              \
        const ST_##T zero = SV_##T(0);                                                            \
        _Pragma("omp parallel for schedule(static) if (rows * plane > EM_PARALLEL_THRESHOLD)")    \
        for (int64_t r = 0; r < rows; r++) {                                                      \
            int64_t kj = r % g.kw, ki = (r / g.kw) % g.kh, nc = r / (g.kw * g.kh);                 \
            const ST_##T *src = x + nc * g.h * g.w;                                               \
            ST_##T *dst = cols + r * plane;                                                       \
            for (int64_t a = 0; a < g.oh; a++) {                                                  \
                int64_t row = a * g.sh - g.ph + ki * g.dh;                                        \
                ST_##T *line = dst + a * g.ow;                                                    \
                if (row < 0 || row >= g.h) {                                                      \
                    for (int64_t b = 0; b < g.ow; b++) line[b] = zero;                            \
                    continue;                                                                     \
                }                                                                                 \
                const ST_##T *in = src + row * g.w;                                               \
                int64_t col0 = -g.pw + kj * g.dw;                                                 \
                if (g.sw == 1 && col0 >= 0 && col0 + g.ow <= g.w) {                               \
                    /* a plain loop: rows are short (11 floats in a small CNN), and a memcpy   \
                     * call per row cost more than the copy */                                  \
                    for (int64_t b = 0; b < g.ow; b++) line[b] = in[col0 + b];                   \
                    continue;                                                                     \
                }                                                                                 \
                for (int64_t b = 0; b < g.ow; b++) {                                              \
                    int64_t col = b * g.sw + col0;                                                \
                    line[b] = (col < 0 || col >= g.w) ? zero : in[col];                           \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }
EM_FOR_FLOAT(IM2COL_KERNEL, 0)

#define COL2IM_KERNEL(T, unused)                                                                  \
    static EM_CLONES void col2im_##T(ST_##T *out, const ST_##T *cols, em_conv_geometry g) {       \
        typedef CT_##T ct;                                                                        \
        int64_t planes = g.n * g.c, plane = g.oh * g.ow, size = g.h * g.w;                        \
        _Pragma("omp parallel for schedule(static) if (planes * size > EM_PARALLEL_THRESHOLD)")   \
        for (int64_t p = 0; p < planes; p++) {                                                    \
            ct *acc = (ct *)calloc((size_t)size, sizeof(ct));                                     \
            if (!acc) continue;                                                                   \
            for (int64_t ki = 0; ki < g.kh; ki++)                                                 \
                for (int64_t kj = 0; kj < g.kw; kj++) {                                           \
                    const ST_##T *src = cols + ((p * g.kh + ki) * g.kw + kj) * plane;             \
                    for (int64_t a = 0; a < g.oh; a++) {                                          \
                        int64_t row = a * g.sh - g.ph + ki * g.dh;                                \
                        if (row < 0 || row >= g.h) continue;                                      \
                        int64_t shift = kj * g.dw - g.pw; /* col = b sw + shift, kept in [0, w) */ \
                        int64_t lo = em_clamp_i64(em_ceil_div(-shift, g.sw), 0, g.ow);            \
                        int64_t hi = em_clamp_i64(em_ceil_div(g.w - shift, g.sw), 0, g.ow);       \
                        ct *line = acc + row * g.w + shift;                                       \
                        const ST_##T *from = src + a * g.ow;                                      \
                        for (int64_t b = lo; b < hi; b++) line[b * g.sw] += LD_##T(from[b]);      \
                    }                                                                             \
                }                                                                                 \
            ST_##T *dst = out + p * size;                                                         \
            for (int64_t k = 0; k < size; k++) dst[k] = SV_##T(acc[k]);                           \
            free(acc);                                                                            \
        }                                                                                         \
    }
EM_FOR_FLOAT(COL2IM_KERNEL, 0)

#define CONV_CASE(T, NAME, DST, SRC)                                                              \
    case EMC_##T:                                                                                 \
        NAME##_##T((ST_##T *)DST, (const ST_##T *)SRC, q);                                        \
        return EM_OK;
#define IM2COL_CASE(T, unused) CONV_CASE(T, im2col, cols, x)
#define COL2IM_CASE(T, unused) CONV_CASE(T, col2im, out, cols)

int ember_im2col(int dtype, intptr_t cols, intptr_t x, const int64_t *geometry) {
    em_conv_geometry q;
    if (!conv_geometry(geometry, &q)) return EM_BAD_ARGUMENT;
    switch (dtype) { EM_FOR_FLOAT(IM2COL_CASE, 0) }
    return EM_UNSUPPORTED;
}

int ember_col2im(int dtype, intptr_t out, intptr_t cols, const int64_t *geometry) {
    em_conv_geometry q;
    if (!conv_geometry(geometry, &q)) return EM_BAD_ARGUMENT;
    switch (dtype) { EM_FOR_FLOAT(COL2IM_CASE, 0) }
    return EM_UNSUPPORTED;
}

/* ---- max pooling ---------------------------------------------------------------------------
 * One (n, c) plane per task; windows clipped to the input (padding never wins, as with -inf);
 * NaN propagates with its index, like PyTorch; ties keep the first in window order. Indices are
 * flat within the (H, W) plane. A chunk of an output row is computed at once, window offset by
 * window offset, with selects rather than branches: the per-window loop's comparisons were
 * data-dependent branches that random activations mispredicted (about 20 ns per element). */
#define EM_POOL_CHUNK 64
#define MAXPOOL_KERNEL(T, unused)                                                                 \
    static EM_CLONES void max_pool2d_##T(ST_##T *values, int64_t *indices, const ST_##T *x,      \
                                         em_conv_geometry g) {                                    \
        typedef CT_##T ct;                                                                        \
        int64_t planes = g.n * g.c, plane = g.oh * g.ow, size = g.h * g.w;                        \
        _Pragma("omp parallel for schedule(static) if (planes * plane * g.kh * g.kw > EM_PARALLEL_THRESHOLD)") \
        for (int64_t p = 0; p < planes; p++) {                                                    \
            const ST_##T *src = x + p * size;                                                     \
            ct best[EM_POOL_CHUNK];                                                               \
            int64_t where[EM_POOL_CHUNK];                                                         \
            for (int64_t a = 0; a < g.oh; a++)                                                    \
                for (int64_t b0 = 0; b0 < g.ow; b0 += EM_POOL_CHUNK) {                            \
                    int64_t nb = g.ow - b0 < EM_POOL_CHUNK ? g.ow - b0 : EM_POOL_CHUNK;           \
                    for (int64_t j = 0; j < nb; j++) {                                            \
                        best[j] = 0;                                                              \
                        where[j] = -1;                                                            \
                    }                                                                             \
                    for (int64_t ki = 0; ki < g.kh; ki++) {                                       \
                        int64_t row = a * g.sh - g.ph + ki * g.dh;                                \
                        if (row < 0 || row >= g.h) continue;                                      \
                        const ST_##T *line = src + row * g.w;                                     \
                        for (int64_t kj = 0; kj < g.kw; kj++) {                                   \
                            int64_t shift = kj * g.dw - g.pw; /* col = (b0 + j) sw + shift */    \
                            int64_t lo = em_clamp_i64(em_ceil_div(-shift, g.sw) - b0, 0, nb);     \
                            int64_t hi = em_clamp_i64(em_ceil_div(g.w - shift, g.sw) - b0, 0, nb); \
                            for (int64_t j = lo; j < hi; j++) {                                   \
                                int64_t col = (b0 + j) * g.sw + shift;                            \
                                ct v = LD_##T(line[col]);                                         \
                                int take = where[j] < 0 || v > best[j] ||                         \
                                           (v != v && best[j] == best[j]);                        \
                                best[j] = take ? v : best[j];                                     \
                                where[j] = take ? row * g.w + col : where[j];                     \
                            }                                                                     \
                        }                                                                         \
                    }                                                                             \
                    for (int64_t j = 0; j < nb; j++) {                                            \
                        values[p * plane + a * g.ow + b0 + j] = SV_##T(best[j]);                  \
                        indices[p * plane + a * g.ow + b0 + j] = where[j];                        \
                    }                                                                             \
                }                                                                                 \
        }                                                                                         \
    }
EM_FOR_FLOAT(MAXPOOL_KERNEL, 0)

#define MAXPOOL_CASE(T, unused)                                                                   \
    case EMC_##T:                                                                                 \
        max_pool2d_##T((ST_##T *)values, (int64_t *)indices, (const ST_##T *)x, q);               \
        return EM_OK;

int ember_max_pool2d(int dtype, intptr_t values, intptr_t indices, intptr_t x,
                     const int64_t *geometry) {
    em_conv_geometry q;
    if (!conv_geometry(geometry, &q)) return EM_BAD_ARGUMENT;
    switch (dtype) { EM_FOR_FLOAT(MAXPOOL_CASE, 0) }
    return EM_UNSUPPORTED;
}
