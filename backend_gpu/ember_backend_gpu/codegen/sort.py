"""Sorting kernels: a stable sort along a dim, and searchsorted. One module, ``sort``.

Sort maps each element to a 64-bit key whose unsigned order is the order wanted (the CPU
backend's sort.c: integers flip the sign bit; floats flip every bit of negatives, NaN is the
largest key, -0.0 equals 0.0; descending complements the key), pads every line to a power of two
``P`` with the largest key, and runs a bitonic network over (key, position) pairs. Positions
break ties, so the order is total and the sort stable. Steps whose partners are closer than a
block's chunk run in shared memory (``em_bitonic_block``), the others one launch per step
(``em_bitonic_step``); then the values are gathered by position, so NaN payloads and the sign of
zero survive.
"""

from __future__ import annotations

from .dtypes import DTYPES, family
from .prelude import traits

CHUNK = 2048  # elements a block sorts in shared memory (1024 threads, 24 KiB)
LINES = "16q16q16q16q" + "qqqqq" + "ii"  # struct em_lines
KEYS_ARGS = "PPP" + LINES + "qi"
WRITE_ARGS = "PPPP" + LINES + "q"
STEP_ARGS = "PPqqqq"
BLOCK_ARGS = "PPqqqq"
SEARCH = "16q16q16q16q" + "qqq" + "iiii"  # struct em_search
SEARCH_ARGS = "PPP" + SEARCH

COMMON = r"""
struct em_lines {
    em_i64 lshape[EM_MAXD];    /* the dims other than the sorted one */
    em_i64 lstride_x[EM_MAXD]; /* bytes, in x, values and indices */
    em_i64 lstride_v[EM_MAXD];
    em_i64 lstride_i[EM_MAXD];
    em_i64 n_lines, len, dstride_x, dstride_v, dstride_i;
    em_i32 lndim, pad;
};

EM_DEV void em_line_offsets(const em_lines &s, em_i64 l, em_i64 &x, em_i64 &v, em_i64 &i) {
    x = v = i = 0;
    for (int d = s.lndim - 1; d >= 0; d--) {
        em_i64 sz = s.lshape[d], c = l % sz;
        l /= sz;
        x += c * s.lstride_x[d];
        v += c * s.lstride_v[d];
        i += c * s.lstride_i[d];
    }
}

/* Keys whose unsigned order is the value order. */
template <class T> struct em_key {
    static EM_DEV em_u64 of(typename T::st v) { return (em_u64)(em_i64)v ^ 0x8000000000000000ULL; }
};
template <> struct em_key<em_b_t> { static EM_DEV em_u64 of(em_u8 v) { return v; } };
template <> struct em_key<em_u8_t> { static EM_DEV em_u64 of(em_u8 v) { return v; } };
EM_DEV em_u64 em_float_key(em_u64 u, int bits) {
    const em_u64 sign = 1ULL << (bits - 1);
    const em_u64 inf = bits == 64 ? 0x7ff0000000000000ULL : 0x7f800000ULL;
    const em_u64 mag = u & ~sign;
    if (mag > inf) return ~0ULL;
    if (mag == 0) return sign;
    return (u & sign) ? (~u & (bits == 64 ? ~0ULL : 0xffffffffULL)) : (u | sign);
}
/* float16 and bfloat16 through float, whose key orders them the same. */
#define EM_FLOAT_KEY(T, EXPR, BITS)                                                          \
    template <>                                                                              \
    struct em_key<T> {                                                                       \
        static EM_DEV em_u64 of(typename T::st v) { return em_float_key(EXPR, BITS); }       \
    };
EM_FLOAT_KEY(em_f16_t, __float_as_uint(em_h2f(v)), 32)
EM_FLOAT_KEY(em_bf16_t, __float_as_uint(em_bf2f(v)), 32)
EM_FLOAT_KEY(em_f32_t, __float_as_uint(v), 32)
EM_FLOAT_KEY(em_f64_t, (em_u64)__double_as_longlong(v), 64)

template <class T>
EM_DEV void em_sort_keys(em_u64 *keys, em_i32 *pos, const char *x, const em_lines &s, em_i64 P,
                         int descending) {
    EM_FOR_EACH(g, s.n_lines * P) {
        em_i64 l = g / P, i = g - l * P;
        em_u64 key = ~0ULL;
        if (i < s.len) {
            em_i64 xo, vo, io;
            em_line_offsets(s, l, xo, vo, io);
            key = em_key<T>::of(*(const typename T::st *)(x + xo + i * s.dstride_x));
            if (descending) key = ~key;
        }
        keys[g] = key;
        pos[g] = (em_i32)i;
    }
}

EM_DEV bool em_after(em_u64 ka, em_i32 pa, em_u64 kb, em_i32 pb) {
    return ka > kb || (ka == kb && pa > pb);
}

/* One step (k, j) of the bitonic network over every line of P elements. */
EM_KERNEL em_bitonic_step(em_u64 *keys, em_i32 *pos, em_i64 total, em_i64 P, em_i64 k, em_i64 j) {
    EM_FOR_EACH(g, total) {
        em_i64 i = g % P, partner = i ^ j;
        if (partner <= i) continue;
        em_i64 a = g, b = g + (partner - i);
        bool up = (i & k) == 0;
        if (em_after(keys[a], pos[a], keys[b], pos[b]) == up) {
            em_u64 tk = keys[a]; keys[a] = keys[b]; keys[b] = tk;
            em_i32 tp = pos[a]; pos[a] = pos[b]; pos[b] = tp;
        }
    }
}

/* Steps k in [k_lo, k_hi] (doubling), j from j_first (for k_lo; k / 2 after) down to 1, on
 * chunks of 2 * blockDim.x elements held in shared memory. */
EM_KERNEL em_bitonic_block(em_u64 *keys, em_i32 *pos, em_i64 P, em_i64 k_lo, em_i64 k_hi,
                           em_i64 j_first) {
    __shared__ em_u64 sk[EM_SORT_CHUNK];
    __shared__ em_i32 sp[EM_SORT_CHUNK];
    const int C = 2 * blockDim.x, t = threadIdx.x;
    const em_i64 base = (em_i64)blockIdx.x * C;
    sk[t] = keys[base + t];
    sp[t] = pos[base + t];
    sk[t + blockDim.x] = keys[base + t + blockDim.x];
    sp[t + blockDim.x] = pos[base + t + blockDim.x];
    __syncthreads();
    for (em_i64 k = k_lo; k <= k_hi; k <<= 1) {
        for (em_i64 j = k == k_lo ? j_first : k >> 1; j > 0; j >>= 1) {
            int i = (int)((t / j) * 2 * j + (t % j));
            int b = i + (int)j;
            bool up = (((base + i) % P) & k) == 0;
            if (em_after(sk[i], sp[i], sk[b], sp[b]) == up) {
                em_u64 tk = sk[i]; sk[i] = sk[b]; sk[b] = tk;
                em_i32 tp = sp[i]; sp[i] = sp[b]; sp[b] = tp;
            }
            __syncthreads();
        }
    }
    keys[base + t] = sk[t];
    pos[base + t] = sp[t];
    keys[base + t + blockDim.x] = sk[t + blockDim.x];
    pos[base + t + blockDim.x] = sp[t + blockDim.x];
}

template <class T>
EM_DEV void em_sort_write(char *values, char *indices, const char *x, const em_i32 *pos,
                          const em_lines &s, em_i64 P) {
    EM_FOR_EACH(g, s.n_lines * s.len) {
        em_i64 l = g / s.len, i = g - l * s.len;
        em_i64 xo, vo, io;
        em_line_offsets(s, l, xo, vo, io);
        em_i64 from = pos[l * P + i];
        *(typename T::st *)(values + vo + i * s.dstride_v) =
            *(const typename T::st *)(x + xo + from * s.dstride_x);
        *(em_i64 *)(indices + io + i * s.dstride_i) = from;
    }
}

/* searchsorted: each value's insertion point in its sequence row (PyTorch's comparisons). */
struct em_search {
    em_i64 shape[EM_MAXD];   /* values' shape */
    em_i64 vstride[EM_MAXD]; /* bytes */
    em_i64 rows[EM_MAXD];    /* bytes: the row of a value in the sequence (0 on the last dim) */
    em_i64 ostride[EM_MAXD]; /* bytes */
    em_i64 n, len, step;     /* values; row length; byte stride along a row */
    em_i32 ndim, right, out32, pad;
};
template <class T>
EM_DEV void em_searchsorted(char *out, const char *values, const char *seq, const em_search &s) {
    typedef typename T::ct ct;
    EM_FOR_EACH(p, s.n) {
        em_i64 vo = 0, ro = 0, oo = 0, q = p;
        for (int d = s.ndim - 1; d >= 0; d--) {
            em_i64 sz = s.shape[d], c = q % sz;
            q /= sz;
            vo += c * s.vstride[d];
            ro += c * s.rows[d];
            oo += c * s.ostride[d];
        }
        const ct v = T::ld(*(const typename T::st *)(values + vo));
        const char *row = seq + ro;
        em_i64 lo = 0, hi = s.len;
        while (lo < hi) {
            em_i64 mid = lo + ((hi - lo) >> 1);
            ct m = T::ld(*(const typename T::st *)(row + mid * s.step));
            if (s.right ? !(m > v) : !(m >= v))
                lo = mid + 1;
            else
                hi = mid;
        }
        if (s.out32)
            *(em_i32 *)(out + oo) = (em_i32)lo;
        else
            *(em_i64 *)(out + oo) = lo;
    }
}
""".replace("EM_SORT_CHUNK", str(CHUNK))


def _module() -> tuple[str, list]:
    parts = [COMMON]
    kernels = [("em_bitonic_step", STEP_ARGS), ("em_bitonic_block", BLOCK_ARGS)]
    for d in DTYPES:
        t, k = traits(d.token), d.token
        parts.append(
            f"EM_KERNEL em_sort_keys_{k}(em_u64 *keys, em_i32 *pos, const char *x, em_lines s, "
            f"em_i64 P, int descending) {{\n"
            f"    em_sort_keys<{t}>(keys, pos, x, s, P, descending);\n}}\n"
            f"EM_KERNEL em_sort_write_{k}(char *values, char *indices, const char *x, "
            f"const em_i32 *pos, em_lines s, em_i64 P) {{\n"
            f"    em_sort_write<{t}>(values, indices, x, pos, s, P);\n}}\n"
        )
        kernels += [(f"em_sort_keys_{k}", KEYS_ARGS), (f"em_sort_write_{k}", WRITE_ARGS)]
    for d in family("NUM"):
        t, k = traits(d.token), d.token
        parts.append(
            f"EM_KERNEL em_searchsorted_{k}(char *out, const char *values, const char *seq, "
            f"em_search s) {{\n    em_searchsorted<{t}>(out, values, seq, s);\n}}\n"
        )
        kernels.append((f"em_searchsorted_{k}", SEARCH_ARGS))
    return "".join(parts), kernels


def modules() -> dict:
    return {"sort": _module}
