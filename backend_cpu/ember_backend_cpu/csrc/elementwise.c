/* Elementwise kernels: loops generated from unary.def, binary.def and ternary.def.
 *
 * Each loop has a contiguous fast path (and, for binary ops, paths for a scalar operand with
 * stride 0) that the compiler vectorises in the AVX2 clone, and a general strided path.
 */
#include "ember_cpu.h"
#include "api_core.h"
#include "vmath.h"
#include "special.h"

#define EM_FOR_b(M, ...) M(b, __VA_ARGS__)
/* LOOPW in binary.def: a loop that calls vmath.h's functions (the activations' backward), built
 * with the AVX-512 clone too (EM_CLONES_WIDE), like the unary loops; elsewhere it is a LOOP. */
#define LOOPW(...) LOOP(__VA_ARGS__)

/* Output type/store by the LOOP `out` column. */
#define OST_SAME(T) ST_##T
#define OST_BOOL(T) uint8_t
#define OSV_SAME(T, v) SV_##T(v)
#define OSV_BOOL(T, v) SV_b(v)

/* ---- helpers with PyTorch's semantics ---------------------------------------------------------- */
static inline int64_t em_div_trunc_i(int64_t a, int64_t b, em_params *p) {
    if (b == 0) { p->status = EM_ZERO_DIVISION; return 0; }
    if (b == -1) return (int64_t)(0ULL - (uint64_t)a); /* INT_MIN / -1 wraps instead of trapping */
    return a / b;
}

static inline int64_t em_div_floor_i(int64_t a, int64_t b, em_params *p) {
    if (b == 0) { p->status = EM_ZERO_DIVISION; return 0; }
    if (b == -1) return (int64_t)(0ULL - (uint64_t)a);
    int64_t q = a / b, r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) q--;
    return q;
}

static inline int64_t em_remainder_i(int64_t a, int64_t b, em_params *p) {
    if (b == 0) { p->status = EM_ZERO_DIVISION; return 0; }
    if (b == -1) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

static inline int64_t em_fmod_i(int64_t a, int64_t b, em_params *p) {
    if (b == 0) { p->status = EM_ZERO_DIVISION; return 0; }
    if (b == -1) return 0;
    return a % b;
}

static inline int64_t em_pow_i(int64_t a, int64_t b, em_params *p) {
    if (b < 0) {
        if (a == 1) return 1;
        if (a == -1) return (b & 1) ? -1 : 1;
        p->status = EM_NEGATIVE_POWER;
        return 0;
    }
    uint64_t result = 1, base = (uint64_t)a; /* unsigned: overflow wraps, as in PyTorch */
    while (b) {
        if (b & 1) result *= base;
        base *= base;
        b >>= 1;
    }
    return (int64_t)result;
}

static inline int64_t em_shl_i(int64_t a, int64_t b, int bits) {
    if (b < 0 || b >= bits) return 0;
    return (int64_t)((uint64_t)a << b);
}

static inline int64_t em_shr_i(int64_t a, int64_t b, int bits) {
    if (b < 0 || b >= bits) return a < 0 ? -1 : 0;
    return a >> b;
}

#define EM_FLOAT_HELPERS(T, SUFFIX)                                                              \
    static inline T em_floordiv_##SUFFIX(T a, T b) {                                             \
        if (b == 0) return a / b;                                                                 \
        T mod = fmod(a, b);                                                                       \
        T div = (a - mod) / b;                                                                    \
        if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;                                        \
        if (div == 0) return copysign((T)0, a / b);                                               \
        T fl = floor(div);                                                                        \
        if (div - fl > (T)0.5) fl += 1;                                                           \
        return fl;                                                                                \
    }                                                                                             \
    static inline T em_remainder_##SUFFIX(T a, T b) {                                            \
        T r = fmod(a, b);                                                                         \
        if (r != 0 && ((b < 0) != (r < 0))) r += b;                                               \
        return r;                                                                                 \
    }
EM_FLOAT_HELPERS(float, f32)
EM_FLOAT_HELPERS(double, f64)
#define em_floordiv_f(a, b) _Generic((a), float: em_floordiv_f32, default: em_floordiv_f64)(a, b)
#define em_remainder_f(a, b) _Generic((a), float: em_remainder_f32, default: em_remainder_f64)(a, b)
/* min(max(a, lo), hi) with NaN from any operand propagating, as in PyTorch (ints skip the tests). */
#define em_clamp(a, lo, hi) \
    ((lo) != (lo) ? (lo) \
     : (hi) != (hi) ? (hi) \
     : (a) < (lo) ? ((lo) > (hi) ? (hi) : (lo)) \
     : (a) > (hi) ? (hi) : (a))

/* ---- op codes ------------------------------------------------------------------------------ */
#define LOOP(...)
#define OP(name) OPU_##name,
enum { 
#include "unary.def"
OPU_COUNT };
#undef OP
#define OP(name) OPB_##name,
enum {
#include "binary.def"
OPB_COUNT };
#undef OP
#define OP(name) OPT_##name,
enum {
#include "ternary.def"
OPT_COUNT };
#undef OP
#undef LOOP

/* ---- loops --------------------------------------------------------------------------------- */
#define UNARY_LOOP(T, NAME, OUTK, ...)                                                            \
    static EM_CLONES_WIDE void u_##NAME##_##T(int64_t n, char **ptrs, const int64_t *s,            \
                                              em_params *p) {                                      \
        typedef CT_##T ct;                                                                         \
        typedef ST_##T st;                                                                         \
        typedef OST_##OUTK(T) ot;                                                                  \
        (void)p;                                                                                   \
        if (s[0] == (int64_t)sizeof(ot) && s[1] == (int64_t)sizeof(st)) {                          \
            ot *o = (ot *)ptrs[0];                                                                 \
            const st *px = (const st *)ptrs[1];                                                    \
            for (int64_t i = 0; i < n; i++) {                                                      \
                ct x = LD_##T(px[i]);                                                              \
                o[i] = OSV_##OUTK(T, (__VA_ARGS__));                                               \
            }                                                                                      \
        } else {                                                                                   \
            char *o = ptrs[0];                                                                     \
            const char *px = ptrs[1];                                                              \
            for (int64_t i = 0; i < n; i++, o += s[0], px += s[1]) {                               \
                ct x = LD_##T(*(const st *)px);                                                    \
                *(ot *)o = OSV_##OUTK(T, (__VA_ARGS__));                                           \
            }                                                                                      \
        }                                                                                          \
    }
#define OP(name)
#define LOOP(NAME, FAM, OUTK, ...) EM_FOR_##FAM(UNARY_LOOP, NAME, OUTK, __VA_ARGS__)
#include "unary.def"
#undef LOOP

#define BINARY_LOOP(T, NAME, OUTK, ...) BINARY_LOOP_AS(EM_CLONES, T, NAME, OUTK, __VA_ARGS__)
#define BINARY_LOOP_WIDE(T, NAME, OUTK, ...) BINARY_LOOP_AS(EM_CLONES_WIDE, T, NAME, OUTK, __VA_ARGS__)
#define BINARY_LOOP_AS(CLONES, T, NAME, OUTK, ...)                                                \
    static CLONES void b_##NAME##_##T(int64_t n, char **ptrs, const int64_t *s, em_params *p) {    \
        typedef CT_##T ct;                                                                         \
        typedef ST_##T st;                                                                         \
        typedef OST_##OUTK(T) ot;                                                                  \
        const int64_t so = sizeof(ot), si = sizeof(st);                                            \
        if (s[0] == so && s[1] == si && s[2] == si) {                                              \
            ot *o = (ot *)ptrs[0];                                                                 \
            const st *A = (const st *)ptrs[1], *B = (const st *)ptrs[2];                           \
            for (int64_t i = 0; i < n; i++) {                                                      \
                ct a = LD_##T(A[i]);                                                               \
                ct b = LD_##T(B[i]);                                                               \
                o[i] = OSV_##OUTK(T, (__VA_ARGS__));                                               \
            }                                                                                      \
        } else if (s[0] == so && s[1] == si && s[2] == 0) {                                        \
            ot *o = (ot *)ptrs[0];                                                                 \
            const st *A = (const st *)ptrs[1];                                                     \
            const ct b = p->i[3] ? (ct)p->f[3] : LD_##T(*(const st *)ptrs[2]);                     \
            for (int64_t i = 0; i < n; i++) {                                                      \
                ct a = LD_##T(A[i]);                                                               \
                o[i] = OSV_##OUTK(T, (__VA_ARGS__));                                               \
            }                                                                                      \
        } else if (s[0] == so && s[1] == 0 && s[2] == si) {                                        \
            ot *o = (ot *)ptrs[0];                                                                 \
            const ct a = LD_##T(*(const st *)ptrs[1]);                                             \
            const st *B = (const st *)ptrs[2];                                                     \
            for (int64_t i = 0; i < n; i++) {                                                      \
                ct b = LD_##T(B[i]);                                                               \
                o[i] = OSV_##OUTK(T, (__VA_ARGS__));                                               \
            }                                                                                      \
        } else {                                                                                   \
            char *o = ptrs[0];                                                                     \
            const char *pa = ptrs[1], *pb = ptrs[2];                                               \
            for (int64_t i = 0; i < n; i++, o += s[0], pa += s[1], pb += s[2]) {                    \
                ct a = LD_##T(*(const st *)pa);                                                    \
                ct b = p->i[3] ? (ct)p->f[3] : LD_##T(*(const st *)pb);                            \
                *(ot *)o = OSV_##OUTK(T, (__VA_ARGS__));                                           \
            }                                                                                      \
        }                                                                                          \
    }
#define LOOP(NAME, FAM, OUTK, ...) EM_FOR_##FAM(BINARY_LOOP, NAME, OUTK, __VA_ARGS__)
#undef LOOPW
#define LOOPW(NAME, FAM, OUTK, ...) EM_FOR_##FAM(BINARY_LOOP_WIDE, NAME, OUTK, __VA_ARGS__)
#include "binary.def"
#undef LOOPW
#define LOOPW(...) LOOP(__VA_ARGS__)
#undef LOOP

/* pow by a Python scalar exponent of 2, 3, -1, -2, 0.5 or -0.5: products, reciprocals and roots,
 * as PyTorch's pow_tensor_scalar kernel computes them for float, double and bfloat16 (float16
 * keeps pow there, and here). They vectorise where libm's pow is a call per element: minGPT's
 * x ** 3 took 250x PyTorch's time. Loops of this file only, not .def rows: the other backends
 * generate pow from binary.def and need no special case. ember_binary picks them. */
#define EM_FOR_POW_SCALAR(M, ...) M(bf16, __VA_ARGS__) M(f32, __VA_ARGS__) M(f64, __VA_ARGS__)
EM_FOR_POW_SCALAR(BINARY_LOOP, pow_2, SAME, a * a)
EM_FOR_POW_SCALAR(BINARY_LOOP, pow_3, SAME, a * a * a)
EM_FOR_POW_SCALAR(BINARY_LOOP, pow_m1, SAME, 1 / a)
EM_FOR_POW_SCALAR(BINARY_LOOP, pow_m2, SAME, 1 / (a * a))
EM_FOR_POW_SCALAR(BINARY_LOOP, pow_half, SAME, sqrt(a))
EM_FOR_POW_SCALAR(BINARY_LOOP, pow_mhalf, SAME, 1 / sqrt(a))
#define POW_SCALAR(E, NAME) \
    {E, {[EM_BF16] = b_##NAME##_bf16, [EM_F32] = b_##NAME##_f32, [EM_F64] = b_##NAME##_f64}}
static const struct {
    double exponent;
    em_loop loop[EM_NDTYPES];
} POW_SCALAR_LOOPS[] = {
    POW_SCALAR(2, pow_2),     POW_SCALAR(3, pow_3),       POW_SCALAR(-1, pow_m1),
    POW_SCALAR(-2, pow_m2),   POW_SCALAR(0.5, pow_half),  POW_SCALAR(-0.5, pow_mhalf),
};
#undef POW_SCALAR

/* pow's loop for the scalar exponent e: a special one above, else `general`. */
static em_loop pow_by_scalar(int dtype, double e, em_loop general) {
    for (size_t k = 0; k < sizeof POW_SCALAR_LOOPS / sizeof POW_SCALAR_LOOPS[0]; k++)
        if (e == POW_SCALAR_LOOPS[k].exponent && POW_SCALAR_LOOPS[k].loop[dtype])
            return POW_SCALAR_LOOPS[k].loop[dtype];
    return general;
}

#define TERNARY_LOOP(T, NAME, OUTK, ...)                                                          \
    static EM_CLONES void t_##NAME##_##T(int64_t n, char **ptrs, const int64_t *s, em_params *p) { \
        typedef CT_##T ct;                                                                         \
        typedef ST_##T st;                                                                         \
        typedef OST_##OUTK(T) ot;                                                                  \
        (void)p;                                                                                   \
        const int64_t si = sizeof(st);                                                             \
        if (s[0] == (int64_t)sizeof(ot) && s[1] == si && s[2] == si && s[3] == si) {               \
            ot *o = (ot *)ptrs[0];                                                                 \
            const st *A = (const st *)ptrs[1], *B = (const st *)ptrs[2], *C = (const st *)ptrs[3]; \
            for (int64_t i = 0; i < n; i++) {                                                      \
                ct a = LD_##T(A[i]);                                                               \
                ct b = LD_##T(B[i]);                                                               \
                ct c = LD_##T(C[i]);                                                               \
                o[i] = OSV_##OUTK(T, (__VA_ARGS__));                                               \
            }                                                                                      \
        } else if (s[0] == (int64_t)sizeof(ot) && s[1] == si && s[2] == si && s[3] == 0) {         \
            /* a scalar third operand: lerp_(end, 0.1), addcmul_(t, scalar)... (optimizers) */     \
            ot *o = (ot *)ptrs[0];                                                                 \
            const st *A = (const st *)ptrs[1], *B = (const st *)ptrs[2];                           \
            const ct c = LD_##T(*(const st *)ptrs[3]);                                             \
            for (int64_t i = 0; i < n; i++) {                                                      \
                ct a = LD_##T(A[i]);                                                               \
                ct b = LD_##T(B[i]);                                                               \
                o[i] = OSV_##OUTK(T, (__VA_ARGS__));                                               \
            }                                                                                      \
        } else {                                                                                   \
            char *o = ptrs[0];                                                                     \
            const char *pa = ptrs[1], *pb = ptrs[2], *pc = ptrs[3];                                \
            for (int64_t i = 0; i < n; i++, o += s[0], pa += s[1], pb += s[2], pc += s[3]) {        \
                ct a = LD_##T(*(const st *)pa);                                                    \
                ct b = LD_##T(*(const st *)pb);                                                    \
                ct c = LD_##T(*(const st *)pc);                                                    \
                *(ot *)o = OSV_##OUTK(T, (__VA_ARGS__));                                           \
            }                                                                                      \
        }                                                                                          \
    }
#define LOOP(NAME, FAM, OUTK, ...) EM_FOR_##FAM(TERNARY_LOOP, NAME, OUTK, __VA_ARGS__)
#include "ternary.def"
#undef LOOP

/* where(cond, a, b): the condition is bool storage, a and b share the dtype. Both values are
 * loaded before the select so that it compiles to a blend, not a branch: a random mask made the
 * branchy loop mispredict half the time (relu's backward, where(x > 0, g, 0), ran 20x slower).
 * A scalar a or b (stride 0: where(mask, g, 0.0)) has its own loop so that it vectorises too. */
#define WHERE_LOOP(T, unused)                                                                     \
    static EM_CLONES void t_where_##T(int64_t n, char **ptrs, const int64_t *s, em_params *p) {    \
        typedef ST_##T st;                                                                         \
        (void)p;                                                                                   \
        const int64_t si = sizeof(st);                                                             \
        const uint8_t *cond = (const uint8_t *)ptrs[1];                                            \
        st *o = (st *)ptrs[0];                                                                     \
        if (s[0] == si && s[1] == 1 && (s[2] == si || s[2] == 0) && (s[3] == si || s[3] == 0)) {   \
            const st *A = (const st *)ptrs[2], *B = (const st *)ptrs[3];                           \
            if (s[2] && s[3])                                                                      \
                for (int64_t i = 0; i < n; i++) o[i] = cond[i] ? A[i] : B[i];                      \
            else if (s[2]) {                                                                       \
                const st b = *B;                                                                   \
                for (int64_t i = 0; i < n; i++) o[i] = cond[i] ? A[i] : b;                         \
            } else if (s[3]) {                                                                     \
                const st a = *A;                                                                   \
                for (int64_t i = 0; i < n; i++) o[i] = cond[i] ? a : B[i];                         \
            } else {                                                                               \
                const st a = *A, b = *B;                                                           \
                for (int64_t i = 0; i < n; i++) o[i] = cond[i] ? a : b;                            \
            }                                                                                      \
        } else {                                                                                   \
            const int64_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];                              \
            char *po = ptrs[0];                                                                    \
            const char *pc = ptrs[1], *pa = ptrs[2], *pb = ptrs[3];                                \
            for (int64_t i = 0; i < n; i++, po += s0, pc += s1, pa += s2, pb += s3) {              \
                st pick[2] = {*(const st *)pb, *(const st *)pa}; /* indexed: no branch */          \
                *(st *)po = pick[*(const uint8_t *)pc != 0];                                       \
            }                                                                                      \
        }                                                                                          \
    }
EM_FOR_ALL(WHERE_LOOP, 0)
#undef OP

/* ---- tables --------------------------------------------------------------------------------- */
#define OP(name)
#define LOOP(NAME, FAM, OUTK, ...) EM_FOR_##FAM(ENTRY_U, NAME)
#define ENTRY_U(T, NAME) [OPU_##NAME][EMC_##T] = u_##NAME##_##T,
static const em_loop UNARY[OPU_COUNT][EM_NDTYPES] = {
#include "unary.def"
};
#undef LOOP
#define LOOP(NAME, FAM, OUTK, ...) EM_FOR_##FAM(ENTRY_B, NAME)
#define ENTRY_B(T, NAME) [OPB_##NAME][EMC_##T] = b_##NAME##_##T,
static const em_loop BINARY[OPB_COUNT][EM_NDTYPES] = {
#include "binary.def"
};
#undef LOOP
#define LOOP(NAME, FAM, OUTK, ...) EM_FOR_##FAM(ENTRY_T, NAME)
#define ENTRY_T(T, NAME) [OPT_##NAME][EMC_##T] = t_##NAME##_##T,
static const em_loop TERNARY[OPT_COUNT][EM_NDTYPES] = {
    EM_FOR_ALL(ENTRY_T, where)
#include "ternary.def"
};
#undef LOOP
#undef OP

/* Output dtype of each op: the input's, or bool. */
#define OP(name)
#define LOOP(NAME, FAM, OUTK, ...) [OPU_##NAME] = EMO_##OUTK,
enum { EMO_SAME = 0, EMO_BOOL = 1 };
static const uint8_t UNARY_BOOL_OUT[OPU_COUNT] = {
#include "unary.def"
};
#undef LOOP
#define LOOP(NAME, FAM, OUTK, ...) [OPB_##NAME] = EMO_##OUTK,
static const uint8_t BINARY_BOOL_OUT[OPB_COUNT] = {
#include "binary.def"
};
#undef LOOP
#undef OP

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
    if (!valid(op, OPU_COUNT, dtype) || !UNARY[op][dtype]) return EM_UNSUPPORTED;
    em_params p = {{p0, p1, p2, 0}, {0, 0, 0, 0}, 0};
    int dtypes[2] = {UNARY_BOOL_OUT[op] ? EM_BOOL : dtype, dtype};
    intptr_t ptrs[2] = {out, x};
    const int64_t *strides[2] = {so, sx};
    return run_elementwise(UNARY[op][dtype], 2, dtypes, n, ndim, shape, ptrs,
                           ndim ? strides : NULL, NULL, NULL, &p);
}

int ember_binary(int op, int dtype, int64_t n, int ndim, const int64_t *shape, intptr_t out,
                 const int64_t *so, intptr_t a, const int64_t *sa, intptr_t b, const int64_t *sb,
                 double scalar_f, int64_t scalar_i, double param) {
    if (!valid(op, OPB_COUNT, dtype) || !BINARY[op][dtype]) return EM_UNSUPPORTED;
    em_params p = {{param, 0, 0, 0}, {0, 0, 0, 0}, 0};
    /* A float16/bfloat16 op whose scalar second operand the glue marks (scalar_i 1, unused for
     * floats) reads it unrounded in float32 from p.f[3]: PyTorch's opmath scalar of mul and the
     * divisions (kernels/elementwise.py OPMATH_SCALAR). Others store it in the dtype. */
    if (b == 0 && scalar_i == 1 && (dtype == EM_F16 || dtype == EM_BF16)) {
        p.f[3] = (float)scalar_f;
        p.i[3] = 1;
    }
    int dtypes[3] = {BINARY_BOOL_OUT[op] ? EM_BOOL : dtype, dtype, dtype};
    intptr_t ptrs[3] = {out, a, b};
    const int64_t *strides[3] = {so, sa, sb};
    double fs[3] = {0, scalar_f, scalar_f};
    int64_t is[3] = {0, scalar_i, scalar_i};
    em_loop loop = BINARY[op][dtype];
    if (op == OPB_pow && b == 0 && a != 0) /* a Python scalar exponent */
        loop = pow_by_scalar(dtype, scalar_f, loop);
    return run_elementwise(loop, 3, dtypes, n, ndim, shape, ptrs, ndim ? strides : NULL, fs, is,
                           &p);
}

int ember_ternary(int op, int dtype, int64_t n, int ndim, const int64_t *shape, intptr_t out,
                  const int64_t *so, intptr_t a, const int64_t *sa, intptr_t b,
                  const int64_t *sb, intptr_t c, const int64_t *sc, const double *fs,
                  const int64_t *is, double param) {
    if (!valid(op, OPT_COUNT, dtype) || !TERNARY[op][dtype]) return EM_UNSUPPORTED;
    em_params p = {{param, 0, 0, 0}, {0, 0, 0, 0}, 0};
    int first = op == OPT_where ? EM_BOOL : dtype;
    int dtypes[4] = {dtype, first, dtype, dtype};
    intptr_t ptrs[4] = {out, a, b, c};
    const int64_t *strides[4] = {so, sa, sb, sc};
    double fs4[4] = {0, fs[0], fs[1], fs[2]};
    int64_t is4[4] = {0, is[0], is[1], is[2]};
    return run_elementwise(TERNARY[op][dtype], 4, dtypes, n, ndim, shape, ptrs,
                           ndim ? strides : NULL, fs4, is4, &p);
}

/* ---- contiguous entry points ------------------------------------------------------------------ */
/* The eager hot path (docs/eager_overhead.md): every operand contiguous with the output's shape,
 * in the op's dtype, no scalar and no parameter. Five arguments instead of ember_binary's 14
 * (cffi converts each one; the glue built the rest), and no stride arrays: the loop is the same
 * BINARY/UNARY table entry, called directly below the parallel threshold. `key` is
 * op * EM_NDTYPES + dtype, resolved once per (op, dtype) by the glue (ember_contig_key). */
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
    if (key < 0 || op >= OPB_COUNT || !BINARY[op][dtype]) return EM_UNSUPPORTED;
    const int64_t si = em_itemsize(dtype);
    const int64_t s[3] = {BINARY_BOOL_OUT[op] ? 1 : si, si, si};
    char *ptrs[3] = {(char *)out, (char *)a, (char *)b};
    return run_contig(BINARY[op][dtype], 3, ptrs, s, n);
}

int ember_unary_contig(int key, intptr_t out, intptr_t x, int64_t n) {
    int op = key / EM_NDTYPES, dtype = key % EM_NDTYPES;
    if (key < 0 || op >= OPU_COUNT || !UNARY[op][dtype]) return EM_UNSUPPORTED;
    const int64_t si = em_itemsize(dtype);
    const int64_t s[2] = {UNARY_BOOL_OUT[op] ? 1 : si, si};
    char *ptrs[2] = {(char *)out, (char *)x};
    return run_contig(UNARY[op][dtype], 2, ptrs, s, n);
}

/* Whether an op has a loop for a dtype (the glue builds its kernel table from this). */
int ember_elementwise_supports(int arity, int op, int dtype) {
    if (arity == 1) return valid(op, OPU_COUNT, dtype) && UNARY[op][dtype] != NULL;
    if (arity == 2) return valid(op, OPB_COUNT, dtype) && BINARY[op][dtype] != NULL;
    if (arity == 3) return valid(op, OPT_COUNT, dtype) && TERNARY[op][dtype] != NULL;
    return 0;
}

/* The key of the contiguous entry points for (arity, op, dtype), or -1 when there is no loop. */
int ember_contig_key(int arity, int op, int dtype) {
    if ((arity != 1 && arity != 2) || !ember_elementwise_supports(arity, op, dtype)) return -1;
    return op * EM_NDTYPES + dtype;
}
