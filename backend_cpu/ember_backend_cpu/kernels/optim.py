"""Glue for the optimizers' fused steps (csrc/optim.c): ``_fused_adam_``, ``_fused_adamw_`` and
``_fused_sgd_``, one C call per list.

The runner (ember's dispatcher/kinds/optim.py) has checked the list lengths and the device and
passes contiguous tensors; this glue checks that every tensor has the parameters' dtype (the C
loops read all lists as one type) and reads the scalar tensors (step counts, grad_scale,
found_inf) on the host, as PyTorch's CPU kernels do.
"""

from __future__ import annotations

import numpy as np

from ._args import DTYPE_NAMES, addr, numel, raise_status

FLOATS = DTYPE_NAMES[6:]


def _value(ffi, t) -> float:
    """A one-element tensor's value (``.item()`` without ember)."""
    if t._dtype.name == "float32":
        return float(ffi.cast("float *", addr(t))[0])
    raw = ffi.buffer(ffi.cast("char *", addr(t)), t._dtype.itemsize)
    return float(np.frombuffer(raw, dtype=t._dtype.np)[0])


def _pointers(ffi, op, lists):
    """The lists' addresses one list after another (0 for an empty list) and the sizes."""
    params = lists[0]
    dtype = params[0]._dtype
    itemsize = dtype.itemsize
    ptrs = []
    for tensors in lists:
        if not tensors:
            ptrs += [0] * len(params)
            continue
        for t in tensors:
            if t._dtype is not dtype:
                raise RuntimeError(
                    f"{op}: expected every tensor to be {dtype.name} like the params, "
                    f"but got {t._dtype.name}"
                )
            ptrs.append(t._storage.ptr + t._offset * itemsize)  # addr(t), inline
    # lists passed as such: cffi converts each into a temporary array for the call
    return dtype.code, ptrs, [numel(t) for t in params]


def _amp(ffi, grad_scale, found_inf):
    """(skip, scaled, scale): found_inf == 1 skips the step; grad_scale divides the grads."""
    skip = found_inf is not None and _value(ffi, found_inf) == 1.0
    if grad_scale is None:
        return skip, 0, 1.0
    return skip, 1, _value(ffi, grad_scale)


def build(ffi, lib) -> dict:
    def adam(op, decoupled):
        def kernel(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr,
                   beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale=None,
                   found_inf=None):  # fmt: skip
            skip, scaled, scale = _amp(ffi, grad_scale, found_inf)
            if skip:
                return
            maxes = max_exp_avg_sqs if amsgrad else []
            lists = (params, grads, exp_avgs, exp_avg_sqs, maxes)
            code, ptrs, sizes = _pointers(ffi, op, lists)
            steps = ffi.new("double[]", [_value(ffi, s) for s in state_steps])
            status = lib.ember_fused_adam(code, len(params), ptrs, sizes, steps, lr, beta1, beta2,
                                          weight_decay, eps, bool(amsgrad), bool(maximize),
                                          decoupled, scaled, scale)  # fmt: skip
            if status:
                raise_status(status, op, code)

        return kernel

    def sgd(params, grads, momentum_buffer_list, weight_decay, momentum, lr, dampening,
            nesterov, maximize, is_first_step, grad_scale=None, found_inf=None):  # fmt: skip
        skip, scaled, scale = _amp(ffi, grad_scale, found_inf)
        if skip:
            return
        bufs = momentum_buffer_list if momentum != 0 else []
        code, ptrs, sizes = _pointers(ffi, "_fused_sgd_", (params, grads, bufs))
        status = lib.ember_fused_sgd(code, len(params), ptrs, sizes, weight_decay, momentum, lr,
                                     dampening, bool(nesterov), bool(maximize),
                                     bool(is_first_step), scaled, scale)  # fmt: skip
        if status:
            raise_status(status, "_fused_sgd_", code)

    return {
        "_fused_adam_": dict.fromkeys(FLOATS, adam("_fused_adam_", 0)),
        "_fused_adamw_": dict.fromkeys(FLOATS, adam("_fused_adamw_", 1)),
        "_fused_sgd_": dict.fromkeys(FLOATS, sgd),
    }
