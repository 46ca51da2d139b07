/* The vocabulary every ember OpenCL program starts with (programs.py prepends it).
 *
 * Dtypes are named by the CPU plugin's tokens (b u8 i8 i16 i32 i64 f16 bf16 f32 f64), with the
 * same meaning as in its ember_cpu.h: ST_t the storage type, CT_t the compute type (integers in
 * their own width, half types in float), ISF_t 1 for floating types. Memory is read and written
 * through LD_t(p, i) and SV_t(p, i, v), because float16 and bfloat16 live in ushort storage:
 * float16 goes through vload_half/vstore_half_rte, which every OpenCL device has (no cl_khr_fp16
 * needed), bfloat16 through bit operations. float64 needs cl_khr_fp64: the glue defines EM_FP64
 * when the device has it and refuses float64 tensors otherwise.
 *
 * Contraction of a*b+c into fma is off, as in the CPU build (-ffp-contract=off), so that results
 * such as the uniform random transform are bit-identical to the CPU's.
 */
#pragma OPENCL FP_CONTRACT OFF
/* Types in kernel signatures are macros, not typedefs: the glue reads argument types back from
 * the compiled program (-cl-kernel-arg-info), which reports a typedef's name, not its type. */
#ifdef EM_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define em_real double /* op parameters arrive in double where the device has it */
#else
#define em_real float
#endif

#define EM_CAT_(a, b) a##b
#define EM_CAT(a, b) EM_CAT_(a, b)
/* A second spelling, for names built at the op level whose expansion uses EM_CAT again (the
 * preprocessor does not re-enter a macro it is expanding). */
#define EM_OPCAT_(a, b) a##b
#define EM_OPCAT(a, b) EM_OPCAT_(a, b)

/* Status codes, as the CPU plugin's (the glue turns them into exceptions). */
#define EM_OK 0
#define EM_ZERO_DIVISION 1
#define EM_NEGATIVE_POWER 2
#define EM_INDEX_OUT_OF_RANGE 3
#define EM_BAD_ARGUMENT 4

/* C names the CPU's op descriptions use, in OpenCL spelling. */
typedef long int64_t;
typedef ulong uint64_t;
typedef int int32_t;
typedef uint uint32_t;
typedef uchar uint8_t;
#define nearbyint rint

typedef struct {
    em_real f[4];
    long i[4];
    int status;
} em_params;

/* ---- half types ------------------------------------------------------------------------------ */
inline float em_bf16_to_f32(ushort b) { return as_float((uint)b << 16); }

inline ushort em_f32_to_bf16(float f) {
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (ushort)(u >> 16);
}

/* ---- per-dtype vocabulary -------------------------------------------------------------------- */
#define ST_b uchar
#define ST_u8 uchar
#define ST_i8 char
#define ST_i16 short
#define ST_i32 int
#define ST_i64 long
#define ST_f16 ushort
#define ST_bf16 ushort
#define ST_f32 float
#define ST_f64 double

#define CT_b int
#define CT_u8 uchar
#define CT_i8 char
#define CT_i16 short
#define CT_i32 int
#define CT_i64 long
#define CT_f16 float
#define CT_bf16 float
#define CT_f32 float
#define CT_f64 double

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

#define LD_b(p, i) ((int)(p)[i])
#define LD_u8(p, i) ((p)[i])
#define LD_i8(p, i) ((p)[i])
#define LD_i16(p, i) ((p)[i])
#define LD_i32(p, i) ((p)[i])
#define LD_i64(p, i) ((p)[i])
#define LD_f16(p, i) vload_half((i), (global const half *)(p))
#define LD_bf16(p, i) em_bf16_to_f32((p)[i])
#define LD_f32(p, i) ((p)[i])
#define LD_f64(p, i) ((p)[i])

#define SV_b(p, i, v) ((p)[i] = (uchar)((v) != 0))
#define SV_u8(p, i, v) ((p)[i] = (uchar)(v))
#define SV_i8(p, i, v) ((p)[i] = (char)(v))
#define SV_i16(p, i, v) ((p)[i] = (short)(v))
#define SV_i32(p, i, v) ((p)[i] = (int)(v))
#define SV_i64(p, i, v) ((p)[i] = (long)(v))
#define SV_f16(p, i, v) vstore_half_rte((float)(v), (i), (global half *)(p))
#define SV_bf16(p, i, v) ((p)[i] = em_f32_to_bf16((float)(v)))
#define SV_f32(p, i, v) ((p)[i] = (float)(v))
#define SV_f64(p, i, v) ((p)[i] = (double)(v))

/* Token-generic spellings: ST(t), CT(t), LD(t, p, i), SV(t, p, i, v), ISF(t). */
#define ST(t) EM_CAT(ST_, t)
#define CT(t) EM_CAT(CT_, t)
#define ISF(t) EM_CAT(ISF_, t)
#define LD(t, p, i) EM_CAT(LD_, t)(p, i)
#define SV(t, p, i, v) EM_CAT(SV_, t)(p, i, v)

/* Float -> integer as the CPU converts (through int64, x86's answer for NaN and overflow). */
inline long __attribute__((overloadable)) em_f2l(float v) {
    return (v != v || v >= 0x1p63f || v < -0x1p63f) ? (long)0x8000000000000000UL : (long)v;
}
#ifdef EM_FP64
inline long __attribute__((overloadable)) em_f2l(double v) {
    return (v != v || v >= 0x1p63 || v < -0x1p63) ? (long)0x8000000000000000UL : (long)v;
}
#endif

/* ---- N-d positions ---------------------------------------------------------------------------
 * Shapes and strides (in elements) arrive as long8 kernel arguments, unpacked into private arrays;
 * the glue merges dimensions first, so up to 8 dims cover any layout it meets. */
#define EM_UNPACK(name, vec) long name[8]; vstore8((vec), 0, name)

inline void em_unravel(long i, int nd, const long *shape, long *index) {
    for (int d = nd - 1; d >= 0; d--) {
        long q = i / shape[d];
        index[d] = i - q * shape[d];
        i = q;
    }
}

inline long em_dot(int nd, const long *index, const long *stride) {
    long s = 0;
    for (int d = 0; d < nd; d++) s += index[d] * stride[d];
    return s;
}

/* Element i's offset along a strided layout, without keeping the index. */
inline long em_offset(long i, int nd, const long *shape, const long *stride) {
    long s = 0;
    for (int d = nd - 1; d >= 0; d--) {
        long q = i / shape[d];
        s += (i - q * shape[d]) * stride[d];
        i = q;
    }
    return s;
}

/* Element i's offsets o0..o3 in four layouts s0..s3 (long8) over one shape (long8): an
 * elementwise op's output and operands, in one pass. No index array, no division for the outermost
 * dim, 32-bit division when the positions fit, and every dim a constant once expanded, so shapes
 * and strides are read as vector components: in registers, not an indexed private array, which
 * lets PoCL vectorise the work-items (2x faster). */
#define EM_OFFSETS4_STEP(IT, d)                                                                   \
    if ((d) < nd) {                                                                               \
        IT size_ = (IT)shape.s##d, q_ = rest_ / size_, r_ = rest_ - q_ * size_;                   \
        o0 += (long)r_ * s0.s##d;                                                                 \
        o1 += (long)r_ * s1.s##d;                                                                 \
        o2 += (long)r_ * s2.s##d;                                                                 \
        o3 += (long)r_ * s3.s##d;                                                                 \
        rest_ = q_;                                                                               \
    }
#define EM_OFFSETS4_AS(IT, i)                                                                     \
    do {                                                                                          \
        IT rest_ = (IT)(i);                                                                       \
        EM_OFFSETS4_STEP(IT, 7) EM_OFFSETS4_STEP(IT, 6) EM_OFFSETS4_STEP(IT, 5)                   \
        EM_OFFSETS4_STEP(IT, 4) EM_OFFSETS4_STEP(IT, 3) EM_OFFSETS4_STEP(IT, 2)                   \
        EM_OFFSETS4_STEP(IT, 1)                                                                   \
        o0 += (long)rest_ * s0.s0;                                                                \
        o1 += (long)rest_ * s1.s0;                                                                \
        o2 += (long)rest_ * s2.s0;                                                                \
        o3 += (long)rest_ * s3.s0;                                                                \
    } while (0)
/* Declares and computes o0..o3 for element i; `narrow`: every position fits in 32 bits. */
#define EM_OFFSETS4(i, narrow)                                                                    \
    long o0 = 0, o1 = 0, o2 = 0, o3 = 0;                                                          \
    if (narrow)                                                                                   \
        EM_OFFSETS4_AS(uint, i);                                                                  \
    else                                                                                          \
        EM_OFFSETS4_AS(ulong, i)

/* Report a failure to the glue: the first reporter's code and value win. */
inline void em_fail(global long *status, int code, long value) {
    if (atomic_cmpxchg((volatile global int *)status, 0, code) == 0) status[1] = value;
}
