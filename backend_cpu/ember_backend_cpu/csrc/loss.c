/* nll_loss's forward and backward, one pass over the targets each (ATen's LossNLL.cpp and
 * LossNLL2d.cpp): the decomposition in nn/functional/loss.py took about twelve ops (compare,
 * mask, gather, weights, two sums, a quotient) for what is a loop over n * inner targets.
 * Sums accumulate in double, in target order. */
#include <string.h>

#include "ember_cpu.h"
#include "api_loss.h"

enum { REDUCTION_NONE = 0, REDUCTION_MEAN = 1 };

static int targets_in_range(const int64_t *t, int64_t count, int64_t c, int64_t ignore_index) {
    for (int64_t i = 0; i < count; i++)
        if (t[i] != ignore_index && (t[i] < 0 || t[i] >= c)) return 0;
    return 1;
}

#define NLL_FORWARD(T, unused)                                                                    \
    static void nll_forward_##T(ST_##T *out, ST_##T *total, const ST_##T *x, const int64_t *t,   \
                                const ST_##T *w, int64_t n, int64_t c, int64_t inner,            \
                                int reduction, int64_t ignore_index) {                          \
        double loss_sum = 0, weight_sum = 0;                                                      \
        for (int64_t b = 0; b < n; b++)                                                           \
            for (int64_t i = 0; i < inner; i++) {                                                 \
                int64_t k = t[b * inner + i];                                                     \
                double loss = 0, wk = 0;                                                          \
                if (k != ignore_index) {                                                          \
                    wk = w ? (double)LD_##T(w[k]) : 1.0;                                          \
                    loss = -(double)LD_##T(x[(b * c + k) * inner + i]) * wk;                     \
                }                                                                                 \
                if (reduction == REDUCTION_NONE)                                                  \
                    out[b * inner + i] = SV_##T(loss);                                            \
                loss_sum += loss;                                                                 \
                weight_sum += wk;                                                                 \
            }                                                                                     \
        if (reduction == REDUCTION_NONE) {                                                        \
            *total = SV_##T(0);                                                                   \
            return;                                                                               \
        }                                                                                         \
        *total = SV_##T(weight_sum);                                                              \
        /* the mean of no counted targets is 0/0, NaN, as PyTorch's */                            \
        *out = SV_##T(reduction == REDUCTION_MEAN ? loss_sum / weight_sum : loss_sum);            \
    }
EM_FOR_FLOAT(NLL_FORWARD, 0)

#define NLL_BACKWARD(T, unused)                                                                   \
    static void nll_backward_##T(ST_##T *gx, const ST_##T *g, const int64_t *t, const ST_##T *w, \
                                 const ST_##T *total, int64_t n, int64_t c, int64_t inner,       \
                                 int reduction, int64_t ignore_index) {                         \
        memset(gx, 0, (size_t)(n * c * inner) * sizeof(ST_##T));                                 \
        double scale = reduction == REDUCTION_NONE ? 0 : (double)LD_##T(g[0]);                    \
        if (reduction == REDUCTION_MEAN) scale /= (double)LD_##T(total[0]);                      \
        for (int64_t b = 0; b < n; b++)                                                           \
            for (int64_t i = 0; i < inner; i++) {                                                 \
                int64_t k = t[b * inner + i];                                                     \
                if (k == ignore_index) continue;                                                  \
                double gk = reduction == REDUCTION_NONE ? (double)LD_##T(g[b * inner + i]) : scale; \
                double wk = w ? (double)LD_##T(w[k]) : 1.0;                                       \
                gx[(b * c + k) * inner + i] = SV_##T(-wk * gk);                                   \
            }                                                                                     \
    }
EM_FOR_FLOAT(NLL_BACKWARD, 0)

#define FORWARD_CASE(T, unused)                                                                   \
    case EMC_##T:                                                                                 \
        nll_forward_##T((ST_##T *)out, (ST_##T *)total_weight, (const ST_##T *)x, t,             \
                        (const ST_##T *)weight, n, c, inner, reduction, ignore_index);           \
        return EM_OK;

int ember_nll_loss_forward(int dtype, intptr_t out, intptr_t total_weight, intptr_t x,
                           intptr_t target, intptr_t weight, int64_t n, int64_t c, int64_t inner,
                           int reduction, int64_t ignore_index) {
    const int64_t *t = (const int64_t *)target;
    if (!targets_in_range(t, n * inner, c, ignore_index)) return EM_INDEX_OUT_OF_RANGE;
    switch (dtype) { EM_FOR_FLOAT(FORWARD_CASE, 0) }
    return EM_UNSUPPORTED;
}

#define BACKWARD_CASE(T, unused)                                                                  \
    case EMC_##T:                                                                                 \
        nll_backward_##T((ST_##T *)grad_input, (const ST_##T *)grad_output, t,                   \
                         (const ST_##T *)weight, (const ST_##T *)total_weight, n, c, inner,      \
                         reduction, ignore_index);                                                \
        return EM_OK;

int ember_nll_loss_backward(int dtype, intptr_t grad_input, intptr_t grad_output,
                            intptr_t target, intptr_t weight, intptr_t total_weight, int64_t n,
                            int64_t c, int64_t inner, int reduction, int64_t ignore_index) {
    const int64_t *t = (const int64_t *)target;
    if (!targets_in_range(t, n * inner, c, ignore_index)) return EM_INDEX_OUT_OF_RANGE;
    switch (dtype) { EM_FOR_FLOAT(BACKWARD_CASE, 0) }
    return EM_UNSUPPORTED;
}
