/* Reduction and scan kernel entry points (reduce.c). Plain declarations only: cffi reads this file
 * verbatim minus the lines starting with '#'.
 *
 * Families: 0 = reductions over a set of dims (sum, prod, amax, amin, all, any), 1 = reductions
 * along one dim with indices (max, min, argmax, argmin), 2 = scans (cumsum, cumprod). An op's
 * code is its position in ember_reduce_names(family). Shapes and strides are x's, in elements;
 * outputs have x's rank (size 1 on the reduced dims), scans x's shape. Returns 0 or an EM_* status.
 */
#ifndef EMBER_CPU_API_REDUCE_H
#define EMBER_CPU_API_REDUCE_H
#include <stdint.h>

const char *ember_reduce_names(int family);
int ember_reduce_supports(int family, int op, int dtype);

/* `reduced`: bit d set when dim d is reduced. out_dtype: x's, int64 (sum/prod of integers) or
 * bool (all/any). */
int ember_reduce(int op, int dtype, int ndim, const int64_t *shape, intptr_t out, int out_dtype,
                 const int64_t *so, intptr_t x, const int64_t *sx, uint64_t reduced);

/* values (x's dtype; 0 for argmax/argmin) and indices (int64) share the element strides `so`. */
int ember_reduce_index(int op, int dtype, int ndim, const int64_t *shape, intptr_t values,
                       intptr_t indices, const int64_t *so, intptr_t x, const int64_t *sx,
                       int dim);

/* out has x's shape and dtype. */
int ember_scan(int op, int dtype, int ndim, const int64_t *shape, intptr_t out,
               const int64_t *so, intptr_t x, const int64_t *sx, int dim);
#endif
