/* The samplers with a variable number of draws, written once for every device: standard gamma
 * (Marsaglia-Tsang), Poisson (Knuth / Hormann's PTRS) and binomial (inversion / BTRS), the
 * algorithms of PyTorch's aten/src/ATen/native/Distributions.h over ember's Philox word streams
 * (docs/random.md, "Samplers with a variable number of draws"). samplers.c includes it; the GPU
 * backends' generator (ember_backend_gpu/codegen/samplers.py) reads this file and philox.h and
 * compiles them as CUDA C++ and as OpenCL C. Hence the common subset of the three: functions are
 * EM_DEVICE_FN (philox.h), NaN is EM_NAN_f / EM_NAN_d, no arrays in functions, and the
 * double-precision code sits under EM_SAMPLER_F64 (an OpenCL device may lack it). A GPU target
 * defines those, the fixed-width integer names and the math functions before this text.
 */
#ifndef EMBER_CPU_SAMPLERS_H
#define EMBER_CPU_SAMPLERS_H
#include "philox.h"

#ifndef EM_NAN_f /* the CPU plugin's spellings (ember_cpu.h brings tgmath.h) */
#define EM_NAN_f ((float)NAN)
#define EM_NAN_d ((double)NAN)
#define EM_SAMPLER_F64 1
#endif

/* One element's word stream: the four words of counter (c0, c1, i, k), k = 1, 2, ... in turn. */
typedef struct {
    uint32_t k0, k1, c0, c1, i, k;
    uint32_t x[4];
    int used;
} em_stream;

EM_DEVICE_FN em_stream stream_at(uint64_t seed, uint64_t block, int64_t i) {
    em_stream s;
    s.k0 = (uint32_t)seed;
    s.k1 = (uint32_t)(seed >> 32);
    s.c0 = (uint32_t)block;
    s.c1 = (uint32_t)(block >> 32);
    s.i = (uint32_t)i;
    s.k = 0;
    s.used = 4;
    return s;
}

EM_DEVICE_FN uint32_t next32(em_stream *s) {
    if (s->used == 4) {
        s->k++;
        s->x[0] = s->c0;
        s->x[1] = s->c1;
        s->x[2] = s->i;
        s->x[3] = s->k;
        philox10(&s->x[0], &s->x[1], &s->x[2], &s->x[3], s->k0, s->k1);
        s->used = 0;
    }
    return s->x[s->used++];
}

/* The fills' transforms (docs/random.md): 24-bit float and 53-bit double uniforms in [0, 1), and
 * the cosine half of Box-Muller (its sine half is dropped so that one normal is one draw pair). */
EM_DEVICE_FN float uniform_f(em_stream *s) { return (float)(next32(s) >> 8) * 0x1p-24f; }

EM_DEVICE_FN float normal_f(em_stream *s) {
    float u1 = ((float)(next32(s) >> 8) + 1) * 0x1p-24f;
    float u2 = uniform_f(s);
    return sqrt(-2 * log(u1)) * cos(6.2831855f * u2);
}

/* PyTorch's sample_gamma: Marsaglia and Tsang (2000), with the boost Gamma(a) = Gamma(a + 1) *
 * U^(1/a) below a = 1. The result is at least the dtype's smallest normal, as PyTorch clamps
 * (alpha = 0 included); NaN and negative alpha give NaN, as on PyTorch's CUDA. */
#define GAMMA(P, VT, TINY)                                                                       \
    EM_DEVICE_FN VT gamma_##P(VT alpha, em_stream *s) {                                         \
        if (alpha != alpha || alpha < 0) return EM_NAN_##P;                                       \
        if (isinf(alpha)) return alpha;                                                           \
        VT scale = 1;                                                                             \
        if (alpha < 1) {                                                                          \
            if (alpha == 0) return TINY; /* PyTorch's clamp of its 0 */                           \
            scale = pow(1 - uniform_##P(s), 1 / alpha);                                           \
            alpha += 1;                                                                           \
        }                                                                                         \
        VT d = alpha - (VT)1 / 3;                                                                 \
        VT c = 1 / sqrt(9 * d);                                                                   \
        for (;;) {                                                                                \
            VT x, y;                                                                              \
            do {                                                                                  \
                x = normal_##P(s);                                                                \
                y = 1 + c * x;                                                                    \
            } while (y <= 0);                                                                     \
            VT v = y * y * y;                                                                     \
            VT u = 1 - uniform_##P(s);                                                            \
            VT xsq = x * x;                                                                       \
            if (u < 1 - (VT)0.0331 * xsq * xsq || log(u) < (VT)0.5 * xsq + d * (1 - v + log(v))) { \
                VT out = scale * d * v;                                                           \
                return out < TINY ? TINY : out;                                                   \
            }                                                                                     \
        }                                                                                         \
    }
GAMMA(f, float, 0x1p-126f)

#ifdef EM_SAMPLER_F64
EM_DEVICE_FN double uniform_d(em_stream *s) {
    uint64_t lo = next32(s);
    uint64_t w = lo | ((uint64_t)next32(s) << 32);
    return (double)(w >> 11) * 0x1p-53;
}

EM_DEVICE_FN double normal_d(em_stream *s) {
    double u1 = uniform_d(s) + 0x1p-53;
    double u2 = uniform_d(s);
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

GAMMA(d, double, 0x1p-1022)

/* PyTorch's sample_poisson, in double: PTRS (Hormann 1993) from rate 10, Knuth's product of
 * uniforms below. */
EM_DEVICE_FN double poisson_d(double lambda, em_stream *s) {
    if (lambda >= 10) {
        double slam = sqrt(lambda), loglam = log(lambda);
        double b = 0.931 + 2.53 * slam;
        double a = -0.059 + 0.02483 * b;
        double invalpha = 1.1239 + 1.1328 / (b - 3.4);
        double vr = 0.9277 - 3.6224 / (b - 2);
        for (;;) {
            double u = uniform_d(s) - 0.5;
            double v = uniform_d(s);
            double us = 0.5 - fabs(u);
            double k = floor((2 * a / us + b) * u + lambda + 0.43);
            if (us >= 0.07 && v <= vr) return k;
            if (k < 0 || (us < 0.013 && v > us)) continue;
            if (log(v) + log(invalpha) - log(a / (us * us) + b) <=
                -lambda + k * loglam - lgamma(k + 1))
                return k;
        }
    }
    if (lambda == 0) return 0;
    double enlam = exp(-lambda), prod = 1, x = 0;
    for (;;) {
        prod *= uniform_d(s);
        if (!(prod > enlam)) return x;
        x += 1;
    }
}

/* Stirling's series tail log(k!) - (k + 1/2) log(k + 1) + (k + 1) - log(sqrt(2 pi)), as PyTorch's
 * stirling_approx_tail: a table below 10. */
EM_DEVICE_FN double stirling_tail(double k) {
    switch (k <= 9 ? (int)k : 10) { /* a switch, not a table: OpenCL has no function arrays */
    case 0: return 0.0810614667953272;
    case 1: return 0.0413406959554092;
    case 2: return 0.0276779256849983;
    case 3: return 0.02079067210376509;
    case 4: return 0.0166446911898211;
    case 5: return 0.0138761288230707;
    case 6: return 0.0118967099458917;
    case 7: return 0.0104112652619720;
    case 8: return 0.00925546218271273;
    case 9: return 0.00833056343336287;
    }
    double kp1sq = (k + 1) * (k + 1);
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1);
}

/* Hormann's BTRS (1993) for count * prob >= 10 with prob <= 1/2. */
EM_DEVICE_FN double btrs(double count, double prob, em_stream *s) {
    double stddev = sqrt(count * prob * (1 - prob));
    double b = 1.15 + 2.53 * stddev;
    double a = -0.0873 + 0.0248 * b + 0.01 * prob;
    double c = count * prob + 0.5;
    double v_r = 0.92 - 4.2 / b;
    double r = prob / (1 - prob);
    double alpha = (2.83 + 5.1 / b) * stddev;
    double m = floor((count + 1) * prob);
    for (;;) {
        double u = uniform_d(s) - 0.5;
        double v = uniform_d(s);
        double us = 0.5 - fabs(u);
        double k = floor((2 * a / us + b) * u + c);
        if (k < 0 || k > count) continue;
        if (us >= 0.07 && v <= v_r) return k;
        v = log(v * alpha / (a / (us * us) + b));
        double bound = (m + 0.5) * log((m + 1) / (r * (count - m + 1))) +
                       (count + 1) * log((count - m + 1) / (count - k + 1)) +
                       (k + 0.5) * log(r * (count - k + 1) / (k + 1)) + stirling_tail(m) +
                       stirling_tail(count - m) - stirling_tail(k) - stirling_tail(count - k);
        if (v <= bound) return k;
    }
}

/* Inversion by geometric waiting times, for count * prob < 10. */
EM_DEVICE_FN double binomial_inversion(double count, double prob, em_stream *s) {
    double logprob = log1p(-prob), geom_sum = 0, num_geom = 0;
    for (;;) {
        geom_sum += ceil(log(uniform_d(s)) / logprob);
        if (geom_sum > count) return num_geom;
        num_geom += 1;
    }
}

/* PyTorch's sample_binomial: the smaller of prob and 1 - prob drives BTRS or inversion. */
EM_DEVICE_FN double binomial_d(double count, double prob, em_stream *s) {
    if (count <= 0 || prob <= 0) return 0;
    if (prob >= 1) return count;
    if (prob != prob) return EM_NAN_d;
    double q = prob <= 0.5 ? prob : 1 - prob;
    double k = count * q >= 10 ? btrs(count, q, s) : binomial_inversion(count, q, s);
    return prob <= 0.5 ? k : count - k;
}
#endif /* EM_SAMPLER_F64 */
#endif
