/* Sorting kernels (sort.c). Plain declarations only (cffi's cdef reads this file). Shapes and
 * strides in ELEMENTS; a NULL stride array means row-major contiguous. */
#ifndef EMBER_CPU_API_SORT_H
#define EMBER_CPU_API_SORT_H
#include <stdint.h>

/* Stable sort of every line of x along dim into values (x's dtype) and indices (int64). NaN is
 * the largest value; -0.0 and 0.0 are equal. ndim >= 1; lines of more than 2^32 - 1 elements
 * give EM_BAD_ARGUMENT. */
int ember_sort(int dtype, int ndim, int dim, const int64_t *shape, intptr_t x, const int64_t *sx,
               intptr_t values, const int64_t *sv, intptr_t indices, const int64_t *si,
               int descending);
/* The lower median of every line of x along dim into values and indices (int64), both of x's
 * shape with size 1 at dim: the element a stable sort puts at rank (n - 1) / 2 and its position
 * (PyTorch's index choice as the OpInfo suite checks it). A line with a NaN gives its first NaN;
 * ignore_nan (nanmedian): the lower median of the line's other values, the first NaN when all are
 * NaN. ndim >= 1, lines of at most 2^32 - 1 elements. */
int ember_median(int dtype, int ndim, int dim, const int64_t *shape, intptr_t x,
                 const int64_t *sx, intptr_t values, const int64_t *sv, intptr_t indices,
                 const int64_t *si, int ignore_nan);
/* The sorted unique values of the n elements of x (sx apart) into values (capacity n, x's
 * dtype), their number into *found; inverse (int64 [n], or 0: not wanted) gets each element's
 * place among them, counts (int64, capacity n, or 0) each value's count. Every NaN is a value
 * of its own; -0.0 and 0.0 are one (the first in input order). n <= 2^32 - 1. */
int ember_unique(int dtype, int64_t n, intptr_t x, int64_t sx, intptr_t values, intptr_t inverse,
                 intptr_t counts, int64_t *found);
/* out[p] = the insertion point of values[p] in its row of the sorted sequence (left, or right
 * when right != 0), PyTorch's comparisons. The row of p starts at seq + sum(p[d] * seq_rows[d])
 * (seq_rows NULL: a 1-D sequence shared by every value) and has seq_len elements seq_stride
 * apart. out is contiguous int64, or int32 when out_int32. */
int ember_searchsorted(int dtype, int right, int out_int32, int ndim, const int64_t *vshape,
                       intptr_t values, const int64_t *sv, intptr_t seq, const int64_t *seq_rows,
                       int64_t seq_len, int64_t seq_stride, intptr_t out);
#endif
