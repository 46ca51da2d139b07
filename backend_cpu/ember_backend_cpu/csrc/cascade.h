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
 * The order of additions depends only on the run's length, never on the clone or the thread
 * count: the same bits everywhere.
 */
#ifndef EMBER_CASCADE_H
#define EMBER_CASCADE_H

#include <stdint.h>
#include <string.h>

#define CS_WIDTH 8                     /* floats per vector: one AVX2 register, two SSE ones */
#define CS_VECS 4                      /* vectors per level: independent add chains */
#define CS_LANES (CS_WIDTH * CS_VECS)  /* elements per step */
#define CS_STEP 4                      /* additions into a level before it passes its sums up:
                                        * chains of 8 left 1.4 float32 ulp on a sum of 3M
                                        * copies of 0.1 (all lanes and blocks round alike), 4
                                        * none; the extra carries cost nothing memory-bound */
#define CS_LEVELS 3                    /* float levels (cs_block_f32's loops nest this deep) */
#define CS_BLOCK (CS_LANES * CS_STEP * CS_STEP * CS_STEP)

/* Inlined into reduce.c's clones, so that each compiles them at its own width. */
#define CS_INLINE static inline __attribute__((always_inline))

typedef float cs_vec __attribute__((vector_size(CS_WIDTH * sizeof(float))));

/* *acc += the vector at p (unaligned); by pointer: a vector returned by value changes the ABI
 * between the clones' widths (-Wpsabi) */
CS_INLINE void cs_add_load(cs_vec *acc, const float *p) {
    cs_vec v;
    memcpy(&v, p, sizeof v);
    *acc += v;
}

/* up[v] += low[v], low[v] = 0: a level passes its sums one level up */
CS_INLINE void cs_carry(cs_vec *up, cs_vec *low) {
    for (int v = 0; v < CS_VECS; v++) {
        up[v] += low[v];
        low[v] = (cs_vec){0};
    }
}

/* The sum of p[0..m), m <= CS_BLOCK, in double: CS_LEVELS float levels, then the lanes. */
CS_INLINE double cs_block_f32(const float *p, int64_t m) {
    cs_vec acc[CS_LEVELS][CS_VECS] = {{{0}}};
    const int64_t steps = m / CS_LANES;
    int64_t s = 0;
    while (s < steps) {
        const int64_t e1 = s + CS_STEP * CS_STEP < steps ? s + CS_STEP * CS_STEP : steps;
        while (s < e1) {
            const int64_t e0 = s + CS_STEP < e1 ? s + CS_STEP : e1;
            for (; s < e0; s++)
                for (int v = 0; v < CS_VECS; v++)
                    cs_add_load(&acc[0][v], p + s * CS_LANES + v * CS_WIDTH);
            cs_carry(acc[1], acc[0]);
        }
        cs_carry(acc[2], acc[1]);
    }
    float lane[CS_LANES];
    memcpy(lane, acc[2], sizeof lane);
    double d[CS_LANES];
    for (int k = 0; k < CS_LANES; k++) d[k] = lane[k];
    for (int w = CS_LANES / 2; w > 0; w /= 2)
        for (int k = 0; k < w; k++) d[k] += d[k + w];
    double tail = 0; /* fewer than CS_LANES elements */
    for (int64_t i = steps * CS_LANES; i < m; i++) tail += p[i];
    return d[0] + tail;
}

/* The sum of the n contiguous floats at p, in double. */
CS_INLINE double cascade_sum_f32(const float *p, int64_t n) {
    double total = 0;
    for (int64_t s = 0; s < n; s += CS_BLOCK)
        total += cs_block_f32(p + s, n - s < CS_BLOCK ? n - s : CS_BLOCK);
    return total;
}

#endif
