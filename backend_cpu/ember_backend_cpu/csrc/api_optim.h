/* The optimizers' fused steps (optim.c): _fused_adam_/_fused_adamw_ and _fused_sgd_, one call
 * per list of `count` contiguous tensors of one floating dtype. ptrs holds the lists one after
 * another (count addresses each), sizes[i] the elements of tensor i. grad_scale: the gradients
 * are divided by it and written back (when `scaled`). Plain declarations only: cffi reads this
 * file verbatim minus the lines starting with '#'. */
#ifndef EMBER_CPU_API_OPTIM_H
#define EMBER_CPU_API_OPTIM_H
#include <stdint.h>

/* Adam/AdamW: lists param, grad, exp_avg, exp_avg_sq and (when amsgrad) max_exp_avg_sq; steps[i]
 * is tensor i's step count. decoupled: AdamW's weight decay (param *= 1 - lr * wd) instead of
 * Adam's (grad += wd * param). */
int ember_fused_adam(int dtype, int64_t count, const intptr_t *ptrs, const int64_t *sizes,
                     const double *steps, double lr, double beta1, double beta2,
                     double weight_decay, double eps, int amsgrad, int maximize, int decoupled,
                     int scaled, float grad_scale);

/* SGD: lists param, grad and (when momentum != 0) momentum_buffer; is_first_step copies the
 * gradient into the buffer instead of reading it. */
int ember_fused_sgd(int dtype, int64_t count, const intptr_t *ptrs, const int64_t *sizes,
                    double weight_decay, double momentum, double lr, double dampening,
                    int nesterov, int maximize, int is_first_step, int scaled, float grad_scale);
#endif
