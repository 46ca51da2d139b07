/* Philox random fills (random.c); the contract is ember's docs/random.md.
 * Each fills n contiguous elements of `out` (dtype code `dtype`), element i from Philox block
 * offset + i / per_block under the key made of `seed`. Returns 0, or EM_UNSUPPORTED for a dtype
 * the op has no loop for. */
#ifndef EMBER_CPU_API_RANDOM_H
#define EMBER_CPU_API_RANDOM_H
#include <stdint.h>

/* One Philox4x32-10 block: the Random123 known-answer tests call this. */
void ember_philox4x32_10(const uint32_t *ctr, const uint32_t *key, uint32_t *out);

/* Uniform in [low, high); `below` is the largest value of the dtype under high (the clamp), or
 * +inf for no clamp. */
int ember_uniform(int dtype, uint64_t seed, uint64_t offset, int64_t n, intptr_t out, double low,
                  double high, double below);
int ember_normal(int dtype, uint64_t seed, uint64_t offset, int64_t n, intptr_t out, double mean,
                 double std);
/* Integers low + draw % range; range is high - low modulo 2^64 (0 means 2^64). */
int ember_random_int(int dtype, uint64_t seed, uint64_t offset, int64_t n, intptr_t out,
                     int64_t low, uint64_t range);
#endif
