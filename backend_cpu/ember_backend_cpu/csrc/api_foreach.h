/* Multi-tensor kernels over a list of gradients (foreach.c): torch._foreach_norm and
 * torch._foreach_mul_ by one scalar, torch._foreach_add_ of one, one call for the whole list. Plain declarations only:
 * cffi reads this file verbatim minus the lines starting with '#'. */
#ifndef EMBER_CPU_API_FOREACH_H
#define EMBER_CPU_API_FOREACH_H
#include <stdint.h>

/* _foreach_norm: out[i] = the `ord` vector norm of the `sizes[i]` elements at ptrs[i] (`count`
 * contiguous tensors of the floating `dtype`; out holds `count` elements of `dtype`). ord is 2,
 * 1, 0, +-inf or any other p (sum |x|^p)^(1/p); sums and powers in double, rounded once. */
int ember_foreach_norm(int dtype, int64_t count, const intptr_t *ptrs, const int64_t *sizes,
                       double ord, intptr_t out);

/* _foreach_mul_ by a scalar: every element of the `count` contiguous tensors times `scale`,
 * in float (float16, bfloat16, float32) or double (float64), rounded back once. */
int ember_foreach_mul_scalar(int dtype, int64_t count, const intptr_t *ptrs,
                             const int64_t *sizes, double scale);

/* _foreach_add_ of a scalar: every element plus `value`, computed as _foreach_mul_ scales */
int ember_foreach_add_scalar(int dtype, int64_t count, const intptr_t *ptrs,
                             const int64_t *sizes, double value);
#endif
