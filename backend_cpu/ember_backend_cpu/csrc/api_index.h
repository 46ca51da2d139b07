/* Indexing kernels (index.c): gather/scatter, index_select/index_add, take/put_, nonzero.
 * Plain declarations only (cffi's cdef reads this file). Shapes and strides in ELEMENTS; a NULL
 * stride array means row-major contiguous. Tensors of rank 0 are passed as shape [1] except where
 * noted (take, put_, nonzero accept ndim == 0). Index tensors are int64. Returns 0 or an EM_*
 * status; out-of-range indices give EM_INDEX_OUT_OF_RANGE (the glue then asks
 * ember_index_find_bad for the value to report). */
#ifndef EMBER_CPU_API_INDEX_H
#define EMBER_CPU_API_INDEX_H
#include <stdint.h>

/* A kernel could not allocate its scratch memory (sort buffers, float32 accumulators). */
enum { EM_NO_MEMORY = 5 };

/* out[p] = x[p with p[dim] = index[p]]; out has index's shape (ishape) and is contiguous. */
int ember_gather(int dtype, int ndim, int dim, const int64_t *xshape, intptr_t x,
                 const int64_t *sx, const int64_t *ishape, intptr_t index, const int64_t *si,
                 intptr_t out);
/* scatter's modes: out[...] = src, or folded with it (scatter_add, scatter_reduce). */
enum { EM_SCATTER_COPY = 0, EM_SCATTER_SUM = 1, EM_SCATTER_PROD = 2, EM_SCATTER_AMAX = 3,
       EM_SCATTER_AMIN = 4 };
/* out[p with p[dim] = index[p]] = src[p] (or folded by mode), for p over index's shape, in
 * place. float16/bfloat16 fold in float32. amax/amin propagate NaN as PyTorch. */
int ember_scatter(int dtype, int mode, int ndim, int dim, const int64_t *oshape, intptr_t out,
                  const int64_t *so, const int64_t *ishape, intptr_t index, const int64_t *si,
                  intptr_t src, const int64_t *ss);
/* out = x with its dim-th axis replaced by x[..., index[k], ...] for k < n; out contiguous. */
int ember_index_select(int dtype, int ndim, int dim, const int64_t *xshape, intptr_t x,
                       const int64_t *sx, int64_t n, intptr_t index, int64_t index_stride,
                       intptr_t out);
/* out[..., index[k], ...] += alpha * src[..., k, ...] for k < n, in place. src has out's shape
 * except n at dim. alpha: alpha_f for floating dtypes, alpha_i otherwise. */
int ember_index_add(int dtype, int ndim, int dim, const int64_t *oshape, intptr_t out,
                    const int64_t *so, int64_t n, intptr_t index, int64_t index_stride,
                    intptr_t src, const int64_t *ss, double alpha_f, int64_t alpha_i);
/* out[p] = x.flatten()[index[p]] over x's row-major order; negative indices wrap. */
int ember_take(int dtype, int xndim, const int64_t *xshape, intptr_t x, const int64_t *sx,
               int indim, const int64_t *ishape, intptr_t index, const int64_t *si, intptr_t out);
/* x.flatten()[index[p]] = src[p] (accumulate: +=) in place; src has index's shape. Nothing is
 * written when an index is out of range. */
int ember_put(int dtype, int accumulate, int xndim, const int64_t *xshape, intptr_t x,
              const int64_t *sx, int indim, const int64_t *ishape, intptr_t index,
              const int64_t *si, intptr_t src, const int64_t *ss);
/* Row-major coordinates of the count non-zero elements of x into out [count, ndim]. */
int ember_nonzero(int dtype, int ndim, const int64_t *shape, intptr_t x, const int64_t *sx,
                  int64_t count, intptr_t out);
/* The first index value outside [low, high) in row-major order into *bad; returns 1 if found. */
int ember_index_find_bad(int ndim, const int64_t *shape, intptr_t index, const int64_t *si,
                         int64_t low, int64_t high, int64_t *bad);
#endif
