/* Samplers that use a variable number of random draws per element: standard gamma
 * (Marsaglia-Tsang), Poisson (Knuth / Hormann's PTRS) and binomial (inversion / BTRS), the
 * algorithms of PyTorch's aten/src/ATen/native/Distributions.h. ember's docs/random.md is the
 * contract: element i owns the Philox counters (block, i, k) for k = 1, 2, ..., so however many
 * rejection rounds it takes, its values depend only on (seed, block, i, parameter), never on the
 * thread that computes it or on the other elements.
 */
#include "ember_cpu.h"
#include "api_samplers.h"
#include "samplers.h"

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
