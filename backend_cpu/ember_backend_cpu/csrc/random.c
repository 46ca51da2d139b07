/* Philox4x32-10 random fills: uniform_, normal_ and random_. ember's docs/random.md is the
 * contract (every backend produces the same stream); this file is its reference implementation.
 *
 * A fill covers n contiguous elements; the Python glue routes strided outputs through a
 * contiguous buffer. Element i depends only on (key, offset, i), so the work splits over OpenMP
 * threads in fixed chunks and the numbers do not depend on the thread count. Inside a chunk,
 * blocks are generated EM_RNG_BATCH at a time in a loop over independent counters, which the
 * compiler vectorises (32x32->64-bit multiplies) in the AVX2 clone.
 */
#include "ember_cpu.h"
#include "api_random.h"
#include "philox.h"

#define EM_RNG_BATCH 64   /* blocks generated together */
#define EM_RNG_CHUNK 8192 /* elements per OpenMP task: a multiple of 4 * EM_RNG_BATCH */

/* What a fill needs: the key, the first block, and the transform's parameters, converted once:
 * (a, b, h) = (low, high - low, clamp) for uniform_, (mean, std, unused) for normal_, in float for
 * float16/bfloat16/float32 outputs and in double for float64. */
typedef struct {
    uint32_t k0, k1;
    uint64_t offset;
    struct {
        float a, b, h;
    } f;
    struct {
        double a, b, h;
    } d;
    int64_t low;
    uint64_t range;   /* 0 means 2^64 */
    uint32_t range32; /* the range when it is below 2^32, 0 for exactly 2^32 */
} em_rng;

void ember_philox4x32_10(const uint32_t *ctr, const uint32_t *key, uint32_t *out) {
    uint32_t x0 = ctr[0], x1 = ctr[1], x2 = ctr[2], x3 = ctr[3];
    philox10(&x0, &x1, &x2, &x3, key[0], key[1]);
    out[0] = x0;
    out[1] = x1;
    out[2] = x2;
    out[3] = x3;
}

/* Blocks blk .. blk + nb - 1, as words x[w][b] (structure of arrays, so the loop vectorises). */
static inline void philox_batch(const em_rng *r, uint64_t blk, int nb,
                                uint32_t x[4][EM_RNG_BATCH]) {
    for (int b = 0; b < nb; b++) {
        uint64_t c = blk + (uint64_t)b;
        uint32_t x0 = (uint32_t)c, x1 = (uint32_t)(c >> 32), x2 = 0, x3 = 0;
        philox10(&x0, &x1, &x2, &x3, r->k0, r->k1);
        x[0][b] = x0;
        x[1][b] = x1;
        x[2][b] = x2;
        x[3][b] = x3;
    }
}

static inline uint64_t draw64(uint32_t x[4][EM_RNG_BATCH], int lane, int b) {
    return (uint64_t)x[2 * lane][b] | ((uint64_t)x[2 * lane + 1][b] << 32);
}

/* ---- transforms (docs/random.md, "Transforms") -----------------------------------------------
 * uniform and Box-Muller, in float from a 32-bit word (24 bits used) and in double from a 64-bit
 * draw (53 bits used); <tgmath.h> picks sqrtf/logf/cosf/sinf for float. */
#define TRANSFORMS(P, VT, WT, SHIFT, ULP, TWO_PI)                                                \
    static inline VT uniform_##P(WT x, const em_rng *r) {                                         \
        VT u = (VT)(x >> SHIFT) * ULP;                                                            \
        VT v = r->P.a + u * r->P.b;                                                               \
        return v > r->P.h ? r->P.h : v;                                                           \
    }                                                                                             \
    static inline void normal_##P(WT xa, WT xb, const em_rng *r, VT *y) {                        \
        VT u1 = ((VT)(xa >> SHIFT) + 1) * ULP;                                                    \
        VT u2 = (VT)(xb >> SHIFT) * ULP;                                                          \
        VT rad = sqrt(-2 * log(u1));                                                              \
        VT t = TWO_PI * u2;                                                                       \
        y[0] = r->P.a + r->P.b * (rad * cos(t));                                                  \
        y[1] = r->P.a + r->P.b * (rad * sin(t));                                                  \
    }
TRANSFORMS(f, float, uint32_t, 8, 0x1p-24f, 6.2831855f)
TRANSFORMS(d, double, uint64_t, 11, 0x1p-53, 6.283185307179586)

/* Wrapping 64-bit add, as the spec says (and as int64 storage truncates). */
static inline int64_t int_d32(uint32_t x, const em_rng *r) {
    uint32_t off = r->range32 ? x % r->range32 : x;
    return (int64_t)((uint64_t)r->low + off);
}

static inline int64_t int_d64(uint64_t w, const em_rng *r) {
    uint64_t off = r->range ? w % r->range : w;
    return (int64_t)((uint64_t)r->low + off);
}

/* Per block: y[0 .. PER-1] from the words of block b. */
#define UNIFORM_4(y, x, b, r) for (int l = 0; l < 4; l++) y[l] = uniform_f(x[l][b], r)
#define UNIFORM_2(y, x, b, r) for (int l = 0; l < 2; l++) y[l] = uniform_d(draw64(x, l, b), r)
#define NORMAL_4(y, x, b, r)                                                                     \
    do {                                                                                          \
        normal_f(x[0][b], x[1][b], r, y);                                                        \
        normal_f(x[2][b], x[3][b], r, y + 2);                                                    \
    } while (0)
#define NORMAL_2(y, x, b, r) normal_d(draw64(x, 0, b), draw64(x, 1, b), r, y)
#define RANDOM_4(y, x, b, r) for (int l = 0; l < 4; l++) y[l] = int_d32(x[l][b], r)
#define RANDOM_2(y, x, b, r) for (int l = 0; l < 2; l++) y[l] = int_d64(draw64(x, l, b), r)

/* fill elements [i0, i1) of out (i0 a multiple of PER): NAME##PER##_T. */
#define FILL(T, NAME, PER, VT)                                                                   \
    static EM_CLONES void NAME##PER##_##T(char *dst, int64_t i0, int64_t i1, const em_rng *r) {   \
        ST_##T *out = (ST_##T *)dst;                                                              \
        uint32_t x[4][EM_RNG_BATCH];                                                              \
        VT v[EM_RNG_BATCH * PER];                                                                 \
        for (int64_t i = i0; i < i1; i += EM_RNG_BATCH * PER) {                                   \
            int64_t m = i1 - i < EM_RNG_BATCH * PER ? i1 - i : EM_RNG_BATCH * PER;                \
            int nb = (int)((m + PER - 1) / PER);                                                  \
            philox_batch(r, r->offset + (uint64_t)(i / PER), nb, x);                              \
            for (int b = 0; b < nb; b++) {                                                        \
                VT *y = v + b * PER;                                                              \
                NAME##_##PER(y, x, b, r);                                                         \
            }                                                                                     \
            for (int64_t j = 0; j < m; j++) out[i + j] = SV_##T(v[j]);                            \
        }                                                                                         \
    }

/* float16 and bfloat16 compute in float, like float32 (the spec's "float" path). */
#define EM_FOR_FLOAT32ISH(M, ...) M(f16, __VA_ARGS__) M(bf16, __VA_ARGS__) M(f32, __VA_ARGS__)
EM_FOR_FLOAT32ISH(FILL, UNIFORM, 4, float)
EM_FOR_FLOAT32ISH(FILL, NORMAL, 4, float)
FILL(f64, UNIFORM, 2, double)
FILL(f64, NORMAL, 2, double)
EM_FOR_ALL(FILL, RANDOM, 4, int64_t)
EM_FOR_ALL(FILL, RANDOM, 2, int64_t)

typedef void (*em_fill)(char *dst, int64_t i0, int64_t i1, const em_rng *r);

#define ENTRY(T, NAME, PER) [EMC_##T] = NAME##PER##_##T,
static const em_fill UNIFORM[EM_NDTYPES] = {
    EM_FOR_FLOAT32ISH(ENTRY, UNIFORM, 4) ENTRY(f64, UNIFORM, 2)};
static const em_fill NORMAL[EM_NDTYPES] = {
    EM_FOR_FLOAT32ISH(ENTRY, NORMAL, 4) ENTRY(f64, NORMAL, 2)};
static const em_fill RANDOM4[EM_NDTYPES] = {EM_FOR_ALL(ENTRY, RANDOM, 4)};
static const em_fill RANDOM2[EM_NDTYPES] = {EM_FOR_ALL(ENTRY, RANDOM, 2)};

static em_rng make_rng(uint64_t seed, uint64_t offset) {
    em_rng r;
    memset(&r, 0, sizeof r);
    r.k0 = (uint32_t)seed;
    r.k1 = (uint32_t)(seed >> 32);
    r.offset = offset;
    return r;
}

static int run_fill(const em_fill *table, int dtype, int64_t n, intptr_t out, const em_rng *r) {
    if (dtype < 0 || dtype >= EM_NDTYPES || !table[dtype]) return EM_UNSUPPORTED;
    em_fill fn = table[dtype];
    int64_t chunks = (n + EM_RNG_CHUNK - 1) / EM_RNG_CHUNK;
#pragma omp parallel for schedule(static) if (n >= EM_PARALLEL_THRESHOLD)
    for (int64_t c = 0; c < chunks; c++) {
        int64_t i0 = c * EM_RNG_CHUNK;
        int64_t i1 = n - i0 < EM_RNG_CHUNK ? n : i0 + EM_RNG_CHUNK;
        fn((char *)out, i0, i1, r);
    }
    return EM_OK;
}

int ember_uniform(int dtype, uint64_t seed, uint64_t offset, int64_t n, intptr_t out, double low,
                  double high, double below) {
    em_rng r = make_rng(seed, offset);
    r.f.a = (float)low;
    r.f.b = (float)high - r.f.a;
    r.f.h = (float)below;
    r.d.a = low;
    r.d.b = high - low;
    r.d.h = below;
    return run_fill(UNIFORM, dtype, n, out, &r);
}

int ember_normal(int dtype, uint64_t seed, uint64_t offset, int64_t n, intptr_t out, double mean,
                 double std) {
    em_rng r = make_rng(seed, offset);
    r.f.a = (float)mean;
    r.f.b = (float)std;
    r.d.a = mean;
    r.d.b = std;
    return run_fill(NORMAL, dtype, n, out, &r);
}

int ember_random_int(int dtype, uint64_t seed, uint64_t offset, int64_t n, intptr_t out,
                     int64_t low, uint64_t range) {
    em_rng r = make_rng(seed, offset);
    r.low = low;
    r.range = range;
    r.range32 = range < (UINT64_C(1) << 32) ? (uint32_t)range : 0;
    /* 64-bit draws (per_block 2) for float64 outputs and ranges above 2^32 (0 is 2^64). */
    int wide = dtype == EM_F64 || range == 0 || range > (UINT64_C(1) << 32);
    return run_fill(wide ? RANDOM2 : RANDOM4, dtype, n, out, &r);
}
