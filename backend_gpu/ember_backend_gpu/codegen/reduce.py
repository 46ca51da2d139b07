"""Reductions (sum, prod, amax, amin, all, any), index reductions (max, min, argmax, argmin) and
scans (cumsum, cumprod): one module per op, every dtype of the op in it.

Each op is a few lines of vocabulary (accumulator, identity, element -> accumulator, combine,
store); one kernel template walks the outputs and the reduced elements. The semantics are the
CPU backend's reduce.c: sums and products accumulate floats in double and integers in 64 bits
(wrapping); amax/amin propagate NaN; max/min/argmax/argmin return the first extreme, and the first
NaN. Partial results combine in a tree, so float sums can differ from the CPU's in the last bits.

Launch geometry (chosen on the host, ember_backend_cuda/launch.py): 256 threads per block, of
which ``r_lanes`` cooperate on one output along the reduction (``inner``: they are the fastest
varying threads, for reductions whose elements are contiguous) and the rest take different
outputs; ``gridDim.y`` splits long reductions, whose per-split results go to ``partial`` and are
combined by the ``_fin`` kernel.
"""

from __future__ import annotations

from .dtypes import DTYPES, family
from .prelude import ROWS, traits

RED = "16q16q16q16q16q" + "qqq" + "iiii"  # struct em_red
REDUCE_ARGS = "PPPP" + RED + "ii"
FINISH_ARGS = "PPP" + RED + "ii"
SCAN_ARGS = "PP" + ROWS

COMMON = r"""
struct em_red {
    em_i64 oshape[EM_MAXD];    /* kept dims */
    em_i64 ostride_x[EM_MAXD]; /* bytes in x */
    em_i64 ostride_o[EM_MAXD]; /* elements in the output(s) */
    em_i64 rshape[EM_MAXD];    /* reduced dims */
    em_i64 rstride[EM_MAXD];   /* bytes in x */
    em_i64 n_out, n_red, chunk;
    em_i32 ondim, rndim, r_lanes, inner;
};
/* Sum/product accumulators: double for floats, 64-bit unsigned (wrapping) for integers. */
template <class T>
struct em_sacc {
    typedef em_u64 type;
    static EM_DEV em_i64 out(em_u64 a) { return (em_i64)a; }
};
#define EM_FLOAT_SACC(T)                                                                     \
    template <>                                                                              \
    struct em_sacc<T> {                                                                      \
        typedef double type;                                                                 \
        static EM_DEV double out(double a) { return a; }                                     \
    };
EM_FLOAT_SACC(em_f16_t)
EM_FLOAT_SACC(em_bf16_t)
EM_FLOAT_SACC(em_f32_t)
EM_FLOAT_SACC(em_f64_t)

/* Lowest and highest values: the identities of amax and amin. */
template <class T> struct em_lim;
#define EM_LIM(T, LO, HI)                                                                    \
    template <>                                                                              \
    struct em_lim<T> {                                                                       \
        static EM_DEV typename T::ct lo() { return LO; }                                     \
        static EM_DEV typename T::ct hi() { return HI; }                                     \
    };
#define EM_INF __int_as_float(0x7f800000)
#define EM_INF64 __longlong_as_double(0x7ff0000000000000LL)
EM_LIM(em_b_t, 0, 1)
EM_LIM(em_u8_t, 0, 255)
EM_LIM(em_i8_t, -128, 127)
EM_LIM(em_i16_t, -32768, 32767)
EM_LIM(em_i32_t, (-2147483647 - 1), 2147483647)
EM_LIM(em_i64_t, (-9223372036854775807LL - 1), 9223372036854775807LL)
EM_LIM(em_f16_t, -EM_INF, EM_INF)
EM_LIM(em_bf16_t, -EM_INF, EM_INF)
EM_LIM(em_f32_t, -EM_INF, EM_INF)
EM_LIM(em_f64_t, -EM_INF64, EM_INF64)

/* Store an accumulator into the output's dtype: ocode 0 x's, 1 int64, 2 bool. */
template <class T, class V>
EM_DEV void em_store_as(char *out, em_i64 elem, V v, int ocode) {
    if (ocode == 0)
        ((typename T::st *)out)[elem] = T::sv(v);
    else if (ocode == 1)
        ((em_i64 *)out)[elem] = em_i64_t::sv(v);
    else
        ((em_u8 *)out)[elem] = em_b_t::sv(v);
}

template <class T> struct em_r_sum {
    typedef typename em_sacc<T>::type acc;
    static EM_DEV acc init() { return 0; }
    static EM_DEV acc val(typename T::st s, em_i64) { return (acc)T::ld(s); }
    static EM_DEV acc comb(acc a, acc b) { return a + b; }
    static EM_DEV void store(char *o, char *, em_i64 e, acc a, int oc) {
        em_store_as<T>(o, e, em_sacc<T>::out(a), oc);
    }
};
template <class T> struct em_r_prod {
    typedef typename em_sacc<T>::type acc;
    static EM_DEV acc init() { return 1; }
    static EM_DEV acc val(typename T::st s, em_i64) { return (acc)T::ld(s); }
    static EM_DEV acc comb(acc a, acc b) { return a * b; }
    static EM_DEV void store(char *o, char *, em_i64 e, acc a, int oc) {
        em_store_as<T>(o, e, em_sacc<T>::out(a), oc);
    }
};
/* amax/amin propagate NaN: a NaN b always wins, a NaN a is never replaced. */
template <class T> struct em_r_amax {
    typedef typename T::ct acc;
    static EM_DEV acc init() { return em_lim<T>::lo(); }
    static EM_DEV acc val(typename T::st s, em_i64) { return T::ld(s); }
    static EM_DEV acc comb(acc a, acc b) { return (b > a || b != b) ? b : a; }
    static EM_DEV void store(char *o, char *, em_i64 e, acc a, int oc) {
        em_store_as<T>(o, e, a, oc);
    }
};
template <class T> struct em_r_amin {
    typedef typename T::ct acc;
    static EM_DEV acc init() { return em_lim<T>::hi(); }
    static EM_DEV acc val(typename T::st s, em_i64) { return T::ld(s); }
    static EM_DEV acc comb(acc a, acc b) { return (b < a || b != b) ? b : a; }
    static EM_DEV void store(char *o, char *, em_i64 e, acc a, int oc) {
        em_store_as<T>(o, e, a, oc);
    }
};
template <class T> struct em_r_all {
    typedef int acc;
    static EM_DEV acc init() { return 1; }
    static EM_DEV acc val(typename T::st s, em_i64) { return T::ld(s) != 0; }
    static EM_DEV acc comb(acc a, acc b) { return a & b; }
    static EM_DEV void store(char *o, char *, em_i64 e, acc a, int oc) {
        em_store_as<T>(o, e, a, oc);
    }
};
template <class T> struct em_r_any {
    typedef int acc;
    static EM_DEV acc init() { return 0; }
    static EM_DEV acc val(typename T::st s, em_i64) { return T::ld(s) != 0; }
    static EM_DEV acc comb(acc a, acc b) { return a | b; }
    static EM_DEV void store(char *o, char *, em_i64 e, acc a, int oc) {
        em_store_as<T>(o, e, a, oc);
    }
};

/* max/min/argmax/argmin: (value, position); the better value wins, then the lower position,
 * so the combination is order-free and gives the first extreme (the first NaN). */
template <class C> struct em_vi { C v; em_i64 i; };
template <class T, bool MAX> struct em_r_index {
    typedef typename T::ct ct;
    typedef em_vi<ct> acc;
    static EM_DEV bool better(ct v, ct w) { return (MAX ? v > w : v < w) || (v != v && w == w); }
    static EM_DEV acc init() { acc a; a.v = 0; a.i = -1; return a; }
    static EM_DEV acc val(typename T::st s, em_i64 r) { acc a; a.v = T::ld(s); a.i = r; return a; }
    static EM_DEV acc comb(acc a, acc b) {
        if (a.i < 0) return b;
        if (b.i < 0) return a;
        if (better(b.v, a.v)) return b;
        if (better(a.v, b.v)) return a;
        return b.i < a.i ? b : a;
    }
    static EM_DEV void store(char *values, char *indices, em_i64 e, acc a, int) {
        if (values) ((typename T::st *)values)[e] = T::sv(a.v);
        ((em_i64 *)indices)[e] = a.i;
    }
};

template <class T, class OP>
EM_DEV void em_reduce_loop(char *out, char *out2, const char *x, char *partial, const em_red &r,
                           int ocode) {
    typedef typename OP::acc acc;
    __shared__ acc lanes[256];
    const int t = threadIdx.x, R = r.r_lanes, O = 256 / R;
    const int rl = r.inner ? t % R : t / O, ol = r.inner ? t / R : t % O;
    const em_i64 j = (em_i64)blockIdx.x * O + ol;
    em_i64 xoff = 0, ooff = 0;
    if (j < r.n_out) {
        em_i64 q = j;
        for (int d = r.ondim - 1; d >= 0; d--) {
            em_i64 s = r.oshape[d], c = q % s;
            q /= s;
            xoff += c * r.ostride_x[d];
            ooff += c * r.ostride_o[d];
        }
    }
    acc a = OP::init();
    if (j < r.n_out) {
        em_i64 start = (em_i64)blockIdx.y * r.chunk;
        em_i64 stop = start + r.chunk < r.n_red ? start + r.chunk : r.n_red;
        for (em_i64 k = start + rl; k < stop; k += R) {
            em_i64 roff = 0, q = k;
            for (int d = r.rndim - 1; d >= 0; d--) {
                em_i64 s = r.rshape[d], c = q % s;
                q /= s;
                roff += c * r.rstride[d];
            }
            a = OP::comb(a, OP::val(*(const typename T::st *)(x + xoff + roff), k));
        }
    }
    const int slot = r.inner ? ol * R + rl : rl * O + ol;
    lanes[slot] = a;
    __syncthreads();
    for (int s = R / 2; s > 0; s >>= 1) {
        if (rl < s) {
            int other = r.inner ? slot + s : slot + s * O;
            lanes[slot] = OP::comb(lanes[slot], lanes[other]);
        }
        __syncthreads();
    }
    if (rl == 0 && j < r.n_out) {
        if (gridDim.y == 1)
            OP::store(out, out2, ooff, lanes[slot], ocode);
        else
            ((acc *)partial)[(em_i64)blockIdx.y * r.n_out + j] = lanes[slot];
    }
}

/* Combine the gridDim.y partial results of each output (splits of them, in order). */
template <class T, class OP>
EM_DEV void em_reduce_finish(char *out, char *out2, const char *partial, const em_red &r,
                             int splits, int ocode) {
    typedef typename OP::acc acc;
    EM_FOR_EACH(j, r.n_out) {
        acc a = OP::init();
        for (int s = 0; s < splits; s++) a = OP::comb(a, ((const acc *)partial)[s * r.n_out + j]);
        em_i64 ooff = 0, q = j;
        for (int d = r.ondim - 1; d >= 0; d--) {
            em_i64 sz = r.oshape[d], c = q % sz;
            q /= sz;
            ooff += c * r.ostride_o[d];
        }
        OP::store(out, out2, ooff, a, ocode);
    }
}

/* Inclusive scans along one dim: a thread per line (mode 0), or a block per line (mode 1) that
 * scans 256 elements at a time with warp shuffles and carries the running total. */
template <class T, class OP>
EM_DEV void em_scan_loop(char *out, const char *x, const em_rows &s) {
    typedef typename OP::acc acc;
    __shared__ acc warp_totals[256 / EM_WARP];
    __shared__ acc carry_s;
    const em_i64 first = s.mode ? blockIdx.x : (em_i64)blockIdx.x * blockDim.x + threadIdx.x;
    const em_i64 step = s.mode ? gridDim.x : (em_i64)gridDim.x * blockDim.x;
    for (em_i64 l = first; l < s.n_lines; l += step) {
        em_i64 xo, oo;
        em_row_offsets(s, l, xo, oo);
        if (!s.mode) {
            acc a = OP::init();
            for (em_i64 k = 0; k < s.len; k++) {
                a = OP::comb(a, OP::val(*(const typename T::st *)(x + xo + k * s.dstride_x), k));
                *(typename T::st *)(out + oo + k * s.dstride_o) = T::sv(em_sacc<T>::out(a));
            }
            continue;
        }
        const int lane = threadIdx.x % EM_WARP, warp = threadIdx.x / EM_WARP;
        if (threadIdx.x == 0) carry_s = OP::init();
        __syncthreads();
        for (em_i64 base = 0; base < s.len; base += 256) {
            em_i64 k = base + threadIdx.x;
            acc v = k < s.len ? OP::val(*(const typename T::st *)(x + xo + k * s.dstride_x), k)
                              : OP::init();
            for (int d = 1; d < EM_WARP; d <<= 1) {
                acc up = EM_SHFL_UP(v, d);
                if (lane >= d) v = OP::comb(up, v);
            }
            if (lane == EM_WARP - 1) warp_totals[warp] = v;
            __syncthreads();
            acc prefix = carry_s;
            for (int w = 0; w < warp; w++) prefix = OP::comb(prefix, warp_totals[w]);
            v = OP::comb(prefix, v);
            if (k < s.len)
                *(typename T::st *)(out + oo + k * s.dstride_o) = T::sv(em_sacc<T>::out(v));
            __syncthreads();
            if (threadIdx.x == 255) carry_s = v;
            __syncthreads();
        }
    }
}
"""

# name -> (op functor template, dtype family, kind)
REDUCTIONS = {
    "sum": ("em_r_sum<{t}>", "ALL"),
    "prod": ("em_r_prod<{t}>", "ALL"),
    "amax": ("em_r_amax<{t}>", "ALL"),
    "amin": ("em_r_amin<{t}>", "ALL"),
    "all": ("em_r_all<{t}>", "ALL"),
    "any": ("em_r_any<{t}>", "ALL"),
}
INDEX_REDUCTIONS = {
    "max": ("em_r_index<{t}, true>", "ALL"),
    "min": ("em_r_index<{t}, false>", "ALL"),
    "argmax": ("em_r_index<{t}, true>", "NUM"),
    "argmin": ("em_r_index<{t}, false>", "NUM"),
}
SCANS = {"cumsum": ("em_r_sum<{t}>", "NUM"), "cumprod": ("em_r_prod<{t}>", "NUM")}


def reduce_name(op: str, token: str) -> str:
    return f"em_reduce_{op}_{token}"


def finish_name(op: str, token: str) -> str:
    return f"em_reduce_fin_{op}_{token}"


def scan_name(op: str, token: str) -> str:
    return f"em_scan_{op}_{token}"


def dtypes_of(op: str) -> tuple[str, ...]:
    table = {**REDUCTIONS, **INDEX_REDUCTIONS, **SCANS}
    return tuple(d.token for d in family(table[op][1]))


def _reduce_module(op: str, functor: str, fam: str) -> tuple[str, list]:
    parts, kernels = [COMMON], []
    for d in family(fam):
        f = functor.format(t=traits(d.token))
        t = traits(d.token)
        red, fin = reduce_name(op, d.token), finish_name(op, d.token)
        parts.append(
            f"EM_KERNEL {red}(char *out, char *out2, const char *x, char *partial, em_red r, "
            f"int ocode, int pad) {{\n"
            f"    em_reduce_loop<{t}, {f}>(out, out2, x, partial, r, ocode);\n}}\n"
            f"EM_KERNEL {fin}(char *out, char *out2, const char *partial, em_red r, int splits, "
            f"int ocode) {{\n"
            f"    em_reduce_finish<{t}, {f}>(out, out2, partial, r, splits, ocode);\n}}\n"
        )
        kernels += [(red, REDUCE_ARGS), (fin, FINISH_ARGS)]
    return "".join(parts), kernels


def _scan_module(op: str, functor: str, fam: str) -> tuple[str, list]:
    parts, kernels = [COMMON], []
    for d in family(fam):
        name = scan_name(op, d.token)
        f = functor.format(t=traits(d.token))
        parts.append(
            f"EM_KERNEL {name}(char *out, const char *x, em_rows s) {{\n"
            f"    em_scan_loop<{traits(d.token)}, {f}>(out, x, s);\n}}\n"
        )
        kernels.append((name, SCAN_ARGS))
    return "".join(parts), kernels


def modules() -> dict:
    found = {}
    for op, (functor, fam) in {**REDUCTIONS, **INDEX_REDUCTIONS}.items():
        found[f"reduce.{op}"] = lambda op=op, f=functor, fam=fam: _reduce_module(op, f, fam)
    for op, (functor, fam) in SCANS.items():
        found[f"scan.{op}"] = lambda op=op, f=functor, fam=fam: _scan_module(op, f, fam)
    return found


ACCUMULATOR_BYTES = {  # bytes of one partial result, for the host's scratch sizing
    "sum": 8,
    "prod": 8,
    "amax": 8,
    "amin": 8,
    "all": 4,
    "any": 4,
    "max": 16,
    "min": 16,
    "argmax": 16,
    "argmin": 16,
}
ALL_TOKENS = tuple(d.token for d in DTYPES)
