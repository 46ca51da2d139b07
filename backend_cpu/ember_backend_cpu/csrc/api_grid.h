/* grid_sampler.c: grid_sampler_2d and grid_sampler_3d, forward and backward (ATen's
 * GridSampler.cpp for 3-D and cpu/GridSamplerKernel.cpp for 2-D, whose rounding and NaN
 * handling each follows). float32 and float64.
 *
 * geometry: 23 int64s. Sizes {n, c, in_d, in_h, in_w, out_d, out_h, out_w} (2-D: in_d = out_d =
 * 1), then element strides: input {n, c, d, h, w}, grid {n, d, h, w, coord}, grad_output
 * {n, c, d, h, w} (2-D: the d strides 0; the forward's output is fresh and contiguous and its
 * grad_output strides are ignored). interpolation: 0 bilinear, 1 nearest, 2 bicubic (2-D only);
 * padding: 0 zeros, 1 border, 2 reflection (at::native::detail's enums).
 * Backward: grad_input fresh contiguous (zeroed here) or 0 when not wanted; grad_grid fresh
 * contiguous, every element written. EM_BAD_ARGUMENT for a mode out of range. */
#ifndef EMBER_CPU_API_GRID_H
#define EMBER_CPU_API_GRID_H
#include <stdint.h>

int ember_grid_sampler(int dtype, int dims, intptr_t out, intptr_t input, intptr_t grid,
                       const int64_t *geometry, int interpolation, int padding,
                       int align_corners);
int ember_grid_sampler_backward(int dtype, int dims, intptr_t grad_input, intptr_t grad_grid,
                                intptr_t grad_output, intptr_t input, intptr_t grid,
                                const int64_t *geometry, int interpolation, int padding,
                                int align_corners);
#endif
