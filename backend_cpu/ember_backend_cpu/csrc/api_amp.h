/* GradScaler's kernels (amp.c). Plain declarations only: cffi reads this file verbatim minus the
 * lines starting with '#'. */
#ifndef EMBER_CPU_API_AMP_H
#define EMBER_CPU_API_AMP_H
#include <stdint.h>

/* _amp_foreach_non_finite_check_and_unscale_: `count` contiguous tensors of `dtype` (a floating
 * dtype) at ptrs[i] with sizes[i] elements, in one pass: every element times inv_scale (left as
 * it is when inv_scale is 1), and *found_inf = 1 when any element is inf or NaN. */
int ember_amp_unscale(int dtype, int64_t count, const intptr_t *ptrs, const int64_t *sizes,
                      float inv_scale, float *found_inf);

/* _amp_update_scale_: on *found_inf, scale *= backoff and tracker = 0; else tracker + 1, and at
 * `interval` scale *= growth (kept when that overflows float32) and tracker = 0. Products in
 * double, rounded once to float32, as PyTorch's kernel. */
void ember_amp_update_scale(float *scale, int32_t *tracker, const float *found_inf,
                            double growth, double backoff, int64_t interval);
#endif
