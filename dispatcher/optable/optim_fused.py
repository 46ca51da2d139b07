"""The optimizers' fused steps: ``_fused_adam_``, ``_fused_adamw_`` and ``_fused_sgd_``.

PyTorch's ``Adam/AdamW/SGD(fused=True)`` call these once per device and dtype group, with lists
of parameters, gradients and states. The decompositions (ember ops) are the generic
implementation for every device; a backend registers a kernel for one pass over all the lists
(see dispatcher/kinds/optim.py). Semantics are those of PyTorch's CPU kernels
(aten/src/ATen/native/cpu/Fused{Adam,SGD}Kernel.cpp): math in float32 for low-precision
tensors, ``grad /= grad_scale`` written back to the gradient, and no update at all when
``found_inf`` is 1. ``state_steps`` are read, not incremented (the optimizer increments them).
"""

from __future__ import annotations

import ember
from ember import _dtype as dt

from ..kinds import optim as run
from ..opdef import DTYPES_FLOAT, Kind, OpDef


def _opmath(t):
    """The tensor in its math dtype: float64 stays, the rest compute in float32 (a view for
    float32/float64, so in-place updates land in the tensor itself)."""
    return t if t.dtype in (dt.float32, dt.float64) else t.to(dt.float32)


def _store(target, value) -> None:
    if value is not target:
        target.copy_(value)


def _scaled_grad(grad, grad_scale):
    """The gradient unscaled by ``grad_scale`` (and written back, as PyTorch's kernels do)."""
    g = _opmath(grad)
    if grad_scale is None:
        return g
    g = g / grad_scale.reshape(()).to(g.dtype)
    _store(grad, g)
    return g


def _skipped(found_inf) -> bool:
    return found_inf is not None and float(found_inf.reshape(()).item()) == 1.0


def _adam_one(p, g, m, v, vmax, step, hp, decoupled):
    """One tensor's update, in place on the math-dtype views (no copies for float32/64)."""
    lr, beta1, beta2, weight_decay, eps, amsgrad, maximize = hp
    w, m_, v_ = _opmath(p), _opmath(m), _opmath(v)
    if maximize:
        g = g.neg()
    if weight_decay != 0:
        if decoupled:
            w.mul_(1 - lr * weight_decay)
        else:
            g = g.add(w, alpha=weight_decay)
    m_.lerp_(g, 1 - beta1)
    v_.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    _store(m, m_)
    _store(v, v_)
    if amsgrad:
        v_ = _opmath(vmax).maximum_(v_)
        _store(vmax, v_)
    denom = v_.sqrt().div_((1 - beta2**step) ** 0.5).add_(eps)
    w.addcdiv_(m_, denom, value=-lr / (1 - beta1**step))
    _store(p, w)


def _read_steps(state_steps) -> list[float]:
    """The step counters as Python floats. On a device they are read in one transfer: each
    ``.item()`` there is a synchronisation, and a CUDA GPT step made one per parameter (17 of
    its 23 device-to-host copies, counted under the emulated driver)."""
    if all(s.device.type == "cpu" for s in state_steps):
        return [float(s.reshape(()).item()) for s in state_steps]
    return [float(v) for v in ember.stack([s.reshape(()) for s in state_steps]).tolist()]


def _adam(decoupled):
    def decomposition(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr,
                      beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale=None,
                      found_inf=None):  # fmt: skip
        if _skipped(found_inf):
            return None
        hp = (lr, beta1, beta2, weight_decay, eps, amsgrad, maximize)
        maxes = max_exp_avg_sqs if amsgrad else [None] * len(params)
        for p, grad, m, v, vmax, step in zip(
            params, grads, exp_avgs, exp_avg_sqs, maxes, _read_steps(state_steps)
        ):
            _adam_one(p, _scaled_grad(grad, grad_scale), m, v, vmax, step, hp, decoupled)
        return None

    return decomposition


def _sgd(params, grads, momentum_buffers, weight_decay, momentum, lr, dampening, nesterov,
         maximize, is_first_step, grad_scale=None, found_inf=None):  # fmt: skip
    if _skipped(found_inf):
        return None
    bufs = momentum_buffers if momentum != 0 else [None] * len(params)
    for p, grad, buf in zip(params, grads, bufs):
        g, w = _scaled_grad(grad, grad_scale), _opmath(p)
        if maximize:
            g = g.neg()
        if weight_decay != 0:
            g = g.add(w, alpha=weight_decay)
        if momentum != 0:
            b = _opmath(buf)
            if is_first_step:
                b.copy_(g)
            else:
                b.mul_(momentum).add_(g, alpha=1 - dampening)
            _store(buf, b)
            g = g.add(b, alpha=momentum) if nesterov else b
        w.add_(g, alpha=-lr)
        _store(p, w)
    return None


_ADAM_ARGS = (
    "(Tensor[] self, Tensor[] grads, Tensor[] exp_avgs, Tensor[] exp_avg_sqs, "
    "Tensor[] max_exp_avg_sqs, Tensor[] state_steps, *, float lr, float beta1, float beta2, "
    "float weight_decay, float eps, bool amsgrad, bool maximize, Tensor? grad_scale=None, "
    "Tensor? found_inf=None) -> ()"
)


def _row(schema, decomposition, notes):
    return OpDef(
        schema,
        Kind.FOREACH,
        None,
        dtypes=DTYPES_FLOAT,
        differentiable=False,
        decomposition=decomposition,
        runner=run.fused_step,
        method=False,
        samples="optim_fused",
        kernel_args="(*lists, *params): the op's arguments in schema order, lists of "
        "contiguous tensors of one dtype and device; updates params and states in place",
        notes=notes,
    )


ROWS = [
    _row("_fused_adam_" + _ADAM_ARGS, _adam(False), "Adam(fused=True): one call per group"),
    _row("_fused_adamw_" + _ADAM_ARGS, _adam(True), "AdamW(fused=True): one call per group"),
    _row(
        "_fused_sgd_(Tensor[] self, Tensor[] grads, Tensor[] momentum_buffer_list, "
        "*, float weight_decay, float momentum, float lr, float dampening, bool nesterov, "
        "bool maximize, bool is_first_step, Tensor? grad_scale=None, Tensor? found_inf=None) -> ()",
        _sgd,
        "SGD(fused=True): one call per group",
    ),
]
