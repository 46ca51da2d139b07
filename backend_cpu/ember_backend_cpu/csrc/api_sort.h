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
/* out[p] = the insertion point of values[p] in its row of the sorted sequence (left, or right
 * when right != 0), PyTorch's comparisons. The row of p starts at seq + sum(p[d] * seq_rows[d])
 * (seq_rows NULL: a 1-D sequence shared by every value) and has seq_len elements seq_stride
 * apart. out is contiguous int64, or int32 when out_int32. */
int ember_searchsorted(int dtype, int right, int out_int32, int ndim, const int64_t *vshape,
                       intptr_t values, const int64_t *sv, intptr_t seq, const int64_t *seq_rows,
                       int64_t seq_len, int64_t seq_stride, intptr_t out);
#endif
