"""linear, bilinear, embedding, one_hot."""

from __future__ import annotations

import ember
from ember.autograd.graph_names import present
from ember.dispatcher.optable import OPS

from ._out import into


def linear(input, weight, bias=None, *, out=None):
    """``input @ weight.T + bias``; input (*, in_features), weight (out_features, in_features)."""
    inputs = (input, weight, bias)
    return into("linear", "linear", out, inputs, lambda: OPS["linear"](*inputs))


def _linear(input, weight, bias=None):
    """The ``linear`` row's decomposition, PyTorch's: ``addmm`` with a bias (``mm`` without) over
    the folded leading dims, so the graph shows its nodes (``AddmmBackward0``...)."""
    if input.shape[-1] != weight.shape[-1]:
        raise RuntimeError(
            f"linear: input features {input.shape[-1]} don't match weight {list(weight.shape)} "
            f"(input shape {list(input.shape)})"
        )
    if input.ndim != 2 and (bias is None or not input.is_contiguous()):
        # PyTorch folds only a contiguous input with a bias into one addmm; otherwise its graph
        # is matmul's (an mm under an _unsafe_view, mv for a vector) and an add of the bias
        out = ember.matmul(input, weight.t())
        return out if bias is None else out + bias
    flat = input if input.ndim == 2 else input.reshape(-1, input.shape[-1])
    if bias is None:
        out = OPS["mm"](flat, weight.t())
    elif flat.dtype.is_complex:  # complex addmm is the linalg rows' (not yet): the same sum
        out = OPS["mm"](flat, weight.t()) + bias
    else:
        out = OPS["addmm"](bias, flat, weight.t())
    return out if input.ndim == 2 else out.view(*input.shape[:-1], weight.shape[0])


def bilinear(input1, input2, weight, bias=None):
    """``y_k = x1^T W_k x2 + b_k``; weight (out, in1, in2)."""
    return OPS["bilinear"](input1, input2, weight, bias)


def _bilinear(input1, input2, weight, bias=None):
    if input1.shape[:-1] != input2.shape[:-1] or (input1.shape[-1], input2.shape[-1]) != tuple(
        weight.shape[1:]
    ):
        raise RuntimeError(
            f"bilinear: input1 {list(input1.shape)} and input2 {list(input2.shape)} must share "
            f"their leading dims and end with weight {list(weight.shape)}'s sizes "
            f"{weight.shape[1]} and {weight.shape[2]}"
        )
    out = ember.einsum(
        "bi,kij,bj->bk",
        input1.reshape(-1, input1.shape[-1]),
        weight,
        input2.reshape(-1, input2.shape[-1]),
    )
    out = out.view(*input1.shape[:-1], weight.shape[0])
    return out if bias is None else out + bias


def _check_indices(name, input):
    if input.dtype.is_floating_point or input.dtype is ember.bool:
        raise RuntimeError(
            f"{name}: Expected tensor for argument 'indices' to have one of the following "
            f"scalar types: Long, Int; but got {input.dtype.name} instead (shape "
            f"{list(input.shape)})"
        )


def _renorm_rows(weight, indices, max_norm, norm_type) -> None:
    """Scale the rows of ``weight`` that ``indices`` use to norm at most ``max_norm``, in place
    and outside autograd, as PyTorch's embedding does before the lookup."""
    with ember.no_grad():
        used = indices.reshape(-1).unique()
        rows = weight[used]
        norms = rows.norm(norm_type, dim=1, keepdim=True)
        weight[used] = rows * ember.clamp(max_norm / (norms + 1e-7), max=1.0)


def _gradient_scale(input, weight, padding_idx, scale_grad_by_freq):
    """Per looked-up row, the factor on its gradient: 0 for ``padding_idx``, 1 / (occurrences
    in ``input``) with ``scale_grad_by_freq``; None when every factor is 1."""
    scale = None
    if padding_idx is not None:
        scale = (input != padding_idx % weight.shape[0]).to(weight.dtype)
    if scale_grad_by_freq:
        flat = input.reshape(-1)
        ones = ember.ones(flat.shape, dtype=weight.dtype, device=weight.device)
        counts = ember.zeros(weight.shape[0], dtype=weight.dtype, device=weight.device)
        per_row = counts.index_add(0, flat, ones)[flat].view(input.shape)
        scale = 1 / per_row if scale is None else scale / per_row
    return scale


def embedding(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    """Rows of ``weight`` at the integer indices ``input``: (*) -> (*, embedding_dim). The
    ``padding_idx`` row gets no gradient; ``sparse`` gradients are dense in ember."""
    _check_indices("embedding", input)
    if max_norm is not None:
        _renorm_rows(weight, input, max_norm, norm_type)
    picked = OPS["index_select"](weight, 0, input.reshape(-1)).view(*input.shape, weight.shape[1])
    if not (weight.requires_grad and ember.is_grad_enabled()):
        return picked
    scale = _gradient_scale(input, weight, padding_idx, scale_grad_by_freq)
    if scale is not None:
        # Same values, gradient scaled: the detached term carries the rest of the forward value.
        scale = scale.unsqueeze(-1)
        picked = picked * scale + (picked * (1 - scale)).detach()
    if picked._grad_fn is None:
        return picked
    saved = {
        "indices": input,
        "padding_idx": -1 if padding_idx is None else padding_idx % weight.shape[0],
        "scale_grad_by_freq": scale_grad_by_freq,
        "sparse": sparse,
        "weight_sym_argsize_0": weight.shape[0],
    }
    return present(picked, "EmbeddingBackward0", weight, saved=saved)


def _bags(input, offsets, per_sample_weights, include_last_offset):
    """1-D input with ``offsets`` as a padded (bags, longest) index matrix, a mask of the real
    entries, and the per-sample weights laid out the same way."""
    if offsets is None:
        raise ValueError("embedding_bag: offsets has to be a 1D Tensor but got None")
    starts = offsets.tolist()
    ends = starts[1:] + ([] if include_last_offset else [input.shape[0]])
    starts = starts[: len(ends)]
    lengths = [e - s for s, e in zip(starts, ends)]
    longest = max(lengths, default=0)
    device = input.device
    position = ember.tensor(starts, device=device).view(-1, 1) + ember.arange(
        longest, device=device
    )
    valid = ember.arange(longest, device=device) < ember.tensor(lengths, device=device).view(-1, 1)
    position = position.masked_fill(~valid, 0).clamp(max=max(input.shape[0] - 1, 0))
    weights = None if per_sample_weights is None else per_sample_weights[position]
    return input[position], valid, weights


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
    """Sums / means / maxes of embedding rows per bag: 2-D input is one bag per row, 1-D input is
    cut into bags at ``offsets``. Empty bags (or bags of padding only) give zeros."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode has to be one of sum, mean or max, got '{mode}'")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}')"
        )
    _check_indices("embedding_bag", input)
    if input.ndim == 2:
        indices, valid, sample_weights = input, None, per_sample_weights
    elif input.ndim == 1:
        indices, valid, sample_weights = _bags(
            input, offsets, per_sample_weights, include_last_offset
        )
    else:
        raise ValueError(f"embedding_bag: input has to be 1D or 2D Tensor, got {list(input.shape)}")
    rows = embedding(indices, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)
    keep = valid
    if padding_idx is not None:
        real = indices != padding_idx % weight.shape[0]
        keep = real if keep is None else keep & real
    if sample_weights is not None:
        rows = rows * sample_weights.unsqueeze(-1)
    if mode == "max":
        if keep is None:
            return rows.amax(1)
        filled = rows.masked_fill(~keep.unsqueeze(-1), float("-inf")).amax(1)
        return filled.masked_fill(~keep.any(1, keepdim=True), 0.0)
    if keep is not None:
        rows = rows * keep.unsqueeze(-1).to(rows.dtype)
    total = rows.sum(1)
    if mode == "sum":
        return total
    count = indices.shape[1] if keep is None else keep.sum(1, keepdim=True).clamp(min=1)
    return total / count


def one_hot(tensor, num_classes: int = -1):
    """int64 tensor with a trailing dim of size ``num_classes`` holding one 1 per position."""
    if tensor.dtype is not ember.int64:
        raise RuntimeError(
            f"one_hot is only applicable to index tensor of type LongTensor (got {tensor.dtype})."
        )
    if tensor.numel():
        if int(tensor.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        top = int(tensor.max())
        if num_classes < 0:
            num_classes = top + 1
        elif top >= num_classes:
            raise RuntimeError(
                f"Class values must be smaller than num_classes (got {top} for num_classes="
                f"{num_classes})."
            )
    elif num_classes < 0:
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    out = ember.zeros(*tensor.shape, num_classes, dtype=ember.int64, device=tensor.device)
    return out.scatter(-1, tensor.unsqueeze(-1), 1)


def _grouped_offsets(offs, mat_a, mat_b):
    if (offs is None) != (mat_a.ndim == 3 and mat_b.ndim == 3):
        raise RuntimeError(
            "Have to provide offsets if there is a 2d matrix, or no offset if both matrices are 3d"
        )
    if offs is None:
        return None
    if offs.dtype is not ember.int32:
        raise RuntimeError("Offsets have to be int32")
    ends = [int(e) for e in offs.tolist()]
    return list(zip([0] + ends[:-1], ends))


def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
    """Groups of matrix products, the groups cut by the cumulative ``offs`` (int32): a 2-D
    ``mat_a`` by rows against a 3-D ``mat_b`` (one matrix per group), a 3-D ``mat_a`` against a
    2-D ``mat_b`` by columns, two 2-D matrices by the shared dim (one result per group), or
    two 3-D stacks (a batched product). Rows past the last offset are zeros (PyTorch leaves
    them unwritten)."""
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    if not mat_a.dtype.is_floating_point:
        raise RuntimeError(
            f"Expected mat_a to be Float32, BFloat16 or Float16 matrix, got {mat_a.dtype.name}"
        )
    if mat_a.shape[-1] != mat_b.shape[-2]:
        raise RuntimeError("contraction dimension of mat_a and mat_b must match")
    groups = _grouped_offsets(offs, mat_a, mat_b)
    if groups is None:
        out = ember.matmul(mat_a, mat_b)
    elif mat_a.ndim == 2 and mat_b.ndim == 3:
        parts = [mat_a[s:e] @ mat_b[g] for g, (s, e) in enumerate(groups)]
        rest = mat_a.shape[0] - (groups[-1][1] if groups else 0)
        parts.append(mat_a.new_zeros(rest, mat_b.shape[-1]))
        out = ember.cat(parts, 0)
    elif mat_a.ndim == 3 and mat_b.ndim == 2:
        parts = [mat_a[g] @ mat_b[:, s:e] for g, (s, e) in enumerate(groups)]
        rest = mat_b.shape[1] - (groups[-1][1] if groups else 0)
        parts.append(mat_a.new_zeros(mat_a.shape[1], rest))
        out = ember.cat(parts, 1)
    else:
        out = ember.stack([mat_a[:, s:e] @ mat_b[s:e] for s, e in groups])
    return out if out_dtype is None else out.to(out_dtype)
