"""Runners for nn ops that a backend may implement with a fused kernel (softmax, im2col, pooling,
padding). Each op also has a decomposition, used when the device has no kernel for it, and its
own autograd formula, so the graph holds one node either way."""

from __future__ import annotations

from ember import _dtype as dt
from ember._tensor import Tensor, empty, make

from ._common import cast, contiguous, unsupported_dtype, wrap_dim
from .window import check_output_size, check_pool, check_unfold, pooled_size


def _check_float(op, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op.name}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if x._dtype.category != dt.FLOATING:
        raise RuntimeError(f'"{op.name}" not implemented for {x._dtype.name} (floating types only)')


def _check_row_dtype(op, x) -> None:
    """The window ops (im2col, col2im, max pooling) take the row's dtypes: integer and bool
    inputs run the decomposition (exact: views, gathers and index_add) where a backend's kernel
    is float-only."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op.name}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if x._dtype not in op.dtypes:
        raise unsupported_dtype(op, x._dtype)


def along_dim(op, x, dim, dtype=None):
    """softmax / log_softmax: ``kernel(out, x, dim)``, out shaped like x."""
    if dtype is not None and isinstance(x, Tensor) and x._dtype is not dtype:
        x = cast(x, dtype)
    _check_float(op, x)
    d = wrap_dim(dim, len(x._shape), op.name) if x._shape else 0
    dev = x._storage.device
    kernel = op.kernel(dev.type, x._dtype)
    if kernel is None:
        return op.decomposition(x, d)
    out = empty(x._shape, x._dtype, dev)
    if not x._shape:  # one row of one element: the kernel must still write it
        kernel(_as_vector(out), _as_vector(x), 0)
    elif 0 not in x._shape:
        kernel(out, contiguous(x), d)
    return out


def along_dim_backward(op, grad_output, output, dim, input_dtype):
    """_softmax_backward_data / _log_softmax_backward_data: ``kernel(grad_input, grad_output,
    output, dim)``, one pass per line, when both tensors share a float dtype and a shape; the
    decomposition otherwise. The result takes the forward's input dtype, as PyTorch's."""
    for t in (grad_output, output):
        _check_float(op, t)
    dev = output._storage.device
    same = grad_output._dtype is output._dtype and grad_output._shape == output._shape
    kernel = op.kernel(dev.type, output._dtype) if same else None
    if kernel is None or grad_output._storage.device is not dev or not output._shape:
        return op.decomposition(grad_output, output, dim, input_dtype)
    d = wrap_dim(dim, len(output._shape), op.name)
    out = empty(output._shape, output._dtype, dev)
    if 0 not in output._shape:
        kernel(out, contiguous(grad_output), contiguous(output), d)
    return out if input_dtype is None or out._dtype is input_dtype else cast(out, input_dtype)


# The transforms (vmap, forward AD) run the decomposition, whose parts carry batch dims and
# tangents: the kernel is a CPU speed-up only (functional.runs_decomposition).
along_dim_backward.fused = True


def _as_vector(t: Tensor) -> Tensor:
    """A 1-element 1-d view of a 0-d tensor."""
    return make(t._storage, (1,), (1,), t._offset, t._dtype, True)


def layer_norm(op, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """``kernel(out, x, normalized_shape, weight, bias, eps)`` when a backend has one, with x,
    weight and bias contiguous and of one dtype; the decomposition otherwise (weights of another
    dtype promote there). nn.functional checks the shapes and names the layer."""
    _check_float(op, x)
    kernel = op.kernel(x._storage.device.type, x._dtype)
    affine = [t for t in (weight, bias) if t is not None]
    if kernel is None or any(t._dtype is not x._dtype for t in affine):
        return op.decomposition(x, tuple(normalized_shape), weight, bias, eps)
    out = empty(x._shape, x._dtype, x._storage.device)
    weight, bias = (None if t is None else contiguous(t) for t in (weight, bias))
    kernel(out, contiguous(x), tuple(normalized_shape), weight, bias, eps)
    return out


def _same_dtype(x, tensors) -> bool:
    return all(t is None or t._dtype is x._dtype for t in tensors)


def native_layer_norm(op, x, normalized_shape, weight, bias, eps):
    """``kernel(out, mean, rstd, x, normalized_shape, weight, bias, eps)``: the output and the
    statistics the backward reads, in one pass. The decomposition for a device without the
    kernel, mixed dtypes, shapes it refuses (its message) and an empty normalised shape."""
    _check_float(op, x)
    shape = tuple(normalized_shape)
    found = layer_norm_with_stats(op, x, shape, weight, bias, eps)
    return op.decomposition(x, shape, weight, bias, eps) if found is None else found


def layer_norm_with_stats(op, x, shape: tuple, weight, bias, eps):
    """native_layer_norm's kernel (``op`` is that row): ``(out, mean, rstd)``, or None where
    the kernel cannot take the call. A recorded layer_norm runs it too, to save the statistics
    for its backward (autograd/formulas.py ``_layer_norm_forward``)."""
    axis = len(x._shape) - len(shape)
    kernel = op.kernel(x._storage.device.type, x._dtype)
    usable = axis >= 0 and x._shape[axis:] == shape and 0 not in shape
    if kernel is None or not usable or not _same_dtype(x, (weight, bias)):
        return None
    device = x._storage.device
    out = empty(x._shape, x._dtype, device)
    stats = x._shape[:axis] + (1,) * len(shape)
    mean, rstd = empty(stats, x._dtype, device), empty(stats, x._dtype, device)
    weight, bias = (None if t is None else contiguous(t) for t in (weight, bias))
    kernel(out, mean, rstd, contiguous(x), shape, weight, bias, eps)
    return out, mean, rstd


def native_layer_norm_backward(
    op, grad_out, x, normalized_shape, mean, rstd, weight, bias, output_mask
):
    """``kernel((grad_input, grad_weight, grad_bias), grad_out, x, mean, rstd, weight)`` with
    the gradients not wanted None, every tensor of x's dtype and device; the decomposition
    otherwise (and for empty tensors, whose weight and bias gradients are zeros)."""
    _check_float(op, x)
    shape = tuple(normalized_shape)
    device = x._storage.device
    kernel = op.kernel(device.type, x._dtype)
    tensors = (grad_out, mean, rstd, weight, bias)
    usable = kernel is not None and _same_dtype(x, tensors) and grad_out._shape == x._shape
    usable = usable and all(t is None or t._storage.device is device for t in tensors)
    if not usable or 0 in x._shape or len(shape) > len(x._shape):
        return op.decomposition(grad_out, x, shape, mean, rstd, weight, bias, output_mask)
    want_x, want_w, want_b = output_mask
    grads = (
        empty(x._shape, x._dtype, device) if want_x else None,
        empty(weight._shape, x._dtype, device) if want_w and weight is not None else None,
        empty(bias._shape, x._dtype, device) if want_b and bias is not None else None,
    )
    packed = (contiguous(t) for t in (grad_out, x, mean, rstd))
    kernel(grads, *packed, None if weight is None else contiguous(weight))
    return grads


# vmap and forward AD run the decompositions (functional.runs_decomposition)
native_layer_norm.fused = True
native_layer_norm_backward.fused = True


def _pair(values, name) -> tuple:
    values = (values,) * 2 if isinstance(values, int) else tuple(values)
    if len(values) != 2:
        raise RuntimeError(f"{name} must be an int or a pair of ints, got {values}")
    return values


def im2col(op, x, kernel_size, dilation, padding, stride):
    """unfold, (N, C, H, W) -> (N, C*kh*kw, L).

    Kernel: ``kernel(out, x, kernel, dilation, padding, stride)``.
    """
    _check_row_dtype(op, x)
    if len(x._shape) != 4:
        raise RuntimeError(f"unfold(): expected 4-D input (N, C, H, W), got {list(x._shape)}")
    k, d, p, s = (
        _pair(v, n)
        for v, n in (
            (kernel_size, "kernel_size"),
            (dilation, "dilation"),
            (padding, "padding"),
            (stride, "stride"),
        )
    )
    check_unfold("unfold()", k, d, p, s)
    n, c, h, w = x._shape
    oh, ow = (pooled_size(size, k[i], s[i], p[i], d[i]) for i, size in enumerate((h, w)))
    if oh <= 0 or ow <= 0:
        raise RuntimeError(
            f"unfold(): input {list(x._shape)} is too small for kernel {list(k)} with padding "
            f"{list(p)} and dilation {list(d)}"
        )
    dev = x._storage.device
    kernel = op.kernel(dev.type, x._dtype)
    if kernel is None:
        return op.decomposition(x, k, d, p, s)
    out = empty((n, c * k[0] * k[1], oh * ow), x._dtype, dev)
    kernel(out, contiguous(x), k, d, p, s)
    return out


def col2im(op, x, output_size, kernel_size, dilation, padding, stride):
    """fold: (N, C*kh*kw, L) -> (N, C, H, W), summing overlaps."""
    _check_row_dtype(op, x)
    k, d, p, s = (
        _pair(v, n)
        for v, n in (
            (kernel_size, "kernel_size"),
            (dilation, "dilation"),
            (padding, "padding"),
            (stride, "stride"),
        )
    )
    h, w = _pair(output_size, "output_size")
    check_unfold("fold()", k, d, p, s)
    if len(x._shape) != 3 or x._shape[1] % (k[0] * k[1]):
        raise RuntimeError(f"fold(): expected input (N, C*{k[0]}*{k[1]}, L), got {list(x._shape)}")
    oh, ow = (pooled_size(size, k[i], s[i], p[i], d[i]) for i, size in enumerate((h, w)))
    if oh * ow != x._shape[2]:
        raise RuntimeError(
            f"fold(): expected {oh * ow} blocks for output_size {[h, w]}, got {x._shape[2]}"
        )
    dev = x._storage.device
    kernel = op.kernel(dev.type, x._dtype)
    if kernel is None:
        return op.decomposition(x, (h, w), k, d, p, s)
    out = empty((x._shape[0], x._shape[1] // (k[0] * k[1]), h, w), x._dtype, dev)
    kernel(out, contiguous(x), k, d, p, s)
    return out


def max_pool2d(op, x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """(values, indices): ``kernel(values, indices, x, kernel, stride, padding, dilation)``; indices
    are flat positions in each (H, W) input plane, as PyTorch returns them."""
    _check_row_dtype(op, x)
    if len(x._shape) not in (3, 4):
        raise RuntimeError(f"max_pool2d(): expected 3-D or 4-D input, got {list(x._shape)}")
    k = _pair(kernel_size, "kernel_size")
    s = _pair(stride, "stride") if stride not in (None, (), []) else k
    p, d = _pair(padding, "padding"), _pair(dilation, "dilation")
    check_pool("max_pool2d()", k, s, p, d)
    h, w = x._shape[-2:]
    oh, ow = (pooled_size(size, k[i], s[i], p[i], d[i], ceil_mode) for i, size in enumerate((h, w)))
    check_output_size("max_pool2d()", x._shape, (oh, ow))
    dev = x._storage.device
    kernel = op.kernel(dev.type, x._dtype)
    if kernel is None:
        return op.decomposition(x, k, s, p, d, ceil_mode)
    from ember.return_types import ValuesIndices

    shape = x._shape[:-2] + (oh, ow)
    values, indices = empty(shape, x._dtype, dev), empty(shape, dt.int64, dev)
    kernel(values, indices, contiguous(x), k, s, p, d)
    return ValuesIndices(values, indices)


def constant_pad(op, x, pad, value=0):
    """F.pad(mode='constant'): implemented by the core (fill + copy into the inner slice);
    negative pads crop."""
    from ._common import OPS
    from .view import narrow

    pad = tuple(int(v) for v in pad)
    if len(pad) % 2 or len(pad) // 2 > len(x._shape):
        raise RuntimeError(
            f"pad(): padding length must be even and at most 2 * ndim ({len(x._shape)}), got "
            f"{len(pad)}"
        )
    shape = list(x._shape)
    for i in range(len(pad) // 2):
        dim = len(shape) - 1 - i
        shape[dim] += pad[2 * i] + pad[2 * i + 1]
        if shape[dim] < 0:
            raise RuntimeError(f"pad(): resulting size of dim {dim} would be negative: {shape}")
    out = OPS["full"].backend((tuple(shape), value, x._dtype, x._storage.device))
    inner_out, inner_in = out, x
    for i in range(len(pad) // 2):
        dim = len(shape) - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        size = x._shape[dim]
        src_start, src_len = max(0, -before), size - max(0, -before) - max(0, -after)
        if src_len <= 0:
            return out
        inner_in = narrow(op, inner_in, dim, src_start, src_len)
        inner_out = narrow(op, inner_out, dim, max(0, before), src_len)
    OPS["copy_"].backend((inner_out, inner_in))
    return out
