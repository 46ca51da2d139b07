/* Copies with casts between every pair of dtypes, fill, arange and linspace. */
#include "ember_cpu.h"
#include "api_core.h"

#define EM_CAT_(a, b) a##b
#define EM_CAT(a, b) EM_CAT_(a, b)

/* Float -> D: integers go through int64 first (so -1.0 -> uint8 gives 255, as in PyTorch);
 * bool tests against zero directly (0.5 -> true). */
#define FCVT_b(v) SV_b(v)
#define FCVT_u8(v) SV_u8((int64_t)(v))
#define FCVT_i8(v) SV_i8((int64_t)(v))
#define FCVT_i16(v) SV_i16((int64_t)(v))
#define FCVT_i32(v) SV_i32((int64_t)(v))
#define FCVT_i64(v) SV_i64((int64_t)(v))
#define FCVT_f16(v) SV_f16(v)
#define FCVT_bf16(v) SV_bf16(v)
#define FCVT_f32(v) SV_f32(v)
#define FCVT_f64(v) SV_f64(v)
#define CONV_0(S, D, x) SV_##D(LD_##S(x))
#define CONV_1(S, D, x) FCVT_##D(LD_##S(x))
#define CONVERT(S, D, x) EM_CAT(CONV_, ISF_##S)(S, D, x)

#define CAST_LOOP(D, S)                                                                          \
    static EM_CLONES void cast_##S##_##D(int64_t n, char **ptrs, const int64_t *s, em_params *p) { \
        (void)p;                                                                                  \
        if (s[0] == (int64_t)sizeof(ST_##D) && s[1] == (int64_t)sizeof(ST_##S)) {                 \
            ST_##D *o = (ST_##D *)ptrs[0];                                                        \
            const ST_##S *x = (const ST_##S *)ptrs[1];                                            \
            for (int64_t i = 0; i < n; i++) o[i] = CONVERT(S, D, x[i]);                           \
        } else if (s[0] == (int64_t)sizeof(ST_##D) && s[1] == 0) {                                \
            ST_##D *o = (ST_##D *)ptrs[0];                                                        \
            const ST_##D v = CONVERT(S, D, *(const ST_##S *)ptrs[1]);                             \
            for (int64_t i = 0; i < n; i++) o[i] = v;                                             \
        } else {                                                                                  \
            char *o = ptrs[0];                                                                    \
            const char *x = ptrs[1];                                                              \
            for (int64_t i = 0; i < n; i++, o += s[0], x += s[1])                                 \
                *(ST_##D *)o = CONVERT(S, D, *(const ST_##S *)x);                                 \
        }                                                                                         \
    }
#define CAST_FROM(S, unused) EM_FOR_ALL_INNER(CAST_LOOP, S)
EM_FOR_ALL(CAST_FROM, 0)

#define CAST_ENTRY(D, S) [EMC_##S][EMC_##D] = cast_##S##_##D,
#define CAST_ROW(S, unused) EM_FOR_ALL_INNER(CAST_ENTRY, S)
static const em_loop CAST[EM_NDTYPES][EM_NDTYPES] = {EM_FOR_ALL(CAST_ROW, 0)};

static int valid_dtype(int d) { return d >= 0 && d < EM_NDTYPES; }

/* One row of a copy without a cast: memmove where both operands are contiguous (a tensor copied
 * onto itself, which the overlap checks allow, stays defined), else element by element as bits
 * of the item's width. */
#define COPY_ITEMS(T)                                                                            \
    for (int64_t i = 0; i < n; i++) *(T *)(d + i * ds) = *(const T *)(s + i * ss);             \
    return;
static inline void copy_row(int itemsize, int64_t n, char *d, int64_t ds, const char *s,
                            int64_t ss) {
    if (ds == itemsize && ss == itemsize) {
        memmove(d, s, (size_t)(n * itemsize));
        return;
    }
    switch (itemsize) {
    case 1: COPY_ITEMS(uint8_t)
    case 2: COPY_ITEMS(uint16_t)
    case 4: COPY_ITEMS(uint32_t)
    case 8: COPY_ITEMS(uint64_t)
    default:
        for (int64_t i = 0; i < n; i++) memcpy(d + i * ds, s + i * ss, (size_t)itemsize);
    }
}

/* A copy without a cast, small enough for one thread: the coalesced layout walked two levels
 * at a time, its rows (the second-innermost dim) in a tight loop, the index carried over the
 * dims above once per block of rows. The generic driver (em_run) calls the cast loop through a
 * pointer and carries the index once per row: attention's head transposes, 1,152 rows of 16
 * floats, spent most of their time there. Bits are copied as they are (PyTorch's copy_ of one
 * dtype is a bit copy too). Byte strides; any sign. */
static int copy_same(int itemsize, int ndim, const int64_t *shape_in, char *dst,
                     const int64_t *sd, const char *src, const int64_t *ss) {
    int64_t shape[EM_MAX_DIMS], strides[2][EM_MAX_DIMS], idx[EM_MAX_DIMS] = {0};
    for (int d = 0; d < ndim; d++) {
        if (shape_in[d] == 0) return EM_OK;
        shape[d] = shape_in[d];
        strides[0][d] = sd[d];
        strides[1][d] = ss[d];
    }
    ndim = em_coalesce(ndim, shape, 2, strides);
    if (ndim == 0) {
        memcpy(dst, src, (size_t)itemsize);
        return EM_OK;
    }
    int64_t n = shape[ndim - 1], ds = strides[0][ndim - 1], ss_inner = strides[1][ndim - 1];
    if (ndim == 1) {
        copy_row(itemsize, n, dst, ds, src, ss_inner);
        return EM_OK;
    }
    const int level = ndim - 2;
    const int64_t rows = shape[level], row_d = strides[0][level], row_s = strides[1][level];
    for (;;) {
        char *d = dst;
        const char *s = src;
        for (int64_t r = 0; r < rows; r++, d += row_d, s += row_s)
            copy_row(itemsize, n, d, ds, s, ss_inner);
        int k = level - 1;
        for (; k >= 0; k--) {
            dst += strides[0][k];
            src += strides[1][k];
            if (++idx[k] < shape[k]) break;
            dst -= strides[0][k] * shape[k];
            src -= strides[1][k] * shape[k];
            idx[k] = 0;
        }
        if (k < 0) return EM_OK;
    }
}

int ember_copy(int dst_dtype, int src_dtype, int64_t n, int ndim, const int64_t *shape,
               intptr_t dst, const int64_t *sd, intptr_t src, const int64_t *ss) {
    if (!valid_dtype(dst_dtype) || !valid_dtype(src_dtype) || ndim > EM_MAX_DIMS)
        return EM_BAD_ARGUMENT;
    em_params p = {{0}, {0}, 0};
    int64_t flat[1] = {n};
    int64_t strides[2 * EM_MAX_DIMS];
    if (ndim == 0) {
        ndim = 1;
        shape = flat;
        sd = ss = NULL;
    }
    em_byte_strides(ndim, shape, sd, em_itemsize(dst_dtype), strides);
    em_byte_strides(ndim, shape, ss, em_itemsize(src_dtype), strides + ndim);
    if (dst_dtype == src_dtype) {
        int64_t total = 1;
        for (int d = 0; d < ndim; d++) total *= shape[d];
        if (total < EM_PARALLEL_THRESHOLD)
            return copy_same(em_itemsize(dst_dtype), ndim, shape, (char *)dst, strides,
                             (const char *)src, strides + ndim);
    }
    char *ptrs[2] = {(char *)dst, (char *)src};
    return em_run(CAST[src_dtype][dst_dtype], 2, ndim, shape, ptrs, strides, &p);
}

int ember_fill(int dtype, int64_t n, int ndim, const int64_t *shape, intptr_t dst,
               const int64_t *sd, double f, int64_t i) {
    if (!valid_dtype(dtype) || ndim > EM_MAX_DIMS) return EM_BAD_ARGUMENT;
    /* The value arrives as double and int64; convert once from whichever is exact. */
    double fv = f;
    int64_t iv = i;
    ST_f64 src_f = fv;
    ST_i64 src_i = iv;
    int from_float = dtype >= EM_F16;
    em_params p = {{0}, {0}, 0};
    int64_t flat[1] = {n};
    int64_t strides[2 * EM_MAX_DIMS];
    if (ndim == 0) {
        ndim = 1;
        shape = flat;
        sd = NULL;
    }
    em_byte_strides(ndim, shape, sd, em_itemsize(dtype), strides);
    for (int d = 0; d < ndim; d++) strides[ndim + d] = 0;
    char *ptrs[2] = {(char *)dst, from_float ? (char *)&src_f : (char *)&src_i};
    em_loop loop = from_float ? CAST[EM_F64][dtype] : CAST[EM_I64][dtype];
    return em_run(loop, 2, ndim, shape, ptrs, strides, &p);
}

#define ARANGE_CASE(T, unused)                                                                   \
    case EMC_##T: {                                                                              \
        ST_##T *o = (ST_##T *)out;                                                               \
        for (int64_t k = 0; k < n; k++)                                                          \
            o[k] = ISF_##T ? SV_##T(start + step * (double)k) : SV_##T(istart + istep * k);     \
        return EM_OK;                                                                            \
    }

int ember_arange(int dtype, int64_t n, intptr_t out, double start, double step, int64_t istart,
                 int64_t istep) {
    switch (dtype) { EM_FOR_NUM(ARANGE_CASE, 0) }
    return EM_UNSUPPORTED;
}

/* PyTorch's linspace: the first half steps up from start, the second half down from end, so
 * both endpoints are exact. */
#define LINSPACE_CASE(T, unused)                                                                 \
    case EMC_##T: {                                                                              \
        ST_##T *o = (ST_##T *)out;                                                               \
        for (int64_t k = 0; k < n; k++) {                                                        \
            double v = k < half ? start + step * (double)k : end - step * (double)(n - 1 - k);   \
            o[k] = ISF_##T ? SV_##T(v) : SV_##T((int64_t)v);                                     \
        }                                                                                        \
        return EM_OK;                                                                            \
    }

int ember_linspace(int dtype, int64_t n, intptr_t out, double start, double end) {
    double step = n > 1 ? (end - start) / (double)(n - 1) : 0;
    int64_t half = n / 2;
    switch (dtype) { EM_FOR_NUM(LINSPACE_CASE, 0) }
    return EM_UNSUPPORTED;
}

/* stack of `count` contiguous tensors of one dtype, each seen as (outer, inner_bytes): input i's
 * block o lands at out + (o * count + i) * inner_bytes. One call for the list where stack was an
 * unsqueeze and a copy per tensor (clip_grad_norm_ stacks one norm per gradient). */
int ember_stack(int64_t count, const intptr_t *ptrs, int64_t outer, int64_t inner_bytes,
                intptr_t out) {
    char *dst = (char *)out;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < count; i++, dst += inner_bytes)
            memcpy(dst, (const char *)ptrs[i] + o * inner_bytes, (size_t)inner_bytes);
    return EM_OK;
}
