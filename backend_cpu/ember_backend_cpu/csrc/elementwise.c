/* Elementwise entry points: they run the loops of unary_loops.c, binary_loops.c and
 * ternary_loops.c (generated from unary.def, binary.def and ternary.def) over any strides, with
 * Python scalars as operands, and the contiguous calls of the eager hot path. */
#include "elementwise_loops.h"
#include "api_core.h"

#define OP(name) #name ","
#define LOOP(...)
const char *ember_unary_names(void) { return
#include "unary.def"
    ""; }
const char *ember_binary_names(void) { return
#include "binary.def"
    ""; }
const char *ember_ternary_names(void) { return
#include "ternary.def"
    ""; }
#undef OP
#undef LOOP

/* ---- entry points ----------------------------------------------------------------------------- */
/* Write a Python scalar (given both as double and int64) into `buf` in dtype `dtype`. */
static void store_scalar(int dtype, double f, int64_t i, void *buf) {
    switch (dtype) {
    case EM_BOOL: *(uint8_t *)buf = (uint8_t)(i != 0 || f != 0); break;
    case EM_U8: *(uint8_t *)buf = (uint8_t)i; break;
    case EM_I8: *(int8_t *)buf = (int8_t)i; break;
    case EM_I16: *(int16_t *)buf = (int16_t)i; break;
    case EM_I32: *(int32_t *)buf = (int32_t)i; break;
    case EM_I64: *(int64_t *)buf = i; break;
    case EM_F16: *(uint16_t *)buf = em_f32_to_f16((float)f); break;
    case EM_BF16: *(uint16_t *)buf = em_f32_to_bf16((float)f); break;
    case EM_F32: *(float *)buf = (float)f; break;
    case EM_F64: *(double *)buf = f; break;
    }
}

static int run_elementwise(em_loop loop, int nops, const int *dtypes, int64_t n, int ndim,
                           const int64_t *shape, intptr_t *ptrs, const int64_t **elem_strides,
                           const double *fs, const int64_t *is, em_params *p) {
    int64_t byte_strides[EM_MAX_OPERANDS * EM_MAX_DIMS];
    char *data[EM_MAX_OPERANDS];
    int64_t scalars[EM_MAX_OPERANDS]; /* 8 bytes each, enough for any dtype */
    int64_t flat_shape[1] = {n};
    if (ndim == 0) { /* contiguous: one flat dimension */
        ndim = 1;
        shape = flat_shape;
    }
    if (ndim > EM_MAX_DIMS) return EM_BAD_ARGUMENT;
    for (int k = 0; k < nops; k++) {
        int64_t *row = byte_strides + k * ndim;
        if (ptrs[k] == 0) { /* a scalar operand: stride 0 over a local copy */
            store_scalar(dtypes[k], fs[k], is[k], &scalars[k]);
            data[k] = (char *)&scalars[k];
            for (int d = 0; d < ndim; d++) row[d] = 0;
        } else {
            data[k] = (char *)ptrs[k];
            em_byte_strides(ndim, shape, elem_strides ? elem_strides[k] : NULL,
                            em_itemsize(dtypes[k]), row);
        }
    }
    return em_run(loop, nops, ndim, shape, data, byte_strides, p);
}

static int valid(int op, int count, int dtype) {
    return op >= 0 && op < count && dtype >= 0 && dtype < EM_NDTYPES;
}

int ember_unary(int op, int dtype, int64_t n, int ndim, const int64_t *shape, intptr_t out,
                const int64_t *so, intptr_t x, const int64_t *sx, double p0, double p1, double p2) {
    if (!valid(op, OPU_COUNT, dtype) || !EM_UNARY_LOOPS[op][dtype]) return EM_UNSUPPORTED;
    em_params p = {{p0, p1, p2, 0}, {0, 0, 0, 0}, 0};
    int dtypes[2] = {EM_UNARY_BOOL_OUT[op] ? EM_BOOL : dtype, dtype};
    intptr_t ptrs[2] = {out, x};
    const int64_t *strides[2] = {so, sx};
    return run_elementwise(EM_UNARY_LOOPS[op][dtype], 2, dtypes, n, ndim, shape, ptrs,
                           ndim ? strides : NULL, NULL, NULL, &p);
}

int ember_binary(int op, int dtype, int64_t n, int ndim, const int64_t *shape, intptr_t out,
                 const int64_t *so, intptr_t a, const int64_t *sa, intptr_t b, const int64_t *sb,
                 double scalar_f, int64_t scalar_i, double param) {
    if (!valid(op, OPB_COUNT, dtype) || !EM_BINARY_LOOPS[op][dtype]) return EM_UNSUPPORTED;
    em_params p = {{param, 0, 0, 0}, {0, 0, 0, 0}, 0};
    /* A float16/bfloat16 op whose scalar second operand the glue marks (scalar_i 1, unused for
     * floats) reads it unrounded in float32 from p.f[3]: PyTorch's opmath scalar of mul and the
     * divisions (kernels/elementwise.py OPMATH_SCALAR). Others store it in the dtype. */
    if (b == 0 && scalar_i == 1 && (dtype == EM_F16 || dtype == EM_BF16)) {
        p.f[3] = (float)scalar_f;
        p.i[3] = 1;
    }
    int dtypes[3] = {EM_BINARY_BOOL_OUT[op] ? EM_BOOL : dtype, dtype, dtype};
    intptr_t ptrs[3] = {out, a, b};
    const int64_t *strides[3] = {so, sa, sb};
    double fs[3] = {0, scalar_f, scalar_f};
    int64_t is[3] = {0, scalar_i, scalar_i};
    em_loop loop = EM_BINARY_LOOPS[op][dtype];
    if (op == OPB_pow && b == 0 && a != 0) /* a Python scalar exponent */
        loop = em_pow_by_scalar(dtype, scalar_f, loop);
    return run_elementwise(loop, 3, dtypes, n, ndim, shape, ptrs, ndim ? strides : NULL, fs, is,
                           &p);
}

int ember_ternary(int op, int dtype, int64_t n, int ndim, const int64_t *shape, intptr_t out,
                  const int64_t *so, intptr_t a, const int64_t *sa, intptr_t b,
                  const int64_t *sb, intptr_t c, const int64_t *sc, const double *fs,
                  const int64_t *is, double param) {
    if (!valid(op, OPT_COUNT, dtype) || !EM_TERNARY_LOOPS[op][dtype]) return EM_UNSUPPORTED;
    em_params p = {{param, 0, 0, 0}, {0, 0, 0, 0}, 0};
    int first = op == OPT_where ? EM_BOOL : dtype;
    int dtypes[4] = {dtype, first, dtype, dtype};
    intptr_t ptrs[4] = {out, a, b, c};
    const int64_t *strides[4] = {so, sa, sb, sc};
    double fs4[4] = {0, fs[0], fs[1], fs[2]};
    int64_t is4[4] = {0, is[0], is[1], is[2]};
    return run_elementwise(EM_TERNARY_LOOPS[op][dtype], 4, dtypes, n, ndim, shape, ptrs,
                           ndim ? strides : NULL, fs4, is4, &p);
}

/* ---- contiguous entry points ------------------------------------------------------------------ */
/* The eager hot path (docs/eager_overhead.md): every operand contiguous with the output's shape,
 * in the op's dtype, no scalar and no parameter. Five arguments instead of ember_binary's 14
 * (cffi converts each one; the glue built the rest), and no stride arrays: the loop is the same
 * table entry (EM_BINARY_LOOPS, EM_UNARY_LOOPS), called directly below the parallel threshold.
 * `key` is op * EM_NDTYPES + dtype, resolved once per (op, dtype) by the glue (ember_contig_key). */
static int run_contig(em_loop loop, int nops, char **ptrs, const int64_t *s, int64_t n) {
    em_params p = {{0, 0, 0, 0}, {0, 0, 0, 0}, 0};
    if (n < EM_PARALLEL_THRESHOLD) {
        loop(n, ptrs, s, &p);
        return p.status;
    }
    return em_run(loop, nops, 1, &n, ptrs, s, &p);
}

int ember_binary_contig(int key, intptr_t out, intptr_t a, intptr_t b, int64_t n) {
    int op = key / EM_NDTYPES, dtype = key % EM_NDTYPES;
    if (key < 0 || op >= OPB_COUNT || !EM_BINARY_LOOPS[op][dtype]) return EM_UNSUPPORTED;
    const int64_t si = em_itemsize(dtype);
    const int64_t s[3] = {EM_BINARY_BOOL_OUT[op] ? 1 : si, si, si};
    char *ptrs[3] = {(char *)out, (char *)a, (char *)b};
    return run_contig(EM_BINARY_LOOPS[op][dtype], 3, ptrs, s, n);
}

int ember_unary_contig(int key, intptr_t out, intptr_t x, int64_t n) {
    int op = key / EM_NDTYPES, dtype = key % EM_NDTYPES;
    if (key < 0 || op >= OPU_COUNT || !EM_UNARY_LOOPS[op][dtype]) return EM_UNSUPPORTED;
    const int64_t si = em_itemsize(dtype);
    const int64_t s[2] = {EM_UNARY_BOOL_OUT[op] ? 1 : si, si};
    char *ptrs[2] = {(char *)out, (char *)x};
    return run_contig(EM_UNARY_LOOPS[op][dtype], 2, ptrs, s, n);
}

/* Whether an op has a loop for a dtype (the glue builds its kernel table from this). */
int ember_elementwise_supports(int arity, int op, int dtype) {
    if (arity == 1) return valid(op, OPU_COUNT, dtype) && EM_UNARY_LOOPS[op][dtype] != NULL;
    if (arity == 2) return valid(op, OPB_COUNT, dtype) && EM_BINARY_LOOPS[op][dtype] != NULL;
    if (arity == 3) return valid(op, OPT_COUNT, dtype) && EM_TERNARY_LOOPS[op][dtype] != NULL;
    return 0;
}

/* The key of the contiguous entry points for (arity, op, dtype), or -1 when there is no loop. */
int ember_contig_key(int arity, int op, int dtype) {
    if ((arity != 1 && arity != 2) || !ember_elementwise_supports(arity, op, dtype)) return -1;
    return op * EM_NDTYPES + dtype;
}
