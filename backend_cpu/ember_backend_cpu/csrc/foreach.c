/* Multi-tensor kernels for gradient clipping (torch.nn.utils.clip_grad_norm_): the norm of each
 * tensor of a list, and the scaling of the whole list by one coefficient, one call each instead
 * of several ops per gradient (a minGPT step has 41 gradients: issue 20); and the optimizers'
 * step counters, all advanced by one call.
 *
 * The norms parallelise over tensors (each one summed by one thread, in double, so the result
 * does not depend on the thread count); the scaling walks the list in chunks (tensor_list.h),
 * as the GradScaler unscale does.
 */
#include "ember_cpu.h"
#include "api_foreach.h"
#include "tensor_list.h"

#include <math.h>

#define FOREACH_CHUNK 16384

/* The `ord` norm of x[0..n): 2, 1, 0 and +-inf by their own loops, other p through pow. */
#define NORM_LOOP(T)                                                                             \
    static EM_CLONES double norm_##T(const ST_##T *x, int64_t n, double ord) {                   \
        double acc = 0.0;                                                                         \
        if (ord == 2.0) {                                                                         \
            for (int64_t i = 0; i < n; i++) {                                                     \
                double v = (double)LD_##T(x[i]);                                                  \
                acc += v * v;                                                                     \
            }                                                                                     \
            return sqrt(acc);                                                                     \
        }                                                                                         \
        if (ord == 1.0) {                                                                         \
            for (int64_t i = 0; i < n; i++) acc += fabs((double)LD_##T(x[i]));                    \
            return acc;                                                                           \
        }                                                                                         \
        if (ord == 0.0) {                                                                         \
            for (int64_t i = 0; i < n; i++) acc += LD_##T(x[i]) != 0;                             \
            return acc;                                                                           \
        }                                                                                         \
        if (isinf(ord)) {                                                                         \
            acc = n ? fabs((double)LD_##T(x[0])) : 0.0;                                           \
            for (int64_t i = 1; i < n; i++) {                                                     \
                double v = fabs((double)LD_##T(x[i]));                                            \
                if (isnan(v) || (ord > 0 ? v > acc : v < acc)) acc = v;                           \
                if (isnan(acc)) break;                                                            \
            }                                                                                     \
            return acc;                                                                           \
        }                                                                                         \
        for (int64_t i = 0; i < n; i++) acc += pow(fabs((double)LD_##T(x[i])), ord);              \
        return pow(acc, 1.0 / ord);                                                               \
    }
NORM_LOOP(f16)
NORM_LOOP(bf16)
NORM_LOOP(f32)
NORM_LOOP(f64)

static void norm_one(int dtype, intptr_t ptr, int64_t n, double ord, intptr_t out, int64_t i) {
    switch (dtype) {
    case EM_F16: ((ST_f16 *)out)[i] = SV_f16(norm_f16((const ST_f16 *)ptr, n, ord)); break;
    case EM_BF16: ((ST_bf16 *)out)[i] = SV_bf16(norm_bf16((const ST_bf16 *)ptr, n, ord)); break;
    case EM_F32: ((ST_f32 *)out)[i] = SV_f32(norm_f32((const ST_f32 *)ptr, n, ord)); break;
    default: ((ST_f64 *)out)[i] = norm_f64((const ST_f64 *)ptr, n, ord); break;
    }
}

int ember_foreach_norm(int dtype, int64_t count, const intptr_t *ptrs, const int64_t *sizes,
                       double ord, intptr_t out) {
    if (dtype < EM_F16 || dtype > EM_F64) return EM_UNSUPPORTED;
    int64_t total = 0;
    for (int64_t i = 0; i < count; i++) total += sizes[i];
#pragma omp parallel for schedule(dynamic) if (total >= EM_PARALLEL_THRESHOLD && count > 1)
    for (int64_t i = 0; i < count; i++) norm_one(dtype, ptrs[i], sizes[i], ord, out, i);
    return EM_OK;
}

/* x * s, or x + s (an optimizer's step counters): the branch is loop-invariant, so GCC keeps
 * two vector loops. */
#define SCALE_LOOP(T, A)                                                                         \
    static EM_CLONES void scale_##T(ST_##T *x, int64_t n, A s, int add) {                         \
        if (add)                                                                                  \
            for (int64_t i = 0; i < n; i++) x[i] = SV_##T((A)LD_##T(x[i]) + s);                   \
        else                                                                                      \
            for (int64_t i = 0; i < n; i++) x[i] = SV_##T((A)LD_##T(x[i]) * s);                   \
    }
SCALE_LOOP(f16, float)
SCALE_LOOP(bf16, float)
SCALE_LOOP(f32, float)
SCALE_LOOP(f64, double)

static void scale_chunk(int dtype, char *ptr, int64_t n, double s, int add) {
    switch (dtype) {
    case EM_F16: scale_f16((ST_f16 *)ptr, n, (float)s, add); break;
    case EM_BF16: scale_bf16((ST_bf16 *)ptr, n, (float)s, add); break;
    case EM_F32: scale_f32((ST_f32 *)ptr, n, (float)s, add); break;
    default: scale_f64((ST_f64 *)ptr, n, s, add); break;
    }
}

static int scale_list(int dtype, int64_t count, const intptr_t *ptrs, const int64_t *sizes,
                      double s, int add) {
    if (dtype < EM_F16 || dtype > EM_F64) return EM_UNSUPPORTED;
    em_chunk_plan plan;
    if (em_chunk_plan_init(&plan, count, sizes, FOREACH_CHUNK)) return EM_BAD_ARGUMENT;
    int itemsize = em_itemsize(dtype);
#pragma omp parallel for schedule(dynamic) if (plan.total >= EM_PARALLEL_THRESHOLD)
    for (int64_t c = 0; c < plan.chunks; c++) {
        int64_t start, n;
        int64_t i = em_chunk_locate(&plan, sizes, c, &start, &n);
        scale_chunk(dtype, (char *)ptrs[i] + start * itemsize, n, s, add);
    }
    em_chunk_plan_free(&plan);
    return EM_OK;
}

int ember_foreach_mul_scalar(int dtype, int64_t count, const intptr_t *ptrs,
                             const int64_t *sizes, double scale) {
    return scale_list(dtype, count, ptrs, sizes, scale, 0);
}

int ember_foreach_add_scalar(int dtype, int64_t count, const intptr_t *ptrs,
                             const int64_t *sizes, double value) {
    return scale_list(dtype, count, ptrs, sizes, value, 1);
}
