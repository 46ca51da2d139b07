"""Fused nn kernels: softmax and log_softmax along a dim, im2col/col2im (unfold/fold, the rows
of convolution), and max_pool2d with indices. One module, ``nn``, floating dtypes.

softmax works in the compute type (float for float16/bfloat16) with the sum in double: three
passes over each line (max, sum of exp, write), a block per line or, for short lines, a thread.
col2im gathers the columns that cover each output pixel instead of scattering into it, so it
needs no atomics and is deterministic.
"""

from __future__ import annotations

from .dtypes import family
from .prelude import ROWS, traits

CONV = "16q" + "4q"  # struct em_conv: 16 sizes, 4 byte strides of the strided operand
SOFTMAX_ARGS = "PP" + ROWS + "i"
CONV_ARGS = "PP" + CONV
POOL_ARGS = "PPP" + CONV

COMMON = r"""
template <class C>
struct em_max_nan {
    EM_DEV C operator()(C a, C b) const { return (b > a || b != b) ? b : a; }
};
struct em_sum_d {
    EM_DEV double operator()(double a, double b) const { return a + b; }
};

template <class T>
EM_DEV void em_softmax(char *out, const char *x, const em_rows &s, int logmode) {
    typedef typename T::ct ct;
    typedef typename T::st st;
    __shared__ ct smax[32];
    __shared__ double ssum[32];
    const bool block = s.mode != 0;
    const em_i64 first = block ? blockIdx.x : (em_i64)blockIdx.x * blockDim.x + threadIdx.x;
    const em_i64 step = block ? gridDim.x : (em_i64)gridDim.x * blockDim.x;
    const int lane0 = block ? threadIdx.x : 0, lanes = block ? blockDim.x : 1;
    for (em_i64 l = first; l < s.n_lines; l += step) {
        em_i64 xo, oo;
        em_row_offsets(s, l, xo, oo);
        ct m = -__int_as_float(0x7f800000);
        for (em_i64 k = lane0; k < s.len; k += lanes)
            m = em_max_nan<ct>()(m, T::ld(*(const st *)(x + xo + k * s.dstride_x)));
        if (block) m = em_block_reduce(m, em_max_nan<ct>(), smax);
        double sum = 0;
        for (em_i64 k = lane0; k < s.len; k += lanes)
            sum += (double)exp(T::ld(*(const st *)(x + xo + k * s.dstride_x)) - m);
        if (block) sum = em_block_reduce(sum, em_sum_d(), ssum);
        const ct total = (ct)sum, logt = logmode ? (ct)log(sum) : (ct)0;
        for (em_i64 k = lane0; k < s.len; k += lanes) {
            ct v = T::ld(*(const st *)(x + xo + k * s.dstride_x)) - m;
            *(st *)(out + oo + k * s.dstride_o) = T::sv(logmode ? v - logt : exp(v) / total);
        }
        if (block) __syncthreads();
    }
}

/* Sizes of a 2-d window op and the byte strides of its strided operand (x for im2col and
 * pooling, the columns for col2im). */
struct em_conv {
    em_i64 N, C, H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW, pad0, pad1;
    em_i64 s0, s1, s2, s3;
};

/* out (N, C*KH*KW, OH*OW), contiguous, from x (N, C, H, W); zero outside x. */
template <class T>
EM_DEV void em_im2col(char *out, const char *x, const em_conv &c) {
    typedef typename T::st st;
    const em_i64 L = c.OH * c.OW, K = c.KH * c.KW;
    EM_FOR_EACH(e, c.N * c.C * K * L) {
        em_i64 l = e % L, r = (e / L) % (c.C * K), n = e / (L * c.C * K);
        em_i64 ch = r / K, ki = (r / c.KW) % c.KH, kj = r % c.KW;
        em_i64 y = (l / c.OW) * c.SH - c.PH + ki * c.DH, xx = (l % c.OW) * c.SW - c.PW + kj * c.DW;
        st v = T::sv(0);
        if (y >= 0 && y < c.H && xx >= 0 && xx < c.W)
            v = *(const st *)(x + n * c.s0 + ch * c.s1 + y * c.s2 + xx * c.s3);
        ((st *)out)[e] = v;
    }
}

/* out (N, C, H, W), contiguous: each pixel sums the column entries whose window covers it. */
template <class T>
EM_DEV void em_col2im(char *out, const char *cols, const em_conv &c) {
    typedef typename T::st st;
    EM_FOR_EACH(e, c.N * c.C * c.H * c.W) {
        em_i64 xx = e % c.W, y = (e / c.W) % c.H, ch = (e / (c.W * c.H)) % c.C;
        em_i64 n = e / (c.W * c.H * c.C);
        typename T::ct acc = 0;
        for (em_i64 ki = 0; ki < c.KH; ki++) {
            em_i64 ty = y + c.PH - ki * c.DH;
            if (ty < 0 || ty % c.SH) continue;
            em_i64 oy = ty / c.SH;
            if (oy >= c.OH) continue;
            for (em_i64 kj = 0; kj < c.KW; kj++) {
                em_i64 tx = xx + c.PW - kj * c.DW;
                if (tx < 0 || tx % c.SW) continue;
                em_i64 ox = tx / c.SW;
                if (ox >= c.OW) continue;
                em_i64 row = (ch * c.KH + ki) * c.KW + kj, col = oy * c.OW + ox;
                acc += T::ld(*(const st *)(cols + n * c.s0 + row * c.s1 + col * c.s2));
            }
        }
        ((st *)out)[e] = T::sv(acc);
    }
}

/* values and indices (N, C, OH, OW), contiguous; indices flat in each input (H, W) plane; the
 * first maximum wins, and the first NaN. */
template <class T>
EM_DEV void em_max_pool2d(char *values, char *indices, const char *x, const em_conv &c) {
    typedef typename T::st st;
    typedef typename T::ct ct;
    EM_FOR_EACH(e, c.N * c.C * c.OH * c.OW) {
        em_i64 ox = e % c.OW, oy = (e / c.OW) % c.OH, ch = (e / (c.OW * c.OH)) % c.C;
        em_i64 n = e / (c.OW * c.OH * c.C);
        const char *plane = x + n * c.s0 + ch * c.s1;
        ct best = 0;
        em_i64 at = -1;
        for (em_i64 ki = 0; ki < c.KH; ki++) {
            em_i64 y = oy * c.SH - c.PH + ki * c.DH;
            if (y < 0 || y >= c.H) continue;
            for (em_i64 kj = 0; kj < c.KW; kj++) {
                em_i64 xx = ox * c.SW - c.PW + kj * c.DW;
                if (xx < 0 || xx >= c.W) continue;
                ct v = T::ld(*(const st *)(plane + y * c.s2 + xx * c.s3));
                if (at < 0 || v > best || (v != v && best == best)) {
                    best = v;
                    at = y * c.W + xx;
                }
            }
        }
        ((st *)values)[e] = T::sv(at < 0 ? -__int_as_float(0x7f800000) : best);
        ((em_i64 *)indices)[e] = at < 0 ? 0 : at;
    }
}
"""


def _module() -> tuple[str, list]:
    parts, kernels = [COMMON], []
    for d in family("FLOAT"):
        t, k = traits(d.token), d.token
        parts.append(
            f"EM_KERNEL em_softmax_{k}(char *out, const char *x, em_rows s, int logmode) {{\n"
            f"    em_softmax<{t}>(out, x, s, logmode);\n}}\n"
            f"EM_KERNEL em_im2col_{k}(char *out, const char *x, em_conv c) {{\n"
            f"    em_im2col<{t}>(out, x, c);\n}}\n"
            f"EM_KERNEL em_col2im_{k}(char *out, const char *cols, em_conv c) {{\n"
            f"    em_col2im<{t}>(out, cols, c);\n}}\n"
            f"EM_KERNEL em_max_pool2d_{k}(char *values, char *indices, const char *x, "
            f"em_conv c) {{\n    em_max_pool2d<{t}>(values, indices, x, c);\n}}\n"
        )
        kernels += [
            (f"em_softmax_{k}", SOFTMAX_ARGS),
            (f"em_im2col_{k}", CONV_ARGS),
            (f"em_col2im_{k}", CONV_ARGS),
            (f"em_max_pool2d_{k}", POOL_ARGS),
        ]
    return "".join(parts), kernels


def modules() -> dict:
    return {"nn": _module}
