"""Backward formulas of the convolution rows (conv1d, conv2d), PyTorch's ConvolutionBackward0.

The rows run as im2col and one product (nn/functional/conv.py). Differentiated through those
parts, the product saved its column matrix, N x C*kh*kw x L: for a 3x3 kernel nine times the
input (8.5 MiB of a 1.4 MiB input in the CNN of benchmarks/bench_training.py). These formulas
save the input and the weight, as PyTorch's node does, and rebuild the columns in the backward
for the weight's gradient only (PyTorch's CPU convolution also recomputes them there), a piece
of the batch at a time (``PIECE_BYTES``). Merged into the one table of autograd/formulas.py.
"""

from __future__ import annotations

import ember as E

from ..dispatcher.kinds.window import conv_padding, expand
from .formula import Formula as F  # noqa: N817 - the table reads better with one letter

# Bytes of column matrix per piece of the batch in the backward: the rebuilt columns and the
# columns' gradient are each about this large, never N x C*kh*kw x L whole (8.5 MiB each in
# the CNN of benchmarks/bench_training.py, whose allocator peak they set). The products are per
# sample either way. The forward keeps its one im2col: its peak is below the backward's, and
# pieces there cost 1 ms of the CNN's 18 ms step.
PIECE_BYTES = 2 << 20


def _piece(g, k: int, length: int) -> int:
    """Samples per piece: columns of ``k`` x ``length`` entries per sample, at least one."""
    return max(1, PIECE_BYTES // max(1, k * length * g.element_size()))


def _grads(ctx, batched, size, weight, g, stride, padding, dilation):
    """Gradients of a 2-D convolution ``(N, C, H, W) * (O, C/G, kh, kw)`` whose output gradient
    is ``g`` (N, O, oh, ow); ``size`` is (H, W), ``padding`` as conv_padding returns it. The
    input, ``batched(ctx.input)``, is read only for the weight's gradient: saved only then."""
    needs_x, needs_w = ctx.needs_input_grad[:2]
    padding, extra = padding
    n, out_c = g.shape[:2]
    groups, kernel = ctx.groups, tuple(weight.shape[2:])
    k = weight.shape[1] * kernel[0] * kernel[1]
    length = g.shape[2] * g.shape[3]
    per = out_c // groups
    gm = g.reshape(n * groups, per, length)  # (sample, group) pairs as bmm's batch
    x = wt = None
    if needs_w:
        x = batched(ctx.input)
        if extra:  # padding='same' with an odd total: the input was padded on the right first
            x = E.ops.constant_pad_nd(x, tuple(v for e in reversed(extra) for v in (0, e)), 0)
    if needs_x:
        wt = weight.reshape(groups, per, k).transpose(1, 2)  # (G, K, out/G)
        size = tuple(s + e for s, e in zip(size, extra or (0, 0)))
    step = _piece(g, groups * k, length)
    grad_w, grad_x = None, []
    # bmm on 3-d views, not matmul's broadcasting (40 us a call more, five pieces in the CNN)
    for i in range(0, max(n, 1), step):  # an empty batch: one empty piece
        m = min(step, n - i)
        piece = gm[i * groups : (i + m) * groups]
        if needs_w:
            cols = E.ops.im2col(x[i : i + m], kernel, dilation, padding, stride)
            part = E.bmm(piece, cols.view(m * groups, k, length).transpose(1, 2))
            del cols  # before the columns' gradient, as large, is made
            part = part.view(m, groups, per, k).sum(0)
            grad_w = part if grad_w is None else grad_w + part
        if needs_x:
            w3 = wt.expand(m, groups, k, per).reshape(m * groups, k, per)  # a view for 1 group
            cols = E.bmm(w3, piece).view(m, groups * k, length)
            grad_x.append(E.ops.col2im(cols, size, kernel, dilation, padding, stride))
            del cols
    if grad_w is not None:
        grad_w = grad_w.reshape(weight.shape)
    if not needs_x:
        return None, grad_w
    grad_x = grad_x[0] if len(grad_x) == 1 else E.cat(grad_x)
    if extra:
        grad_x = grad_x[:, :, : size[0] - extra[0], : size[1] - extra[1]]
    return grad_x, grad_w


def _bias(ctx, g, dims):
    return g.sum(dims) if ctx.needs_input_grad[2] else None


def _conv2d(ctx, g):
    weight = ctx.weight
    unbatched = len(ctx.shape("input")) == 3
    if unbatched:
        g = g.unsqueeze(0)
    kernel = tuple(weight.shape[2:])
    stride = expand(ctx.stride, 2, "stride", "conv2d")
    dilation = expand(ctx.dilation, 2, "dilation", "conv2d")
    padding = conv_padding("conv2d", ctx.padding, kernel, dilation, stride)

    def batched(x):
        return x.unsqueeze(0) if unbatched else x

    size = ctx.shape("input")[-2:]
    grad_x, grad_w = _grads(ctx, batched, size, weight, g, stride, padding, dilation)
    if grad_x is not None and unbatched:
        grad_x = grad_x.squeeze(0)
    return grad_x, grad_w, _bias(ctx, g, (0, 2, 3))


def _conv1d(ctx, g):
    """As a 2-D convolution over a height of 1, as the forward runs."""
    weight = ctx.weight
    unbatched = len(ctx.shape("input")) == 2
    if unbatched:
        g = g.unsqueeze(0)
    stride = expand(ctx.stride, 1, "stride", "conv1d")
    dilation = expand(ctx.dilation, 1, "dilation", "conv1d")
    padding, extra = conv_padding("conv1d", ctx.padding, tuple(weight.shape[2:]), dilation, stride)

    def batched(x):
        return (x.unsqueeze(0) if unbatched else x).unsqueeze(-2)

    grad_x, grad_w = _grads(
        ctx,
        batched,
        (1, ctx.shape("input")[-1]),
        weight.unsqueeze(-2),
        g.unsqueeze(-2),
        (1, *stride),
        ((0, *padding), None if extra is None else [0, *extra]),
        (1, *dilation),
    )
    if grad_x is not None:
        grad_x = grad_x.squeeze(-2).squeeze(0) if unbatched else grad_x.squeeze(-2)
    if grad_w is not None:
        grad_w = grad_w.squeeze(-2)
    return grad_x, grad_w, _bias(ctx, g, (0, 2))


# The input only for the weight's gradient (a first layer's input needs none); the weight always:
# its sizes shape the gradients.
SAVE = {"input": "weight", "weight": None}
FORMULAS = {"conv1d": F(_conv1d, save=SAVE), "conv2d": F(_conv2d, save=SAVE)}
