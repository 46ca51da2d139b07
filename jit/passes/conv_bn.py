"""Batch norm folded into the convolution before it.

In eval mode ``batch_norm`` is a per-channel scale and shift (``x * s + t``); once a graph is
frozen and folded, ``s`` and ``t`` are constants, and so are the convolution's weight and bias.
Then ``conv2d(x, W, b) * s + t`` is ``conv2d(x, W * s, b * s + t)``: one node instead of three
passes over the activation. The rewrite applies to any constant per-channel multiply or add
right after a convolution whose result nothing else reads, so a bare scale or bias folds too.
"""

from __future__ import annotations

import math

from ember._tensor import Tensor
from ember.autograd import no_grad

from ..types import TensorType
from .constant_fold import constant_value
from .dce import eliminate_dead_code

_CONV = "ember::conv2d"


def fold_conv_batch_norm(graph):
    """Fold constant per-channel multiplies and adds into the convolutions before them."""
    with no_grad():
        changed = True
        while changed:
            changed = any(_fold(graph, node) for node in list(graph.all_nodes()))
    eliminate_dead_code(graph)
    return graph


def _fold(graph, node) -> bool:
    if node.kind() not in ("ember::mul", "ember::add"):
        return False
    found = _conv_and_constant(node)
    if found is None:
        return False
    conv, channel_values = found
    weight, bias = constant_value(conv.inputsAt(1)), constant_value(conv.inputsAt(2))
    if node.kind() == "ember::mul":
        scale = channel_values
        weight = weight * scale.view(-1, *([1] * (weight.ndim - 1)))
        bias = None if bias is None else bias * scale
    else:
        bias = channel_values if bias is None else bias + channel_values
    with graph.insert_point_guard(node):
        inputs = conv.inputs()
        inputs[1] = graph.insertConstant(weight, TensorType.of(weight))
        inputs[2] = graph.insertConstant(bias, None if bias is None else TensorType.of(bias))
        folded = graph.insert(_CONV, inputs)
    folded.setScope(conv.scopeName()).setSourceRange(conv.sourceRange())
    folded.output().setType(node.output().type())
    node.output().replaceAllUsesWith(folded.output())
    node.destroy()  # the multiply or add, then the convolution only it read
    conv.destroy()
    return True


def _conv_and_constant(node):
    """``(conv node, per-channel values [C])`` when ``node`` combines a convolution that only it
    reads with a constant that varies along the channel dim only (or not at all)."""
    for conv_side, const_side in ((0, 1), (1, 0)):
        conv = node.inputsAt(conv_side).node()
        other = node.inputsAt(const_side)
        if conv.kind() != _CONV or len(conv.output().uses()) != 1:
            continue
        if other.node().kind() != "prim::Constant":
            continue
        if not _constant_weights(conv):
            continue
        weight = constant_value(conv.inputsAt(1))
        values = _per_channel(constant_value(other), conv.output().type(), weight)
        if values is not None:
            return conv, values
    return None


def _constant_weights(conv) -> bool:
    weight = conv.inputsAt(1).node()
    bias = conv.inputsAt(2).node()
    return weight.kind() == "prim::Constant" and bias.kind() == "prim::Constant"


def _per_channel(t, out_type, weight):
    """``t`` as [C] when multiplying or adding it to the conv output touches channels only."""
    if not isinstance(t, Tensor) or t.dtype is not weight.dtype or t.device != weight.device:
        return None
    channels = weight.shape[0]
    rank = out_type.dim() if isinstance(out_type, TensorType) else None
    if rank is None or t.ndim > rank:
        return None
    if t.numel() == 1:
        return t.reshape(1).expand(channels).contiguous()
    # The conv output's channel axis is -3 ((N, C, H, W) or unbatched (C, H, W)).
    if t.ndim < 3 or t.shape[-3] != channels or math.prod(t.shape) != channels:
        return None
    return t.reshape(channels)
