/* loss.c: nll_loss's forward and backward (ATen's nll_loss_forward / nll_loss_backward, with
 * nll_loss2d's trailing dims folded into `inner`). The input is contiguous (n, c, inner), the
 * target contiguous int64 (n, inner); weight: c elements of the input's dtype, or 0.
 * reduction: 0 none, 1 mean, 2 sum (PyTorch's at::Reduction). A target outside [0, c) that is
 * not ignore_index gives EM_INDEX_OUT_OF_RANGE before anything is written. */
#ifndef EMBER_CPU_API_LOSS_H
#define EMBER_CPU_API_LOSS_H
#include <stdint.h>

/* out: n * inner losses (reduction 0) or one; total_weight: one element, the summed weight of
 * the targets that count (0 for reduction 0) */
int ember_nll_loss_forward(int dtype, intptr_t out, intptr_t total_weight, intptr_t x,
                           intptr_t target, intptr_t weight, int64_t n, int64_t c, int64_t inner,
                           int reduction, int64_t ignore_index);
/* grad_input (n, c, inner), zeroed here, gets -weight[t] * grad_output at each target (divided
 * by total_weight for reduction 1); grad_output: n * inner elements (reduction 0) or one */
int ember_nll_loss_backward(int dtype, intptr_t grad_input, intptr_t grad_output,
                            intptr_t target, intptr_t weight, intptr_t total_weight, int64_t n,
                            int64_t c, int64_t inner, int reduction, int64_t ignore_index);
#endif
