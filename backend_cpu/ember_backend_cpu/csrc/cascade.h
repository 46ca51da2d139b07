/* float32 sums of contiguous runs by a cascade of float vector accumulators: PyTorch's scheme
 * (aten/src/ATen/native/cpu/SumKernel.cpp), used by reduce.c for sum (hence mean) of float32.
 *
 * Why: summing float32 in double lanes converts every element (cvtps2pd), which made a 16M sum
 * compute-bound at 0.80x PyTorch's GB/s; one long float chain per lane, though, loses accuracy as
 * the running sum outgrows the elements. The cascade keeps every addition in float between
 * numbers of similar size: CS_LANES lanes each add CS_STEP elements into level 0, which then
 * passes its sums up to level 1 and restarts, level 1 passes to level 2 every CS_STEP of those,
 * and so on. A lane's float error is thus at most CS_LEVELS * CS_STEP roundings of partial sums
 * no larger than CS_BLOCK / CS_LANES elements (numpy's pairwise sum: 16 roundings in a lane, then
 * one per halving, up to the size of the whole sum). Each block of CS_BLOCK elements then goes
 * to double (its lanes summed pairwise), and blocks add up in double, which bounds the float
 * error however long the run is.
 *
 * Two builds of the same code (CS_KERNEL): 8-float vectors for the AVX2 and baseline clones, and
 * 16-float vectors (one AVX-512 register, half the load and add instructions) where the CPU has
 * AVX-512; GCC lowers a 16-float vector badly for AVX2 (12 GB/s). Both hold the same CS_LANES
 * lanes and add them in the same order (no FMA: -ffp-contract=off), so the order of additions
 * depends only on the run's length, never on the CPU, the clone or the thread count: the same
 * bits everywhere. On one Zen 5 core streaming 64 MB (docs/performance_kernels.md) the 16-float
 * build reads 46-48 GB/s where the 8-float one reads 42-45.
 */
#ifndef EMBER_CASCADE_H
#define EMBER_CASCADE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CS_LANES 32 /* elements per step: independent float sums */
#define CS_STEP 4   /* additions into a level before it passes its sums up:
                     * chains of 8 left 1.4 float32 ulp on a sum of 3M
                     * copies of 0.1 (all lanes and blocks round alike), 4
                     * none; the extra carries cost nothing memory-bound */
#define CS_LEVELS 3 /* float levels (the loops of CS_KERNEL's block nest this deep) */
#define CS_BLOCK (CS_LANES * CS_STEP * CS_STEP * CS_STEP)

/* Inlined into each build, so that each compiles them at its own width. */
#define CS_INLINE static inline __attribute__((always_inline))

/* CS_KERNEL(NAME, W, ATTRS): double NAME(p, n), the sum of the n floats at p, over vectors of W
 * floats (CS_LANES / W of them per step), compiled with ATTRS. Vectors go by pointer: by value
 * they change the ABI between widths (-Wpsabi). */
#define CS_KERNEL(NAME, W, ATTRS)                                                                 \
    typedef float NAME##_vec __attribute__((vector_size((W) * sizeof(float))));                   \
    enum { NAME##_VECS = CS_LANES / (W) };                                                        \
                                                                                                  \
    /* up[v] += low[v], low[v] = 0: a level passes its sums one level up */                       \
    CS_INLINE void NAME##_carry(NAME##_vec *up, NAME##_vec *low) {                                \
        for (int v = 0; v < NAME##_VECS; v++) {                                                   \
            up[v] += low[v];                                                                      \
            low[v] = (NAME##_vec){0};                                                             \
        }                                                                                         \
    }                                                                                             \
                                                                                                  \
    /* The sum of p[0..m), m <= CS_BLOCK, in double: CS_LEVELS float levels, then the lanes. */   \
    CS_INLINE double NAME##_block(const float *p, int64_t m) {                                    \
        NAME##_vec acc[CS_LEVELS][NAME##_VECS] = {{{0}}};                                         \
        const int64_t steps = m / CS_LANES;                                                       \
        int64_t s = 0;                                                                            \
        while (s < steps) {                                                                       \
            const int64_t e1 = s + CS_STEP * CS_STEP < steps ? s + CS_STEP * CS_STEP : steps;     \
            while (s < e1) {                                                                      \
                const int64_t e0 = s + CS_STEP < e1 ? s + CS_STEP : e1;                           \
                for (; s < e0; s++)                                                               \
                    for (int v = 0; v < NAME##_VECS; v++) {                                       \
                        NAME##_vec x;                                                             \
                        memcpy(&x, p + s * CS_LANES + v * (W), sizeof x);                         \
                        acc[0][v] += x;                                                           \
                    }                                                                             \
                NAME##_carry(acc[1], acc[0]);                                                     \
            }                                                                                     \
            NAME##_carry(acc[2], acc[1]);                                                         \
        }                                                                                         \
        float lane[CS_LANES];                                                                     \
        memcpy(lane, acc[2], sizeof lane);                                                        \
        double d[CS_LANES];                                                                       \
        for (int k = 0; k < CS_LANES; k++) d[k] = lane[k];                                        \
        for (int w = CS_LANES / 2; w > 0; w /= 2)                                                 \
            for (int k = 0; k < w; k++) d[k] += d[k + w];                                         \
        double tail = 0; /* fewer than CS_LANES elements */                                       \
        for (int64_t i = steps * CS_LANES; i < m; i++) tail += p[i];                              \
        return d[0] + tail;                                                                       \
    }                                                                                             \
                                                                                                  \
    static ATTRS double NAME(const float *p, int64_t n) {                                         \
        double total = 0;                                                                         \
        for (int64_t s = 0; s < n; s += CS_BLOCK)                                                 \
            total += NAME##_block(p + s, n - s < CS_BLOCK ? n - s : CS_BLOCK);                    \
        return total;                                                                             \
    }

CS_KERNEL(cs_sum_narrow, 8, EM_CLONES)
CS_KERNEL(cs_sum_wide, 16, EM_TARGET_WIDE)

/* The sum of the n contiguous floats at p, in double: the wide build where the CPU has it and
 * EMBER_CPU_AVX512=0 does not turn it off (the tests compare the two builds' bits that way). */
static double cascade_sum_f32(const float *p, int64_t n) {
    static int wide = -1; /* a benign race: every thread finds the same value */
    if (wide < 0) {
        const char *off = getenv("EMBER_CPU_AVX512");
        wide = EM_CPU_WIDE() && !(off && strcmp(off, "0") == 0);
    }
    return wide ? cs_sum_wide(p, n) : cs_sum_narrow(p, n);
}

#endif
