/* nn.c: fused nn kernels. Inputs contiguous (the core's runners guarantee it), outputs fresh and
 * contiguous. geometry = {n, c, h, w, oh, ow, kh, kw, dh, dw, ph, pw, sh, sw}. */
#ifndef EMBER_CPU_API_NN_H
#define EMBER_CPU_API_NN_H
#include <stdint.h>

int ember_softmax(int dtype, intptr_t out, intptr_t x, int64_t outer, int64_t n, int64_t inner,
                  int take_log);
/* out = softmax's (take_log 0) or log_softmax's (1) input gradient from grad and the output y */
int ember_softmax_backward(int dtype, intptr_t out, intptr_t grad, intptr_t y, int64_t outer,
                           int64_t n, int64_t inner, int take_log);
/* out = layer_norm(x) over rows of n; weight, bias: n elements of x's dtype, or 0; mean, rstd:
 * rows elements each of x's dtype (native_layer_norm's statistics), or 0 for neither */
int ember_layer_norm(int dtype, intptr_t out, intptr_t mean, intptr_t rstd, intptr_t x,
                     int64_t rows, int64_t n, intptr_t weight, intptr_t bias, double eps);
/* native_layer_norm_backward over rows of n from the forward's mean and rstd (rows elements);
 * dx (rows x n), dw and db (n each): 0 for a gradient not wanted; weight: n elements or 0 */
int ember_layer_norm_backward(int dtype, intptr_t dx, intptr_t dw, intptr_t db, intptr_t dy,
                              intptr_t x, intptr_t mean, intptr_t rstd, intptr_t weight,
                              int64_t rows, int64_t n);
int ember_im2col(int dtype, intptr_t cols, intptr_t x, const int64_t *geometry);
int ember_col2im(int dtype, intptr_t out, intptr_t cols, const int64_t *geometry);
int ember_max_pool2d(int dtype, intptr_t values, intptr_t indices, intptr_t x,
                     const int64_t *geometry);
#endif
