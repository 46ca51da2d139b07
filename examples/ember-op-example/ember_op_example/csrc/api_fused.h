/* What Python may call (cffi's cdef reads this file, minus the '#' lines). Pointers are passed
   as intptr_t addresses of contiguous buffers; the status is 0 or FBG_BAD_SHAPE. */
#ifndef EMBER_OP_EXAMPLE_API_FUSED_H
#define EMBER_OP_EXAMPLE_API_FUSED_H
#include <stdint.h>

int fused_bias_gelu_f32(intptr_t out, intptr_t x, intptr_t bias, int64_t rows, int64_t cols,
                        int tanh_approximation);
int fused_bias_gelu_f64(intptr_t out, intptr_t x, intptr_t bias, int64_t rows, int64_t cols,
                        int tanh_approximation);

#endif
