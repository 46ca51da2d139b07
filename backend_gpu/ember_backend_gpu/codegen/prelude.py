"""The text every generated kernel module starts with: types, dtype traits, strided indexing.

Two targets share it: ``"cuda"`` (nvcc/NVRTC) and ``"hip"`` (hipcc/hiprtc, which accept CUDA
syntax). They differ only in the few lines of ``TARGETS``: includes, the warp width, shuffles and
the float16 conversions. No system header is needed for CUDA (no <stdint.h>, no cuda_fp16.h), so
the same text also compiles with NVRTC.
"""

from __future__ import annotations

from .dtypes import DTYPES

MAX_DIMS = 16  # dims of a strided operand after coalescing (struct em_nd)
MAX_OPERANDS = 4  # output + 3 inputs (ternary ops)
ROWS = "16q16q16q" + "qqqq" + "ii"  # struct em_rows

# Status codes a kernel writes to its status word (same numbers as the CPU backend's EM_*).
ZERO_DIVISION = 1
NEGATIVE_POWER = 2
INDEX_OUT_OF_RANGE = 3
BAD_ARGUMENT = 4

TARGETS = {
    "cuda": r"""
#define EM_WARP 32
#define EM_SHFL_UP(v, d) __shfl_up_sync(0xffffffffu, (v), (d))
#define EM_SHFL_DOWN(v, d) __shfl_down_sync(0xffffffffu, (v), (d))
#define EM_SHFL(v, l) __shfl_sync(0xffffffffu, (v), (l))
/* float16 <-> float with the hardware conversions (round to nearest even). */
__device__ __forceinline__ float em_h2f(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ unsigned short em_f2h(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
""",
    "hip": r"""
#include <hip/hip_runtime.h>
#define EM_WARP 64
#define EM_SHFL_UP(v, d) __shfl_up((v), (d))
#define EM_SHFL_DOWN(v, d) __shfl_down((v), (d))
#define EM_SHFL(v, l) __shfl((v), (l))
__device__ __forceinline__ float em_h2f(unsigned short h) {
    return (float)__builtin_bit_cast(_Float16, h);
}
__device__ __forceinline__ unsigned short em_f2h(float f) {
    return __builtin_bit_cast(unsigned short, (_Float16)f);
}
""",
}

COMMON = r"""
typedef signed char em_i8;
typedef unsigned char em_u8;
typedef short em_i16;
typedef unsigned short em_u16;
typedef int em_i32;
typedef unsigned int em_u32;
typedef long long em_i64;
typedef unsigned long long em_u64;

#define EM_DEV __device__ __forceinline__
#define EM_KERNEL extern "C" __global__ void

/* One strided iteration space: `n` elements over `shape` (ndim >= 1, coalesced on the host),
 * operand k at byte offset sum(i_d * stride[k][d]); an operand whose pointer is 0 is a scalar
 * whose storage bits are scalar[k]. Passed by value (688 bytes of kernel parameters). */
struct em_nd {
    em_i64 shape[EM_MAXD];
    em_i64 stride[EM_NOPS][EM_MAXD];
    em_u64 scalar[EM_NOPS];
    em_i64 n;
    em_i32 ndim, pad;
};

/* Lines along one dim: line l starts at the offsets of l unravelled over the other dims
 * (coalesced), and steps dstride bytes along the dim. mode 0: a thread per line; 1: a block. */
struct em_rows {
    em_i64 lshape[EM_MAXD];
    em_i64 lstride_x[EM_MAXD]; /* bytes */
    em_i64 lstride_o[EM_MAXD]; /* bytes */
    em_i64 n_lines, len, dstride_x, dstride_o;
    em_i32 lndim, mode;
};
EM_DEV void em_row_offsets(const em_rows &s, em_i64 l, em_i64 &x, em_i64 &o) {
    x = o = 0;
    for (int d = s.lndim - 1; d >= 0; d--) {
        em_i64 sz = s.lshape[d], c = l % sz;
        l /= sz;
        x += c * s.lstride_x[d];
        o += c * s.lstride_o[d];
    }
}

/* Reduce v over the block with f, in a fixed order; every thread gets the result. smem holds
 * one value per warp. */
template <class A, class F>
EM_DEV A em_block_reduce(A v, F f, A *smem) {
    for (int d = EM_WARP / 2; d > 0; d >>= 1) v = f(v, EM_SHFL_DOWN(v, d));
    const int lane = threadIdx.x % EM_WARP, warp = threadIdx.x / EM_WARP;
    __syncthreads();
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    A r = smem[0];
    for (int w = 1; w < (int)(blockDim.x / EM_WARP); w++) r = f(r, smem[w]);
    return r;
}

#define EM_FOR_EACH(i, n)                                                                    \
    for (em_i64 i = (em_i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                 \
         i += (em_i64)gridDim.x * blockDim.x)

/* The one-dim (coalesced) case of the elementwise loops: each thread takes EM_UNROLL elements a
 * block apart, loads them all, then computes and stores, so a warp has EM_UNROLL coalesced loads
 * in flight instead of one (as PyTorch's unrolled kernels). The H200 run of 2026-11-26 measured
 * the one-load grid-stride loop at 57% of the device's copy bandwidth on x * 2. */
#define EM_UNROLL 4
#define EM_FOR_EACH_UNROLLED(i0, n)                                                          \
    for (em_i64 i0 = (em_i64)blockIdx.x * blockDim.x * EM_UNROLL + threadIdx.x; i0 < (n);   \
         i0 += (em_i64)gridDim.x * blockDim.x * EM_UNROLL)
#define EM_UNROLLED_AT(i0, u) ((i0) + (em_i64)(u) * blockDim.x)

/* Byte offsets of element i (row-major over nd.shape) for the first N operands. */
template <int N>
EM_DEV void em_offsets(const em_nd &nd, em_i64 i, em_i64 (&off)[N]) {
#pragma unroll
    for (int k = 0; k < N; k++) off[k] = 0;
    for (int d = nd.ndim - 1; d > 0; d--) {
        em_i64 s = nd.shape[d];
        em_i64 q = i / s;
        em_i64 c = i - q * s;
        i = q;
#pragma unroll
        for (int k = 0; k < N; k++) off[k] += c * nd.stride[k][d];
    }
#pragma unroll
    for (int k = 0; k < N; k++) off[k] += i * nd.stride[k][0];
}

template <class S>
EM_DEV S em_bits(em_u64 u) {
    union {
        em_u64 u;
        S s;
    } v;
    v.u = u;
    return v.s;
}

/* bfloat16 <-> float: the CPU backend's rounding (nearest even, NaN quieted). */
EM_DEV float em_bf2f(em_u16 b) { return __uint_as_float((em_u32)b << 16); }
EM_DEV em_u16 em_f2bf(float f) {
    em_u32 u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (em_u16)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (em_u16)(u >> 16);
}

/* Dtype traits: st storage, ct compute, ld storage -> compute, sv any value -> storage. */
#define EM_INT_TRAITS(NAME, ST, CT)                                                          \
    struct NAME {                                                                            \
        typedef ST st;                                                                       \
        typedef CT ct;                                                                       \
        static EM_DEV ct ld(st v) { return (ct)v; }                                          \
        template <class V>                                                                   \
        static EM_DEV st sv(V v) { return (st)v; }                                           \
    };
EM_INT_TRAITS(em_u8_t, em_u8, em_u8)
EM_INT_TRAITS(em_i8_t, em_i8, em_i8)
EM_INT_TRAITS(em_i16_t, em_i16, em_i16)
EM_INT_TRAITS(em_i32_t, em_i32, em_i32)
EM_INT_TRAITS(em_i64_t, em_i64, em_i64)
EM_INT_TRAITS(em_f32_t, float, float)
EM_INT_TRAITS(em_f64_t, double, double)
struct em_b_t {
    typedef em_u8 st;
    typedef int ct;
    static EM_DEV ct ld(st v) { return (ct)v; }
    template <class V>
    static EM_DEV st sv(V v) { return (st)(v != 0); }
};
struct em_f16_t {
    typedef em_u16 st;
    typedef float ct;
    static EM_DEV ct ld(st v) { return em_h2f(v); }
    template <class V>
    static EM_DEV st sv(V v) { return em_f2h((float)v); }
};
struct em_bf16_t {
    typedef em_u16 st;
    typedef float ct;
    static EM_DEV ct ld(st v) { return em_bf2f(v); }
    template <class V>
    static EM_DEV st sv(V v) { return em_f2bf((float)v); }
};

/* A value of operand k at byte offset off, or its scalar when the pointer is 0. */
template <class T>
EM_DEV typename T::ct em_load(const char *p, em_i64 off, em_u64 scalar) {
    return T::ld(p ? *(const typename T::st *)(p + off) : em_bits<typename T::st>(scalar));
}

/* The same with the scalar in the compute type's bits (float32 for float16/bfloat16): the second
 * operand of the binary loops, so mul and the divisions can take a Python scalar unrounded. */
template <class T>
EM_DEV typename T::ct em_load_c(const char *p, em_i64 off, em_u64 scalar) {
    return p ? T::ld(*(const typename T::st *)(p + off)) : em_bits<typename T::ct>(scalar);
}

/* Float -> integer conversions go through int64 (-1.0 -> uint8 is 255), as in PyTorch: the
 * generator sets VIA_INT64 for those (source, destination) pairs only. */
template <class D, bool VIA_INT64>
struct em_convert {
    template <class V>
    static EM_DEV typename D::st sv(V v) { return D::sv(v); }
};
template <class D>
struct em_convert<D, true> {
    template <class V>
    static EM_DEV typename D::st sv(V v) { return D::sv((em_i64)v); }
};
"""

# Integer helpers with PyTorch's semantics (the CPU backend's elementwise_loops.h): a bad input sets
# the status word instead of faulting.
HELPERS = r"""
EM_DEV em_i64 em_div_trunc_i(em_i64 a, em_i64 b, int *st) {
    if (b == 0) { *st = EM_ZERO_DIVISION; return 0; }
    if (b == -1) return (em_i64)(0ULL - (em_u64)a);
    return a / b;
}
EM_DEV em_i64 em_div_floor_i(em_i64 a, em_i64 b, int *st) {
    if (b == 0) { *st = EM_ZERO_DIVISION; return 0; }
    if (b == -1) return (em_i64)(0ULL - (em_u64)a);
    em_i64 q = a / b, r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) q--;
    return q;
}
EM_DEV em_i64 em_remainder_i(em_i64 a, em_i64 b, int *st) {
    if (b == 0) { *st = EM_ZERO_DIVISION; return 0; }
    if (b == -1) return 0;
    em_i64 r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
EM_DEV em_i64 em_fmod_i(em_i64 a, em_i64 b, int *st) {
    if (b == 0) { *st = EM_ZERO_DIVISION; return 0; }
    if (b == -1) return 0;
    return a % b;
}
EM_DEV em_i64 em_pow_i(em_i64 a, em_i64 b, int *st) {
    if (b < 0) {
        if (a == 1) return 1;
        if (a == -1) return (b & 1) ? -1 : 1;
        *st = EM_NEGATIVE_POWER;
        return 0;
    }
    em_u64 result = 1, base = (em_u64)a;
    while (b) {
        if (b & 1) result *= base;
        base *= base;
        b >>= 1;
    }
    return (em_i64)result;
}
EM_DEV em_i64 em_shl_i(em_i64 a, em_i64 b, int bits) {
    if (b < 0 || b >= bits) return 0;
    return (em_i64)((em_u64)a << b);
}
EM_DEV em_i64 em_shr_i(em_i64 a, em_i64 b, int bits) {
    if (b < 0 || b >= bits) return a < 0 ? -1 : 0;
    return a >> b;
}
template <class T>
EM_DEV T em_floordiv_f(T a, T b) {
    if (b == 0) return a / b;
    T mod = fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
    if (div == 0) return copysign((T)0, a / b);
    T fl = floor(div);
    if (div - fl > (T)0.5) fl += 1;
    return fl;
}
template <class T>
EM_DEV T em_remainder_f(T a, T b) {
    T r = fmod(a, b);
    if (r != 0 && ((b < 0) != (r < 0))) r += b;
    return r;
}
template <class T>
EM_DEV T em_logaddexp(T a, T b) {
    if (a != a || b != b) return a + b;
    T m = a > b ? a : b;
    if (isinf(m)) return m;
    return m + log1p(exp(-fabs(a - b)));
}
/* The activations' derivatives (gelu_backward, silu_backward; binary.def of the CPU backend):
 * gelu'(x) = Phi(x) + x phi(x), or for the tanh form s + x s (1 - s) (2u)', s = sigmoid(2u),
 * 2u = 2 sqrt(2/pi) (x + 0.044715 x^3); silu'(x) = s (1 + x (1 - s)), s = sigmoid(x). */
template <class T>
EM_DEV T em_gelu_grad(T x, double tanh_form) {
    if (tanh_form != 0) {
        const T c = (T)1.59576912160573071176; /* 2 sqrt(2/pi) */
        T s = 1 / (1 + exp(-c * (x + (T)0.044715 * x * x * x)));
        return s + x * s * (1 - s) * c * (1 + (T)0.134145 * x * x);
    }
    return (T)0.5 * erfc(-x * (T)0.70710678118654752440) +
           x * exp((T)-0.5 * x * x) * (T)0.39894228040143267794;
}
template <class T>
EM_DEV T em_silu_grad(T x) {
    T s = 1 / (1 + exp(-x));
    return s * (1 + x * (1 - s));
}
/* min(max(a, lo), hi) with NaN from any operand propagating; lo > hi gives hi (PyTorch). */
template <class T>
EM_DEV T em_clamp(T a, T lo, T hi) {
    return lo != lo ? lo : hi != hi ? hi : a < lo ? (lo > hi ? hi : lo) : a > hi ? hi : a;
}

/* Atomic read-modify-write of any element type: a compare-and-swap loop on the 64-bit word,
 * or on the aligned 32-bit word holding a narrower element; float32/float64/int32/int64 adds use
 * the native atomicAdd. */
template <class S>
EM_DEV em_u64 em_raw(S s) {
    union {
        em_u64 u;
        S s;
    } v;
    v.u = 0;
    v.s = s;
    return v.u;
}
template <class C>
struct em_plus {
    C v;
    EM_DEV C operator()(C x) const { return x + v; }
};
template <class T, class F>
EM_DEV void em_atomic_update(typename T::st *addr, F f) {
    typedef typename T::st st;
    if (sizeof(st) == 8) {
        unsigned long long *word = (unsigned long long *)addr;
        unsigned long long old = *word, assumed;
        do {
            assumed = old;
            old = atomicCAS(word, assumed, em_raw(T::sv(f(T::ld(em_bits<st>(assumed))))));
        } while (old != assumed);
    } else {
        unsigned int *word = (unsigned int *)((em_u64)addr & ~(em_u64)3);
        unsigned int shift = (unsigned int)(((em_u64)addr & 3) * 8);
        unsigned int mask = (sizeof(st) == 4 ? 0xffffffffu : sizeof(st) == 2 ? 0xffffu : 0xffu)
                            << shift;
        unsigned int old = *word, assumed;
        do {
            assumed = old;
            st cur = em_bits<st>((em_u64)((assumed & mask) >> shift));
            unsigned int v = (unsigned int)em_raw(T::sv(f(T::ld(cur))));
            old = atomicCAS(word, assumed, (assumed & ~mask) | ((v << shift) & mask));
        } while (old != assumed);
    }
}
template <class T>
EM_DEV void em_atomic_add(typename T::st *addr, typename T::ct v) {
    em_atomic_update<T>(addr, em_plus<typename T::ct>{v});
}
template <>
EM_DEV void em_atomic_add<em_f32_t>(float *addr, float v) { atomicAdd(addr, v); }
template <>
EM_DEV void em_atomic_add<em_f64_t>(double *addr, double v) { atomicAdd(addr, v); }
template <>
EM_DEV void em_atomic_add<em_i32_t>(em_i32 *addr, em_i32 v) { atomicAdd((int *)addr, (int)v); }
template <>
EM_DEV void em_atomic_add<em_i64_t>(em_i64 *addr, em_i64 v) {
    atomicAdd((unsigned long long *)addr, (unsigned long long)v);
}
"""


def traits(token: str) -> str:
    """The traits struct name of a dtype token (``f32`` -> ``em_f32_t``)."""
    return f"em_{token}_t"


def common() -> str:
    """The target-independent part of the prelude (after a target's few lines)."""
    constants = (
        f"#define EM_MAXD {MAX_DIMS}\n#define EM_NOPS {MAX_OPERANDS}\n"
        f"enum {{ EM_ZERO_DIVISION = {ZERO_DIVISION}, EM_NEGATIVE_POWER = {NEGATIVE_POWER}, "
        f"EM_INDEX_OUT_OF_RANGE = {INDEX_OUT_OF_RANGE}, EM_BAD_ARGUMENT = {BAD_ARGUMENT} }};\n"
    )
    return constants + COMMON + HELPERS


def prelude(target: str) -> str:
    """The common head of every kernel module for ``target`` ("cuda" or "hip")."""
    if target not in TARGETS:
        raise ValueError(f"unknown kernel target {target!r}; expected one of {sorted(TARGETS)}")
    return TARGETS[target] + common()


ALL_TOKENS = tuple(d.token for d in DTYPES)
