/* out[r, c] = gelu(x[r, c] + bias[c]) in one pass over contiguous rows: the fusion saves the
   intermediate (x + bias) tensor a decomposition would write and read back.

   One macro body per dtype (float, double), never copy-pasted variants. The expressions are
   ember's (and PyTorch's) gelu: exact 0.5 v (1 + erf(v / sqrt 2)), or the tanh approximation.
   The choice is made once per call, outside the loop: with a per-element ternary the compiler
   may evaluate both erf and tanh for every element. */
#include <math.h>

#include "api_fused.h"

#define FBG_BAD_SHAPE 1

#define GELU_ERF(T, ERF, TANH, v) ((T)0.5 * (v) * ((T)1 + ERF((v) * (T)0.7071067811865476)))
#define GELU_TANH(T, ERF, TANH, v) \
    ((T)0.5 * (v) * ((T)1 + TANH((T)0.7978845608028654 * ((v) + (T)0.044715 * (v) * (v) * (v)))))

#define BIAS_GELU_LOOP(T, GELU, ERF, TANH)                 \
    for (int64_t r = 0; r < rows; r++) {                   \
        const T *ar = a + r * cols;                        \
        T *orow = o + r * cols;                            \
        for (int64_t c = 0; c < cols; c++) {               \
            T v = ar[c] + b[c];                            \
            orow[c] = GELU(T, ERF, TANH, v);               \
        }                                                  \
    }

#define FUSED_BIAS_GELU(T, SUFFIX, ERF, TANH)                                            \
    int fused_bias_gelu_##SUFFIX(intptr_t out, intptr_t x, intptr_t bias, int64_t rows, \
                                 int64_t cols, int tanh_approximation) {                \
        T *o = (T *)out;                                                               \
        const T *a = (const T *)x;                                                     \
        const T *b = (const T *)bias;                                                  \
        if (rows < 0 || cols < 0) return FBG_BAD_SHAPE;                                \
        if (tanh_approximation) {                                                      \
            BIAS_GELU_LOOP(T, GELU_TANH, ERF, TANH)                                    \
        } else {                                                                       \
            BIAS_GELU_LOOP(T, GELU_ERF, ERF, TANH)                                     \
        }                                                                              \
        return 0;                                                                      \
    }

FUSED_BIAS_GELU(float, f32, erff, tanhf)
FUSED_BIAS_GELU(double, f64, erf, tanh)
