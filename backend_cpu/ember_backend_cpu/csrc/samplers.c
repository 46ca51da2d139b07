/* Samplers that use a variable number of random draws per element: standard gamma
 * (Marsaglia-Tsang), Poisson (Knuth / Hormann's PTRS) and binomial (inversion / BTRS), the
 * algorithms of PyTorch's aten/src/ATen/native/Distributions.h. ember's docs/random.md is the
 * contract: element i owns the Philox counters (block, i, k) for k = 1, 2, ..., so however many
 * rejection rounds it takes, its values depend only on (seed, block, i, parameter), never on the
 * thread that computes it or on the other elements.
 */
#include "ember_cpu.h"
#include "api_samplers.h"
#include "philox.h"

/* One element's word stream: the four words of counter (c0, c1, i, k), k = 1, 2, ... in turn. */
typedef struct {
    uint32_t k0, k1, c0, c1, i, k;
    uint32_t x[4];
    int used;
} em_stream;

static inline em_stream stream_at(uint64_t seed, uint64_t block, int64_t i) {
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

static inline uint32_t next32(em_stream *s) {
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
static inline float uniform_f(em_stream *s) { return (float)(next32(s) >> 8) * 0x1p-24f; }

static inline double uniform_d(em_stream *s) {
    uint64_t lo = next32(s);
    uint64_t w = lo | ((uint64_t)next32(s) << 32);
    return (double)(w >> 11) * 0x1p-53;
}

static inline float normal_f(em_stream *s) {
    float u1 = ((float)(next32(s) >> 8) + 1) * 0x1p-24f;
    float u2 = uniform_f(s);
    return sqrt(-2 * log(u1)) * cos(6.2831855f * u2);
}

static inline double normal_d(em_stream *s) {
    double u1 = uniform_d(s) + 0x1p-53;
    double u2 = uniform_d(s);
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

/* PyTorch's sample_gamma: Marsaglia and Tsang (2000), with the boost Gamma(a) = Gamma(a + 1) *
 * U^(1/a) below a = 1. The result is at least the dtype's smallest normal, as PyTorch clamps
 * (alpha = 0 included); NaN and negative alpha give NaN, as on PyTorch's CUDA. */
#define GAMMA(P, VT, TINY)                                                                       \
    static inline VT gamma_##P(VT alpha, em_stream *s) {                                         \
        if (alpha != alpha || alpha < 0) return (VT)NAN;                                          \
        if (alpha == (VT)INFINITY) return alpha;                                                  \
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
GAMMA(d, double, 0x1p-1022)

/* PyTorch's sample_poisson, in double: PTRS (Hormann 1993) from rate 10, Knuth's product of
 * uniforms below. */
static double poisson_d(double lambda, em_stream *s) {
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
static double stirling_tail(double k) {
    static const double tail[] = {0.0810614667953272,  0.0413406959554092,  0.0276779256849983,
                                  0.02079067210376509, 0.0166446911898211,  0.0138761288230707,
                                  0.0118967099458917,  0.0104112652619720,  0.00925546218271273,
                                  0.00833056343336287};
    if (k <= 9) return tail[(int)k];
    double kp1sq = (k + 1) * (k + 1);
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1);
}

/* Hormann's BTRS (1993) for count * prob >= 10 with prob <= 1/2. */
static double btrs(double count, double prob, em_stream *s) {
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
static double binomial_inversion(double count, double prob, em_stream *s) {
    double logprob = log1p(-prob), geom_sum = 0, num_geom = 0;
    for (;;) {
        geom_sum += ceil(log(uniform_d(s)) / logprob);
        if (geom_sum > count) return num_geom;
        num_geom += 1;
    }
}

/* PyTorch's sample_binomial: the smaller of prob and 1 - prob drives BTRS or inversion. */
static double binomial_d(double count, double prob, em_stream *s) {
    if (count <= 0 || prob <= 0) return 0;
    if (prob >= 1) return count;
    if (prob != prob) return NAN;
    double q = prob <= 0.5 ? prob : 1 - prob;
    double k = count * q >= 10 ? btrs(count, q, s) : binomial_inversion(count, q, s);
    return prob <= 0.5 ? k : count - k;
}

/* Per dtype: P is the gamma compute path (float for f16/bf16/f32, double for f64); Poisson and
 * binomial compute in double for every dtype, as PyTorch's CPU kernels do. */
/* One-parameter loop NAME##_##T: out[i] = FN((CT)param[i]) on element i's stream. */
#define LOOP1(T, NAME, FN, CT)                                                                   \
    static void NAME##_##T(uint64_t seed, uint64_t blk, int64_t n, char *o, const char *a) {     \
        ST_##T *out = (ST_##T *)o;                                                                \
        const ST_##T *param = (const ST_##T *)a;                                                  \
        _Pragma("omp parallel for schedule(static) if (n >= 4096)")                             \
        for (int64_t i = 0; i < n; i++) {                                                         \
            em_stream s = stream_at(seed, blk, i);                                                \
            out[i] = SV_##T(FN((CT)LD_##T(param[i]), &s));                                        \
        }                                                                                         \
    }
#define LOOPS(T, P, VT)                                                                          \
    LOOP1(T, gamma, gamma_##P, VT)                                                                \
    LOOP1(T, poisson, poisson_d, double)                                                          \
    static void binomial_##T(uint64_t seed, uint64_t blk, int64_t n, char *o, const char *c,     \
                             const char *p) {                                                     \
        ST_##T *out = (ST_##T *)o;                                                                \
        const ST_##T *count = (const ST_##T *)c, *prob = (const ST_##T *)p;                       \
        _Pragma("omp parallel for schedule(static) if (n >= 4096)")                             \
        for (int64_t i = 0; i < n; i++) {                                                         \
            em_stream s = stream_at(seed, blk, i);                                                \
            out[i] = SV_##T(binomial_d((double)LD_##T(count[i]), (double)LD_##T(prob[i]), &s));   \
        }                                                                                         \
    }
LOOPS(f16, f, float)
LOOPS(bf16, f, float)
LOOPS(f32, f, float)
LOOPS(f64, d, double)

typedef void (*em_sample1)(uint64_t, uint64_t, int64_t, char *, const char *);
typedef void (*em_sample2)(uint64_t, uint64_t, int64_t, char *, const char *, const char *);

#define ENTRY(T, NAME) [EMC_##T] = NAME##_##T,
#define TABLE(NAME) {ENTRY(f16, NAME) ENTRY(bf16, NAME) ENTRY(f32, NAME) ENTRY(f64, NAME)}
static const em_sample1 GAMMA_LOOPS[EM_NDTYPES] = TABLE(gamma);
static const em_sample1 POISSON_LOOPS[EM_NDTYPES] = TABLE(poisson);
static const em_sample2 BINOMIAL_LOOPS[EM_NDTYPES] = TABLE(binomial);

/* The dtype codes are checked here; the parameters' lengths at the Python boundary. */
#define UNSUPPORTED(TABLE, dtype) (dtype < 0 || dtype >= EM_NDTYPES || !TABLE[dtype])

int ember_standard_gamma(int dtype, uint64_t seed, uint64_t block, int64_t n, intptr_t out,
                         intptr_t alpha) {
    if (UNSUPPORTED(GAMMA_LOOPS, dtype)) return EM_UNSUPPORTED;
    GAMMA_LOOPS[dtype](seed, block, n, (char *)out, (const char *)alpha);
    return EM_OK;
}

int ember_poisson(int dtype, uint64_t seed, uint64_t block, int64_t n, intptr_t out,
                  intptr_t rate) {
    if (UNSUPPORTED(POISSON_LOOPS, dtype)) return EM_UNSUPPORTED;
    POISSON_LOOPS[dtype](seed, block, n, (char *)out, (const char *)rate);
    return EM_OK;
}

int ember_binomial(int dtype, uint64_t seed, uint64_t block, int64_t n, intptr_t out,
                   intptr_t count, intptr_t prob) {
    if (UNSUPPORTED(BINOMIAL_LOOPS, dtype)) return EM_UNSUPPORTED;
    BINOMIAL_LOOPS[dtype](seed, block, n, (char *)out, (const char *)count, (const char *)prob);
    return EM_OK;
}
