"""Gradient clipping, like ``torch.nn.utils``: the total norm of many tensors
(``get_total_norm``), scaling gradients to a norm (``clip_grads_with_norm_``), both at once
(``clip_grad_norm_``), and clamping values (``clip_grad_value_``). As PyTorch's, the norms and
the scaling are one multi-tensor call per device and dtype (``_foreach_norm``,
``_foreach_mul_``: dispatcher/optable/foreach.py); every device has them (a backend without
the kernels runs an op per tensor), so ``foreach`` changes nothing but is accepted."""

from __future__ import annotations

import types
import warnings

import ember


def _as_list(tensors) -> list:
    if isinstance(tensors, ember.Tensor):
        return [tensors]
    return list(tensors)


def _by_device_and_dtype(tensors) -> list:
    """``tensors`` in groups of one device and dtype, in the order of their first tensor
    (PyTorch's _group_tensors_by_device_and_dtype)."""
    groups: dict = {}
    for t in tensors:
        groups.setdefault((t.device, t.dtype), []).append(t)
    return list(groups.values())


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type`` norm of all ``tensors`` together (the norm of their norms)."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return ember.tensor(0.0)
    with ember.no_grad():  # records nothing, so no detach per tensor (an op call each)
        device = tensors[0].device
        norms = []
        for group in _by_device_and_dtype(tensors):
            norms += ember._foreach_norm(group, norm_type)
        total = ember.linalg.vector_norm(ember.stack([n.to(device) for n in norms]), norm_type)
    if error_if_nonfinite and not bool(ember.isfinite(total).all()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    return total


def _grads(parameters) -> list:
    return [p.grad for p in _as_list(parameters) if p.grad is not None]


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None) -> None:
    """Scale the gradients by ``max_norm / (total_norm + 1e-6)`` when that is below 1."""
    grads = _grads(parameters)
    if not grads:
        return
    with ember.no_grad():
        coefficient = ember.clamp(float(max_norm) / (total_norm + 1e-6), max=1.0)
        for group in _by_device_and_dtype(grads):
            ember._foreach_mul_(group, coefficient.to(group[0].device))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale gradients so their total ``norm_type`` norm is at most ``max_norm``; returns the
    norm before clipping."""
    generator = isinstance(parameters, types.GeneratorType)
    parameters = _as_list(parameters)
    if generator and not parameters:
        warnings.warn(
            "`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=2
        )
    grads = _grads(parameters)
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated name of :func:`clip_grad_norm_`."""
    warnings.warn(
        "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
        "`torch.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None) -> None:
    """Clamp every gradient element into [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    with ember.no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
