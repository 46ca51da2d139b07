/* float32 sums of contiguous runs by a cascade of float vector accumulators, after PyTorch's
 * scheme (aten/src/ATen/native/cpu/SumKernel.cpp); used by reduce.c for sum (hence mean) of
 * float32.
 *
 * Why: summing float32 in double lanes converts every element (cvtps2pd), which made a 16M sum
 * compute-bound at 0.80x PyTorch's GB/s; one long float chain per lane, though, loses accuracy as
 * the running sum outgrows the elements. The cascade keeps every addition in float between
 * numbers of similar size. CS_LANES lanes; a group is CS_TREE steps of CS_LANES elements, summed
 * per lane as a pairwise tree (log2(CS_TREE) roundings, exact on equal elements: chains of 8
 * left 1.4 ulp on a sum of 3M copies of 0.1); level 1 adds CS_STEP groups, level 2 CS_STEP of
 * those. A lane's float error is thus at most CS_ROUNDINGS roundings of partial sums no larger
 * than CS_BLOCK / CS_LANES elements (numpy's pairwise sum: 16 roundings in a lane, then one per
 * halving, up to the size of the whole sum). Each block of CS_BLOCK elements then goes to double
 * lanes, summed pairwise at the end, which bounds the float error however long the run is. A
 * last partial group is zero-padded (x + 0 is exact), so every element takes the same path.
 *
 * Speed (one core streaming 64 MB, docs/performance_kernels.md): what mattered was the loop's
 * shape, not the arithmetic. A 4-step float chain inside a 4-trip loop read 42-45 GB/s where a
 * plain loop of 4 accumulators reads 53 (60 in AVX-512); fully unrolled blocks and software
 * prefetch were slower still. A group of 1 KB per iteration (32 loads, no loop-carried chain
 * but the level-1 add) in 16-float vectors reads 50-54.
 *
 * The same code is built twice: CS_WIDTH-float vectors for the AVX2 and baseline clones, and
 * 16-float vectors (one AVX-512 register) when the CPU has them; GCC splits a 16-float vector
 * badly on AVX2 (30 GB/s). Both add the same lanes in the same order (no FMA: -ffp-contract=off),
 * so the bits do not depend on the CPU, the clone or the thread count.
 */
#ifndef EMBER_CASCADE_H
#define EMBER_CASCADE_H

#include <stdint.h>
#include <string.h>

#define CS_LANES 32                             /* elements per step: independent float sums */
#define CS_TREE 8                               /* steps per group, summed pairwise */
#define CS_STEP 4                               /* additions into a level before it carries */
#define CS_GROUP (CS_LANES * CS_TREE)           /* 256 elements, 1 KB: one loop iteration */
#define CS_BLOCK (CS_GROUP * CS_STEP * CS_STEP) /* 4096 elements: then double */
#define CS_ROUNDINGS 9                          /* log2(CS_TREE) + 2 levels of CS_STEP - 1 */

#define CS_INLINE static inline __attribute__((always_inline))

/* CS_KERNEL(NAME, W, ATTRS): double NAME(p, n), the sum of the n floats at p, over vectors of
 * W floats (CS_LANES / W of them per step), compiled with ATTRS. Vectors go by pointer: by value
 * they change the ABI between widths (-Wpsabi). */
#define CS_KERNEL(NAME, W, ATTRS)                                                                 \
    typedef float NAME##_vec __attribute__((vector_size((W) * sizeof(float))));                   \
    typedef double NAME##_dvec __attribute__((vector_size((W) * sizeof(double))));               \
    enum { NAME##_VECS = CS_LANES / (W) };                                                        \
                                                                                                  \
    /* acc[v] += the group at p, each lane's CS_TREE elements summed pairwise */                  \
    CS_INLINE void NAME##_group(NAME##_vec *acc, const float *p) {                                \
        for (int v = 0; v < NAME##_VECS; v++) {                                                   \
            NAME##_vec x[CS_TREE];                                                                \
            for (int s = 0; s < CS_TREE; s++) memcpy(&x[s], p + s * CS_LANES + v * (W), sizeof x[s]); \
            for (int w = CS_TREE / 2; w > 0; w /= 2)                                              \
                for (int s = 0; s < w; s++) x[s] += x[s + w];                                     \
            acc[v] += x[0];                                                                       \
        }                                                                                         \
    }                                                                                             \
                                                                                                  \
    /* up[v] += low[v], low[v] = 0: a level passes its sums one level up */                       \
    CS_INLINE void NAME##_carry(NAME##_vec *up, NAME##_vec *low) {                                \
        for (int v = 0; v < NAME##_VECS; v++) {                                                   \
            up[v] += low[v];                                                                      \
            low[v] = (NAME##_vec){0};                                                             \
        }                                                                                         \
    }                                                                                             \
                                                                                                  \
    static ATTRS double NAME(const float *p, int64_t n) {                                         \
        NAME##_dvec lanes[NAME##_VECS] = {{0}};                                                   \
        const int64_t groups = (n + CS_GROUP - 1) / CS_GROUP;                                     \
        float pad[CS_GROUP];                                                                      \
        for (int64_t b = 0; b < groups; b += CS_BLOCK / CS_GROUP) {                               \
            NAME##_vec acc1[NAME##_VECS] = {{0}}, acc2[NAME##_VECS] = {{0}};                      \
            const int64_t e = groups - b < CS_BLOCK / CS_GROUP ? groups : b + CS_BLOCK / CS_GROUP; \
            for (int64_t g = b; g < e; g++) {                                                     \
                const float *q = p + g * CS_GROUP;                                                \
                if (n - g * CS_GROUP < CS_GROUP) { /* the last, partial group */                  \
                    memset(pad, 0, sizeof pad);                                                   \
                    memcpy(pad, q, (n - g * CS_GROUP) * sizeof(float));                           \
                    q = pad;                                                                      \
                }                                                                                 \
                NAME##_group(acc1, q);                                                            \
                if (g % CS_STEP == CS_STEP - 1) NAME##_carry(acc2, acc1);                         \
            }                                                                                     \
            NAME##_carry(acc2, acc1);                                                             \
            for (int v = 0; v < NAME##_VECS; v++)                                                 \
                lanes[v] += __builtin_convertvector(acc2[v], NAME##_dvec);                        \
        }                                                                                         \
        double d[CS_LANES];                                                                       \
        memcpy(d, lanes, sizeof d);                                                               \
        for (int w = CS_LANES / 2; w > 0; w /= 2)                                                 \
            for (int k = 0; k < w; k++) d[k] += d[k + w];                                         \
        return d[0];                                                                              \
    }

CS_KERNEL(cs_sum_narrow, 8, EM_CLONES)
CS_KERNEL(cs_sum_wide, 16, EM_TARGET_WIDE)

/* The sum of the n contiguous floats at p, in double: the wide build where the CPU has it. */
static double cascade_sum_f32(const float *p, int64_t n) {
    static int wide = -1; /* a benign race: every thread stores the same value */
    if (wide < 0) wide = EM_CPU_WIDE() != 0;
    return wide ? cs_sum_wide(p, n) : cs_sum_narrow(p, n);
}

#endif
