/* Core kernel entry points (elementwise, copy, runtime) the Python glue calls through cffi.
 * Every api_*.h follows the same rule: plain declarations only, because cffi's cdef reads the file
 * as it is (minus lines starting with '#'), so no macros, and <stdint.h> types only. */
#ifndef EMBER_CPU_API_CORE_H
#define EMBER_CPU_API_CORE_H
#include <stdint.h>

/* elementwise.c: ndim == 0 means "n contiguous elements" (shape and strides unused). A zero
 * operand pointer means "the scalar" (scalar_f/scalar_i, or fs/is for ternary). Strides are in
 * elements. Returns 0, or an EM_* status (see ember_cpu.h). */
const char *ember_unary_names(void);
const char *ember_binary_names(void);
const char *ember_ternary_names(void);
int ember_elementwise_supports(int arity, int op, int dtype);
int ember_unary(int op, int dtype, int64_t n, int ndim, const int64_t *shape, intptr_t out,
                const int64_t *so, intptr_t x, const int64_t *sx, double p0, double p1, double p2);
int ember_binary(int op, int dtype, int64_t n, int ndim, const int64_t *shape, intptr_t out,
                 const int64_t *so, intptr_t a, const int64_t *sa, intptr_t b, const int64_t *sb,
                 double scalar_f, int64_t scalar_i, double param); /* param: the loop's p->f[0] */
int ember_ternary(int op, int dtype, int64_t n, int ndim, const int64_t *shape, intptr_t out,
                  const int64_t *so, intptr_t a, const int64_t *sa, intptr_t b,
                  const int64_t *sb, intptr_t c, const int64_t *sc, const double *fs,
                  const int64_t *is, double param);
/* Contiguous operands of the output's shape and the op's dtype, no scalar, no parameter: `key`
 * from ember_contig_key (-1: no loop), pointers as integers, n elements. */
int ember_contig_key(int arity, int op, int dtype);
int ember_binary_contig(int key, intptr_t out, intptr_t a, intptr_t b, int64_t n);
int ember_unary_contig(int key, intptr_t out, intptr_t x, int64_t n);
/* The address of a buffer (cheaper through cffi than casting it to intptr_t in Python). */
intptr_t ember_address(const char *buffer);

/* copy.c */
int ember_copy(int dst_dtype, int src_dtype, int64_t n, int ndim, const int64_t *shape,
               intptr_t dst, const int64_t *sd, intptr_t src, const int64_t *ss);
int ember_fill(int dtype, int64_t n, int ndim, const int64_t *shape, intptr_t dst,
               const int64_t *sd, double f, int64_t i);
int ember_arange(int dtype, int64_t n, intptr_t out, double start, double step, int64_t istart,
                 int64_t istep);
int ember_linspace(int dtype, int64_t n, intptr_t out, double start, double end);
/* stack: `count` contiguous inputs of outer x inner_bytes each, interleaved into out */
int ember_stack(int64_t count, const intptr_t *ptrs, int64_t outer, int64_t inner_bytes,
                intptr_t out);

/* runtime.c */
int ember_num_threads(void);
void ember_set_num_threads(int n);
#endif
