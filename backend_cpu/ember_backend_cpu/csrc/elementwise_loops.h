/* What the elementwise loop files (unary_loops.c, binary_loops.c, ternary_loops.c) share, and
 * what elementwise.c, which runs their loops, reads: the op codes of the .def files, the loop
 * tables, and the helpers with PyTorch's semantics that the .def expressions call.
 *
 * The loops are three translation units rather than one so that a fresh install compiles them on
 * both cores: as one file they took 140 of the CPU backend's 280 compiler-seconds, the critical
 * path of `pip install ./backend_cpu` on a two-core machine. */
#ifndef EMBER_ELEMENTWISE_LOOPS_H
#define EMBER_ELEMENTWISE_LOOPS_H

#include "ember_cpu.h"
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

/* ---- the loop tables, by op code and dtype (NULL where an op has no loop for a dtype) ---------- */
extern const em_loop EM_UNARY_LOOPS[OPU_COUNT][EM_NDTYPES];
extern const em_loop EM_BINARY_LOOPS[OPB_COUNT][EM_NDTYPES];
extern const em_loop EM_TERNARY_LOOPS[OPT_COUNT][EM_NDTYPES];

/* Output dtype of each op: the input's, or bool. */
enum { EMO_SAME = 0, EMO_BOOL = 1 };
extern const uint8_t EM_UNARY_BOOL_OUT[OPU_COUNT];
extern const uint8_t EM_BINARY_BOOL_OUT[OPB_COUNT];

/* pow's loop for a Python scalar exponent e (binary_loops.c): a special one, else `general`. */
em_loop em_pow_by_scalar(int dtype, double e, em_loop general);

#endif
