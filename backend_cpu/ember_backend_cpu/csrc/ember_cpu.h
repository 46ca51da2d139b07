/* Shared definitions for ember's CPU kernels: dtypes, conversions, the strided loop driver.
 *
 * Every kernel family is a set of 1-D inner loops, one per (op, dtype), with numpy's ufunc
 * calling convention: loop(n, ptrs, byte_strides, params), ptrs[0] the output. em_run() drives
 * them over an N-d iteration space: it merges dimensions that are contiguous for every operand,
 * and splits the work over OpenMP threads when it is large enough to pay for them.
 */
#ifndef EMBER_CPU_H
#define EMBER_CPU_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <tgmath.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Same numbering as ember.dtype.code. */
enum {
    EM_BOOL = 0, EM_U8, EM_I8, EM_I16, EM_I32, EM_I64, EM_F16, EM_BF16, EM_F32, EM_F64, EM_NDTYPES
};

/* Status codes returned to Python (the glue turns them into exceptions). */
enum {
    EM_OK = 0,
    EM_UNSUPPORTED = -1,       /* no loop for this (op, dtype) */
    EM_ZERO_DIVISION = 1,      /* integer division or remainder by zero */
    EM_NEGATIVE_POWER = 2,     /* integer to a negative integer power */
    EM_INDEX_OUT_OF_RANGE = 3, /* an index tensor held an out-of-range value */
    EM_BAD_ARGUMENT = 4,
};

#define EM_MAX_DIMS 64
#define EM_MAX_OPERANDS 8

/* Work below this many elements runs on one thread: waking the pool costs more. */
#define EM_PARALLEL_THRESHOLD 32768

/* AVX2/FMA/F16C clone next to the baseline one, chosen at load time (no -march=native).
 * EM_CLONES_WIDE adds an AVX-512 clone, for the loops of vmath.h's functions (unary ops,
 * softmax), which run 1.5x faster at twice the width (gelu 1.15 -> 0.74 ms on 524k floats); not
 * everywhere, since each clone adds compile time to every `pip install` (all loops: +1 min). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define EM_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#define EM_CLONES_WIDE __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
/* A function of its own for AVX-512 (where its vectors differ from the clones'), taken when
 * EM_CPU_WIDE() says the CPU has it. */
#define EM_TARGET_WIDE __attribute__((target("arch=x86-64-v4")))
#define EM_CPU_WIDE() __builtin_cpu_supports("x86-64-v4")
#else
#define EM_CLONES
#define EM_CLONES_WIDE
#define EM_TARGET_WIDE
#define EM_CPU_WIDE() 0
#endif

/* ---- half precision ------------------------------------------------------------------------- */
static inline float em_f16_to_f32(uint16_t h) {
#ifdef __FLT16_MAX__
    _Float16 v;
    memcpy(&v, &h, 2);
    return (float)v;
#else
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000 | (man << 13);
    } else if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else {
            exp = 113;
            while (!(man & 0x400)) { man <<= 1; exp--; }
            bits = sign | (exp << 23) | ((man & 0x3ff) << 13);
        }
    } else {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
#endif
}

static inline uint16_t em_f32_to_f16(float f) {
#ifdef __FLT16_MAX__
    _Float16 v = (_Float16)f;
    uint16_t h;
    memcpy(&h, &v, 2);
    return h;
#else
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t absx = x & 0x7fffffff;
    if (absx > 0x7f800000) return (uint16_t)(sign | 0x7e00);
    if (absx >= 0x477ff000) return (uint16_t)(sign | 0x7c00);
    if (absx < 0x38800000) { /* subnormal or zero: scale into integer range and round */
        float a;
        memcpy(&a, &absx, 4);
        a = a * 16777216.0f; /* 2^24 */
        uint32_t m = (uint32_t)a;
        float rem = a - (float)m;
        if (rem > 0.5f || (rem == 0.5f && (m & 1))) m++;
        return (uint16_t)(sign | m);
    }
    uint32_t mant = absx & 0x7fffff, e = (absx >> 23) - 112;
    uint32_t h = (e << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
    return (uint16_t)(sign | h);
#endif
}

static inline float em_bf16_to_f32(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t em_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

/* ---- per-dtype vocabulary, by short token ----------------------------------------------------
 * ST_t: storage type; CT_t: compute type; LD_t(v): storage -> compute; SV_t(v): compute -> storage;
 * EMC_t: dtype code. Integers and bool compute in their own width (wrapping like PyTorch);
 * half types compute in float.
 */
#define ST_b uint8_t
#define ST_u8 uint8_t
#define ST_i8 int8_t
#define ST_i16 int16_t
#define ST_i32 int32_t
#define ST_i64 int64_t
#define ST_f16 uint16_t
#define ST_bf16 uint16_t
#define ST_f32 float
#define ST_f64 double

#define CT_b int
#define CT_u8 uint8_t
#define CT_i8 int8_t
#define CT_i16 int16_t
#define CT_i32 int32_t
#define CT_i64 int64_t
#define CT_f16 float
#define CT_bf16 float
#define CT_f32 float
#define CT_f64 double

#define LD_b(v) ((int)(v))
#define LD_u8(v) (v)
#define LD_i8(v) (v)
#define LD_i16(v) (v)
#define LD_i32(v) (v)
#define LD_i64(v) (v)
#define LD_f16(v) em_f16_to_f32(v)
#define LD_bf16(v) em_bf16_to_f32(v)
#define LD_f32(v) (v)
#define LD_f64(v) (v)

#define SV_b(v) ((uint8_t)((v) != 0))
#define SV_u8(v) ((uint8_t)(v))
#define SV_i8(v) ((int8_t)(v))
#define SV_i16(v) ((int16_t)(v))
#define SV_i32(v) ((int32_t)(v))
#define SV_i64(v) ((int64_t)(v))
#define SV_f16(v) em_f32_to_f16((float)(v))
#define SV_bf16(v) em_f32_to_bf16((float)(v))
#define SV_f32(v) ((float)(v))
#define SV_f64(v) ((double)(v))

#define EMC_b EM_BOOL
#define EMC_u8 EM_U8
#define EMC_i8 EM_I8
#define EMC_i16 EM_I16
#define EMC_i32 EM_I32
#define EMC_i64 EM_I64
#define EMC_f16 EM_F16
#define EMC_bf16 EM_BF16
#define EMC_f32 EM_F32
#define EMC_f64 EM_F64

/* 1 for floating dtypes (compile-time), to pick float or integer semantics inside one macro. */
#define ISF_b 0
#define ISF_u8 0
#define ISF_i8 0
#define ISF_i16 0
#define ISF_i32 0
#define ISF_i64 0
#define ISF_f16 1
#define ISF_bf16 1
#define ISF_f32 1
#define ISF_f64 1

/* Dtype families: M(token, args...) for each member. */
#define EM_FOR_FLOAT(M, ...) M(f16, __VA_ARGS__) M(bf16, __VA_ARGS__) M(f32, __VA_ARGS__) M(f64, __VA_ARGS__)
#define EM_FOR_SINT(M, ...) M(i8, __VA_ARGS__) M(i16, __VA_ARGS__) M(i32, __VA_ARGS__) M(i64, __VA_ARGS__)
#define EM_FOR_INT(M, ...) M(u8, __VA_ARGS__) EM_FOR_SINT(M, __VA_ARGS__)
#define EM_FOR_INTB(M, ...) M(b, __VA_ARGS__) EM_FOR_INT(M, __VA_ARGS__)
#define EM_FOR_NUM(M, ...) EM_FOR_INT(M, __VA_ARGS__) EM_FOR_FLOAT(M, __VA_ARGS__)
#define EM_FOR_SNUM(M, ...) EM_FOR_SINT(M, __VA_ARGS__) EM_FOR_FLOAT(M, __VA_ARGS__)
#define EM_FOR_ALL(M, ...) M(b, __VA_ARGS__) EM_FOR_NUM(M, __VA_ARGS__)
/* A second spelling for use inside an EM_FOR_ALL expansion (the preprocessor does not re-enter a
 * macro being expanded), e.g. to generate every (source, destination) pair of a cast. */
#define EM_FOR_ALL_INNER(M, ...)                                                                 \
    M(b, __VA_ARGS__) M(u8, __VA_ARGS__) M(i8, __VA_ARGS__) M(i16, __VA_ARGS__)                   \
    M(i32, __VA_ARGS__) M(i64, __VA_ARGS__) M(f16, __VA_ARGS__) M(bf16, __VA_ARGS__)              \
    M(f32, __VA_ARGS__) M(f64, __VA_ARGS__)

static inline int em_itemsize(int dtype) {
    static const int sizes[EM_NDTYPES] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
    return (dtype >= 0 && dtype < EM_NDTYPES) ? sizes[dtype] : 0;
}

/* ---- the N-d driver -------------------------------------------------------------------------- */
typedef struct {
    double f[4];   /* float parameters (gelu mode, nan_to_num values, scalar operands...) */
    int64_t i[4];  /* integer parameters */
    int status;    /* a loop sets this to an EM_* error code; races write the same value */
} em_params;

typedef void (*em_loop)(int64_t n, char **ptrs, const int64_t *strides, em_params *p);

/* Run `loop` over `ndim` dims of `shape` for `nops` operands. `strides` holds nops rows of ndim
 * byte strides. Returns the status the loops reported. */
int em_run(em_loop loop, int nops, int ndim, const int64_t *shape, char **ptrs,
           const int64_t *strides, em_params *p);

/* Element strides from Python -> byte strides; NULL element strides mean row-major contiguous. */
/* Drops size-1 dims and merges neighbours contiguous for every operand (driver.c); returns the
 * new ndim, shape and strides (nops rows of byte strides) rewritten in place. */
int em_coalesce(int ndim, int64_t *shape, int nops, int64_t strides[][EM_MAX_DIMS]);
void em_byte_strides(int ndim, const int64_t *shape, const int64_t *elem_strides, int itemsize,
                     int64_t *out);

#endif
