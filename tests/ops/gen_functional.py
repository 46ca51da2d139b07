"""Sample generators for the nn.functional rows: linear, convolutions, attention, group_norm and
the losses (optable/functional.py)."""

from __future__ import annotations

import numpy as np

from .sampling import Arr, Sample, arr, call_args

C, T, S, N = "contiguous", "transposed", "sliced", "negative"
REDUCTIONS = ("mean", "sum", "none")


def linear(op, dtype, device, rng):
    for shape, bias, layout in (((4, 5), True, C), ((2, 3, 5), False, T), ((5,), True, S)):
        w = arr(dtype, (3, 5), rng, T, low=-1.0, high=1.0)
        b = arr(dtype, (3,), rng) if bias else None
        x = arr(dtype, shape, rng, layout, low=-1.0, high=1.0)
        yield Sample(call_args(op, input=x, weight=w, bias=b))


def bilinear(op, dtype, device, rng):
    for lead, bias in (((4,), True), ((2, 3), False)):
        x1 = arr(dtype, lead + (3,), rng, low=-1.0, high=1.0)
        x2 = arr(dtype, lead + (2,), rng, low=-1.0, high=1.0)
        w = arr(dtype, (4, 3, 2), rng, low=-1.0, high=1.0)
        b = arr(dtype, (4,), rng) if bias else None
        yield Sample(call_args(op, input1=x1, input2=x2, weight=w, bias=b))


# (input shape, weight shape, stride, padding, dilation, groups)
CONV2D = (
    ((1, 1, 4, 4), (2, 1, 2, 2), 1, 1, 1, 1),
    ((1, 2, 5, 5), (3, 2, 3, 3), 1, 1, 1, 1),
    ((2, 4, 6, 7), (4, 2, 2, 3), (2, 1), (0, 1), (1, 2), 2),
    ((3, 5, 5), (2, 3, 1, 1), 1, 0, 1, 1),
)


def conv2d(op, dtype, device, rng):
    for i, (x_shape, w_shape, stride, padding, dilation, groups) in enumerate(CONV2D):
        x = arr(dtype, x_shape, rng, S if i else C, low=-1.0, high=1.0)
        w = arr(dtype, w_shape, rng, low=-1.0, high=1.0)
        b = arr(dtype, (w_shape[0],), rng)
        yield Sample(call_args(op, input=x, weight=w, bias=b, stride=stride, padding=padding,
                               dilation=dilation, groups=groups))  # fmt: skip


def conv1d(op, dtype, device, rng):
    for x_shape, w_shape, stride, padding, groups in (
        ((2, 2, 7), (3, 2, 3), 1, 1, 1),
        ((4, 9), (2, 2, 2), 2, 0, 2),
    ):
        x = arr(dtype, x_shape, rng, low=-1.0, high=1.0)
        w = arr(dtype, w_shape, rng, low=-1.0, high=1.0)
        yield Sample(call_args(op, input=x, weight=w, stride=stride, padding=padding,
                               groups=groups))  # fmt: skip


def conv_transpose2d(op, dtype, device, rng):
    for x_shape, w_shape, stride, padding, out_pad, groups, dilation in (
        ((1, 2, 3, 3), (2, 3, 2, 2), 1, 0, 0, 1, 1),
        ((2, 4, 3, 4), (4, 1, 3, 2), 2, 1, 1, 2, 1),
        ((2, 3, 3), (2, 2, 2, 2), 1, 0, 0, 1, 2),
    ):
        x = arr(dtype, x_shape, rng, low=-1.0, high=1.0)
        w = arr(dtype, w_shape, rng, low=-1.0, high=1.0)
        b = arr(dtype, (w_shape[1] * groups,), rng)
        yield Sample(call_args(op, input=x, weight=w, bias=b, stride=stride, padding=padding,
                               output_padding=out_pad, groups=groups,
                               dilation=dilation))  # fmt: skip


def attention(op, dtype, device, rng):
    q = arr(dtype, (2, 3, 4), rng, low=-1.0, high=1.0)
    k = arr(dtype, (2, 5, 4), rng, low=-1.0, high=1.0)
    v = arr(dtype, (2, 5, 3), rng, T, low=-1.0, high=1.0)
    yield Sample(call_args(op, query=q, key=k, value=v))
    yield Sample(call_args(op, query=q, key=k, value=v, scale=0.3,
                           attn_mask=Arr(rng.random((3, 5)) < 0.8)))  # fmt: skip
    square = arr(dtype, (1, 2, 4, 3), rng, low=-1.0, high=1.0)
    yield Sample(call_args(op, query=square, key=square, value=square, is_causal=True))
    mask = arr(dtype, (4, 4), rng, low=-1.0, high=0.0)
    yield Sample(call_args(op, query=square, key=square, value=square, attn_mask=mask))


def group_norm(op, dtype, device, rng):
    for shape, groups, affine in (
        ((2, 4, 3), 2, True),
        ((3, 6, 2, 2), 3, False),
        ((1, 4), 4, True),
    ):
        x = arr(dtype, shape, rng, low=-2.0, high=2.0)
        w = arr(dtype, (shape[1],), rng, low=0.5, high=1.5) if affine else None
        b = arr(dtype, (shape[1],), rng) if affine else None
        yield Sample(call_args(op, input=x, num_groups=groups, weight=w, bias=b))


def pair_loss(op, dtype, device, rng):
    """mse/l1/smooth_l1/huber and cosine_similarity: two float tensors of one shape."""
    for shape, reduction, weighted in (((4, 3), "mean", False), ((5,), "sum", True),
                                       ((2, 3, 2), "none", False)):  # fmt: skip
        x = arr(dtype, shape, rng, T if len(shape) > 1 else C)
        t = arr(dtype, shape, rng)
        w = arr(dtype, shape, rng, low=0.0, high=2.0) if weighted else None
        yield Sample(call_args(op, input=x, target=t, x1=x, x2=t, dim=-1, reduction=reduction,
                               weight=w, beta=0.5, delta=1.5))  # fmt: skip


def kl_div(op, dtype, device, rng):
    for reduction, log_target in (("batchmean", False), ("sum", True), ("none", False)):
        x = arr(dtype, (3, 4), rng, low=-3.0, high=0.0)
        t = (
            arr(dtype, (3, 4), rng, low=-3.0, high=0.0)
            if log_target
            else arr(dtype, (3, 4), rng, low=0.0, high=1.0, zeros=0.2)
        )
        yield Sample(call_args(op, input=x, target=t, reduction=reduction, log_target=log_target))


def probability_loss(op, dtype, device, rng):
    """binary_cross_entropy (input in (0, 1)) and with_logits (any input)."""
    logits = op.name.endswith("logits")
    for shape, reduction, weighted in (((4, 3), "mean", True), ((5,), "none", False)):
        low, high = (-3.0, 3.0) if logits or not dtype.is_floating_point else (0.05, 0.95)
        x = arr(dtype, shape, rng, low=low, high=high)
        t = arr(dtype, shape, rng, low=0.0, high=1.0)
        w = arr(dtype, shape[-1:], rng, low=0.5, high=2.0) if weighted else None
        pos = arr(dtype, shape[-1:], rng, low=0.5, high=2.0) if weighted else None
        yield Sample(call_args(op, input=x, target=t, weight=w, pos_weight=pos,
                               reduction=reduction))  # fmt: skip


def _classes(rng, shape, classes, ignore):
    """Class indices; a quarter set to ``ignore`` when it is a class (it is then ignored)."""
    out = rng.integers(0, classes, shape).astype(np.int64)
    if 0 <= ignore < classes:
        out[rng.random(shape) < 0.25] = ignore
    return Arr(out)


# (input shape, reduction, class weights, ignore_index)
CLASS_CASES = (
    ((4, 3), "mean", True, 1),
    ((2, 3, 2), "sum", False, -100),
    ((3,), "none", False, -100),
)


def class_loss(op, dtype, device, rng):
    """nll_loss and cross_entropy_loss: (N, C), (N, C, d) and unbatched (C,) inputs, class
    weights, ignore_index; cross entropy also with probabilities and label smoothing."""
    entropy = op.name == "cross_entropy_loss"
    low, high = (-3.0, 3.0) if entropy else (-4.0, 0.0)
    for shape, reduction, weighted, ignore in CLASS_CASES:
        classes = shape[1] if len(shape) > 1 else shape[0]
        target_shape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
        x = arr(dtype, shape, rng, low=low, high=high)
        w = arr(dtype, (classes,), rng, low=0.5, high=2.0) if weighted else None
        smoothing = 0.1 if entropy and weighted else 0.0
        yield Sample(call_args(op, input=x, target=_classes(rng, target_shape, classes, ignore),
                               weight=w, reduction=reduction, ignore_index=ignore,
                               label_smoothing=smoothing))  # fmt: skip
    if entropy:
        x = arr(dtype, (3, 4), rng, low=-3.0, high=3.0)
        probs = rng.random((3, 4))
        probs = Arr((probs / probs.sum(1, keepdims=True)).astype(dtype.np))
        yield Sample(call_args(op, input=x, target=probs, label_smoothing=0.2))


_REDUCTION_CODES = {"none": 0, "mean": 1, "sum": 2}


def nll_loss_forward(op, dtype, device, rng):
    """nll_loss's forward row: the class-loss cases with at::Reduction's ints."""
    for shape, reduction, weighted, ignore in CLASS_CASES + (((2, 3, 2, 2), "mean", True, 0),):
        classes = shape[1] if len(shape) > 1 else shape[0]
        target_shape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
        x = arr(dtype, shape, rng, low=-4.0, high=0.0)
        w = arr(dtype, (classes,), rng, low=0.5, high=2.0) if weighted else None
        target = _classes(rng, target_shape, classes, ignore)
        code = _REDUCTION_CODES[reduction]
        if op.name == "nll_loss_forward":
            yield Sample(call_args(op, input=x, target=target, weight=w, reduction=code,
                                   ignore_index=ignore))  # fmt: skip
            continue
        grad_shape = target_shape if code == 0 else ()
        grad = arr(dtype, grad_shape, rng, low=-1.0, high=1.0)
        valid = target.values != ignore
        safe = np.where(valid, target.values, 0)
        picked = 1.0 if w is None else w.values.astype(np.float64)[safe]
        total = (valid * picked).sum()
        yield Sample(call_args(op, grad_output=grad, input=x, target=target, weight=w,
                               reduction=code, ignore_index=ignore,
                               total_weight=Arr(np.asarray(total, dtype.np))))  # fmt: skip


def cosine_embedding_loss(op, dtype, device, rng):
    for shape, reduction in (((4, 3), "mean"), ((5,), "none")):
        x1 = arr(dtype, shape, rng, low=-2.0, high=2.0, nonzero=True)
        x2 = arr(dtype, shape, rng, low=-2.0, high=2.0, nonzero=True)
        count = shape[0] if len(shape) > 1 else ()
        target = Arr(np.where(rng.random(count) < 0.5, 1, -1).astype(np.int64))
        yield Sample(call_args(op, input1=x1, input2=x2, target=target, margin=0.1,
                               reduction=reduction))  # fmt: skip


GENERATORS = {
    "linear": linear,
    "bilinear": bilinear,
    "conv1d": conv1d,
    "conv2d": conv2d,
    "conv_transpose2d": conv_transpose2d,
    "attention": attention,
    "group_norm": group_norm,
    "pair_loss": pair_loss,
    "kl_div": kl_div,
    "probability_loss": probability_loss,
    "class_loss": class_loss,
    "nll_loss_forward": nll_loss_forward,
    "nll_loss_backward": nll_loss_forward,
    "cosine_embedding_loss": cosine_embedding_loss,
}
