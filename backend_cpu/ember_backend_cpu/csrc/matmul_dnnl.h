/* bfloat16 products through oneDNN (matmul_dnnl.c), for matmul.c. */
#ifndef EMBER_CPU_MATMUL_DNNL_H
#define EMBER_CPU_MATMUL_DNNL_H
#include <stdint.h>

/* out[batch, n, p] (contiguous) = a @ b, strides in elements (batch, row, column). EM_OK, or
 * EM_UNSUPPORTED when oneDNN is not loaded or refuses this dtype or layout: then the caller
 * computes the product itself. */
int em_matmul_dnnl(int dtype, int64_t batch, int64_t n, int64_t k, int64_t p, void *out,
                   const void *a, const int64_t *sa, const void *b, const int64_t *sb);
#endif
