"""linear, bilinear, embedding, dropout, one_hot."""

from __future__ import annotations

import ember
from ember.dispatcher.optable import OPS


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``; input (*, in_features), weight (out_features, in_features)."""
    if input.shape[-1] != weight.shape[-1]:
        raise RuntimeError(
            f"linear: input features {input.shape[-1]} don't match weight {list(weight.shape)} "
            f"(input shape {list(input.shape)})"
        )
    if input.ndim == 2:
        out = OPS["mm"](input, weight.t())
    else:
        out = OPS["mm"](input.reshape(-1, input.shape[-1]), weight.t())
        out = out.view(*input.shape[:-1], weight.shape[0])
    return out if bias is None else out + bias


def bilinear(input1, input2, weight, bias=None):
    """``y_k = x1^T W_k x2 + b_k``; weight (out, in1, in2)."""
    out = ember.einsum(
        "bi,kij,bj->bk",
        input1.reshape(-1, input1.shape[-1]),
        weight,
        input2.reshape(-1, input2.shape[-1]),
    )
    out = out.view(*input1.shape[:-1], weight.shape[0])
    return out if bias is None else out + bias


def embedding(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    """Rows of ``weight`` at the integer indices ``input``; ``padding_idx`` rows get no gradient."""
    if input.dtype.is_floating_point:
        raise RuntimeError(
            f"embedding: Expected tensor for argument 'indices' to have one of the following "
            f"scalar types: Long, Int; but got {input.dtype.name} instead"
        )
    if max_norm is not None:  # renormalise the looked-up rows in place, as PyTorch does
        with ember.no_grad():
            used = input.reshape(-1).unique()
            rows = weight[used]
            norms = rows.norm(norm_type, dim=1, keepdim=True)
            weight[used] = rows * ember.clamp(max_norm / (norms + 1e-7), max=1.0)
    if padding_idx is not None and weight.requires_grad:
        mask = (input != (padding_idx % weight.shape[0])).unsqueeze(-1).to(weight.dtype)
        picked = OPS["index_select"](weight, 0, input.reshape(-1)).view(*input.shape, -1)
        return picked * mask + picked.detach() * (1 - mask)
    return OPS["index_select"](weight, 0, input.reshape(-1)).view(*input.shape, weight.shape[1])


def embedding_bag(
    input,
    weight,
    offsets=None,
    max_norm=None,
    norm_type=2,
    scale_grad_by_freq=False,
    mode="mean",
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=None,
):
    """Sums / means / maxes of embedding rows per bag (2-D input, or 1-D input with offsets)."""
    if input.ndim == 2:
        bags = [input[i] for i in range(input.shape[0])]
    else:
        if offsets is None:
            raise ValueError("embedding_bag: offsets are required for 1-D input")
        starts = offsets.tolist()
        ends = starts[1:] + ([] if include_last_offset else [input.shape[0]])
        if include_last_offset:
            starts = starts[:-1]
        bags = [input[s:e] for s, e in zip(starts, ends)]
    out = []
    for i, bag in enumerate(bags):
        rows = embedding(bag, weight, padding_idx)
        if per_sample_weights is not None:
            weights = (
                per_sample_weights[i]
                if input.ndim == 2
                else per_sample_weights[starts[i] : starts[i] + bag.shape[0]]
            )
            rows = rows * weights.unsqueeze(-1)
        if padding_idx is not None:
            keep = (bag != padding_idx).unsqueeze(-1).to(rows.dtype)
            rows = rows * keep
            count = keep.sum()
        else:
            count = bag.shape[0]
        if bag.shape[0] == 0:
            out.append(ember.zeros(weight.shape[1], dtype=weight.dtype, device=weight.device))
        elif mode == "sum":
            out.append(rows.sum(0))
        elif mode == "mean":
            out.append(rows.sum(0) / count)
        elif mode == "max":
            out.append(rows.amax(0))
        else:
            raise ValueError(f"embedding_bag: mode must be 'sum', 'mean' or 'max', got '{mode}'")
    return ember.stack(out)


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero elements with probability ``p`` and scale the rest by 1/(1-p) (identity in eval)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0
    else:
        keep = ember.rand(input.shape, dtype=input.dtype, device=input.device) >= p
        out = input * keep.to(input.dtype) * (1.0 / (1.0 - p))
    return input.copy_(out) if inplace else out


def one_hot(tensor, num_classes: int = -1):
    """int64 tensor with a trailing dim of size ``num_classes`` holding one 1 per position."""
    if tensor.dtype.is_floating_point:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes < 0:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    out = ember.zeros(*tensor.shape, num_classes, dtype=ember.int64, device=tensor.device)
    return out.scatter(-1, tensor.unsqueeze(-1).to(ember.int64), 1)
