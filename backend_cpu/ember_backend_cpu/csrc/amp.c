/* GradScaler's kernels: the fused non-finite check and unscale over a list of gradients, and the
 * scale update.
 *
 * The unscale walks every gradient of one dtype in one call, in chunks of AMP_CHUNK elements
 * (tensor_list.h), so a model's hundreds of small gradients cost one parallel pass. Values are
 * multiplied in float (float16, bfloat16, float32) or double (float64) and rounded back once,
 * as PyTorch's CPU kernel.
 */
#include "ember_cpu.h"
#include "api_amp.h"
#include "tensor_list.h"

#include <math.h>

#define AMP_CHUNK 16384

/* Multiplies x[0..n) by inv (unless `scale` is 0) and returns 1 when an element is inf/NaN. */
#define UNSCALE_LOOP(T, A)                                                                       \
    static EM_CLONES int unscale_##T(ST_##T *x, int64_t n, A inv, int scale) {                    \
        int bad = 0;                                                                              \
        if (scale) {                                                                              \
            for (int64_t i = 0; i < n; i++) {                                                     \
                A v = (A)LD_##T(x[i]);                                                            \
                bad |= !isfinite(v);                                                              \
                x[i] = SV_##T(v * inv);                                                           \
            }                                                                                     \
        } else {                                                                                  \
            for (int64_t i = 0; i < n; i++) bad |= !isfinite((A)LD_##T(x[i]));                   \
        }                                                                                         \
        return bad;                                                                               \
    }
UNSCALE_LOOP(f16, float)
UNSCALE_LOOP(bf16, float)
UNSCALE_LOOP(f32, float)
UNSCALE_LOOP(f64, double)

static int unscale_chunk(int dtype, char *ptr, int64_t n, float inv) {
    int scale = inv != 1.0f;
    switch (dtype) {
    case EM_F16: return unscale_f16((ST_f16 *)ptr, n, inv, scale);
    case EM_BF16: return unscale_bf16((ST_bf16 *)ptr, n, inv, scale);
    case EM_F32: return unscale_f32((ST_f32 *)ptr, n, inv, scale);
    default: return unscale_f64((ST_f64 *)ptr, n, (double)inv, scale);
    }
}

int ember_amp_unscale(int dtype, int64_t count, const intptr_t *ptrs, const int64_t *sizes,
                      float inv_scale, float *found_inf) {
    if (dtype < EM_F16 || dtype > EM_F64) return EM_UNSUPPORTED;
    em_chunk_plan plan;
    if (em_chunk_plan_init(&plan, count, sizes, AMP_CHUNK)) return EM_BAD_ARGUMENT;
    int itemsize = em_itemsize(dtype), bad = 0;
#pragma omp parallel for schedule(dynamic) reduction(| : bad) if (plan.total >= EM_PARALLEL_THRESHOLD)
    for (int64_t c = 0; c < plan.chunks; c++) {
        int64_t start, n;
        int64_t i = em_chunk_locate(&plan, sizes, c, &start, &n);
        bad |= unscale_chunk(dtype, (char *)ptrs[i] + start * itemsize, n, inv_scale);
    }
    em_chunk_plan_free(&plan);
    if (bad) *found_inf = 1.0f;
    return EM_OK;
}

void ember_amp_update_scale(float *scale, int32_t *tracker, const float *found_inf,
                            double growth, double backoff, int64_t interval) {
    if (*found_inf) {
        *scale = (float)(*scale * backoff);
        *tracker = 0;
        return;
    }
    int32_t successful = *tracker + 1;
    if (successful == interval) {
        float grown = (float)(*scale * growth);
        if (isfinite(grown)) *scale = grown; /* never grow past float32's range to inf */
        *tracker = 0;
    } else {
        *tracker = successful;
    }
}
