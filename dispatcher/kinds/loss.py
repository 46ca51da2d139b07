"""Runners of nll_loss's forward and backward rows (ATen's ``nll_loss_forward`` and
``nll_loss_backward``; ``nll_loss2d``'s trailing dims in the same rows).

Each calls the device's kernel for a call it covers: a float input whose kernel the backend
has, an int64 target of the expected shape, class weights of the input's dtype (or none), all
on one device. Anything else (errors included: the decomposition words them as PyTorch does)
runs the row's decomposition after the functional rows' argument checks: the composite of
gather, masks and sums that any device runs.
The transforms (vmap, forward AD) and ember.compile's traces see the decomposition too
(``fused``), so the compiler's cross-entropy fusion still finds its gather.
"""

from __future__ import annotations

import math

from ember import _dtype as dt
from ember._tensor import Tensor, empty

from ._common import contiguous
from .functional import run as _checked_decomposition


def _geometry(x: Tensor, target: Tensor, weight, device):
    """``(n, c, inner)`` when the kernel takes this call as it is, else None. An unbatched
    (C,) input is one sample; (N, C, d1, ...) has d1 * ... targets per sample."""
    shape = x._shape
    if not shape or target._dtype is not dt.int64 or target._storage.device is not device:
        return None
    batched = len(shape) > 1
    expected = ((shape[0],) + shape[2:]) if batched else ()
    if target._shape != expected:
        return None
    c = shape[1] if batched else shape[0]
    if weight is not None and (
        not isinstance(weight, Tensor)
        or weight._dtype is not x._dtype
        or weight._shape != (c,)
        or weight._storage.device is not device
    ):
        return None
    if c == 0:  # no classes: the decomposition's (gather's) error
        return None
    return (shape[0] if batched else 1), c, math.prod(shape[2:])


def nll_loss_forward(op, x, target, weight, reduction, ignore_index):
    """``kernel(output, total_weight, x, target, weight, (n, c, inner), reduction,
    ignore_index)``: the losses (reduction 0: target's shape) or their sum or mean, and the
    summed weight of the targets that count."""
    args = (x, target, weight, reduction, ignore_index)
    if not (isinstance(x, Tensor) and isinstance(target, Tensor)) or reduction not in (0, 1, 2):
        return _checked_decomposition(op, *args)
    device = x._storage.device
    kernel = op.kernel(device.type, x._dtype)
    geometry = None if kernel is None else _geometry(x, target, weight, device)
    if geometry is None or not isinstance(ignore_index, int):
        return _checked_decomposition(op, *args)
    out = empty(target._shape if reduction == 0 else (), x._dtype, device)
    if len(x._shape) == 1:  # one sample: its loss is the sum's, and PyTorch counts its weight
        reduction = 2 if reduction == 0 else reduction
    total_weight = empty((), x._dtype, device)
    target = contiguous(target)
    try:
        kernel(out, total_weight, contiguous(x), target,
               None if weight is None else contiguous(weight), geometry, reduction,
               ignore_index)  # fmt: skip
    except IndexError:  # a class out of range: the decomposition's error (gather's, as the
        return _checked_decomposition(op, *args)  # compiled cross-entropy kernel words it)
    return out, total_weight


def nll_loss_backward(op, grad_output, x, target, weight, reduction, ignore_index, total_weight):
    """``kernel(grad_input, grad_output, target, weight, total_weight, (n, c, inner),
    reduction, ignore_index)``: grad_input of x's shape, zero but at each counted target."""
    args = (grad_output, x, target, weight, reduction, ignore_index, total_weight)
    tensors = (grad_output, x, target, total_weight)
    if not all(isinstance(t, Tensor) for t in tensors) or reduction not in (0, 1, 2):
        return _checked_decomposition(op, *args)
    device = x._storage.device
    kernel = op.kernel(device.type, x._dtype)
    geometry = None if kernel is None else _geometry(x, target, weight, device)
    same = all(
        t._dtype is x._dtype and t._storage.device is device for t in (grad_output, total_weight)
    )
    expected = target._shape if reduction == 0 else ()
    if geometry is None or not same or grad_output._shape != expected or total_weight._shape:
        return _checked_decomposition(op, *args)
    if not isinstance(ignore_index, int):
        return _checked_decomposition(op, *args)
    grad_input = empty(x._shape, x._dtype, device)
    target = contiguous(target)
    try:
        kernel(grad_input, contiguous(grad_output), target,
               None if weight is None else contiguous(weight), total_weight, geometry,
               reduction, ignore_index)  # fmt: skip
    except IndexError:
        return _checked_decomposition(op, *args)
    return grad_input


for _runner in (nll_loss_forward, nll_loss_backward):
    _runner.fused = True
