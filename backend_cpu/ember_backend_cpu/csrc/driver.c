/* The N-d driver shared by every elementwise-style kernel (see ember_cpu.h). */
#include "ember_cpu.h"

void em_byte_strides(int ndim, const int64_t *shape, const int64_t *elem_strides, int itemsize,
                     int64_t *out) {
    if (elem_strides) {
        for (int d = 0; d < ndim; d++) out[d] = elem_strides[d] * itemsize;
        return;
    }
    int64_t acc = itemsize;
    for (int d = ndim - 1; d >= 0; d--) {
        out[d] = acc;
        acc *= shape[d] > 1 ? shape[d] : 1;
    }
}

/* Drop size-1 dims and merge neighbours that are contiguous for every operand. Returns the new
 * ndim; shape/strides are rewritten in place (strides: nops rows of EM_MAX_DIMS). */
int em_coalesce(int ndim, int64_t *shape, int nops, int64_t strides[][EM_MAX_DIMS]) {
    int kept = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) continue;
        shape[kept] = shape[d];
        for (int k = 0; k < nops; k++) strides[k][kept] = strides[k][d];
        kept++;
    }
    if (kept == 0) return 0;
    int out = 0;
    for (int d = 1; d < kept; d++) {
        int mergeable = 1;
        for (int k = 0; k < nops; k++) {
            if (strides[k][out] != strides[k][d] * shape[d]) { mergeable = 0; break; }
        }
        if (mergeable) {
            shape[out] *= shape[d];
            for (int k = 0; k < nops; k++) strides[k][out] = strides[k][d];
        } else {
            out++;
            shape[out] = shape[d];
            for (int k = 0; k < nops; k++) strides[k][out] = strides[k][d];
        }
    }
    return out + 1;
}

static int max_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* Rows [first, last) of a coalesced layout: the row's position is found once (a division per
 * outer dim), then the next rows follow with a carry counter. */
static void run_rows(em_loop loop, int nops, int outer_dims, const int64_t *shape, char **ptrs_in,
                     int64_t (*strides)[EM_MAX_DIMS], int64_t inner, const int64_t *inner_strides,
                     int64_t first, int64_t last, em_params *p) {
    char *ptrs[EM_MAX_OPERANDS];
    int64_t idx[EM_MAX_DIMS] = {0};
    for (int k = 0; k < nops; k++) ptrs[k] = ptrs_in[k];
    int64_t rest = first;
    for (int d = outer_dims - 1; d >= 0 && rest; d--) {
        idx[d] = rest % shape[d];
        rest /= shape[d];
        for (int k = 0; k < nops; k++) ptrs[k] += idx[d] * strides[k][d];
    }
    for (int64_t row = first; row < last; row++) {
        loop(inner, ptrs, inner_strides, p);
        for (int d = outer_dims - 1; d >= 0; d--) {
            for (int k = 0; k < nops; k++) ptrs[k] += strides[k][d];
            if (++idx[d] < shape[d]) break;
            for (int k = 0; k < nops; k++) ptrs[k] -= strides[k][d] * shape[d];
            idx[d] = 0;
        }
    }
}

int em_run(em_loop loop, int nops, int ndim, const int64_t *shape_in, char **ptrs_in,
           const int64_t *strides_in, em_params *p) {
    int64_t shape[EM_MAX_DIMS];
    int64_t strides[EM_MAX_OPERANDS][EM_MAX_DIMS];
    if (ndim > EM_MAX_DIMS || nops > EM_MAX_OPERANDS) return EM_BAD_ARGUMENT;
    for (int d = 0; d < ndim; d++) {
        if (shape_in[d] == 0) return EM_OK;
        shape[d] = shape_in[d];
    }
    for (int k = 0; k < nops; k++)
        for (int d = 0; d < ndim; d++) strides[k][d] = strides_in[k * ndim + d];
    ndim = em_coalesce(ndim, shape, nops, strides);

    int64_t inner = ndim ? shape[ndim - 1] : 1;
    int64_t inner_strides[EM_MAX_OPERANDS];
    for (int k = 0; k < nops; k++) inner_strides[k] = ndim ? strides[k][ndim - 1] : 0;
    int outer_dims = ndim > 0 ? ndim - 1 : 0;
    int64_t outer = 1;
    for (int d = 0; d < outer_dims; d++) outer *= shape[d];
    int64_t total = outer * inner;

    int threads = max_threads();
    if (total < EM_PARALLEL_THRESHOLD || threads < 2) {
        run_rows(loop, nops, outer_dims, shape, ptrs_in, strides, inner, inner_strides, 0, outer,
                 p);
        return p->status;
    }
    /* Parallel, with enough rows: each task a block of consecutive rows, walked as above (a
     * division per dim once per block, not once per row: short rows, such as a bias broadcast
     * over 128 columns, spent as long finding their row as computing it). */
    int status = EM_OK;
    if (outer >= 2 * threads) {
        const int64_t blocks = threads;
#pragma omp parallel for schedule(static)
        for (int64_t b = 0; b < blocks; b++) {
            em_params local = *p;
            run_rows(loop, nops, outer_dims, shape, ptrs_in, strides, inner, inner_strides,
                     outer * b / blocks, outer * (b + 1) / blocks, &local);
            if (local.status) {
#pragma omp atomic write
                status = local.status;
            }
        }
        if (status) p->status = status;
        return p->status;
    }

    /* Too few rows: tasks are chunks of rows. */
    int64_t per_row = (2 * threads + outer - 1) / outer;
    int64_t max_chunks = inner / 2048 > 0 ? inner / 2048 : 1;
    if (per_row > max_chunks) per_row = max_chunks;
    int64_t chunk = (inner + per_row - 1) / per_row;
    int64_t tasks = outer * per_row;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < tasks; t++) {
        int64_t row = t / per_row, start = (t % per_row) * chunk;
        int64_t len = inner - start < chunk ? inner - start : chunk;
        if (len <= 0) continue;
        char *ptrs[EM_MAX_OPERANDS];
        for (int k = 0; k < nops; k++) ptrs[k] = ptrs_in[k] + start * inner_strides[k];
        int64_t rest = row;
        for (int d = outer_dims - 1; d >= 0; d--) {
            int64_t i = rest % shape[d];
            rest /= shape[d];
            for (int k = 0; k < nops; k++) ptrs[k] += i * strides[k][d];
        }
        em_params local = *p;
        loop(len, ptrs, inner_strides, &local);
        if (local.status) {
#pragma omp atomic write
            status = local.status;
        }
    }
    if (status) p->status = status;
    return p->status;
}
