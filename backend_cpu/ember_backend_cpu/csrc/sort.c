/* Sorting kernels: stable sort along a dim (values and indices), and searchsorted.
 *
 * Sort maps every element to an unsigned key whose integer order is the order wanted (integers:
 * flip the sign bit; floats: flip every bit of negatives, NaN to the largest key, -0.0 to 0.0;
 * descending: complement the key), sorts (key, position) pairs with an LSD radix sort, which is
 * stable by construction, and then gathers the values by position, so NaN payloads and the sign
 * of zero survive. Only the key map is per dtype; a dtype's key has its element's width, so the
 * sort and the gather exist once per width. Lines are sorted in parallel when there are several;
 * a single long line (and unique's pass over it) is cut into chunks that every thread sorts.
 */
#include <stdlib.h>

#include "ember_cpu.h"
#include "api_index.h"
#include "api_sort.h"

/* ---- keys ------------------------------------------------------------------------------------ */
/* Float bits -> key: NaN (magnitude above infinity's) largest, both zeros equal. */
#define FLOAT_KEY_FN(W)                                                                          \
    static inline uint##W##_t float_key##W(uint##W##_t u, uint##W##_t inf) {                     \
        const uint##W##_t sign = (uint##W##_t)((uint##W##_t)1 << (W - 1));                       \
        const uint##W##_t mag = u & (uint##W##_t)~sign;                                          \
        if (mag > inf) return (uint##W##_t)~(uint##W##_t)0;                                      \
        if (mag == 0) return sign;                                                               \
        return (u & sign) ? (uint##W##_t)~u : (uint##W##_t)(u | sign);                           \
    }
FLOAT_KEY_FN(16)
FLOAT_KEY_FN(32)
FLOAT_KEY_FN(64)

#define BITS_FN(F, U)                                                                            \
    static inline U F##_bits(F v) {                                                              \
        U u;                                                                                     \
        memcpy(&u, &v, sizeof u);                                                                \
        return u;                                                                                \
    }
BITS_FN(float, uint32_t)
BITS_FN(double, uint64_t)

#define KT_b uint8_t
#define KT_u8 uint8_t
#define KT_i8 uint8_t
#define KT_i16 uint16_t
#define KT_i32 uint32_t
#define KT_i64 uint64_t
#define KT_f16 uint16_t
#define KT_bf16 uint16_t
#define KT_f32 uint32_t
#define KT_f64 uint64_t

#define KEY_b(v) (v)
#define KEY_u8(v) (v)
#define KEY_i8(v) ((uint8_t)(v) ^ 0x80u)
#define KEY_i16(v) ((uint16_t)(v) ^ 0x8000u)
#define KEY_i32(v) ((uint32_t)(v) ^ 0x80000000u)
#define KEY_i64(v) ((uint64_t)(v) ^ 0x8000000000000000ull)
#define KEY_f16(v) float_key16(v, 0x7c00u)
#define KEY_bf16(v) float_key16(v, 0x7f80u)
#define KEY_f32(v) float_key32(float_bits(v), 0x7f800000u)
#define KEY_f64(v) float_key64(double_bits(v), 0x7ff0000000000000ull)

typedef void (*key_fn)(const char *x, int64_t stride, int64_t n, void *keys, int descending);
#define KEY_LOOP(T, unused)                                                                      \
    static EM_CLONES void keys_##T(const char *x, int64_t s, int64_t n, void *keys, int desc) {  \
        KT_##T *k = (KT_##T *)keys;                                                              \
        const KT_##T flip = desc ? (KT_##T)~(KT_##T)0 : 0;                                       \
        for (int64_t i = 0; i < n; i++) {                                                        \
            ST_##T v = *(const ST_##T *)(x + i * s);                                             \
            k[i] = (KT_##T)(KEY_##T(v) ^ flip);                                                  \
        }                                                                                        \
    }
EM_FOR_ALL(KEY_LOOP, 0)
#define KEY_ENTRY(T, unused) [EMC_##T] = keys_##T,
static const key_fn KEYS[EM_NDTYPES] = {EM_FOR_ALL(KEY_ENTRY, 0)};

/* ---- stable sort of (key, position) pairs, per key width ------------------------------------- */
/* Below this, insertion sort beats the radix sort's 256-bucket passes. */
#define INSERTION_MAX 32
#define EM_FOR_WIDTH(M) M(8) M(16) M(32) M(64)

#define SWAP(T, a, b)                                                                            \
    do {                                                                                         \
        T swapped_ = a;                                                                          \
        a = b;                                                                                   \
        b = swapped_;                                                                            \
    } while (0)

/* Sorts n pairs; tk/tix are scratch of the same sizes. Returns the sorted positions (ix or tix). */
typedef uint32_t *(*sort_fn)(void *k, uint32_t *ix, void *tk, uint32_t *tix, int64_t n);
#define SORT_PAIRS(W)                                                                            \
    static EM_CLONES uint32_t *sort_##W(void *kv, uint32_t *ix, void *tkv, uint32_t *tix,        \
                                        int64_t n) {                                             \
        typedef uint##W##_t key;                                                                 \
        key *k = (key *)kv, *tk = (key *)tkv;                                                    \
        if (n <= INSERTION_MAX) {                                                                \
            for (int64_t i = 1; i < n; i++) {                                                    \
                key kk = k[i];                                                                   \
                uint32_t ii = ix[i];                                                             \
                int64_t j = i;                                                                   \
                for (; j > 0 && k[j - 1] > kk; j--) {                                            \
                    k[j] = k[j - 1];                                                             \
                    ix[j] = ix[j - 1];                                                           \
                }                                                                                \
                k[j] = kk;                                                                       \
                ix[j] = ii;                                                                      \
            }                                                                                    \
            return ix;                                                                           \
        }                                                                                        \
        enum { DIGITS = W / 8 };                                                                 \
        /* Only the digits that vary get counted and passed over: counting a digit that every   \
         * key shares bumps one counter n times in a row, a chain of dependent stores (int64 \
         * keys of small integers would spend most of the sort there). */                        \
        key varying = 0;                                                                         \
        for (int64_t i = 0; i < n; i++) varying |= k[i] ^ k[0];                                  \
        int shift[DIGITS], digits = 0;                                                           \
        for (int b = 0; b < DIGITS; b++)                                                         \
            if ((varying >> (8 * b)) & 0xff) shift[digits++] = 8 * b;                            \
        int64_t count[DIGITS][256];                                                              \
        memset(count, 0, sizeof(count));                                                         \
        for (int64_t i = 0; i < n; i++)                                                          \
            for (int b = 0; b < digits; b++) count[b][(k[i] >> shift[b]) & 0xff]++;             \
        for (int b = 0; b < digits; b++) {                                                       \
            int64_t *c = count[b];                                                               \
            int64_t sum = 0;                                                                     \
            for (int d = 0; d < 256; d++) {                                                      \
                int64_t here = c[d];                                                             \
                c[d] = sum;                                                                      \
                sum += here;                                                                     \
            }                                                                                    \
            for (int64_t i = 0; i < n; i++) {                                                    \
                int64_t at = c[(k[i] >> shift[b]) & 0xff]++;                                     \
                tk[at] = k[i];                                                                   \
                tix[at] = ix[i];                                                                 \
            }                                                                                    \
            SWAP(key *, k, tk); /* the pass's output is the next pass's input */                \
            SWAP(uint32_t *, ix, tix);                                                           \
        }                                                                                        \
        return ix;                                                                               \
    }
EM_FOR_WIDTH(SORT_PAIRS)

/* ---- the same sort of one long line on every thread --------------------------------------------
 * The positions are cut into one chunk per thread. Each pass counts every chunk's digits on its
 * own thread, lays the counts out digit-major and chunk-minor (all of chunk 0's keys of a digit
 * come before chunk 1's), and each chunk scatters its keys, in order, from its own offsets: the
 * places the serial pass gives them, so the result is the same stable order. Below LINE_PARALLEL
 * (or inside another parallel region, or with one thread) the serial sort runs. */
#define LINE_PARALLEL (1 << 16)

/* How many chunks a line of n elements is cut into: the thread count, or 1. */
static int line_chunks(int64_t n) {
#ifdef _OPENMP
    if (n >= LINE_PARALLEL && !omp_in_parallel()) return omp_get_max_threads();
#endif
    (void)n;
    return 1;
}

#define CHUNK_LO(n, c, chunks) ((n) * (c) / (chunks))

#define SORT_PAIRS_PARALLEL(W)                                                                   \
    static EM_CLONES uint32_t *psort_##W(void *kv, uint32_t *ix, void *tkv, uint32_t *tix,       \
                                         int64_t n) {                                            \
        typedef uint##W##_t key;                                                                 \
        const int chunks = line_chunks(n);                                                       \
        int64_t(*count)[256] = chunks > 1 ? malloc(sizeof(*count) * chunks) : NULL;             \
        if (!count) return sort_##W(kv, ix, tkv, tix, n);                                        \
        key *k = (key *)kv, *tk = (key *)tkv;                                                    \
        const key first = k[0];                                                                  \
        key varying = 0; /* as in the serial sort: only the digits that vary are passed over */ \
        _Pragma("omp parallel for reduction(| : varying) schedule(static)")                      \
        for (int64_t i = 0; i < n; i++) varying |= k[i] ^ first;                                \
        for (int shift = 0; shift < W; shift += 8) {                                             \
            if (!((varying >> shift) & 0xff)) continue;                                          \
            _Pragma("omp parallel for schedule(static)")                                         \
            for (int c = 0; c < chunks; c++) {                                                   \
                int64_t *cc = count[c];                                                          \
                memset(cc, 0, sizeof(*count));                                                   \
                for (int64_t i = CHUNK_LO(n, c, chunks); i < CHUNK_LO(n, c + 1, chunks); i++)    \
                    cc[(k[i] >> shift) & 0xff]++;                                                \
            }                                                                                    \
            int64_t sum = 0;                                                                     \
            for (int d = 0; d < 256; d++)                                                        \
                for (int c = 0; c < chunks; c++) {                                               \
                    int64_t here = count[c][d];                                                  \
                    count[c][d] = sum;                                                           \
                    sum += here;                                                                 \
                }                                                                                \
            _Pragma("omp parallel for schedule(static)")                                         \
            for (int c = 0; c < chunks; c++) {                                                   \
                int64_t *cc = count[c];                                                          \
                for (int64_t i = CHUNK_LO(n, c, chunks); i < CHUNK_LO(n, c + 1, chunks); i++) { \
                    int64_t at = cc[(k[i] >> shift) & 0xff]++;                                   \
                    tk[at] = k[i];                                                               \
                    tix[at] = ix[i];                                                             \
                }                                                                                \
            }                                                                                    \
            SWAP(key *, k, tk); /* the pass's output is the next pass's input */                \
            SWAP(uint32_t *, ix, tix);                                                           \
        }                                                                                        \
        free(count);                                                                             \
        return ix;                                                                               \
    }
EM_FOR_WIDTH(SORT_PAIRS_PARALLEL)

/* values[j] = x[ix[j]], indices[j] = ix[j] along one line. */
typedef void (*emit_fn)(const char *x, int64_t sx, const uint32_t *ix, int64_t n, char *v,
                        int64_t sv, char *ind, int64_t si);
#define EMIT(W)                                                                                  \
    static EM_CLONES void emit_##W(const char *x, int64_t sx, const uint32_t *ix, int64_t n,     \
                                   char *v, int64_t sv, char *ind, int64_t si) {                 \
        for (int64_t j = 0; j < n; j++) {                                                        \
            *(uint##W##_t *)(v + j * sv) = *(const uint##W##_t *)(x + ix[j] * sx);               \
            *(int64_t *)(ind + j * si) = ix[j];                                                  \
        }                                                                                        \
    }
EM_FOR_WIDTH(EMIT)

#define SORT_ENTRY(W) psort_##W,
#define EMIT_ENTRY(W) emit_##W,
static const sort_fn SORTS[4] = {EM_FOR_WIDTH(SORT_ENTRY)};
static const emit_fn EMITS[4] = {EM_FOR_WIDTH(EMIT_ENTRY)};

static int is_float_dtype(int dtype) {
    return dtype == EM_F16 || dtype == EM_BF16 || dtype == EM_F32 || dtype == EM_F64;
}

static int width_slot(int itemsize) {
    return itemsize == 1 ? 0 : itemsize == 2 ? 1 : itemsize == 4 ? 2 : itemsize == 8 ? 3 : -1;
}

/* ---- lines ----------------------------------------------------------------------------------- */
typedef struct {
    key_fn keys;
    sort_fn sort;
    emit_fn emit;
    int isz, descending, outer; /* outer: number of dims other than the sorted one */
    int is_float, ignore_nan;   /* median: NaN keys are NaNs; nanmedian skips them */
    int64_t len, sx, sv, si;    /* the sorted dim: length and byte strides */
    int64_t shape[EM_MAX_DIMS], ox[EM_MAX_DIMS], ov[EM_MAX_DIMS], oi[EM_MAX_DIMS];
    const char *x;
    char *values, *indices;
} sort_job;

/* Scratch for one thread: keys and positions, twice (the radix sort ping-pongs). */
typedef struct {
    void *k, *tk;
    uint32_t *ix, *tix;
} sort_buf;

static int buf_alloc(sort_buf *b, int64_t len, int isz) {
    size_t n = (size_t)(len ? len : 1);
    b->k = malloc(n * isz);
    b->tk = malloc(n * isz);
    b->ix = malloc(n * sizeof(uint32_t));
    b->tix = malloc(n * sizeof(uint32_t));
    return b->k && b->tk && b->ix && b->tix;
}

static void buf_free(sort_buf *b) {
    free(b->k);
    free(b->tk);
    free(b->ix);
    free(b->tix);
}

/* Byte offsets of line `line` in x, values and indices. */
static void line_offsets(const sort_job *job, int64_t line, int64_t *fx, int64_t *fv,
                         int64_t *fi) {
    *fx = *fv = *fi = 0;
    for (int d = job->outer - 1; d >= 0; d--) {
        int64_t i = line % job->shape[d];
        line /= job->shape[d];
        *fx += i * job->ox[d];
        *fv += i * job->ov[d];
        *fi += i * job->oi[d];
    }
}

/* b's keys and positions 0..n-1 of the n elements of x (sx bytes apart), a long line's chunks on
 * every thread. */
static void line_keys(key_fn keys, const char *x, int64_t sx, int64_t n, int isz, int desc,
                      sort_buf *b) {
    const int chunks = line_chunks(n);
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (int c = 0; c < chunks; c++) {
        int64_t lo = CHUNK_LO(n, c, chunks), hi = CHUNK_LO(n, c + 1, chunks);
        keys(x + lo * sx, sx, hi - lo, (char *)b->k + lo * isz, desc);
        for (int64_t i = lo; i < hi; i++) b->ix[i] = (uint32_t)i;
    }
}

static void sort_line(const sort_job *job, sort_buf *b, int64_t line) {
    int64_t fx, fv, fi, n = job->len;
    line_offsets(job, line, &fx, &fv, &fi);
    const char *x = job->x + fx;
    line_keys(job->keys, x, job->sx, n, job->isz, job->descending, b);
    uint32_t *order = job->sort(b->k, b->ix, b->tk, b->tix, n);
    const int chunks = line_chunks(n);
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (int c = 0; c < chunks; c++) {
        int64_t lo = CHUNK_LO(n, c, chunks), hi = CHUNK_LO(n, c + 1, chunks);
        job->emit(x, job->sx, order + lo, hi - lo, job->values + fv + lo * job->sv, job->sv,
                  job->indices + fi + lo * job->si, job->si);
    }
}

typedef void (*line_fn)(const sort_job *job, sort_buf *b, int64_t line);

/* Runs `per_line` over every line of x along dim (values and indices: the outputs' layouts, of
 * x's shape or of size 1 at dim), in parallel when there are several, with per-thread scratch. */
static int run_lines(line_fn per_line, sort_job *job, int dtype, int ndim, int dim,
                     const int64_t *shape, intptr_t x, const int64_t *sx, intptr_t values,
                     const int64_t *sv, intptr_t indices, const int64_t *si) {
    if (dtype < 0 || dtype >= EM_NDTYPES || ndim < 1 || ndim > EM_MAX_DIMS || dim < 0 ||
        dim >= ndim)
        return EM_BAD_ARGUMENT;
    if (shape[dim] > (int64_t)UINT32_MAX) return EM_BAD_ARGUMENT; /* positions are 32-bit */
    int isz = em_itemsize(dtype);
    int64_t bx[EM_MAX_DIMS], bv[EM_MAX_DIMS], bi[EM_MAX_DIMS], lines = 1;
    em_byte_strides(ndim, shape, sx, isz, bx);
    em_byte_strides(ndim, shape, sv, isz, bv);
    em_byte_strides(ndim, shape, si, 8, bi);
    job->keys = KEYS[dtype];
    job->sort = SORTS[width_slot(isz)];
    job->emit = EMITS[width_slot(isz)];
    job->isz = isz;
    job->len = shape[dim];
    job->sx = bx[dim];
    job->sv = bv[dim];
    job->si = bi[dim];
    job->x = (const char *)x;
    job->values = (char *)values;
    job->indices = (char *)indices;
    job->outer = 0;
    for (int d = 0; d < ndim; d++) {
        if (d == dim) continue;
        job->shape[job->outer] = shape[d];
        job->ox[job->outer] = bx[d];
        job->ov[job->outer] = bv[d];
        job->oi[job->outer++] = bi[d];
        lines *= shape[d];
    }
    if (lines == 0 || job->len == 0) return EM_OK;
    int status = EM_OK;
#pragma omp parallel if (lines > 1 && lines * job->len >= EM_PARALLEL_THRESHOLD)
    {
        sort_buf buf;
        int ok = buf_alloc(&buf, job->len, isz);
        if (!ok) {
#pragma omp atomic write
            status = EM_NO_MEMORY;
        }
#pragma omp for schedule(static)
        for (int64_t line = 0; line < lines; line++)
            if (ok) per_line(job, &buf, line);
        buf_free(&buf);
    }
    return status;
}

int ember_sort(int dtype, int ndim, int dim, const int64_t *shape, intptr_t x, const int64_t *sx,
               intptr_t values, const int64_t *sv, intptr_t indices, const int64_t *si,
               int descending) {
    sort_job job = {.descending = descending};
    return run_lines(sort_line, &job, dtype, ndim, dim, shape, x, sx, values, sv, indices, si);
}

/* ---- median: a selection, not a sort --------------------------------------------------------
 * The keys of a line are copied and partially ordered around the wanted rank (quickselect).
 * Each round partitions without branches on the data (a mispredicted branch per element costs
 * more than the swaps): keys below the pivot to the front, then, when the rank lies beyond them,
 * keys equal to it next, so many equal keys still shrink the range. The pivot is a median of
 * three (of three such medians on long ranges); a libc qsort finishes a range whose rounds stay
 * lopsided, so the worst case is n log n. The index is the one a stable sort would put at the
 * rank, PyTorch's choice as the decomposition computes it: after selection the r keys equal to
 * the chosen one before the rank are the equal elements that precede it in input order, so the
 * index is the r-th occurrence of that key in the line. */
#define MEDIAN3(x, y, z) ((x) < (y) ? ((y) < (z) ? (y) : ((x) < (z) ? (z) : (x)))                 \
                                    : ((x) < (z) ? (x) : ((y) < (z) ? (z) : (y))))
#define SELECT(W)                                                                                \
    static int cmp_##W(const void *a, const void *b) {                                           \
        uint##W##_t x = *(const uint##W##_t *)a, y = *(const uint##W##_t *)b;                    \
        return (x > y) - (x < y);                                                                \
    }                                                                                            \
    static inline uint##W##_t pivot_##W(const uint##W##_t *a, int64_t lo, int64_t hi) {         \
        int64_t n = hi - lo, mid = lo + n / 2;                                                   \
        if (n < 1024) return MEDIAN3(a[lo], a[mid], a[hi - 1]);                                  \
        int64_t e = n / 8;                                                                       \
        uint##W##_t l = MEDIAN3(a[lo], a[lo + e], a[lo + 2 * e]);                                \
        uint##W##_t m = MEDIAN3(a[mid - e], a[mid], a[mid + e]);                                 \
        uint##W##_t h = MEDIAN3(a[hi - 1 - 2 * e], a[hi - 1 - e], a[hi - 1]);                    \
        return MEDIAN3(l, m, h);                                                                 \
    }                                                                                            \
    /* Moves a[lo..hi) with below(key) to the front; returns where the others start. */        \
    static EM_CLONES int64_t part_##W(uint##W##_t *a, int64_t lo, int64_t hi, uint##W##_t pivot, \
                                      int or_equal) {                                            \
        int64_t s = lo;                                                                          \
        if (or_equal) {                                                                          \
            for (int64_t i = lo; i < hi; i++) {                                                  \
                uint##W##_t v = a[i];                                                            \
                a[i] = a[s];                                                                     \
                a[s] = v;                                                                        \
                s += v <= pivot;                                                                 \
            }                                                                                    \
        } else {                                                                                 \
            for (int64_t i = lo; i < hi; i++) {                                                  \
                uint##W##_t v = a[i];                                                            \
                a[i] = a[s];                                                                     \
                a[s] = v;                                                                        \
                s += v < pivot;                                                                  \
            }                                                                                    \
        }                                                                                        \
        return s;                                                                                \
    }                                                                                            \
    static void select_##W(uint##W##_t *a, int64_t n, int64_t rank) {                            \
        typedef uint##W##_t key;                                                                 \
        int64_t lo = 0, hi = n, depth = 64;                                                      \
        while (hi - lo > INSERTION_MAX) {                                                        \
            if (depth-- == 0) {                                                                  \
                qsort(a + lo, (size_t)(hi - lo), sizeof(key), cmp_##W);                          \
                return;                                                                          \
            }                                                                                    \
            key pivot = pivot_##W(a, lo, hi);                                                    \
            int64_t below = part_##W(a, lo, hi, pivot, 0);                                       \
            if (rank < below) {                                                                  \
                hi = below;                                                                      \
                continue;                                                                        \
            }                                                                                    \
            int64_t equal = part_##W(a, below, hi, pivot, 1); /* > below: the pivot is there */  \
            if (rank < equal) return;                         /* a[below..equal) == pivot */     \
            lo = equal;                                                                          \
        }                                                                                        \
        for (int64_t i = lo + 1; i < hi; i++) {                                                  \
            key v = a[i];                                                                        \
            int64_t j = i;                                                                       \
            for (; j > lo && a[j - 1] > v; j--) a[j] = a[j - 1];                                 \
            a[j] = v;                                                                            \
        }                                                                                        \
    }                                                                                            \
    /* The input position of the element of stable rank `rank` (keys: the line's, in order;     \
     * work: scratch). NaN keys (all ones) are NaNs for floats. */                              \
    static int64_t median_##W(const void *keys, void *work, int64_t n, int is_float,             \
                              int ignore_nan) {                                                  \
        typedef uint##W##_t key;                                                                 \
        const key *k = (const key *)keys, nan = (key)~(key)0;                                    \
        key *a = (key *)work;                                                                    \
        int64_t nans = 0;                                                                        \
        for (int64_t i = 0; i < n; i++) {                                                        \
            a[i] = k[i];                                                                         \
            nans += k[i] == nan;                                                                 \
        }                                                                                        \
        const int64_t valid = is_float ? n - nans : n;                                           \
        if (valid == 0 || (valid < n && !ignore_nan)) { /* the first NaN */                      \
            int64_t i = 0;                                                                       \
            while (k[i] != nan) i++;                                                             \
            return i;                                                                            \
        }                                                                                        \
        int64_t rank = ((ignore_nan ? valid : n) - 1) / 2, r = 0;                                \
        select_##W(a, n, rank);                                                                  \
        const key v = a[rank];                                                                   \
        for (int64_t i = 0; i < rank; i++) r += a[i] == v;                                       \
        for (int64_t i = 0;; i++)                                                                \
            if (k[i] == v && r-- == 0) return i;                                                 \
    }
EM_FOR_WIDTH(SELECT)
typedef int64_t (*median_fn)(const void *keys, void *work, int64_t n, int is_float,
                             int ignore_nan);
#define MEDIAN_ENTRY(W) median_##W,
static const median_fn MEDIANS[4] = {EM_FOR_WIDTH(MEDIAN_ENTRY)};

static void median_line(const sort_job *job, sort_buf *b, int64_t line) {
    int64_t fx, fv, fi;
    line_offsets(job, line, &fx, &fv, &fi);
    const char *x = job->x + fx;
    job->keys(x, job->sx, job->len, b->k, 0);
    int64_t at = MEDIANS[width_slot(job->isz)](b->k, b->tk, job->len, job->is_float,
                                               job->ignore_nan);
    memcpy(job->values + fv, x + at * job->sx, (size_t)job->isz);
    *(int64_t *)(job->indices + fi) = at;
}

int ember_median(int dtype, int ndim, int dim, const int64_t *shape, intptr_t x,
                 const int64_t *sx, intptr_t values, const int64_t *sv, intptr_t indices,
                 const int64_t *si, int ignore_nan) {
    if (dtype < 0 || dtype >= EM_NDTYPES) return EM_BAD_ARGUMENT;
    sort_job job = {.ignore_nan = ignore_nan, .is_float = is_float_dtype(dtype)};
    return run_lines(median_line, &job, dtype, ndim, dim, shape, x, sx, values, sv, indices, si);
}

/* ---- unique: one sort of the keys, then one pass over the runs ------------------------------
 * Equal keys are equal values, except NaN's key (floats): every NaN is its own value, as in
 * PyTorch. A run's value is its first element in stable order (the first in input order). A long
 * line's pass runs in chunks on every thread: each chunk counts the runs that start in it, the
 * counts' prefix sums number its runs, and then it writes them; counts hold each run's start
 * until the runs are all known, then the distance to the next start. */
typedef struct {
    const char *x;
    int64_t sx, n;
    const void *keys; /* sorted */
    const uint32_t *order;
    int is_float;
    char *values;
    int64_t *inverse, *counts; /* or NULL */
} unique_job;

/* Walks sorted positions [lo, hi): write = 0 returns the number of runs that start there;
 * write = 1 numbers them from g + 1 on, writes them, and returns the last number. */
#define UNIQUE_RUNS(W)                                                                           \
    static EM_CLONES int64_t runs_##W(const unique_job *u, int64_t lo, int64_t hi, int64_t g,    \
                                      int write) {                                               \
        typedef uint##W##_t key;                                                                 \
        const key *k = (const key *)u->keys, nan = (key)~(key)0;                                 \
        const int nan_apart = u->is_float;                                                       \
        if (!write) {                                                                            \
            int64_t starts = 0;                                                                  \
            for (int64_t j = lo; j < hi; j++)                                                    \
                starts += j == 0 || k[j] != k[j - 1] || (nan_apart && k[j] == nan);             \
            return starts;                                                                       \
        }                                                                                        \
        for (int64_t j = lo; j < hi; j++) {                                                      \
            if (j == 0 || k[j] != k[j - 1] || (nan_apart && k[j] == nan)) {                      \
                g++;                                                                             \
                memcpy(u->values + g * (W / 8), u->x + u->order[j] * u->sx, W / 8);              \
                if (u->counts) u->counts[g] = j;                                                 \
            }                                                                                    \
            if (u->inverse) u->inverse[u->order[j]] = g;                                         \
        }                                                                                        \
        return g;                                                                                \
    }
EM_FOR_WIDTH(UNIQUE_RUNS)
typedef int64_t (*runs_fn)(const unique_job *u, int64_t lo, int64_t hi, int64_t g, int write);
#define RUNS_ENTRY(W) runs_##W,
static const runs_fn RUNS[4] = {EM_FOR_WIDTH(RUNS_ENTRY)};

/* Most chunks a pass is cut into (the thread count, capped: the prefix sums live on the stack). */
#define UNIQUE_MAX_CHUNKS 256

/* The pass over the sorted keys; returns the number of runs. */
static int64_t unique_pass(const unique_job *u, runs_fn runs) {
    const int64_t n = u->n;
    int chunks = line_chunks(n);
    if (chunks > UNIQUE_MAX_CHUNKS) chunks = UNIQUE_MAX_CHUNKS;
    /* chunk c's runs are numbered first[c] to last[c] (one chunk: its first is 0) */
    int64_t first[UNIQUE_MAX_CHUNKS + 1] = {0}, last[UNIQUE_MAX_CHUNKS];
    if (chunks > 1) {
#pragma omp parallel for schedule(static)
        for (int c = 0; c < chunks; c++)
            first[c + 1] = runs(u, CHUNK_LO(n, c, chunks), CHUNK_LO(n, c + 1, chunks), 0, 0);
        for (int c = 0; c < chunks; c++) first[c + 1] += first[c];
    }
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (int c = 0; c < chunks; c++)
        last[c] = runs(u, CHUNK_LO(n, c, chunks), CHUNK_LO(n, c + 1, chunks), first[c] - 1, 1);
    const int64_t found = last[chunks - 1] + 1;
    if (!u->counts) return found;
    /* counts[g] = start of run g + 1 (n for the last) - start of run g, each chunk of runs read
     * before any is rewritten: next[c] is the start of the run after chunk c's. */
    int64_t next[UNIQUE_MAX_CHUNKS];
    for (int c = 0; c < chunks; c++) {
        int64_t end = CHUNK_LO(found, c + 1, chunks);
        next[c] = end < found ? u->counts[end] : n;
    }
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (int c = 0; c < chunks; c++) {
        int64_t end = CHUNK_LO(found, c + 1, chunks);
        for (int64_t g = CHUNK_LO(found, c, chunks); g < end; g++)
            u->counts[g] = (g + 1 < end ? u->counts[g + 1] : next[c]) - u->counts[g];
    }
    return found;
}

/* ---- unique of integers over a short range: a count, not a sort -----------------------------
 * Integers (and bools) whose values span at most DENSE_MAX values, and no more than n / chunks,
 * are counted instead: one count per value, per chunk on every thread; the sorted unique values
 * are the values counted, in order, and an element's inverse is its value's rank. Equal integers
 * are the same value, so this is the sort's result, from two or three reads of x where the sort
 * makes ten passes over keys and positions. Returns 0 (nothing written) where it does not fit. */
#define DENSE_MAX (1 << 16)

typedef int (*dense_fn)(const char *x, int64_t sx, int64_t n, char *values, int64_t *inverse,
                        int64_t *counts, int64_t *found);
#define DENSE_UNIQUE(T, unused)                                                                  \
    static EM_CLONES int dense_##T(const char *xb, int64_t sx, int64_t n, char *vb,               \
                                   int64_t *inverse, int64_t *counts, int64_t *found) {          \
        const ST_##T *x = (const ST_##T *)xb;                                                    \
        const int chunks = line_chunks(n);                                                       \
        ST_##T lo = x[0], hi = x[0];                                                             \
        _Pragma("omp parallel for reduction(min : lo) reduction(max : hi) if (chunks > 1)")     \
        for (int64_t i = 0; i < n; i++) {                                                        \
            lo = x[i * sx] < lo ? x[i * sx] : lo;                                                \
            hi = x[i * sx] > hi ? x[i * sx] : hi;                                                \
        }                                                                                        \
        const uint64_t span = (uint64_t)hi - (uint64_t)lo; /* exact, even across int64's range */ \
        if (span >= DENSE_MAX || (int64_t)(span + 1) * chunks > n) return 0;                     \
        const int64_t range = (int64_t)span + 1;                                                 \
        int64_t *count = calloc((size_t)(range * chunks), sizeof(int64_t));                      \
        if (!count) return 0;                                                                    \
        _Pragma("omp parallel for schedule(static) if (chunks > 1)")                             \
        for (int c = 0; c < chunks; c++) {                                                       \
            int64_t *cc = count + c * range;                                                     \
            for (int64_t i = CHUNK_LO(n, c, chunks); i < CHUNK_LO(n, c + 1, chunks); i++)        \
                cc[(uint64_t)x[i * sx] - (uint64_t)lo]++;                                        \
        }                                                                                        \
        int64_t g = 0;                                                                           \
        for (int64_t v = 0; v < range; v++) {                                                    \
            int64_t total = 0;                                                                   \
            for (int c = 0; c < chunks; c++) total += count[c * range + v];                      \
            if (!total) continue;                                                                \
            ((ST_##T *)vb)[g] = (ST_##T)((uint64_t)lo + (uint64_t)v);                            \
            if (counts) counts[g] = total;                                                       \
            count[v] = g++; /* value v's rank, where chunk 0's count was */                      \
        }                                                                                        \
        if (inverse) {                                                                           \
            _Pragma("omp parallel for schedule(static) if (chunks > 1)")                         \
            for (int64_t i = 0; i < n; i++)                                                      \
                inverse[i] = count[(uint64_t)x[i * sx] - (uint64_t)lo];                          \
        }                                                                                        \
        free(count);                                                                             \
        *found = g;                                                                              \
        return 1;                                                                                \
    }
EM_FOR_INTB(DENSE_UNIQUE, 0)
#define DENSE_ENTRY(T, unused) [EMC_##T] = dense_##T,
static const dense_fn DENSE[EM_NDTYPES] = {EM_FOR_INTB(DENSE_ENTRY, 0)}; /* floats: NULL */

int ember_unique(int dtype, int64_t n, intptr_t x, int64_t sx, intptr_t values, intptr_t inverse,
                 intptr_t counts, int64_t *found) {
    if (dtype < 0 || dtype >= EM_NDTYPES || n < 0) return EM_BAD_ARGUMENT;
    if (n > (int64_t)UINT32_MAX) return EM_BAD_ARGUMENT; /* positions are 32-bit */
    *found = 0;
    if (n == 0) return EM_OK;
    if (DENSE[dtype] && DENSE[dtype]((const char *)x, sx, n, (char *)values, (int64_t *)inverse,
                                     (int64_t *)counts, found))
        return EM_OK;
    int isz = em_itemsize(dtype), w = width_slot(isz);
    sort_buf b;
    if (!buf_alloc(&b, n, isz)) {
        buf_free(&b);
        return EM_NO_MEMORY;
    }
    line_keys(KEYS[dtype], (const char *)x, sx * isz, n, isz, 0, &b);
    uint32_t *order = SORTS[w](b.k, b.ix, b.tk, b.tix, n);
    unique_job u = {
        .x = (const char *)x,
        .sx = sx * isz,
        .n = n,
        .keys = order == b.ix ? b.k : b.tk, /* the radix passes swap both pairs */
        .order = order,
        .is_float = is_float_dtype(dtype),
        .values = (char *)values,
        .inverse = (int64_t *)inverse,
        .counts = (int64_t *)counts,
    };
    *found = unique_pass(&u, RUNS[w]);
    buf_free(&b);
    return EM_OK;
}

/* ---- searchsorted ---------------------------------------------------------------------------- */
typedef struct {
    int64_t len, stride; /* the sequence row: length, byte stride */
    int right;
} search_ctx;

/* operands (out, values, sequence row, ctx). PyTorch's comparisons: a NaN value lands at the
 * end of the row. */
#define SEARCH_LOOP(T, O)                                                                        \
    static EM_CLONES void search_##T##_##O(int64_t n, char **ptrs, const int64_t *s,             \
                                           em_params *p) {                                       \
        (void)p;                                                                                 \
        const search_ctx *c = (const search_ctx *)ptrs[3];                                       \
        const int64_t len = c->len, step = c->stride;                                            \
        const int right = c->right;                                                              \
        for (int64_t j = 0; j < n; j++) {                                                        \
            const CT_##T v = LD_##T(*(const ST_##T *)(ptrs[1] + j * s[1]));                      \
            const char *row = ptrs[2] + j * s[2];                                                \
            int64_t lo = 0, hi = len;                                                            \
            while (lo < hi) {                                                                    \
                int64_t mid = lo + ((hi - lo) >> 1);                                             \
                CT_##T m = LD_##T(*(const ST_##T *)(row + mid * step));                          \
                if (right ? !(m > v) : !(m >= v))                                                \
                    lo = mid + 1;                                                                \
                else                                                                             \
                    hi = mid;                                                                    \
            }                                                                                    \
            *(O##_t *)(ptrs[0] + j * s[0]) = (O##_t)lo;                                          \
        }                                                                                        \
    }
#define SEARCH_LOOPS(T, unused) SEARCH_LOOP(T, int32) SEARCH_LOOP(T, int64)
EM_FOR_NUM(SEARCH_LOOPS, 0)
#define SEARCH_ENTRY(T, O) [EMC_##T] = search_##T##_##O,
static const em_loop SEARCH32[EM_NDTYPES] = {EM_FOR_NUM(SEARCH_ENTRY, int32)};
static const em_loop SEARCH64[EM_NDTYPES] = {EM_FOR_NUM(SEARCH_ENTRY, int64)};

int ember_searchsorted(int dtype, int right, int out_int32, int ndim, const int64_t *vshape,
                       intptr_t values, const int64_t *sv, intptr_t seq, const int64_t *seq_rows,
                       int64_t seq_len, int64_t seq_stride, intptr_t out) {
    if (dtype < 0 || dtype >= EM_NDTYPES || ndim < 0 || ndim > EM_MAX_DIMS) return EM_BAD_ARGUMENT;
    em_loop loop = (out_int32 ? SEARCH32 : SEARCH64)[dtype];
    if (!loop) return EM_UNSUPPORTED;
    int isz = em_itemsize(dtype);
    search_ctx c = {seq_len, seq_stride * isz, right};
    int64_t strides[4 * EM_MAX_DIMS];
    em_byte_strides(ndim, vshape, NULL, out_int32 ? 4 : 8, strides);
    em_byte_strides(ndim, vshape, sv, isz, strides + ndim);
    for (int d = 0; d < ndim; d++) {
        strides[2 * ndim + d] = seq_rows ? seq_rows[d] * isz : 0;
        strides[3 * ndim + d] = 0;
    }
    char *ptrs[4] = {(char *)out, (char *)values, (char *)seq, (char *)&c};
    em_params p = {{0}, {0}, 0};
    return em_run(loop, 4, ndim, vshape, ptrs, strides, &p);
}
