/* Indexing kernels: gather/scatter, index_select/index_add, take/put_, nonzero.
 *
 * Pure data movement (gather, scatter, take, put_) depends only on the element width, so those
 * loops exist once per width (1, 2, 4, 8 bytes), not once per dtype; adds and non-zero tests are
 * per dtype. Loops run under em_run (ember_cpu.h), which merges dims and splits the work over
 * OpenMP threads; an op's constants travel as one more operand with stride 0 (an `ictx`).
 *
 * scatter_reduce's folds (sum, prod, amax, amin) are scatter_add's loop with another store.
 *
 * Race freedom of the accumulating kernels: scatter, scatter_add and index_add take `dim` out of
 * the iteration space and walk it inside the loop, so threads only ever get positions that
 * differ outside `dim`, and those never write the same element. put_ with accumulate runs on one
 * thread. float16/bfloat16 accumulate into a float32 copy of the destination that is narrowed
 * once at the end, so repeated adds do not round at every step.
 */
#include <stdlib.h>

#include "ember_cpu.h"
#include "api_core.h"
#include "api_index.h"

#define IX_CAT_(a, b) a##b
#define IX_CAT(a, b) IX_CAT_(a, b)

/* An indexed tensor's logical row-major order for take/put_: flat index -> byte offset. */
typedef struct {
    int ndim; /* after merging dims that are contiguous with each other */
    int64_t shape[EM_MAX_DIMS];
    int64_t stride[EM_MAX_DIMS]; /* bytes */
} em_flat;

/* The constants of one call, passed to the loops as a stride-0 operand. */
typedef struct {
    int64_t low, size;  /* index values must lie in [low, size) */
    int64_t dim_stride; /* bytes between slices of the indexed tensor along dim */
    int64_t count;      /* scatter: extent of dim, walked inside the loop */
    int64_t index_step; /* scatter: bytes between index entries along dim */
    int64_t src_step;   /* scatter: bytes between src entries along dim */
    int64_t row_bytes;  /* gather: bytes copied per index value */
    double alpha_f;     /* index_add's alpha (floating dtypes) */
    int64_t alpha_i;    /* index_add's alpha (other dtypes) */
    em_flat flat;       /* take/put_: the indexed tensor */
} ictx;

#define IN_RANGE(i, size) ((uint64_t)(i) < (uint64_t)(size))
#define OUT_OF_RANGE(p)                                                                          \
    do {                                                                                         \
        (p)->status = EM_INDEX_OUT_OF_RANGE;                                                     \
        return;                                                                                  \
    } while (0)

static void flat_init(em_flat *f, int ndim, const int64_t *shape, const int64_t *st, int isz) {
    int64_t bytes[EM_MAX_DIMS];
    em_byte_strides(ndim, shape, st, isz, bytes);
    f->ndim = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) continue;
        int k = f->ndim;
        if (k && f->stride[k - 1] == bytes[d] * shape[d]) {
            f->shape[k - 1] *= shape[d];
            f->stride[k - 1] = bytes[d];
        } else {
            f->shape[k] = shape[d];
            f->stride[k] = bytes[d];
            f->ndim++;
        }
    }
}

static inline int64_t flat_offset(const em_flat *f, int64_t i) {
    int64_t off = 0;
    for (int d = f->ndim - 1; d > 0; d--) {
        int64_t q = i / f->shape[d];
        off += (i - q * f->shape[d]) * f->stride[d];
        i = q;
    }
    return f->ndim ? off + i * f->stride[0] : 0;
}

static int64_t numel_of(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* ---- operands for the driver ----------------------------------------------------------------- */
typedef struct {
    int nops, ndim;
    int64_t shape[EM_MAX_DIMS];
    char *ptrs[EM_MAX_OPERANDS];
    int64_t strides[EM_MAX_OPERANDS][EM_MAX_DIMS]; /* bytes */
} iter;

static void iter_init(iter *it, int ndim, const int64_t *shape) {
    it->nops = 0;
    it->ndim = ndim;
    for (int d = 0; d < ndim; d++) it->shape[d] = shape[d];
}

/* A tensor operand; NULL element strides mean row-major contiguous over `shape`. */
static void iter_add(iter *it, intptr_t base, const int64_t *shape, const int64_t *st, int isz) {
    em_byte_strides(it->ndim, shape, st, isz, it->strides[it->nops]);
    it->ptrs[it->nops++] = (char *)base;
}

/* A pointer that stays put (the ictx, or the base of a tensor indexed through flat_offset). */
static void iter_add_fixed(iter *it, const void *ptr) {
    for (int d = 0; d < it->ndim; d++) it->strides[it->nops][d] = 0;
    it->ptrs[it->nops++] = (char *)ptr;
}

/* em_run's serial walk, for loops that must see their elements in order on one thread. */
static void run_serial(em_loop loop, const iter *it, em_params *p) {
    char *ptrs[EM_MAX_OPERANDS];
    int64_t idx[EM_MAX_DIMS] = {0}, inner_strides[EM_MAX_OPERANDS], rows = 1;
    int nd = it->ndim, outer = nd ? nd - 1 : 0;
    for (int d = 0; d < nd; d++) {
        if (it->shape[d] == 0) return;
        if (d < outer) rows *= it->shape[d];
    }
    for (int k = 0; k < it->nops; k++) {
        ptrs[k] = it->ptrs[k];
        inner_strides[k] = nd ? it->strides[k][nd - 1] : 0;
    }
    for (int64_t row = 0; row < rows; row++) {
        loop(nd ? it->shape[nd - 1] : 1, ptrs, inner_strides, p);
        for (int d = outer - 1; d >= 0; d--) {
            for (int k = 0; k < it->nops; k++) ptrs[k] += it->strides[k][d];
            if (++idx[d] < it->shape[d]) break;
            for (int k = 0; k < it->nops; k++) ptrs[k] -= it->strides[k][d] * it->shape[d];
            idx[d] = 0;
        }
    }
}

static int iter_run(em_loop loop, const iter *it, int parallel) {
    em_params p = {{0}, {0}, 0};
    if (!parallel) {
        run_serial(loop, it, &p);
        return p.status;
    }
    int64_t strides[EM_MAX_OPERANDS * EM_MAX_DIMS];
    for (int k = 0; k < it->nops; k++)
        for (int d = 0; d < it->ndim; d++) strides[k * it->ndim + d] = it->strides[k][d];
    return em_run(loop, it->nops, it->ndim, it->shape, (char **)it->ptrs, strides, &p);
}

/* ---- stores: STORE_<kind>(A, B, dst, src, ctx) ------------------------------------------------
 * Loop families below are macros LOOP(kind, A, B) defining <family>_<kind>_<A>_<B>: COPY loops
 * exist per element width A (bits), ADD loops per accumulation pair (destination A, source B). */
/* Plain copy of one W-bit element. */
#define STORE_COPY(W, unused, d, s, c) (*(uint##W##_t *)(d) = *(const uint##W##_t *)(s))
/* dst (dtype D) += alpha * src (dtype S), in D's compute type. */
#define SCALE_0(c, v) ((c)->alpha_i * (v))
#define SCALE_1(c, v) ((c)->alpha_f * (v))
#define STORE_ADD(D, S, d, s, c)                                                                 \
    (*(ST_##D *)(d) = SV_##D(LD_##D(*(ST_##D *)(d)) +                                            \
                             (CT_##D)IX_CAT(SCALE_, ISF_##S)(c, LD_##S(*(const ST_##S *)(s)))))

/* scatter_reduce's folds: dst (dtype D) = FOLD(dst, src) in D's compute type. amax/amin take a
 * NaN source and keep a NaN destination, as PyTorch's ReduceMaximum/ReduceMinimum (std::max and
 * std::min return their first argument when the comparison is false). */
#define FOLD_SUM(a, b) ((a) + (b))
#define FOLD_MUL(a, b) ((a) * (b))
#define FOLD_MAX(a, b) (((b) != (b) || (a) < (b)) ? (b) : (a))
#define FOLD_MIN(a, b) (((b) != (b) || (b) < (a)) ? (b) : (a))
#define STORE_FOLD(D, S, d, s, FOLD)                                                             \
    (*(ST_##D *)(d) = SV_##D(FOLD(LD_##D(*(ST_##D *)(d)), (CT_##D)LD_##S(*(const ST_##S *)(s)))))
#define STORE_SUM(D, S, d, s, c) STORE_FOLD(D, S, d, s, FOLD_SUM)
#define STORE_MUL(D, S, d, s, c) STORE_FOLD(D, S, d, s, FOLD_MUL)
#define STORE_MAX(D, S, d, s, c) STORE_FOLD(D, S, d, s, FOLD_MAX)
#define STORE_MIN(D, S, d, s, c) STORE_FOLD(D, S, d, s, FOLD_MIN)

/* Accumulation (destination, source) dtypes: half types add into a float32 copy. */
#define ACC_PAIRS(M, X)                                                                          \
    M(b, b, X) M(u8, u8, X) M(i8, i8, X) M(i16, i16, X) M(i32, i32, X) M(i64, i64, X)              \
    M(f32, f32, X) M(f64, f64, X) M(f32, f16, X) M(f32, bf16, X)
#define EM_FOR_WIDTH(M, X) M(8, X) M(16, X) M(32, X) M(64, X)
#define COPY_LOOPS(W, LOOP) LOOP(COPY, W, 0)
#define ADD_LOOPS(D, S, LOOP) LOOP(ADD, D, S)
/* Tables: copies by width slot (width_slot), adds by source dtype. */
#define COPY_ENTRY(W, FAMILY) FAMILY##_COPY_##W##_0,
#define ADD_ENTRY(D, S, FAMILY) [EMC_##S] = FAMILY##_ADD_##D##_##S,

static int width_slot(int dtype) {
    switch (em_itemsize(dtype)) {
    case 1: return 0;
    case 2: return 1;
    case 4: return 2;
    case 8: return 3;
    default: return -1;
    }
}

static int is_half(int dtype) { return dtype == EM_F16 || dtype == EM_BF16; }

/* ---- gather: operands (out, index, x with dim's stride zeroed, ctx) -------------------------- */
#define GATHER_LOOP(KIND, W, unused)                                                             \
    static EM_CLONES void gather_##KIND##_##W##_0(int64_t n, char **ptrs, const int64_t *s,      \
                                                  em_params *p) {                                \
        const ictx *c = (const ictx *)ptrs[3];                                                   \
        char *o = ptrs[0];                                                                       \
        const char *ix = ptrs[1], *x = ptrs[2];                                                  \
        const int64_t size = c->size, ds = c->dim_stride;                                        \
        for (int64_t j = 0; j < n; j++) {                                                        \
            int64_t i = *(const int64_t *)(ix + j * s[1]);                                       \
            if (!IN_RANGE(i, size)) OUT_OF_RANGE(p);                                             \
            STORE_##KIND(W, 0, o + j * s[0], x + j * s[2] + i * ds, c);                          \
        }                                                                                        \
    }
EM_FOR_WIDTH(COPY_LOOPS, GATHER_LOOP)

/* Whole rows of c->row_bytes per index value: the trailing dims are contiguous in out and x. */
static void gather_rows(int64_t n, char **ptrs, const int64_t *s, em_params *p) {
    const ictx *c = (const ictx *)ptrs[3];
    for (int64_t j = 0; j < n; j++) {
        int64_t i = *(const int64_t *)(ptrs[1] + j * s[1]);
        if (!IN_RANGE(i, c->size)) OUT_OF_RANGE(p);
        memcpy(ptrs[0] + j * s[0], ptrs[2] + j * s[2] + i * c->dim_stride, (size_t)c->row_bytes);
    }
}

static const em_loop GATHER[4] = {EM_FOR_WIDTH(COPY_ENTRY, gather)};

/* Rows shorter than this copy element by element (a memcpy call costs more). */
#define MIN_ROW_BYTES 64

static int gather_core(int dtype, int ndim, int dim, const int64_t *xshape, intptr_t x,
                       const int64_t *sx, const int64_t *ishape, intptr_t index,
                       const int64_t *si, intptr_t out) {
    int w = width_slot(dtype);
    if (w < 0 || ndim < 1 || ndim > EM_MAX_DIMS || dim < 0 || dim >= ndim) return EM_BAD_ARGUMENT;
    int isz = em_itemsize(dtype);
    ictx c = {0};
    c.size = xshape[dim];
    iter it;
    iter_init(&it, ndim, ishape);
    iter_add(&it, out, ishape, NULL, isz);
    iter_add(&it, index, ishape, si, 8);
    iter_add(&it, x, xshape, sx, isz);
    iter_add_fixed(&it, &c);
    c.dim_stride = it.strides[2][dim];
    it.strides[2][dim] = 0;
    /* Trailing dims along which the index is constant and out and x are both contiguous are
     * copied as whole rows (index_select's usual case). */
    int b = ndim;
    int64_t row = isz;
    while (b - 1 > dim) {
        int d = b - 1;
        int contiguous = it.strides[0][d] == row && it.strides[2][d] == row;
        if (ishape[d] != 1 && (it.strides[1][d] || !contiguous)) break;
        row *= ishape[d];
        b--;
    }
    if (row >= MIN_ROW_BYTES) {
        c.row_bytes = row;
        it.ndim = b;
        return iter_run(gather_rows, &it, 1);
    }
    return iter_run(GATHER[w], &it, 1);
}

int ember_gather(int dtype, int ndim, int dim, const int64_t *xshape, intptr_t x,
                 const int64_t *sx, const int64_t *ishape, intptr_t index, const int64_t *si,
                 intptr_t out) {
    return gather_core(dtype, ndim, dim, xshape, x, sx, ishape, index, si, out);
}

int ember_index_select(int dtype, int ndim, int dim, const int64_t *xshape, intptr_t x,
                       const int64_t *sx, int64_t n, intptr_t index, int64_t index_stride,
                       intptr_t out) {
    if (ndim < 1 || ndim > EM_MAX_DIMS || dim < 0 || dim >= ndim) return EM_BAD_ARGUMENT;
    /* A gather whose index is broadcast along every dim but `dim`. */
    int64_t oshape[EM_MAX_DIMS], si[EM_MAX_DIMS];
    for (int d = 0; d < ndim; d++) {
        oshape[d] = d == dim ? n : xshape[d];
        si[d] = d == dim ? index_stride : 0;
    }
    return gather_core(dtype, ndim, dim, xshape, x, sx, oshape, index, si, out);
}

/* ---- scatter: operands (out, index, src, ctx); dim is walked inside the loop ----------------- */
static inline int64_t em_abs_i64(int64_t v) { return v < 0 ? -v : v; }
#define SCATTER_LOOP(KIND, A, B)                                                                 \
    static EM_CLONES void scatter_##KIND##_##A##_##B(int64_t n, char **ptrs, const int64_t *s,   \
                                                     em_params *p) {                             \
        const ictx *c = (const ictx *)ptrs[3];                                                   \
        char *o = ptrs[0];                                                                       \
        const int64_t so = s[0], si = s[1], ss = s[2], size = c->size, ds = c->dim_stride;       \
        const int64_t count = c->count, istep = c->index_step, sstep = c->src_step;              \
        if (n == 1) { /* one line along dim (a 1-D scatter): nothing else to walk */            \
            const char *ix = ptrs[1], *src = ptrs[2];                                            \
            for (int64_t k = 0; k < count; k++) {                                                \
                int64_t i = *(const int64_t *)(ix + k * istep);                                  \
                if (!IN_RANGE(i, size)) OUT_OF_RANGE(p);                                         \
                STORE_##KIND(A, B, o + i * ds, src + k * sstep, c);                              \
            }                                                                                    \
            return;                                                                              \
        }                                                                                        \
        const int k_inner = si != 0 && em_abs_i64(istep) < em_abs_i64(si);                      \
        for (int64_t k = 0; k < count && !k_inner; k++) {                                        \
            const char *ix = ptrs[1] + k * istep, *src = ptrs[2] + k * sstep;                    \
            if (si == 0) { /* one index for the whole run (index_add) */                         \
                int64_t i = *(const int64_t *)ix;                                                \
                if (!IN_RANGE(i, size)) OUT_OF_RANGE(p);                                         \
                char *dst = o + i * ds;                                                          \
                for (int64_t j = 0; j < n; j++)                                                  \
                    STORE_##KIND(A, B, dst + j * so, src + j * ss, c);                           \
            } else if (!k_inner) {                                                               \
                for (int64_t j = 0; j < n; j++) {                                                \
                    int64_t i = *(const int64_t *)(ix + j * si);                                 \
                    if (!IN_RANGE(i, size)) OUT_OF_RANGE(p);                                     \
                    STORE_##KIND(A, B, o + j * so + i * ds, src + j * ss, c);                    \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
        if (!k_inner) return;                                                                    \
        /* dim is the faster-moving one (scatter along the last dim: max pooling's backward):  \
         * walk it innermost, so each output row stays in cache while its entries land. */     \
        for (int64_t j = 0; j < n; j++) {                                                        \
            char *orow = o + j * so;                                                             \
            const char *ix = ptrs[1] + j * si, *src = ptrs[2] + j * ss;                          \
            for (int64_t k = 0; k < count; k++) {                                                \
                int64_t i = *(const int64_t *)(ix + k * istep);                                  \
                if (!IN_RANGE(i, size)) OUT_OF_RANGE(p);                                         \
                STORE_##KIND(A, B, orow + i * ds, src + k * sstep, c);                           \
            }                                                                                    \
        }                                                                                        \
    }
EM_FOR_WIDTH(COPY_LOOPS, SCATTER_LOOP)
ACC_PAIRS(ADD_LOOPS, SCATTER_LOOP)
#define SCATTER_FOLD_LOOP(D, S, KIND) SCATTER_LOOP(KIND, D, S)
ACC_PAIRS(SCATTER_FOLD_LOOP, SUM)
ACC_PAIRS(SCATTER_FOLD_LOOP, MUL)
ACC_PAIRS(SCATTER_FOLD_LOOP, MAX)
ACC_PAIRS(SCATTER_FOLD_LOOP, MIN)
static const em_loop SCATTER_COPY[4] = {EM_FOR_WIDTH(COPY_ENTRY, scatter)};
static const em_loop SCATTER_ADD[EM_NDTYPES] = {ACC_PAIRS(ADD_ENTRY, scatter)};
/* By mode - 1 (EM_SCATTER_SUM to EM_SCATTER_AMIN): the folds without index_add's alpha. */
#define SCATTER_FOLD_ENTRY(D, S, KIND) [EMC_##S] = scatter_##KIND##_##D##_##S,
static const em_loop SCATTER_FOLD[4][EM_NDTYPES] = {
    {ACC_PAIRS(SCATTER_FOLD_ENTRY, SUM)},
    {ACC_PAIRS(SCATTER_FOLD_ENTRY, MUL)},
    {ACC_PAIRS(SCATTER_FOLD_ENTRY, MAX)},
    {ACC_PAIRS(SCATTER_FOLD_ENTRY, MIN)},
};

/* A float32 copy of a half tensor to accumulate into (NULL when out of memory). */
static float *widen(int dtype, int ndim, const int64_t *shape, intptr_t t, const int64_t *st) {
    int64_t n = numel_of(ndim, shape);
    float *wide = malloc((size_t)(n ? n : 1) * sizeof(float));
    if (wide) ember_copy(EM_F32, dtype, n, ndim, shape, (intptr_t)wide, NULL, t, st);
    return wide;
}

/* Store the float32 copy back into the half tensor and free it. */
static int narrow(float *wide, int dtype, int ndim, const int64_t *shape, intptr_t t,
                  const int64_t *st) {
    int status = ember_copy(dtype, EM_F32, numel_of(ndim, shape), ndim, shape, t, st,
                            (intptr_t)wide, NULL);
    free(wide);
    return status;
}

/* The loop of one scatter: mode EM_SCATTER_COPY..EM_SCATTER_AMIN; alpha: index_add's scaled add
 * (mode EM_SCATTER_SUM with an alpha argument). */
static em_loop scatter_loop(int dtype, int mode, int alpha) {
    if (mode == EM_SCATTER_COPY) return SCATTER_COPY[width_slot(dtype)];
    return alpha ? SCATTER_ADD[dtype] : SCATTER_FOLD[mode - 1][dtype];
}

static int scatter_core(int dtype, int mode, int alpha, int ndim, int dim, const int64_t *oshape,
                        intptr_t out, const int64_t *so, const int64_t *ishape, intptr_t index,
                        const int64_t *si, intptr_t src, const int64_t *ss, double alpha_f,
                        int64_t alpha_i) {
    int w = width_slot(dtype);
    if (w < 0 || ndim < 1 || ndim > EM_MAX_DIMS || dim < 0 || dim >= ndim) return EM_BAD_ARGUMENT;
    if (mode < EM_SCATTER_COPY || mode > EM_SCATTER_AMIN) return EM_BAD_ARGUMENT;
    int isz = em_itemsize(dtype);
    float *wide = NULL;
    if (mode != EM_SCATTER_COPY && is_half(dtype)) {
        wide = widen(dtype, ndim, oshape, out, so);
        if (!wide) return EM_NO_MEMORY;
    }
    ictx c = {0};
    c.size = oshape[dim];
    c.count = ishape[dim];
    c.alpha_f = alpha_f;
    c.alpha_i = alpha_i;
    int64_t shape[EM_MAX_DIMS];
    for (int d = 0; d < ndim; d++) shape[d] = d == dim ? 1 : ishape[d];
    iter it;
    iter_init(&it, ndim, shape);
    if (wide)
        iter_add(&it, (intptr_t)wide, oshape, NULL, sizeof(float));
    else
        iter_add(&it, out, oshape, so, isz);
    iter_add(&it, index, ishape, si, 8);
    iter_add(&it, src, ishape, ss, isz);
    iter_add_fixed(&it, &c);
    c.dim_stride = it.strides[0][dim];
    c.index_step = it.strides[1][dim];
    c.src_step = it.strides[2][dim];
    int status = iter_run(scatter_loop(dtype, mode, alpha), &it, 1);
    if (wide) {
        int narrowed = narrow(wide, dtype, ndim, oshape, out, so);
        status = status ? status : narrowed;
    }
    return status;
}

int ember_scatter(int dtype, int mode, int ndim, int dim, const int64_t *oshape, intptr_t out,
                  const int64_t *so, const int64_t *ishape, intptr_t index, const int64_t *si,
                  intptr_t src, const int64_t *ss) {
    return scatter_core(dtype, mode, 0, ndim, dim, oshape, out, so, ishape, index, si, src, ss, 1.0,
                        1);
}

int ember_index_add(int dtype, int ndim, int dim, const int64_t *oshape, intptr_t out,
                    const int64_t *so, int64_t n, intptr_t index, int64_t index_stride,
                    intptr_t src, const int64_t *ss, double alpha_f, int64_t alpha_i) {
    if (ndim < 1 || ndim > EM_MAX_DIMS || dim < 0 || dim >= ndim) return EM_BAD_ARGUMENT;
    /* A scatter_add whose index is broadcast along every dim but `dim`. */
    int64_t ishape[EM_MAX_DIMS], si[EM_MAX_DIMS];
    for (int d = 0; d < ndim; d++) {
        ishape[d] = d == dim ? n : oshape[d];
        si[d] = d == dim ? index_stride : 0;
    }
    return scatter_core(dtype, EM_SCATTER_SUM, 1, ndim, dim, oshape, out, so, ishape, index, si, src,
                        ss, alpha_f, alpha_i);
}

/* ---- take / put_: flat indices into a tensor of any strides; negative ones wrap ------------- */
#define WRAP(i, size) ((i) < 0 ? (i) + (size) : (i))

/* operands (index, values, x base, ctx): take copies x's elements into values, put_ copies or
 * adds values into x's elements. A tensor that is one strided run (the usual case) skips
 * flat_offset's divisions. */
#define FLAT_STEPS(KIND, A, B, DST, SRC, OFFSET)                                                 \
    for (int64_t j = 0; j < n; j++) {                                                            \
        int64_t i = *(const int64_t *)(ix + j * si);                                             \
        i = WRAP(i, size);                                                                       \
        if (!IN_RANGE(i, size)) OUT_OF_RANGE(p);                                                 \
        char *values = vals + j * sv, *element = base + (OFFSET);                                \
        STORE_##KIND(A, B, DST, SRC, c);                                                         \
    }
#define FLAT_LOOP(FAMILY, KIND, A, B, DST, SRC)                                                  \
    static EM_CLONES void FAMILY##_##KIND##_##A##_##B(int64_t n, char **ptrs, const int64_t *s,  \
                                                      em_params *p) {                            \
        const ictx *c = (const ictx *)ptrs[3];                                                   \
        const char *ix = ptrs[0];                                                                \
        char *vals = ptrs[1], *base = ptrs[2];                                                   \
        const int64_t size = c->size, si = s[0], sv = s[1];                                      \
        if (c->flat.ndim <= 1) {                                                                 \
            const int64_t step = c->flat.ndim ? c->flat.stride[0] : 0;                           \
            FLAT_STEPS(KIND, A, B, DST, SRC, i * step)                                           \
        } else {                                                                                 \
            FLAT_STEPS(KIND, A, B, DST, SRC, flat_offset(&c->flat, i))                           \
        }                                                                                        \
    }
#define TAKE_LOOP(KIND, W, unused) FLAT_LOOP(take, KIND, W, 0, values, element)
#define PUT_LOOP(KIND, A, B) FLAT_LOOP(put, KIND, A, B, element, values)
EM_FOR_WIDTH(COPY_LOOPS, TAKE_LOOP)
EM_FOR_WIDTH(COPY_LOOPS, PUT_LOOP)
ACC_PAIRS(ADD_LOOPS, PUT_LOOP)
static const em_loop TAKE[4] = {EM_FOR_WIDTH(COPY_ENTRY, take)};
static const em_loop PUT_COPY[4] = {EM_FOR_WIDTH(COPY_ENTRY, put)};
static const em_loop PUT_ADD[EM_NDTYPES] = {ACC_PAIRS(ADD_ENTRY, put)};

/* operands (index, ctx): the first value outside [low, size) goes to p->i[0]. */
static void check_loop(int64_t n, char **ptrs, const int64_t *s, em_params *p) {
    const ictx *c = (const ictx *)ptrs[1];
    if (p->status) return;
    for (int64_t j = 0; j < n; j++) {
        int64_t i = *(const int64_t *)(ptrs[0] + j * s[0]);
        if (i < c->low || i >= c->size) {
            p->i[0] = i;
            OUT_OF_RANGE(p);
        }
    }
}

int ember_index_find_bad(int ndim, const int64_t *shape, intptr_t index, const int64_t *si,
                         int64_t low, int64_t high, int64_t *bad) {
    if (ndim < 0 || ndim > EM_MAX_DIMS) return 0;
    ictx c = {0};
    c.low = low;
    c.size = high;
    iter it;
    iter_init(&it, ndim, shape);
    iter_add(&it, index, shape, si, 8);
    iter_add_fixed(&it, &c);
    em_params p = {{0}, {0}, 0};
    run_serial(check_loop, &it, &p);
    if (p.status) *bad = p.i[0];
    return p.status != 0;
}

/* take and put_: `loop` over the index and the values (take's out, put_'s src), with x's layout
 * (into c->flat) and bounds [-numel, numel). */
static int run_flat(em_loop loop, int parallel, ictx *c, const void *x, int indim,
                    const int64_t *ishape, intptr_t index, const int64_t *si, intptr_t values,
                    const int64_t *sv, int isz) {
    iter it;
    iter_init(&it, indim, ishape);
    iter_add(&it, index, ishape, si, 8);
    iter_add(&it, values, ishape, sv, isz);
    iter_add_fixed(&it, x);
    iter_add_fixed(&it, c);
    return iter_run(loop, &it, parallel);
}

static int flat_dims_ok(int xndim, int indim) {
    return xndim >= 0 && xndim <= EM_MAX_DIMS && indim >= 0 && indim <= EM_MAX_DIMS;
}

int ember_take(int dtype, int xndim, const int64_t *xshape, intptr_t x, const int64_t *sx,
               int indim, const int64_t *ishape, intptr_t index, const int64_t *si,
               intptr_t out) {
    int w = width_slot(dtype);
    if (w < 0 || !flat_dims_ok(xndim, indim)) return EM_BAD_ARGUMENT;
    int isz = em_itemsize(dtype);
    ictx c = {0};
    c.size = numel_of(xndim, xshape);
    flat_init(&c.flat, xndim, xshape, sx, isz);
    return run_flat(TAKE[w], 1, &c, (const void *)x, indim, ishape, index, si,
                    out, NULL, isz);
}

int ember_put(int dtype, int accumulate, int xndim, const int64_t *xshape, intptr_t x,
              const int64_t *sx, int indim, const int64_t *ishape, intptr_t index,
              const int64_t *si, intptr_t src, const int64_t *ss) {
    int w = width_slot(dtype);
    if (w < 0 || !flat_dims_ok(xndim, indim)) return EM_BAD_ARGUMENT;
    int isz = em_itemsize(dtype);
    ictx c = {0};
    c.size = numel_of(xndim, xshape);
    c.low = -c.size;
    c.alpha_f = 1.0;
    c.alpha_i = 1;
    /* Validate every index first: put_ writes in place, so a bad index must write nothing. */
    iter it;
    iter_init(&it, indim, ishape);
    iter_add(&it, index, ishape, si, 8);
    iter_add_fixed(&it, &c);
    int status = iter_run(check_loop, &it, 1);
    if (status) return status;

    int widened = accumulate && is_half(dtype);
    float *wide = widened ? widen(dtype, xndim, xshape, x, sx) : NULL;
    if (widened && !wide) return EM_NO_MEMORY;
    if (wide)
        flat_init(&c.flat, 1, &c.size, NULL, sizeof(float));
    else
        flat_init(&c.flat, xndim, xshape, sx, isz);
    /* Duplicate indices must all count when accumulating: one thread, in order. Without
     * accumulate, duplicates are undefined (as in PyTorch) and threads may split the work. */
    em_loop loop = accumulate ? PUT_ADD[dtype] : PUT_COPY[w];
    status = run_flat(loop, !accumulate, &c, wide ? (const void *)wide : (const void *)x, indim,
                      ishape, index, si, src, ss, isz);
    if (wide) {
        int narrowed = narrow(wide, dtype, xndim, xshape, x, sx);
        status = status ? status : narrowed;
    }
    return status;
}

/* ---- nonzero ------------------------------------------------------------------------------- */
/* mask[k] = (x[k * stride] != 0) for one run of elements; NaN counts as non-zero. */
typedef void (*nz_mask_fn)(const char *x, int64_t stride, int64_t n, uint8_t *mask);
#define NZ_MASK(T, unused)                                                                       \
    static EM_CLONES void nz_##T(const char *x, int64_t stride, int64_t n, uint8_t *mask) {      \
        for (int64_t k = 0; k < n; k++) mask[k] = LD_##T(*(const ST_##T *)(x + k * stride)) != 0; \
    }
EM_FOR_ALL(NZ_MASK, 0)
#define NZ_ENTRY(T, unused) [EMC_##T] = nz_##T,
static const nz_mask_fn NZ_MASKS[EM_NDTYPES] = {EM_FOR_ALL(NZ_ENTRY, 0)};

#define NZ_BLOCK 4096
#define NZ_MAX_CHUNKS 256

typedef struct {
    nz_mask_fn mask;
    int ndim;
    const int64_t *shape;
    int64_t stride[EM_MAX_DIMS]; /* bytes */
    const char *x;
} nz_src;

/* The non-zeros of x's flat range [start, end): counted, or (out != NULL) their coordinates
 * written to out, at most cap rows. Returns how many were found, -1 if more than cap. */
static int64_t nz_range(const nz_src *src, int64_t start, int64_t end, int64_t *out, int64_t cap) {
    const int last = src->ndim - 1;
    const int64_t *shape = src->shape;
    int64_t idx[EM_MAX_DIMS], rest = start, found = 0;
    uint8_t mask[NZ_BLOCK];
    for (int d = last; d >= 0; d--) {
        idx[d] = rest % shape[d];
        rest /= shape[d];
    }
    for (int64_t pos = start; pos < end;) {
        const char *at = src->x;
        for (int d = 0; d <= last; d++) at += idx[d] * src->stride[d];
        int64_t run = shape[last] - idx[last];
        if (run > end - pos) run = end - pos;
        if (run > NZ_BLOCK) run = NZ_BLOCK;
        src->mask(at, src->stride[last], run, mask);
        for (int64_t r = 0; r < run; r++) {
            if (!mask[r]) continue;
            if (out) {
                if (found >= cap) return -1;
                int64_t *row = out + found * src->ndim;
                for (int d = 0; d < last; d++) row[d] = idx[d];
                row[last] = idx[last] + r;
            }
            found++;
        }
        pos += run;
        idx[last] += run;
        for (int d = last; d > 0 && idx[d] == shape[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
        }
    }
    return found;
}

int ember_nonzero(int dtype, int ndim, const int64_t *shape, intptr_t x, const int64_t *sx,
                  int64_t count, intptr_t out) {
    if (dtype < 0 || dtype >= EM_NDTYPES || ndim < 0 || ndim > EM_MAX_DIMS) return EM_BAD_ARGUMENT;
    int64_t n = numel_of(ndim, shape);
    if (ndim == 0 || n == 0) return EM_OK; /* a 0-d result row has no coordinates to write */
    nz_src src = {NZ_MASKS[dtype], ndim, shape, {0}, (const char *)x};
    em_byte_strides(ndim, shape, sx, em_itemsize(dtype), src.stride);
    int64_t *coords = (int64_t *)out;
    int chunks = 1;
#ifdef _OPENMP
    if (n >= EM_PARALLEL_THRESHOLD) chunks = omp_get_max_threads();
#endif
    if (chunks > NZ_MAX_CHUNKS) chunks = NZ_MAX_CHUNKS;
    if (chunks < 2) return nz_range(&src, 0, n, coords, count) == count ? EM_OK : EM_BAD_ARGUMENT;
    /* Two passes: count per chunk, then each chunk writes from its prefix offset. */
    int64_t found[NZ_MAX_CHUNKS + 1] = {0};
#pragma omp parallel for schedule(static)
    for (int t = 0; t < chunks; t++)
        found[t + 1] = nz_range(&src, n * t / chunks, n * (t + 1) / chunks, NULL, 0);
    for (int t = 0; t < chunks; t++) found[t + 1] += found[t];
    if (found[chunks] != count) return EM_BAD_ARGUMENT; /* count_nonzero disagreed */
#pragma omp parallel for schedule(static)
    for (int t = 0; t < chunks; t++)
        nz_range(&src, n * t / chunks, n * (t + 1) / chunks, coords + found[t] * ndim,
                 found[t + 1] - found[t]);
    return EM_OK;
}
