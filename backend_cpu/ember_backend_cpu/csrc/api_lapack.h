/* LAPACK (lapack.c): batched factorizations and solves over the scipy-openblas32 library.
 *
 * Matrices are column-major (Fortran) and packed: matrix i of a [batch, cols, rows] buffer starts
 * at i * rows * cols elements, leading dimension max(1, rows). In-place buffers (a, b) are always
 * packed; read-only inputs take a batch stride in elements (0: one matrix for the whole batch).
 * `info` is int32[batch] (LAPACK's info per matrix), ipiv int32, rank int64. Every entry returns
 * 0, EM_UNSUPPORTED (no routine for the dtype) or EMBER_LAPACK_NO_MEMORY. */
#ifndef EMBER_CPU_API_LAPACK_H
#define EMBER_CPU_API_LAPACK_H
#include <stdint.h>

enum { EMBER_LAPACK_NO_MEMORY = 17 };

/* Hand over routine `routine` (kernels/lapack.py ROUTINES order) for `dtype`. */
void ember_lapack_set(int dtype, int routine, intptr_t address);

int ember_lapack_getrf(int dtype, int64_t batch, int m, int n, intptr_t a, intptr_t ipiv,
                       intptr_t info);
int ember_lapack_getrs(int dtype, int64_t batch, int n, int nrhs, int trans, intptr_t lu,
                       int64_t lu_bs, intptr_t ipiv, int64_t ipiv_bs, intptr_t b,
                       intptr_t info);
int ember_lapack_potrf(int dtype, int64_t batch, int n, int upper, intptr_t a, intptr_t info);
/* op(A) X = B (left) or X op(A) = B; B is m x n; trans reads a row-major A as its transpose. */
int ember_lapack_trsm(int dtype, int64_t batch, int m, int n, int left, int upper, int trans,
                      int unit, intptr_t a, int64_t a_bs, intptr_t b);
int ember_lapack_geqrf(int dtype, int64_t batch, int m, int n, intptr_t a, intptr_t tau,
                       intptr_t info);
int ember_lapack_orgqr(int dtype, int64_t batch, int m, int n, int k, intptr_t a, intptr_t tau,
                       int64_t tau_bs, intptr_t info);
/* job: 'N', 'S' or 'A' (gesdd's jobz). u is [batch, ucols, m], vt [batch, n, vtrows]. */
int ember_lapack_gesdd(int dtype, int64_t batch, int m, int n, int job, intptr_t a, intptr_t s,
                       intptr_t u, intptr_t vt, intptr_t info);
int ember_lapack_syevd(int dtype, int64_t batch, int n, int upper, int vectors, intptr_t a,
                       intptr_t w, intptr_t info);
/* driver: 0 gels, 1 gelsy, 2 gelsd, 3 gelss. b is [batch, nrhs, ldb], ldb = max(1, m, n). */
int ember_lapack_gels(int dtype, int driver, int64_t batch, int m, int n, int nrhs, double rcond,
                      intptr_t a, intptr_t b, intptr_t rank, intptr_t s, intptr_t info);
int ember_lapack_sytrf(int dtype, int64_t batch, int n, int upper, intptr_t a, intptr_t ipiv,
                       intptr_t info);
int ember_lapack_sytrs(int dtype, int64_t batch, int n, int nrhs, int upper, intptr_t a,
                       int64_t a_bs, intptr_t ipiv, int64_t ipiv_bs, intptr_t b, intptr_t info);
/* Real input: eigenvalues as (wr, wi), right eigenvectors packed as LAPACK's geev gives them. */
int ember_lapack_geev(int dtype, int64_t batch, int n, int vectors, intptr_t a, intptr_t wr,
                      intptr_t wi, intptr_t vr, intptr_t info);
#endif
