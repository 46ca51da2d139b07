/* Variable-draw samplers on Philox (samplers.c); the contract is ember's docs/random.md,
 * "Samplers with a variable number of draws". Each fills n contiguous elements of `out` (dtype
 * code `dtype`) from n contiguous parameters of the same dtype; element i reads the Philox
 * counters (block, i, 1), (block, i, 2), ... under the key made of `seed`. Returns 0, or
 * EM_UNSUPPORTED for a dtype the op has no loop for. */
#ifndef EMBER_CPU_API_SAMPLERS_H
#define EMBER_CPU_API_SAMPLERS_H
#include <stdint.h>

int ember_standard_gamma(int dtype, uint64_t seed, uint64_t block, int64_t n, intptr_t out,
                         intptr_t alpha);
int ember_poisson(int dtype, uint64_t seed, uint64_t block, int64_t n, intptr_t out,
                  intptr_t rate);
int ember_binomial(int dtype, uint64_t seed, uint64_t block, int64_t n, intptr_t out,
                   intptr_t count, intptr_t prob);
#endif
