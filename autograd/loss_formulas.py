"""Backward formulas of nll_loss's rows (dispatcher/optable/loss_nll.py), PyTorch's
derivatives.yaml entries: ``nll_loss_forward``'s input gradient is ``nll_loss_backward`` (with
the ``total_weight`` the forward returned), and ``nll_loss_backward``, linear in its gradient,
differentiates to ``nll_loss_forward`` of the incoming gradient (its input's gradient is zero).
The target and the class weights take no gradient here, as in PyTorch; ``nll_loss`` with
weights that require grad runs the composite instead (nn/functional/_nll.py). Merged into the
one table of autograd/formulas.py.
"""

from __future__ import annotations

import ember as E

from .formula import Formula as F  # noqa: N817 - the table reads better with one letter


def _nll_loss_forward(ctx, g, g_total_weight=None):
    if g is None:  # only total_weight's gradient: not a differentiable output
        return None, None, None
    grad = E.ops.nll_loss_backward(
        g, ctx.input, ctx.target, ctx.weight, ctx.reduction, ctx.ignore_index, ctx.result[1]
    )
    return grad, None, None


def _nll_loss_backward(ctx, g):
    """The mean's total weight is the forward's own (same targets and weights)."""
    grad_output = E.ops.nll_loss_forward(
        g, ctx.target, ctx.weight, ctx.reduction, ctx.ignore_index
    )[0]
    # PyTorch's zeros_like(grad): an edge to the input (autograd.grad finds it used)
    zero = E.zeros_like(g) if ctx.needs_input_grad[1] else None
    return grad_output, zero, None, None, None


FORMULAS = {
    "nll_loss_forward": F(_nll_loss_forward, save=("input", "target", "weight", "result")),
    "nll_loss_backward": F(_nll_loss_backward, save=("target", "weight")),
}
