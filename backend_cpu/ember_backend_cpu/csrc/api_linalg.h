/* Matrix products (matmul.c). Strides are in elements, in the order (batch, row, column). */
#ifndef EMBER_CPU_API_LINALG_H
#define EMBER_CPU_API_LINALG_H
#include <stdint.h>

/* Status of a product whose scratch buffer could not be allocated. */
enum { EMBER_MATMUL_NO_MEMORY = 16 };

/* Hand over OpenBLAS's cblas_?gemm (the scipy-openblas32 symbols, 32-bit ints) and
 * openblas_set_num_threads; zero addresses leave that path to the C loops. */
void ember_matmul_set_blas(intptr_t sgemm, intptr_t dgemm, intptr_t set_num_threads);

/* Hand over oneDNN's entry points (count addresses, in the order of the Python glue's
 * DNNL_SYMBOLS) for bfloat16 and float32 products; a zero address, or count 0, leaves them on the
 * sgemm path. Returns a status (EM_UNSUPPORTED: oneDNN has no CPU engine here). */
int ember_matmul_set_dnnl(const intptr_t *fns, int count);

/* out[b, i, j] = sum_l a[b, i, l] * b[b, l, j] for b < batch, i < n, l < k, j < p. out is
 * contiguous; a and b have any strides (sa, sb: 3 each, zero and negative allowed). */
int ember_matmul(int dtype, int64_t batch, int64_t n, int64_t k, int64_t p, intptr_t out,
                 intptr_t a, const int64_t *sa, intptr_t b, const int64_t *sb);

/* out (n x p, contiguous) = bias + a @ b in one gemm with beta 1 (ATen's addmm, linear's bias
 * and product): bias has bias_rows rows of p contiguous elements (1: broadcast to every row, or
 * n). a and b strides as ember_matmul's, 2 each. float32/float64 through OpenBLAS only: any
 * other case returns EM_UNSUPPORTED before writing, and the caller decomposes. */
int ember_addmm(int dtype, int64_t n, int64_t k, int64_t p, intptr_t out, intptr_t bias,
                int64_t bias_rows, intptr_t a, const int64_t *sa, intptr_t b, const int64_t *sb);

/* float16/bfloat16 products whose float32 copies would exceed this many elements are computed
 * block by block (bounded scratch); tests lower it to exercise that path on small products. */
void ember_matmul_set_half_whole_max(int64_t elements);

/* float32/float64 products of matrices up to 64 on a side with at most `work` multiply-adds
 * each run in a direct loop (matmul.c), split over the OpenMP pool from `parallel`
 * multiply-adds in all; the benchmark grid and tests move them (work 0: the loop is off). */
void ember_matmul_set_small(int64_t work, int64_t parallel);
#endif
