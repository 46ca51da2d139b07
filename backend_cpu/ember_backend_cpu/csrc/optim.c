/* The optimizers' fused steps (PyTorch's aten/src/ATen/native/cpu/Fused{Adam,SGD}Kernel.cpp):
 * one pass that reads param, grad and the states once and writes them once, instead of the
 * decomposition's pass per ember op.
 *
 * The lists are walked as one iteration space (tensor_list.h) over the OpenMP pool. Each chunk
 * runs a plain loop that the compiler vectorises (-O3, AVX2 clone): the flags that decide which
 * arrays are stored (amsgrad's max_exp_avg_sq, the unscaled gradient, the momentum buffer) are
 * compile-time constants of the specialised loops; the others are loop-invariant selects. Math
 * in float for float16/bfloat16/float32 and in double for float64, with the bias corrections in
 * double as PyTorch's; the kernels keep -ffp-contract=off (no fma), so both clones give the
 * same bits.
 */
#include "ember_cpu.h"
#include "api_optim.h"
#include "tensor_list.h"

#include <math.h>

#define OPTIM_CHUNK 16384
#define OPTIM_MAX_LISTS 5
#define EM_INLINE static inline __attribute__((always_inline))

/* One chunk of tensor `i`: bases[k] points at its first element in list k (NULL where a list is
 * empty), n elements. */
typedef void (*optim_chunk)(int dtype, char **bases, int64_t n, int64_t i, const void *args);

static int run_lists(int dtype, int64_t count, int nlists, const intptr_t *ptrs,
                     const int64_t *sizes, optim_chunk chunk, const void *args) {
    em_chunk_plan plan;
    if (em_chunk_plan_init(&plan, count, sizes, OPTIM_CHUNK)) return EM_BAD_ARGUMENT;
    int itemsize = em_itemsize(dtype);
#pragma omp parallel for schedule(dynamic) if (plan.total >= EM_PARALLEL_THRESHOLD)
    for (int64_t c = 0; c < plan.chunks; c++) {
        int64_t start, n;
        int64_t i = em_chunk_locate(&plan, sizes, c, &start, &n);
        char *bases[OPTIM_MAX_LISTS];
        for (int k = 0; k < nlists; k++) {
            char *base = (char *)ptrs[k * count + i];
            bases[k] = base ? base + start * itemsize : NULL;
        }
        chunk(dtype, bases, n, i, args);
    }
    em_chunk_plan_free(&plan);
    return EM_OK;
}

static int is_float(int dtype) { return dtype >= EM_F16 && dtype <= EM_F64; }

/* The gradient as both steps start: divided by grad_scale and written back (when `scaled`),
 * negated for maximize (sign -1). */
#define GRAD_LOAD(T, _)                                                                          \
    EM_INLINE CT_##T grad_##T(ST_##T *g, int64_t j, const int scaled, CT_##T scale,               \
                              CT_##T sign) {                                                     \
        CT_##T v = LD_##T(g[j]);                                                                  \
        if (scaled) {                                                                             \
            v = v / scale;                                                                        \
            g[j] = SV_##T(v);                                                                     \
        }                                                                                         \
        return v * sign;                                                                          \
    }
EM_FOR_FLOAT(GRAD_LOAD, _)

/* ---- Adam / AdamW ---------------------------------------------------------------------------- */
typedef struct {
    double lr, beta1, beta2, weight_decay, eps;
    int amsgrad, maximize, decoupled, scaled;
    float grad_scale;
    const double *step_size; /* per tensor: lr / (1 - beta1^step) */
    const double *bc2_sqrt;  /* per tensor: sqrt(1 - beta2^step) */
} adam_args;

/* exp_avg.lerp_(grad, 1 - beta1) as PyTorch's vector path: from the nearer end, so a weight
 * above 0.5 stays exact at 1. */
#define ADAM_LOOP(T, _)                                                                          \
    EM_INLINE void adam_body_##T(ST_##T *p, ST_##T *g, ST_##T *m, ST_##T *v, ST_##T *vmax,       \
                                 int64_t n, const adam_args *a, int64_t i, const int amsgrad,    \
                                 const int scaled) {                                             \
        typedef CT_##T C;                                                                         \
        const C sign = a->maximize ? (C)-1 : (C)1, scale = (C)a->grad_scale;                     \
        const C wd = (C)a->weight_decay;                                                          \
        const int l2 = !a->decoupled && a->weight_decay != 0;                                     \
        const C shrink = a->decoupled ? (C)(1 - a->lr * a->weight_decay) : (C)1;                 \
        const C w = (C)(1 - a->beta1), b2 = (C)a->beta2, w2 = (C)(1 - a->beta2);                 \
        const int near = fabs(w) < (C)0.5;                                                        \
        const C coeff = near ? w : w - (C)1;                                                      \
        const C bc2 = (C)a->bc2_sqrt[i], eps = (C)a->eps, neg_step = (C)(-a->step_size[i]);      \
        for (int64_t j = 0; j < n; j++) {                                                         \
            C gj = grad_##T(g, j, scaled, scale, sign), pj = LD_##T(p[j]);                        \
            gj = l2 ? gj + pj * wd : gj;                                                          \
            pj = pj * shrink;                                                                     \
            C mj = LD_##T(m[j]);                                                                  \
            mj = (near ? mj : gj) + coeff * (gj - mj);                                            \
            C vj = LD_##T(v[j]) * b2 + w2 * gj * gj;                                              \
            m[j] = SV_##T(mj);                                                                    \
            v[j] = SV_##T(vj);                                                                    \
            if (amsgrad) {                                                                        \
                C old = LD_##T(vmax[j]);                                                          \
                vj = (old > vj || old != old) ? old : vj; /* NaN wins, as vec::maximum */         \
                vmax[j] = SV_##T(vj);                                                             \
            }                                                                                     \
            p[j] = SV_##T(pj + neg_step * mj / (sqrt(vj) / bc2 + eps));                           \
        }                                                                                         \
    }                                                                                             \
    static EM_CLONES void adam_chunk_##T(char **b, int64_t n, const adam_args *a, int64_t i) {    \
        ST_##T *p = (ST_##T *)b[0], *g = (ST_##T *)b[1], *m = (ST_##T *)b[2];                    \
        ST_##T *v = (ST_##T *)b[3], *vmax = (ST_##T *)b[4];                                       \
        if (a->amsgrad && a->scaled) adam_body_##T(p, g, m, v, vmax, n, a, i, 1, 1);              \
        else if (a->amsgrad) adam_body_##T(p, g, m, v, vmax, n, a, i, 1, 0);                      \
        else if (a->scaled) adam_body_##T(p, g, m, v, vmax, n, a, i, 0, 1);                       \
        else adam_body_##T(p, g, m, v, vmax, n, a, i, 0, 0);                                      \
    }
EM_FOR_FLOAT(ADAM_LOOP, _)

static void adam_chunk(int dtype, char **bases, int64_t n, int64_t i, const void *args) {
    switch (dtype) {
    case EM_F16: adam_chunk_f16(bases, n, args, i); break;
    case EM_BF16: adam_chunk_bf16(bases, n, args, i); break;
    case EM_F32: adam_chunk_f32(bases, n, args, i); break;
    default: adam_chunk_f64(bases, n, args, i); break;
    }
}

int ember_fused_adam(int dtype, int64_t count, const intptr_t *ptrs, const int64_t *sizes,
                     const double *steps, double lr, double beta1, double beta2,
                     double weight_decay, double eps, int amsgrad, int maximize, int decoupled,
                     int scaled, float grad_scale) {
    if (!is_float(dtype)) return EM_UNSUPPORTED;
    double *coeffs = malloc((size_t)(2 * count + 1) * sizeof(double));
    if (!coeffs) return EM_BAD_ARGUMENT;
    for (int64_t i = 0; i < count; i++) { /* in double, as PyTorch's (and the default loop's) */
        coeffs[i] = lr / (1 - pow(beta1, steps[i]));
        coeffs[count + i] = sqrt(1 - pow(beta2, steps[i]));
    }
    adam_args args = {lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, decoupled, scaled,
                      grad_scale, coeffs, coeffs + count};
    int status = run_lists(dtype, count, 5, ptrs, sizes, adam_chunk, &args);
    free(coeffs);
    return status;
}

/* ---- SGD ------------------------------------------------------------------------------------- */
typedef struct {
    double weight_decay, momentum, lr, dampening;
    int nesterov, maximize, first, scaled;
    float grad_scale;
} sgd_args;

enum { SGD_PLAIN = 0, SGD_FIRST = 1, SGD_MOMENTUM = 2 }; /* what the momentum buffer does */

#define SGD_LOOP(T, _)                                                                           \
    EM_INLINE void sgd_body_##T(ST_##T *p, ST_##T *g, ST_##T *buf, int64_t n, const sgd_args *a, \
                                const int mode, const int scaled) {                              \
        typedef CT_##T C;                                                                         \
        const C sign = a->maximize ? (C)-1 : (C)1, scale = (C)a->grad_scale;                     \
        const C wd = (C)a->weight_decay, mom = (C)a->momentum, keep = (C)(1 - a->dampening);     \
        const C lr = (C)a->lr;                                                                    \
        const int l2 = a->weight_decay != 0, nesterov = a->nesterov;                              \
        for (int64_t j = 0; j < n; j++) {                                                         \
            C gj = grad_##T(g, j, scaled, scale, sign), pj = LD_##T(p[j]);                        \
            gj = l2 ? gj + pj * wd : gj;                                                          \
            if (mode != SGD_PLAIN) {                                                              \
                C bj = mode == SGD_FIRST ? gj : LD_##T(buf[j]) * mom + gj * keep;                 \
                buf[j] = SV_##T(bj);                                                              \
                gj = nesterov ? gj + bj * mom : bj;                                               \
            }                                                                                     \
            p[j] = SV_##T(pj - gj * lr);                                                          \
        }                                                                                         \
    }                                                                                             \
    static EM_CLONES void sgd_chunk_##T(char **b, int64_t n, const sgd_args *a) {                 \
        ST_##T *p = (ST_##T *)b[0], *g = (ST_##T *)b[1], *buf = (ST_##T *)b[2];                  \
        int mode = a->momentum == 0 ? SGD_PLAIN : a->first ? SGD_FIRST : SGD_MOMENTUM;            \
        if (mode == SGD_PLAIN && a->scaled) sgd_body_##T(p, g, buf, n, a, SGD_PLAIN, 1);          \
        else if (mode == SGD_PLAIN) sgd_body_##T(p, g, buf, n, a, SGD_PLAIN, 0);                  \
        else if (mode == SGD_FIRST && a->scaled) sgd_body_##T(p, g, buf, n, a, SGD_FIRST, 1);     \
        else if (mode == SGD_FIRST) sgd_body_##T(p, g, buf, n, a, SGD_FIRST, 0);                  \
        else if (a->scaled) sgd_body_##T(p, g, buf, n, a, SGD_MOMENTUM, 1);                       \
        else sgd_body_##T(p, g, buf, n, a, SGD_MOMENTUM, 0);                                      \
    }
EM_FOR_FLOAT(SGD_LOOP, _)

static void sgd_chunk(int dtype, char **bases, int64_t n, int64_t i, const void *args) {
    (void)i;
    switch (dtype) {
    case EM_F16: sgd_chunk_f16(bases, n, args); break;
    case EM_BF16: sgd_chunk_bf16(bases, n, args); break;
    case EM_F32: sgd_chunk_f32(bases, n, args); break;
    default: sgd_chunk_f64(bases, n, args); break;
    }
}

int ember_fused_sgd(int dtype, int64_t count, const intptr_t *ptrs, const int64_t *sizes,
                    double weight_decay, double momentum, double lr, double dampening,
                    int nesterov, int maximize, int is_first_step, int scaled, float grad_scale) {
    if (!is_float(dtype)) return EM_UNSUPPORTED;
    sgd_args args = {weight_decay, momentum, lr, dampening, nesterov, maximize, is_first_step,
                     scaled, grad_scale};
    return run_lists(dtype, count, 3, ptrs, sizes, sgd_chunk, &args);
}
