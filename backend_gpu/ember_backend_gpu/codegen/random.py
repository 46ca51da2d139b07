"""Philox4x32-10 fills (uniform_, normal_, random_): docs/random.md is the contract, the CPU
backend's random.c the reference. One module, ``random``.

A thread makes one Philox block (four 32-bit words) and writes the ``per`` elements that block
feeds (4, or 2 for 64-bit draws) wherever they live: element ``i`` of the row-major order of
``out`` goes to its strided offset, so any layout gets the CPU's numbers. Modules compile with
``-fmad=false`` (see compiler.py): the transforms' ``A + u * R`` must round twice, as on the CPU.
"""

from __future__ import annotations

from .dtypes import DTYPES, family
from .elementwise import ND
from .prelude import traits

UNIFORM_ARGS = "P" + ND + "QQddd"
NORMAL_ARGS = "P" + ND + "QQdd"
RANDOM_ARGS = "P" + ND + "QQqQ"

COMMON = r"""
EM_DEV void em_philox(em_u64 blk, em_u32 k0, em_u32 k1, em_u32 (&x)[4]) {
    em_u32 x0 = (em_u32)blk, x1 = (em_u32)(blk >> 32), x2 = 0, x3 = 0;
#pragma unroll
    for (int round = 0; round < 10; round++) {
        em_u32 hi0 = __umulhi(0xD2511F53u, x0), lo0 = 0xD2511F53u * x0;
        em_u32 hi1 = __umulhi(0xCD9E8D57u, x2), lo1 = 0xCD9E8D57u * x2;
        x0 = hi1 ^ x1 ^ k0;
        x1 = lo1;
        x2 = hi0 ^ x3 ^ k1;
        x3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    x[0] = x0;
    x[1] = x1;
    x[2] = x2;
    x[3] = x3;
}

EM_DEV em_u64 em_draw64(const em_u32 (&x)[4], int lane) {
    return (em_u64)x[2 * lane] | ((em_u64)x[2 * lane + 1] << 32);
}

/* Block b of a fill: values y[0 .. PER-1] -> elements b * PER + j (those below n). */
template <class T, int PER, class V>
EM_DEV void em_put_block(char *out, const em_nd &nd, em_i64 b, const V (&y)[PER]) {
#pragma unroll
    for (int j = 0; j < PER; j++) {
        em_i64 i = b * PER + j;
        if (i < nd.n) {
            em_i64 off[1];
            em_offsets<1>(nd, i, off);
            *(typename T::st *)(out + off[0]) = T::sv(y[j]);
        }
    }
}

#define EM_RNG_BLOCKS(PER) EM_FOR_EACH(b, (nd.n + PER - 1) / PER)

template <class T>
EM_DEV void em_uniform4(char *out, const em_nd &nd, em_u64 seed, em_u64 offset, double low,
                        double high, double below) {
    const float A = (float)low, R = (float)high - A, H = (float)below;
    EM_RNG_BLOCKS(4) {
        em_u32 x[4];
        em_philox(offset + (em_u64)b, (em_u32)seed, (em_u32)(seed >> 32), x);
        float y[4];
#pragma unroll
        for (int l = 0; l < 4; l++) {
            float v = A + (float)(x[l] >> 8) * 0x1p-24f * R;
            y[l] = v > H ? H : v;
        }
        em_put_block<T, 4>(out, nd, b, y);
    }
}
template <class T>
EM_DEV void em_uniform2(char *out, const em_nd &nd, em_u64 seed, em_u64 offset, double low,
                        double high, double below) {
    const double R = high - low;
    EM_RNG_BLOCKS(2) {
        em_u32 x[4];
        em_philox(offset + (em_u64)b, (em_u32)seed, (em_u32)(seed >> 32), x);
        double y[2];
#pragma unroll
        for (int l = 0; l < 2; l++) {
            double v = low + (double)(em_draw64(x, l) >> 11) * 0x1p-53 * R;
            y[l] = v > below ? below : v;
        }
        em_put_block<T, 2>(out, nd, b, y);
    }
}
/* Box-Muller on the pairs (x0, x1) and (x2, x3). */
template <class T>
EM_DEV void em_normal4(char *out, const em_nd &nd, em_u64 seed, em_u64 offset, double mean,
                       double std) {
    const float A = (float)mean, B = (float)std;
    EM_RNG_BLOCKS(4) {
        em_u32 x[4];
        em_philox(offset + (em_u64)b, (em_u32)seed, (em_u32)(seed >> 32), x);
        float y[4];
#pragma unroll
        for (int p = 0; p < 2; p++) {
            float u1 = ((float)(x[2 * p] >> 8) + 1) * 0x1p-24f;
            float u2 = (float)(x[2 * p + 1] >> 8) * 0x1p-24f;
            float rad = sqrtf(-2 * logf(u1));
            float t = 6.2831855f * u2;
            y[2 * p] = A + B * (rad * cosf(t));
            y[2 * p + 1] = A + B * (rad * sinf(t));
        }
        em_put_block<T, 4>(out, nd, b, y);
    }
}
template <class T>
EM_DEV void em_normal2(char *out, const em_nd &nd, em_u64 seed, em_u64 offset, double mean,
                       double std) {
    EM_RNG_BLOCKS(2) {
        em_u32 x[4];
        em_philox(offset + (em_u64)b, (em_u32)seed, (em_u32)(seed >> 32), x);
        double u1 = ((double)(em_draw64(x, 0) >> 11) + 1) * 0x1p-53;
        double u2 = (double)(em_draw64(x, 1) >> 11) * 0x1p-53;
        double rad = sqrt(-2 * log(u1));
        double t = 6.283185307179586 * u2;
        double y[2] = {mean + std * (rad * cos(t)), mean + std * (rad * sin(t))};
        em_put_block<T, 2>(out, nd, b, y);
    }
}
/* Integers low + (draw mod range), 64-bit wrapping; range 0 means 2^64 (and 2^32 for 32-bit
 * draws: the word itself). */
template <class T>
EM_DEV void em_random4(char *out, const em_nd &nd, em_u64 seed, em_u64 offset, em_i64 low,
                       em_u64 range) {
    const em_u32 range32 = range < (1ULL << 32) ? (em_u32)range : 0u;
    EM_RNG_BLOCKS(4) {
        em_u32 x[4];
        em_philox(offset + (em_u64)b, (em_u32)seed, (em_u32)(seed >> 32), x);
        em_i64 y[4];
#pragma unroll
        for (int l = 0; l < 4; l++)
            y[l] = (em_i64)((em_u64)low + (range32 ? x[l] % range32 : x[l]));
        em_put_block<T, 4>(out, nd, b, y);
    }
}
template <class T>
EM_DEV void em_random2(char *out, const em_nd &nd, em_u64 seed, em_u64 offset, em_i64 low,
                       em_u64 range) {
    EM_RNG_BLOCKS(2) {
        em_u32 x[4];
        em_philox(offset + (em_u64)b, (em_u32)seed, (em_u32)(seed >> 32), x);
        em_i64 y[2];
#pragma unroll
        for (int l = 0; l < 2; l++) {
            em_u64 w = em_draw64(x, l);
            y[l] = (em_i64)((em_u64)low + (range ? w % range : w));
        }
        em_put_block<T, 2>(out, nd, b, y);
    }
}
"""

FILLS = (
    # (kind, per, dtypes, C++ parameters, argument format)
    ("uniform", 4, ("f16", "bf16", "f32"), "double a, double b, double h", UNIFORM_ARGS),
    ("uniform", 2, ("f64",), "double a, double b, double h", UNIFORM_ARGS),
    ("normal", 4, ("f16", "bf16", "f32"), "double a, double b", NORMAL_ARGS),
    ("normal", 2, ("f64",), "double a, double b", NORMAL_ARGS),
    ("random", 4, tuple(d.token for d in DTYPES), "em_i64 a, em_u64 b", RANDOM_ARGS),
    ("random", 2, tuple(d.token for d in DTYPES), "em_i64 a, em_u64 b", RANDOM_ARGS),
)


def fill_name(kind: str, per: int, token: str) -> str:
    return f"em_{kind}{per}_{token}"


def _module() -> tuple[str, list]:
    parts, kernels = [COMMON], []
    for kind, per, tokens, params, fmt in FILLS:
        args = ", ".join(p.split()[-1] for p in params.split(", "))
        for token in tokens:
            name = fill_name(kind, per, token)
            parts.append(
                f"EM_KERNEL {name}(char *out, em_nd nd, em_u64 seed, em_u64 offset, {params}) {{\n"
                f"    em_{kind}{per}<{traits(token)}>(out, nd, seed, offset, {args});\n}}\n"
            )
            kernels.append((name, fmt))
    return "".join(parts), kernels


def modules() -> dict:
    return {"random": _module}


FLOAT_TOKENS = tuple(d.token for d in family("FLOAT"))
