"""Connectionist temporal classification loss: the forward (alpha) and backward (beta)
recursions of Graves et al. in log space, vectorised over the batch and the extended label
positions, one step per time frame; the gradient is the alpha-beta posterior.

Log zero is a large negative finite number rather than -inf, so that logaddexp's gradient stays
finite on unreachable positions (exp(-inf - -inf) would be NaN); a loss that reached it is
infinite, as in PyTorch.
"""

from __future__ import annotations

import ember
from ember.autograd import Function
from ember.dispatcher.optable import OPS

_LOG_ZERO = -1e30
_IMPOSSIBLE = 1e29  # a loss above this went through _LOG_ZERO: no alignment exists


def _lengths(value, device) -> ember.Tensor:
    if isinstance(value, ember.Tensor):
        return value.reshape(-1).to(device=device, dtype=ember.int64)
    return ember.tensor(list(value), dtype=ember.int64, device=device)


def _padded_targets(targets, target_lengths):
    """(N, S_max) targets from the padded or the concatenated (1-D) layout."""
    if targets.ndim == 2:
        return targets
    lengths = target_lengths.tolist()
    longest = max(lengths, default=0)
    starts = [sum(lengths[:i]) for i in range(len(lengths))]
    position = ember.tensor(starts, device=targets.device).view(-1, 1) + ember.arange(
        longest, device=targets.device
    )
    return targets.reshape(-1)[position.clamp(max=max(targets.numel() - 1, 0))]


def _check(log_probs, targets, input_lengths, target_lengths, blank) -> None:
    steps, batch, classes = log_probs.shape
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    if input_lengths.numel() != batch:
        raise RuntimeError("input_lengths must be of size batch_size")
    if target_lengths.numel() != batch:
        raise RuntimeError("target_lengths must be of size batch_size")
    longest_input = int(input_lengths.max()) if batch else 0
    if longest_input > steps:
        raise RuntimeError(
            f"Expected input_lengths to have value at most {steps}, but got value "
            f"{longest_input} (while checking arguments for ctc_loss)"
        )
    longest_target = int(target_lengths.max()) if batch else 0
    if targets.ndim == 2 and targets.shape[1] < longest_target:
        raise RuntimeError(
            f"Expected tensor to have size at least {longest_target} at dimension 1, but got "
            f"size {targets.shape[1]} for argument #2 'targets' (while checking arguments for "
            "ctc_loss)"
        )


def _extended(targets, target_lengths, blank):
    """Labels with blanks around and between them, (N, 2 S + 1), and where a label may be
    reached from two positions back (it differs from the label before it)."""
    batch, longest = targets.shape
    device = targets.device
    beyond = ember.arange(longest, device=device) >= target_lengths.view(-1, 1)
    labels = targets.to(ember.int64).masked_fill(beyond, blank)
    ext = ember.stack([ember.full_like(labels, blank), labels], 2).reshape(batch, 2 * longest)
    ext = OPS["constant_pad_nd"](ext, (0, 1), blank)
    previous = OPS["constant_pad_nd"](ext[:, :-2], (2, 0), blank)
    skip = (ext != blank) & (ext != previous)
    return ext, skip


def _shift(alpha, by: int):
    """Each position takes the value ``by`` positions before it (log zero at the start)."""
    return OPS["constant_pad_nd"](alpha[:, : alpha.shape[1] - by], (by, 0), _LOG_ZERO)


def _unshift(beta, by: int):
    """Each position takes the value ``by`` positions after it (log zero at the end)."""
    return OPS["constant_pad_nd"](beta[:, by:], (0, by), _LOG_ZERO)


def _alphas(emit, skip, input_lengths, log_zero):
    """alpha_t for every frame t (T, N, L): log-probabilities of the label prefixes ending at
    each extended position; frozen past each sample's length."""
    steps, batch, width = emit.shape
    position = ember.arange(width, device=emit.device)
    if steps:
        alpha = ember.where(position < 2, emit[0], log_zero)
    else:
        alpha = ember.full((batch, width), _LOG_ZERO, dtype=emit.dtype, device=emit.device)
    # an empty input has probability 1 of the empty target: alpha = log 1 on the first blank
    alpha = ember.where((input_lengths == 0).view(-1, 1) & (position == 0), 0.0, alpha)
    alphas = [alpha]
    for t in range(1, steps):
        reach = ember.logaddexp(alpha, _shift(alpha, 1))
        reach = ember.logaddexp(reach, ember.where(skip, _shift(alpha, 2), log_zero))
        alpha = ember.where((input_lengths > t).view(-1, 1), reach + emit[t], alpha)
        alphas.append(alpha)
    return ember.stack(alphas) if steps else alpha.unsqueeze(0)


def _betas(emit, skip, input_lengths, ends, log_zero):
    """beta_t (T, N, L): log-probabilities of the label suffixes from each extended position
    at frame t to the end of each sample (log zero past it)."""
    steps = emit.shape[0]
    skip_after = OPS["constant_pad_nd"](skip[:, 2:], (0, 2), False)  # s -> s + 2 allowed
    last_frame = (input_lengths - 1).view(-1, 1)
    beta = ember.full(emit.shape[1:], _LOG_ZERO, dtype=emit.dtype, device=emit.device)
    betas = [None] * steps
    for t in range(steps - 1, -1, -1):
        reach = ember.logaddexp(beta, _unshift(beta, 1))
        reach = ember.logaddexp(reach, ember.where(skip_after, _unshift(beta, 2), log_zero))
        start = ember.where(ends, emit[t], log_zero)
        beta = ember.where(
            last_frame == t, start, ember.where(last_frame > t, reach + emit[t], log_zero)
        )
        betas[t] = beta
    return ember.stack(betas)


class _LogLikelihood(Function):
    """log p(target | input) per sample by the alpha recursion, and its gradient with respect
    to the log-probabilities from the alpha-beta posteriors (Graves et al., eq. 14): one pass
    each way over the frames, without recording a graph of every step."""

    @staticmethod
    def forward(ctx, log_probs, ext, skip, input_lengths, target_lengths):
        steps, batch, _ = log_probs.shape
        emit = log_probs.gather(2, ext.unsqueeze(0).expand(steps, batch, ext.shape[1]))
        log_zero = ember.full((), _LOG_ZERO, dtype=log_probs.dtype, device=log_probs.device)
        alphas = _alphas(emit, skip, input_lengths, log_zero)
        last = (2 * target_lengths).view(-1, 1)
        final = alphas[-1]
        end_blank = final.gather(1, last).squeeze(1)
        end_label = final.gather(1, (last - 1).clamp(min=0)).squeeze(1)
        end_label = ember.where(target_lengths > 0, end_label, log_zero)
        ll = ember.logaddexp(end_blank, end_label)
        ctx.save_for_backward(emit, alphas, ext, skip, input_lengths, target_lengths, ll)
        ctx.classes = log_probs.shape[2]
        return ll

    @staticmethod
    def backward(ctx, grad):
        emit, alphas, ext, skip, input_lengths, target_lengths, ll = ctx.saved_tensors
        steps, batch, width = emit.shape
        log_zero = ember.full((), _LOG_ZERO, dtype=emit.dtype, device=emit.device)
        position = ember.arange(width, device=emit.device)
        last = (2 * target_lengths).view(-1, 1)
        ends = (position == last) | ((position == last - 1) & (target_lengths > 0).view(-1, 1))
        betas = _betas(emit, skip, input_lengths, ends, log_zero)
        frames = ember.arange(steps, device=emit.device).view(-1, 1, 1)
        possible = (ll > -_IMPOSSIBLE) & (input_lengths > 0)
        inside = (frames < input_lengths.view(1, -1, 1)) & possible.view(1, -1, 1)
        # d ll / d emit_t(s) = exp(alpha_t(s) + beta_t(s) - emit_t(s) - ll): the posterior
        posterior = ember.exp(alphas + betas - emit - ll.view(1, -1, 1))
        weight = ember.where(possible, grad, 0.0).view(1, -1, 1)
        posterior = ember.where(inside, posterior, 0.0) * weight
        index = ext.unsqueeze(0).expand(steps, batch, width)
        zeros = ember.zeros(steps, batch, ctx.classes, dtype=emit.dtype, device=emit.device)
        return zeros.scatter_add(2, index, posterior), None, None, None, None


def _softmax_gradient(log_probs, input_lengths):
    """Zero, whose gradient is ``exp(log_probs)`` on each sample's frames. PyTorch's CTC
    backward returns ``exp(log_probs) - posteriors``, the gradient with respect to the logits
    under a log_softmax (whose backward then passes it unchanged, as it sums to 0 per frame),
    instead of ``-posteriors``; adding this term gives the same gradient for any input."""
    frames = ember.arange(log_probs.shape[0], device=log_probs.device).view(-1, 1)
    active = (frames < input_lengths.view(1, -1)).to(log_probs.dtype)
    mass = (ember.exp(log_probs).sum(2) * active).sum(0)
    return mass - mass.detach()


def ctc_loss(
    log_probs,
    targets,
    input_lengths,
    target_lengths,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
):
    """CTC loss of ``log_probs`` (T, N, C) (or unbatched (T, C)) against ``targets``, padded
    (N, S) or concatenated (sum(target_lengths),); lengths as tensors or sequences.

    ``reduction='mean'`` divides each loss by its target length, then averages over the batch;
    ``zero_infinity`` turns impossible alignments' infinite losses (and gradients) into zeros.
    """
    batched = log_probs.ndim == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    device = lp.device
    input_lengths = _lengths(input_lengths, device)
    target_lengths = _lengths(target_lengths, device)
    if not batched and targets.ndim == 1:
        targets = targets.unsqueeze(0)
    _check(lp, targets, input_lengths, target_lengths, blank)
    padded = _padded_targets(targets, target_lengths)
    ext, skip = _extended(padded, target_lengths, blank)
    loss = -_LogLikelihood.apply(lp, ext, skip, input_lengths, target_lengths)
    loss = loss + _softmax_gradient(lp, input_lengths)
    impossible = loss > _IMPOSSIBLE
    loss = ember.where(impossible, 0.0 if zero_infinity else float("inf"), loss)
    if reduction == "mean":
        return (loss / target_lengths.clamp(min=1).to(loss.dtype)).mean()
    if reduction == "sum":
        return loss.sum()
    if reduction != "none":
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return loss if batched else loss.squeeze(0)
