"""Dropout: elementwise, channel-wise (dropout1d/2d/3d) and the self-normalising alpha forms.

Every form is one multiply by a mask (plus one add for the alpha forms), the mask drawn per
element or per (sample, channel) and broadcast over the rest, as PyTorch's kernels do.
"""

from __future__ import annotations

import math
import warnings

import ember

# SELU's alpha * scale: the value a dropped unit takes in alpha dropout, before the affine fix.
_ALPHA_SELU = 1.7580993408473766


def _check_p(p) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input, p, per_channel: bool):
    """1.0 where kept (probability 1 - p), 0.0 elsewhere: per element, or per (N, C) with
    ones for the other dims so it broadcasts."""
    shape = input.shape
    if per_channel:
        shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return (ember.rand(shape, dtype=input.dtype, device=input.device) >= p).to(input.dtype)


def _dropout(input, p, training, inplace, per_channel=False, alpha=False):
    """PyTorch's _dropout_impl: identity in eval (or p == 0 or empty), zeros at p == 1, else
    ``x * mask / (1 - p)`` or, for the alpha forms, ``x * a mask + b`` with ``a``, ``b`` keeping
    zero mean and unit variance of SELU activations."""
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        out = input * 0
    else:
        mask = _keep_mask(input, p, per_channel)
        if alpha:
            a = 1.0 / math.sqrt((_ALPHA_SELU**2 * p + 1) * (1 - p))
            shift = (mask - 1) * (_ALPHA_SELU * a) + _ALPHA_SELU * a * p
            out = input * (mask * a) + shift
        else:
            out = input * mask.mul_(1.0 / (1.0 - p))
    return input.copy_(out) if inplace else out


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero elements with probability ``p`` and scale the rest by 1/(1-p) (identity in eval)."""
    return _dropout(input, p, training, inplace)


def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Dropout that keeps the mean and variance of SELU outputs: dropped units take SELU's
    negative saturation, then an affine map restores the statistics."""
    return _dropout(input, p, training, inplace, alpha=True)


def feature_alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Alpha dropout of whole channels (dim 1) of each sample."""
    return _dropout(input, p, training, inplace, per_channel=True, alpha=True)


def _channel_dropout(input, p, training, inplace, batched_rank):
    """dropout1d/2d/3d: whole channels; an unbatched input (one dim less) gets a batch of one."""
    _check_p(p)
    batched = input.ndim == batched_rank
    x = input if batched else input.unsqueeze(0)
    out = _dropout(x, p, training, False, per_channel=True)
    if not batched:
        out = out.squeeze(0)
    return input.copy_(out) if inplace and out is not input else out


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of (N, C, L) or (C, L) with probability ``p``."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs)."
        )
    return _channel_dropout(input, p, training, inplace, 3)


def _warn_rank(name, input, ranks, spatial) -> None:
    if input.ndim not in ranks:
        warnings.warn(
            f"{name}: Received a {input.ndim}-D input to {name}, which is deprecated and will "
            f"result in an error in a future release. To retain the behavior and silence this "
            f"warning, please use dropout instead. Note that {name} exists to provide "
            f"channel-wise dropout on inputs with {spatial} spatial dimensions, a channel "
            f"dimension, and an optional batch dimension (i.e. {ranks[0]}D or {ranks[1]}D "
            "inputs).",
            stacklevel=3,
        )


def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of (N, C, H, W) with probability ``p``. A 3-D input is taken as
    (N, C, L), PyTorch's historical behaviour (with its warning)."""
    _check_p(p)
    _warn_rank("dropout2d", input, (3, 4), 2)
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    out = _dropout(input, p, training, False, per_channel=True)
    return input.copy_(out) if inplace and out is not input else out


def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability ``p``."""
    _check_p(p)
    _warn_rank("dropout3d", input, (4, 5), 3)
    return _channel_dropout(input, p, training, inplace, 5)
