"""Backward formulas for every differentiable op of the table, in one table.

Each entry maps an op name to ``F(fn, save)``: ``fn(ctx, grad)`` returns the gradient of each tensor
argument (see autograd/formula.py). Formulas use ember ops only, so they run on every device and are
themselves differentiable (higher-order gradients). Broadcasting and dtype casts are undone by the
engine. Composites without an entry are differentiated through their decomposition.
"""

from __future__ import annotations

import math

import ember as E
from ember._tensor import contiguous_strides

from ..dispatcher.kinds.nn import layer_norm_with_stats
from ..dispatcher.optable.view import chunk_sizes, split_sizes
from .activation_formulas import FORMULAS as ACTIVATION_FORMULAS
from .complex_formulas import install as install_complex
from .conv_formulas import FORMULAS as CONV_FORMULAS
from .fft_formulas import FORMULAS as FFT_FORMULAS
from .formula import Formula as F  # noqa: N817 - the table reads better with one letter
from .grid_formulas import FORMULAS as GRID_FORMULAS
from .linalg_formulas import FORMULAS as LINALG_FORMULAS
from .loss_formulas import FORMULAS as LOSS_FORMULAS
from .node import SavedTensor
from .special_formulas import FORMULAS as SPECIAL_FORMULAS
from .views import scatter_back


def _tensor(value, like):
    """A Python scalar from a tensor position as a 0-dim tensor like ``like`` (tensors pass)."""
    if isinstance(value, E.Tensor):
        return value
    return E.full((), value, dtype=like.dtype, device=like.device)


def _reduced_dims(ctx, dims_arg="dim") -> list:
    """The sorted input dims a reduction folded; none for a 0-d input (dim 0 names no dim)."""
    shape = ctx.shape("input")
    dims = getattr(ctx, dims_arg)
    if not shape:
        return []
    if dims is None or dims == () or dims == []:
        return list(range(len(shape)))
    dims = (dims,) if isinstance(dims, int) else dims
    return sorted(d % len(shape) for d in dims)


def _unreduce(g, ctx, dims_arg="dim", keepdim_arg="keepdim"):
    """A reduction's output grad broadcast back over the input's reduced dims."""
    if not getattr(ctx, keepdim_arg):
        for d in _reduced_dims(ctx, dims_arg):
            g = g.unsqueeze(d)
    return g.expand(ctx.shape("input"))


def _sum(ctx, g):
    return _unreduce(g, ctx)


def _prod(ctx, g):
    x = ctx.input
    g = _unreduce(g, ctx)
    shape = ctx.shape("input")
    if x.numel() == 0:
        return g  # no elements, no products of others
    if ctx.dim is None or ctx.dim in ((), []) or not shape:
        flat = x.reshape(-1)
        return (g.reshape(-1) * _prod_others(flat, 0)).reshape(shape)
    dims = _reduced_dims(ctx)
    keep = [d for d in range(len(shape)) if d not in dims]
    moved = x.permute(keep + dims)
    folded = moved.reshape(*moved.shape[: len(keep)], -1)
    others = _prod_others(folded, -1).reshape(moved.shape)
    inverse = [0] * len(shape)
    for i, d in enumerate(keep + dims):
        inverse[d] = i
    return g * others.permute(inverse)


def _prod_others(x, dim):
    """Product of all other elements along ``dim`` for each position (zero-safe)."""
    ones = E.ones_like(x.narrow(dim, 0, 1))
    left = E.cat([ones, x.narrow(dim, 0, x.shape[dim] - 1)], dim).cumprod(dim)
    right = E.cat([x.narrow(dim, 1, x.shape[dim] - 1), ones], dim).flip(dim).cumprod(dim).flip(dim)
    return left * right


def _extreme_all(ctx, g):
    """amax/amin: the gradient is shared evenly between tied extremes, as in PyTorch."""
    x, result = ctx.input, ctx.result
    expanded = _unreduce(result, ctx)
    mask = (x == expanded).to(g.dtype)
    count = _unreduce(mask.sum(ctx.dim, keepdim=True), _KeepCtx(ctx))
    return _unreduce(g, ctx) * mask / count


class _KeepCtx:
    """ctx view that says keepdim=True (for re-expanding keepdim results)."""

    def __init__(self, ctx):
        self._ctx = ctx
        self.keepdim = True

    def __getattr__(self, name):
        return getattr(self._ctx, name)

    def shape(self, name="input"):
        return self._ctx.shape(name)


def _extreme_dim(ctx, g_values, g_indices=None):
    shape = ctx.shape("input")
    indices = ctx.result[1]
    if not ctx.keepdim and len(shape):
        g_values = g_values.unsqueeze(ctx.dim)
        indices = indices.unsqueeze(ctx.dim)
    return E.zeros(shape, dtype=g_values.dtype, device=g_values.device).scatter(
        ctx.dim, indices, g_values
    )


def _nuclear_norm(ctx, g):
    """norm(p='nuc'), the sum of singular values: its gradient is U Vh (PyTorch's, through
    linalg_svd's backward), over the two dims it reduced."""
    x = ctx.input
    dims = [d % x.ndim for d in (range(x.ndim) if ctx.dim is None else ctx.dim)]
    if ctx.keepdim:
        g = g.squeeze(dims)
    u, _, vh = E.linalg.svd(x.movedim(dims, (-2, -1)), full_matrices=False)
    return ((u @ vh) * g[..., None, None]).movedim((-2, -1), dims)


def _norm(ctx, g):
    """PyTorch's norm_backward: no gradient through a zero norm, nor from zero elements where
    |x|^(p-1) is infinite (p < 1); infinity norms share it between tied extremes."""
    if ctx.p == "nuc":
        return _nuclear_norm(ctx, g)
    norm = _unreduce(ctx.result, ctx)
    x = ctx.input.to(norm.dtype)
    g = _unreduce(g, ctx)
    p = 2.0 if ctx.p in ("fro", None) else float(ctx.p)
    zero = E.zeros_like(norm)
    if p == 0:
        return None  # PyTorch: no gradient (a count of nonzeros)
    if p == 1:
        return E.sign(x) * g
    if p == 2:
        return g * E.where(norm == 0, zero, x / norm)
    if math.isinf(p):
        ties = (x.abs() == norm).to(norm.dtype)
        dims = _reduced_dims(ctx)
        count = _unreduce(ties.sum(dims, keepdim=True), _KeepCtx(ctx)) if dims else ties
        return E.sign(x) * ties * g / count
    if p < 1:
        safe = E.where(x == 0, E.ones_like(x), x.abs())
        scaled = E.sign(x) * E.where(x == 0, E.zeros_like(x), safe ** (p - 1))
        return scaled * g * norm ** (1 - p)
    scale = E.where(norm == 0, zero, g / norm ** (p - 1))
    return (E.sign(x) * x.abs() ** (p - 1) if p < 2 else x * x.abs() ** (p - 2)) * scale


def _cumprod(ctx, g):
    x, result, dim = ctx.input, ctx.result, ctx.dim
    if x.ndim == 0:
        return g
    if bool((x == 0).any()):
        # Zero-safe: d out_j / d x_i = prod_{k<=j, k!=i} x_k, built from exclusive products.
        n = x.shape[dim] if x.ndim else 1
        grads = []
        for i in range(n):
            others = E.cat(
                [
                    x.narrow(dim, 0, i),
                    E.ones_like(x.narrow(dim, i, 1)),
                    x.narrow(dim, i + 1, n - i - 1),
                ],
                dim,
            ).cumprod(dim)
            weight = (g * others).narrow(dim, i, n - i).sum(dim, keepdim=True)
            grads.append(weight)
        return E.cat(grads, dim)
    return (g * result).flip(dim).cumsum(dim).flip(dim) / x


def _reverse_cumsum(ctx, g):
    dim = ctx.dim
    return g.flip(dim).cumsum(dim).flip(dim) if g.ndim else g


def _min_max_pair(pick_first):
    """minimum/maximum/fmin/fmax: the gradient goes to the selected input, split on ties."""

    def fn(ctx, g):
        a, b = _tensor(ctx.input, g), _tensor(ctx.other, g)
        first = pick_first(a, b).to(g.dtype)
        tie = (a == b).to(g.dtype)
        share_a = first + tie * 0.5 - tie * first
        needs_a, needs_b = ctx.needs_input_grad
        return (g * share_a if needs_a else None), (g * (1 - share_a) if needs_b else None)

    return fn


def _pow(ctx, g):
    b = ctx.other
    if isinstance(b, (int, float)) and isinstance(ctx.input, E.Tensor):
        return _pow_scalar(ctx.input, b, g), None
    a, b = _tensor(ctx.input, g), _tensor(b, g)  # b: also a complex number
    needs_a, needs_b = ctx.needs_input_grad
    zero = E.zeros((), dtype=g.dtype, device=g.device)
    grad_a = grad_b = None
    if needs_a:  # x**0 is constant: no 0 * inf at x = 0
        grad_a = E.where(b == 0, zero, g * b * E.pow(a, b - 1))
    if needs_b:  # 0**y is 0 for y > 0 and 1 at y = 0: the limit of x**y * log(x) there is 0
        # the result is saved only for a tensor exponent
        grad_b = g * E.where((a == 0) & (E.real(b) >= 0), zero, ctx.result * E.log(a))
    return grad_a, grad_b


def _pow_scalar(a, b, g):
    """x ** b for a Python number b, as PyTorch's pow_backward: x**0 is constant, and the
    common small exponents skip the pow kernel."""
    if b == 0:
        return E.zeros_like(g)
    if b == 1:
        return g
    if b == 2:
        return g * (2 * a)
    return g * (b * a.pow(b - 1))


def _atan2(ctx, g):
    a, b = ctx.input, ctx.other
    denom = a * a + b * b
    return g * b / denom, -g * a / denom


def _where(ctx, g):
    cond = ctx.condition
    zero = E.zeros((), dtype=g.dtype, device=g.device)
    return None, E.where(cond, g, zero), E.where(cond, zero, g)


def _masked_fill(ctx, g):
    """PyTorch's: the input's gradient where not filled; a tensor value's, the sum of the rest
    (masked_fill_backward)."""
    mask = ctx.mask
    needs_input, _, needs_value = ctx.needs_input_grad
    grad_input = g.masked_fill(mask, 0) if needs_input else None
    grad_value = E.where(mask, g, 0).sum() if needs_value else None
    return grad_input, None, grad_value


def _clamp(ctx, g):
    """clamp is min(max(x, low), high): where low > high the result is high everywhere."""
    x, low, high = ctx.input, ctx.min, ctx.max
    needs_x, needs_low, needs_high = ctx.needs_input_grad
    zero = E.zeros((), dtype=g.dtype, device=g.device)
    inside = E.ones_like(g, dtype=E.bool)
    if low is not None:
        inside = inside & (x >= low)
    if high is not None:
        inside = inside & (x <= high)
    grad_low = grad_high = None
    if needs_low:
        takes_low = x < low if high is None else (x < low) & (_tensor(low, g) < high)
        grad_low = E.where(takes_low, g, zero)
    if needs_high:
        takes_high = x > high if low is None else (x > high) | (_tensor(high, g) < low)
        grad_high = E.where(takes_high, g, zero)
    return (E.where(inside, g, zero) if needs_x else None), grad_low, grad_high


def _lerp(ctx, g):
    a, b, w = ctx.input, ctx.end, ctx.weight
    grad_w = g * (b - a) if isinstance(w, E.Tensor) else None
    return g * (1 - w), g * w, grad_w


def _softplus(ctx, g):
    x, beta, threshold = ctx.input, ctx.beta, ctx.threshold
    z = E.sigmoid(x * beta)
    return E.where(x * beta > threshold, g, g * z)


def _mish(ctx, g):
    x = ctx.input
    sp = E.ops.softplus(x, 1.0, 20.0)
    t = E.tanh(sp)
    return g * (t + x * (1 - t * t) * E.sigmoid(x))


def _hardswish(ctx, g):
    x = ctx.input
    zero = E.zeros((), dtype=g.dtype, device=g.device)
    middle = g * (x / 3 + 0.5)
    return E.where(x < -3, zero, E.where(x <= 3, middle, g))


def _hardsigmoid(ctx, g):
    x = ctx.input
    zero = E.zeros((), dtype=g.dtype, device=g.device)
    return E.where((x > -3) & (x < 3), g / 6, zero)


def _hardtanh(ctx, g):
    x = ctx.input
    zero = E.zeros((), dtype=g.dtype, device=g.device)
    return E.where((x > ctx.min_val) & (x < ctx.max_val), g, zero)


def _relu6(ctx, g):
    x = ctx.input
    zero = E.zeros((), dtype=g.dtype, device=g.device)
    return E.where((x > 0) & (x < 6), g, zero)


def _elu(ctx, g):
    x, alpha = ctx.input, ctx.alpha
    return E.where(x > 0, g, g * alpha * E.exp(x))


def _celu(ctx, g):
    x, alpha = ctx.input, ctx.alpha
    return E.where(x > 0, g, g * E.exp(x / alpha))


def _selu(ctx, g):
    x = ctx.input
    scale, alpha = 1.0507009873554804934, 1.6732632423543772848
    return E.where(x > 0, g * scale, g * scale * alpha * E.exp(x))


def _leaky_relu(ctx, g):
    x = ctx.input
    return E.where(x > 0, g, g * ctx.negative_slope)


def _nan_to_num(ctx, g):
    x = ctx.input
    return E.where(E.isfinite(x), g, E.zeros((), dtype=g.dtype, device=g.device))


def _zero(ctx, g):
    return E.zeros_like(g)


def _reshape_back(ctx, g):
    return g.reshape(ctx.shape("input"))


def _permute(ctx, g):
    dims = [d % len(ctx.dims) for d in ctx.dims]
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return g.permute(inverse)


def _embed(ctx, g, view_fn):
    """Gradient of a view: zeros of the input's shape with ``g`` written into the viewed part."""
    shape, _, device = ctx.meta("input")
    out = g.new_zeros(shape, dtype=g.dtype, device=device)  # batched when g is (under vmap)
    view_fn(out).copy_(g)
    return out


def _narrow(ctx, g):
    return _embed(ctx, g, lambda t: t.narrow(ctx.dim, ctx.start, ctx.length))


def _pieces_back(ctx, grads, sizes):
    """Gradient of split/chunk: one cat of the pieces' gradients, zeros for a piece that got
    none (PyTorch's split_backward), not a zero tensor and a copy per piece."""
    shape, _, _ = ctx.meta("input")
    ref = next((g for g in grads if g is not None), None)
    if ref is None:
        return None
    dim = ctx.dim % len(shape)
    parts = []
    for g, size in zip(grads, sizes):
        if g is None:
            g = ref.new_zeros(shape[:dim] + (size,) + shape[dim + 1 :])
        parts.append(g)
    return parts[0] if len(parts) == 1 else E.cat(parts, dim)


def _split_back(ctx, *grads):
    shape = ctx.shape("input")
    return _pieces_back(ctx, grads, split_sizes(shape[ctx.dim], ctx.split_size_or_sections))


def _chunk_back(ctx, *grads):
    shape = ctx.shape("input")
    return _pieces_back(ctx, grads, chunk_sizes(shape[ctx.dim], ctx.chunks))


def _slice(ctx, g):
    return _embed(ctx, g, lambda t: E.ops.slice(t, ctx.dim, ctx.start, ctx.end, ctx.step))


def _select(ctx, g):
    return _embed(ctx, g, lambda t: t.select(ctx.dim, ctx.index))


def _diagonal(ctx, g):
    return _embed(ctx, g, lambda t: t.diagonal(ctx.offset, ctx.dim1, ctx.dim2))


def _squeeze(ctx, g):
    return g.reshape(ctx.shape("input"))


def _movedim(ctx, g):
    return g.movedim(ctx.destination, ctx.source)


def _as_strided(ctx, g):
    x = ctx.input
    shape, _, device = ctx.meta("input")
    if math.prod(shape) == 0 or g.numel() == 0:
        return E.zeros(shape, dtype=g.dtype, device=device)
    offset = x.storage_offset() if ctx.storage_offset is None else ctx.storage_offset
    view = (tuple(ctx.size), tuple(ctx.stride), offset)
    return scatter_back(g, view, (shape, x.stride(), x.storage_offset()), device)


def _unfold(ctx, g):
    shape, _, device = ctx.meta("input")
    if math.prod(shape) == 0 or g.numel() == 0:
        return E.zeros(shape, dtype=g.dtype, device=device)
    if not shape:  # every window of a 0-d input is that one element
        return g.sum()
    stride = contiguous_strides(shape)
    d = ctx.dimension % max(len(shape), 1) if shape else 0
    length, step_stride = (shape[d], stride[d]) if shape else (1, 1)
    count = (length - ctx.size) // ctx.step + 1
    view = (
        shape[:d] + (count,) + shape[d + 1 :] + (ctx.size,),
        stride[:d] + (step_stride * ctx.step,) + stride[d + 1 :] + (step_stride,),
        0,
    )
    return scatter_back(g, view, (shape, stride, 0), device)


def _to_copy(ctx, g):
    _, dtype, device = ctx.meta("input")
    return g.to(dtype=dtype, device=device)


def _copy(ctx, g):
    return E.zeros_like(g), g


def _flip(ctx, g):
    return g.flip(ctx.dims)


def _cat(ctx, g):
    metas = ctx.meta("tensors")
    dim = ctx.dim
    grads, start = [], 0
    ref = next((m for m in metas if m[0] != (0,)), metas[0])
    d = dim % len(ref[0])
    for shape, _, _ in metas:
        if shape == (0,) and len(ref[0]) != 1:
            grads.append(E.zeros(shape, dtype=g.dtype, device=g.device))
            continue
        grads.append(g.narrow(d, start, shape[d]))
        start += shape[d]
    return grads


def _gather(ctx, g):
    shape = ctx.shape("input")
    return E.zeros(shape, dtype=g.dtype, device=g.device).scatter_add(ctx.dim, ctx.index, g), None


def _scatter(ctx, g):
    grad_src = g.gather(ctx.dim, ctx.index) if ctx.needs_input_grad[2] else None
    return g.scatter(ctx.dim, ctx.index, 0), None, grad_src


def _scatter_add(ctx, g):
    grad_src = g.gather(ctx.dim, ctx.index) if ctx.needs_input_grad[2] else None
    return g, None, grad_src


def _index_select(ctx, g):
    shape = ctx.shape("input")
    return E.zeros(shape, dtype=g.dtype, device=g.device).index_add(ctx.dim, ctx.index, g), None


def _index_add(ctx, g):
    grad_source = (
        g.index_select(ctx.dim, ctx.index) * ctx.alpha if ctx.needs_input_grad[2] else None
    )
    return g, None, grad_source


def _take(ctx, g):
    shape = ctx.shape("input")
    out = g.new_zeros(math.prod(shape), dtype=g.dtype, device=g.device)
    if g.numel():
        out.put_(ctx.index.reshape(-1), g.reshape(-1), accumulate=True)
    return out.reshape(shape), None


def _put(ctx, g):
    index = ctx.index
    grad_self = g if ctx.accumulate else g.clone().put_(index, 0.0)
    # take gives the index's shape; the source may differ in shape with as many elements
    # (PyTorch puts a [1] source at a 0-d index)
    grad_source = g.take(index).reshape(ctx.shape("source")) if ctx.needs_input_grad[2] else None
    return grad_self, None, grad_source


def _sort(ctx, g_values, g_indices=None):
    shape = ctx.shape("input")
    indices = ctx.result[1]
    return E.zeros(shape, dtype=g_values.dtype, device=g_values.device).scatter(
        ctx.dim, indices, g_values
    )


def _mm(ctx, g):
    return _product_grads(ctx, g, "input", "mat2", 0)


def _product_grads(ctx, g, first: str, second: str, at: int):
    """The gradients of the matrices ``first @ second`` (tensor arguments ``at``, ``at + 1``).

    A gradient laid out like its input: for linear's weight.t() the product is computed
    transposed, so that t's backward makes it contiguous again and the leaf takes it without
    a copy (PyTorch's mm_mat1_backward / mm_mat2_backward do the same)."""
    grad_a = grad_b = None
    if ctx.needs_input_grad[at]:
        b = getattr(ctx, second)
        grad_a = b.mm(g.t()).t() if _transposed(ctx, first) else g.mm(b.t())
    if ctx.needs_input_grad[at + 1]:
        a = getattr(ctx, first)
        grad_b = g.t().mm(a).t() if _transposed(ctx, second) else a.t().mm(g)
    return grad_a, grad_b


def _addmm(ctx, g):
    """``beta * input + alpha * mat1 @ mat2``: one node, as PyTorch's AddmmBackward0 (the
    input's gradient is reduced to its broadcast shape by the engine)."""
    beta, alpha = ctx.beta, ctx.alpha
    grad_input = (g if beta == 1 else g * beta) if ctx.needs_input_grad[0] else None
    grads = _product_grads(ctx, g if alpha == 1 else g * alpha, "mat1", "mat2", 1)
    return (grad_input, *grads)


def _transposed(ctx, name: str) -> bool:
    """Whether 2-d argument ``name`` was the transpose of a contiguous matrix."""
    rows, _ = ctx.shape(name)
    stride = ctx.strides_of(name)
    return stride[0] == 1 and stride[1] == rows and rows > 1


def _bmm(ctx, g):
    grad_a = g.bmm(ctx.mat2.transpose(1, 2)) if ctx.needs_input_grad[0] else None
    grad_b = ctx.input.transpose(1, 2).bmm(g) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


def _div(ctx, g):
    b = ctx.other
    grad_a = g / b if ctx.needs_input_grad[0] else None
    if not ctx.needs_input_grad[1]:
        return grad_a, None
    return grad_a, -g * (ctx.input / b) / b  # PyTorch's: from the numerator, not the result


def _copysign(ctx, g):
    needs_a, needs_b = ctx.needs_input_grad
    grad_a = g * E.sign(ctx.input) * E.sign(ctx.result) if needs_a else None
    return grad_a, (E.zeros_like(g) if needs_b else None)


def _remainder(ctx, g):
    a, b = ctx.input, ctx.other
    return g, (-g * E.floor_divide(a, b) if isinstance(b, E.Tensor) else None)


def _fmod(ctx, g):
    a, b = ctx.input, ctx.other
    return g, (-g * E.trunc(a / b) if isinstance(b, E.Tensor) else None)


def _mul(ctx, g):
    needs_a, needs_b = ctx.needs_input_grad
    return (g * ctx.other if needs_a else None), (g * ctx.input if needs_b else None)


def _xlogy(ctx, g):
    a, b = _tensor(ctx.input, g), _tensor(ctx.other, g)
    needs_a, needs_b = ctx.needs_input_grad
    zero = E.zeros((), dtype=g.dtype, device=g.device)
    # d/da a*log(b) = log(b), also at a = 0 (PyTorch's convention); 0 where that is undefined
    grad_a = E.where((a == 0) & (b <= 0), zero, E.xlogy(g, b)) if needs_a else None
    return grad_a, (g * a / b if needs_b else None)


def _addcmul(ctx, g):
    _, needs_1, needs_2 = ctx.needs_input_grad
    value = ctx.value
    return (
        g,
        g * value * ctx.tensor2 if needs_1 else None,
        g * value * ctx.tensor1 if needs_2 else None,
    )


def _addcdiv(ctx, g):
    t1, t2, value = ctx.tensor1, ctx.tensor2, ctx.value
    return g, g * value / t2, -g * value * t1 / (t2 * t2)


def _layer_norm_forward(node, op, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """A recorded call's forward: native_layer_norm's kernel writes the output and the rows'
    mean and rstd in one pass, and the node keeps the statistics for the backward, as ATen's
    NativeLayerNormBackward0 does (``_saved_result1``, ``_saved_result2``). A call that kernel
    cannot take runs layer_norm's runner, and its backward computes them again."""
    native = E.ops.native_layer_norm
    found = layer_norm_with_stats(native, x, tuple(normalized_shape), weight, bias, eps)
    if found is None:
        return op.runner(op, x, normalized_shape, weight, bias, eps)
    out, mean, rstd = found
    # under PyTorch's names: the node's _saved_result1 and _saved_result2 read them
    node._saved["result1"], node._saved["result2"] = SavedTensor(mean), SavedTensor(rstd)
    return out


def _layer_norm(ctx, g):
    """Where the device has a ``native_layer_norm_backward`` kernel and no graph of the
    backward is wanted: that kernel, from the statistics the forward saved (or, for a call
    that saved none, from ``native_layer_norm`` run again). Otherwise (double backward, other
    devices) the closed form below."""
    x, weight = ctx.input, ctx.weight
    fused = E.ops.native_layer_norm_backward
    if not E.is_grad_enabled() and fused.kernel(x.device.type, x.dtype) is not None:
        shape, needs, saved = ctx.normalized_shape, ctx.needs_input_grad, ctx._saved
        if "result2" in saved:
            mean, rstd = saved["result1"].unpack(ctx), saved["result2"].unpack(ctx)
        else:
            _, mean, rstd = E.ops.native_layer_norm(x, shape, None, None, ctx.eps)
        bias = ctx.bias if needs[2] else None
        return fused(g, x, shape, mean, rstd, weight, bias, list(needs))
    return _layer_norm_closed(ctx, g)


def _layer_norm_closed(ctx, g):
    """Closed form: with x^ = (x - mean) * rstd and gx^ = g * weight, the input's gradient is
    rstd * (gx^ - mean(gx^) - x^ * mean(gx^ * x^)) over the normalised dims. Mean and rstd are
    recomputed (two reductions) rather than saved. Means are sums times 1 / n (a mean is a sum
    and a division inside a third call) and the last step one addcmul: 22 op calls a layer
    where there were 28, the bulk of minGPT's backward dispatches (docs/threads.md)."""
    x, weight = ctx.input, ctx.weight
    dims = tuple(range(x.ndim - len(ctx.normalized_shape), x.ndim))
    inv_n = 1 / max(math.prod(ctx.normalized_shape), 1)  # n = 0: x is empty, so is every result
    centred = x - x.sum(dims, keepdim=True) * inv_n
    rstd = E.rsqrt((centred * centred).sum(dims, keepdim=True) * inv_n + ctx.eps)
    normed = centred * rstd
    needs_x, needs_w, needs_b = ctx.needs_input_grad
    g_normed = g if weight is None else g * weight
    g_x = None
    if needs_x:
        mean_g = g_normed.sum(dims, keepdim=True) * inv_n
        sum_gx = (g_normed * normed).sum(dims, keepdim=True)
        g_x = E.addcmul(g_normed - mean_g, normed, sum_gx, value=-inv_n) * rstd
    # weight and bias are (normalized_shape): the engine sums the leading dims away
    return g_x, g * normed if needs_w else None, g if needs_b else None


def _im2col(ctx, g):
    h, w = ctx.shape("input")[2:]
    return E.ops.col2im(g, (h, w), ctx.kernel_size, ctx.dilation, ctx.padding, ctx.stride)


def _col2im(ctx, g):
    return E.ops.im2col(g, ctx.kernel_size, ctx.dilation, ctx.padding, ctx.stride)


def _max_pool2d(ctx, g_values, g_indices=None):
    shape = ctx.shape("input")
    indices = ctx.result[1]
    # zeros as a broadcast scalar: scatter_add's own copy is the one input-sized buffer (a full
    # zeros tensor was a second one, 5.3 MiB at the CNN's backward peak, bench_training.py)
    zero = E.zeros((), dtype=g_values.dtype, device=g_values.device)
    grad = zero.expand(*shape[:-2], shape[-2] * shape[-1])
    return grad.scatter_add(-1, indices.flatten(-2), g_values.flatten(-2)).view(shape)


def _constant_pad(ctx, g):
    return E.ops.constant_pad_nd(g, [-p for p in ctx.pad], 0)


def _unary(expr, *save):
    return F(lambda ctx, g: expr(ctx, g), save=save or ("input",))


FORMULAS = {
    # ---- elementwise unary ----------------------------------------------------------------------
    "neg": F(lambda ctx, g: -g),
    "abs": _unary(lambda ctx, g: g * E.sign(ctx.input)),
    "sign": F(_zero),
    "floor": F(_zero),
    "ceil": F(_zero),
    "round": F(_zero),
    "trunc": F(_zero),
    "frac": F(lambda ctx, g: g),
    "square": _unary(lambda ctx, g: 2 * g * ctx.input),
    "exp": _unary(lambda ctx, g: g * ctx.result, "result"),
    "exp2": _unary(lambda ctx, g: g * ctx.result * math.log(2), "result"),
    "expm1": _unary(lambda ctx, g: g * (ctx.result + 1), "result"),
    "log": _unary(lambda ctx, g: g / ctx.input),
    "log2": _unary(lambda ctx, g: g / (ctx.input * math.log(2))),
    "log10": _unary(lambda ctx, g: g / (ctx.input * math.log(10))),
    "log1p": _unary(lambda ctx, g: g / (1 + ctx.input)),
    "sqrt": _unary(lambda ctx, g: g / (2 * ctx.result), "result"),
    "rsqrt": _unary(lambda ctx, g: -0.5 * g * ctx.result**3, "result"),
    "sin": _unary(lambda ctx, g: g * E.cos(ctx.input)),
    "cos": _unary(lambda ctx, g: -g * E.sin(ctx.input)),
    "tan": _unary(lambda ctx, g: g * (1 + ctx.result * ctx.result), "result"),
    "asin": _unary(lambda ctx, g: g / E.sqrt(1 - ctx.input * ctx.input)),
    "acos": _unary(lambda ctx, g: -g / E.sqrt(1 - ctx.input * ctx.input)),
    "atan": _unary(lambda ctx, g: g / (1 + ctx.input * ctx.input)),
    "sinh": _unary(lambda ctx, g: g * E.cosh(ctx.input)),
    "cosh": _unary(lambda ctx, g: g * E.sinh(ctx.input)),
    "asinh": _unary(lambda ctx, g: g / E.sqrt(ctx.input * ctx.input + 1)),
    # sqrt(x - 1) sqrt(x + 1), PyTorch's: sqrt(x^2 - 1) takes the other branch for some complex x
    "acosh": _unary(lambda ctx, g: g / (E.sqrt(ctx.input - 1) * E.sqrt(ctx.input + 1))),
    "atanh": _unary(lambda ctx, g: g / (1 - ctx.input * ctx.input)),
    "logsigmoid": _unary(lambda ctx, g: g * E.sigmoid(-ctx.input)),
    "erf": _unary(lambda ctx, g: g * (2 / math.sqrt(math.pi)) * E.exp(-ctx.input * ctx.input)),
    "erfc": _unary(lambda ctx, g: g * (-2 / math.sqrt(math.pi)) * E.exp(-ctx.input * ctx.input)),
    "reciprocal": _unary(lambda ctx, g: -g * ctx.result * ctx.result, "result"),
    "elu": F(_elu, save=("input",)),
    "celu": F(_celu, save=("input",)),
    "selu": F(_selu, save=("input",)),
    "leaky_relu": F(_leaky_relu, save=("input",)),
    "softplus": F(_softplus, save=("input",)),
    "mish": F(_mish, save=("input",)),
    "hardswish": F(_hardswish, save=("input",)),
    "hardsigmoid": F(_hardsigmoid, save=("input",)),
    "hardtanh": F(_hardtanh, save=("input",)),
    "relu6": F(_relu6, save=("input",)),
    "softsign": _unary(lambda ctx, g: g / (1 + E.abs(ctx.input)) ** 2),
    "nan_to_num": F(_nan_to_num, save=("input",)),
    # ---- elementwise binary / ternary ---------------------------------------------------------
    "add": F(lambda ctx, g: (g, g)),
    "sub": F(lambda ctx, g: (g, -g)),
    "mul": F(_mul, save={"input": "other", "other": "input"}),
    "div": F(_div, save={"other": None, "input": "other"}),
    "div_trunc": F(lambda ctx, g: (E.zeros_like(g), E.zeros_like(g))),
    "floor_divide": F(lambda ctx, g: (E.zeros_like(g), E.zeros_like(g))),
    "remainder": F(_remainder, save=("input", "other")),
    "fmod": F(_fmod, save=("input", "other")),
    # the result only for a tensor exponent (its gradient): x ** 3 keeps x alone, as PyTorch
    "pow": F(_pow, save={"input": None, "other": None, "result": "other"}),
    "atan2": F(_atan2, save=("input", "other")),
    "minimum": F(_min_max_pair(lambda a, b: a < b), save=("input", "other")),
    "maximum": F(_min_max_pair(lambda a, b: a > b), save=("input", "other")),
    "fmin": F(_min_max_pair(lambda a, b: (a < b) | E.isnan(b)), save=("input", "other")),
    "fmax": F(_min_max_pair(lambda a, b: (a > b) | E.isnan(b)), save=("input", "other")),
    "hypot": F(
        lambda ctx, g: (g * ctx.input / ctx.result, g * ctx.other / ctx.result),
        save=("input", "other", "result"),
    ),
    "copysign": F(_copysign, save=("input", "result")),
    "nextafter": F(lambda ctx, g: (g, E.zeros_like(g))),
    "xlogy": F(_xlogy, save=("input", "other")),
    "logaddexp": F(
        lambda ctx, g: (g * E.sigmoid(ctx.input - ctx.other), g * E.sigmoid(ctx.other - ctx.input)),
        save=("input", "other"),
    ),
    "where": F(_where, save=("condition",)),
    "masked_fill": F(_masked_fill, save=("mask",)),
    "lerp": F(_lerp, save=("input", "end", "weight")),
    "clamp": F(_clamp, save=("input", "min", "max")),
    "addcmul": F(_addcmul, save={"tensor1": "tensor2", "tensor2": "tensor1"}),
    "addcdiv": F(_addcdiv, save=("tensor1", "tensor2")),
    # ---- reductions ---------------------------------------------------------------------------
    "sum": F(_sum),
    "prod": F(_prod, save=("input", "result")),  # the result: PyTorch's node shows it
    "amax": F(_extreme_all, save=("input", "result")),
    "amin": F(_extreme_all, save=("input", "result")),
    "norm": F(_norm, save=("input", "result")),
    "max": F(_extreme_dim, save=("result",)),
    "min": F(_extreme_dim, save=("result",)),
    "cumsum": F(_reverse_cumsum),
    "cumprod": F(_cumprod, save=("input", "result")),
    # ---- views --------------------------------------------------------------------------------
    "view": F(_reshape_back),
    "reshape": F(_reshape_back),
    "flatten": F(_reshape_back),
    "unflatten": F(_reshape_back),
    "squeeze": F(_squeeze),
    "unsqueeze": F(lambda ctx, g: g.squeeze(ctx.dim)),
    "permute": F(_permute),
    "transpose": F(lambda ctx, g: g.transpose(ctx.dim0, ctx.dim1)),
    "t": F(lambda ctx, g: g.t()),
    "expand": F(lambda ctx, g: g),
    "narrow": F(_narrow),
    "split": F(_split_back),
    "chunk": F(_chunk_back),
    "slice": F(_slice),
    "select": F(_select),
    "diagonal": F(_diagonal),
    "movedim": F(_movedim),
    "as_strided": F(_as_strided, save=("input",)),
    "unfold": F(_unfold),
    # ---- data movement and indexing -------------------------------------------------------------
    "_to_copy": F(_to_copy),
    "copy_": F(_copy),
    "fill_": F(_zero),
    "flip": F(_flip),
    "cat": F(_cat),
    "gather": F(_gather, save=("index",)),
    "scatter": F(_scatter, save=("index",)),
    "scatter_add": F(_scatter_add, save=("index",)),
    "index_select": F(_index_select, save=("index",)),
    "index_add": F(_index_add, save=("index",), weak=("source",)),
    "take": F(_take, save=("index",)),
    "put_": F(_put, save=("index",)),
    "sort": F(_sort, save=("result",)),
    # ---- nn ------------------------------------------------------------------------------------
    # bias only for its gradient's definedness in native_layer_norm_backward (as PyTorch saves it)
    "layer_norm": F(
        _layer_norm,
        save={"input": None, "weight": None, "bias": "bias"},
        forward=_layer_norm_forward,
    ),
    "im2col": F(_im2col),
    "col2im": F(_col2im),
    "max_pool2d_with_indices": F(_max_pool2d, save=("result",), weak=("input",)),
    "constant_pad_nd": F(_constant_pad),
    # ---- matrix products ------------------------------------------------------------------------
    "mm": F(_mm, save={"input": "mat2", "mat2": "input"}, strides=("input", "mat2")),
    "addmm": F(_addmm, save={"mat1": "mat2", "mat2": "mat1"}, strides=("mat1", "mat2")),
    "bmm": F(_bmm, save={"input": "mat2", "mat2": "input"}),
}
# ---- activations and their backward rows (autograd/activation_formulas.py) --------------------
FORMULAS.update(ACTIVATION_FORMULAS)
# ---- convolutions (autograd/conv_formulas.py) ------------------------------------------------
FORMULAS.update(CONV_FORMULAS)
# ---- nll_loss's forward and backward rows (autograd/loss_formulas.py) ------------------------
FORMULAS.update(LOSS_FORMULAS)
# ---- grid_sample's forward rows (autograd/grid_formulas.py) ----------------------------------
FORMULAS.update(GRID_FORMULAS)
# ---- special functions (autograd/special_formulas.py) ---------------------------------------
FORMULAS.update(SPECIAL_FORMULAS)
# ---- FFT primitives (autograd/fft_formulas.py) ----------------------------------------------
FORMULAS.update(FFT_FORMULAS)
# ---- linalg: factorizations and solves (autograd/linalg_formulas.py) -----------------------------
FORMULAS.update(LINALG_FORMULAS)
# ---- complex inputs: conjugate Wirtinger derivatives (autograd/complex_formulas.py) ------------
install_complex(FORMULAS)
