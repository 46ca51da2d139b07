"""Max, average and adaptive pooling (1-D as 2-D over a height of 1), over the op table's
max_pool2d_with_indices, im2col and padding rows."""

from __future__ import annotations

import functools

import ember
from ember.autograd.graph_names import present
from ember.dispatcher.kinds.window import check_output_size, check_pool, expand, pooled_size
from ember.dispatcher.optable import OPS

from ._out import into
from .conv import _batch


def _geometry(op: str, n: int, kernel_size, stride, padding, dilation=1) -> tuple:
    """Checked (kernel, stride, padding, dilation) n-tuples; stride defaults to the kernel."""
    kernel = expand(kernel_size, n, "kernel_size", op)
    stride = expand(stride, n, "stride", op) if stride not in (None, ()) else kernel
    padding, dilation = expand(padding, n, "padding", op), expand(dilation, n, "dilation", op)
    check_pool(op, kernel, stride, padding, dilation)
    return kernel, stride, padding, dilation


def _result(values, indices, return_indices):
    return (values, indices) if return_indices else values


def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    kernel, step, padding, dilation = _geometry(
        "max_pool2d", 2, kernel_size, stride, padding, dilation
    )
    step = () if stride in (None, ()) else step  # the kernel, as PyTorch's node says: ()
    values, indices = OPS["max_pool2d_with_indices"](
        input, kernel, step, padding, dilation, ceil_mode
    )
    return _result(values, indices, return_indices)


def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    _batch("max_pool1d", input, 1)
    k, s, p, d = _geometry("max_pool1d", 1, kernel_size, stride, padding, dilation)
    values, indices = OPS["max_pool2d_with_indices"](
        input.unsqueeze(-2), (1, *k), (1, *s), (0, *p), (1, *d), ceil_mode
    )
    return _result(values.squeeze(-2), indices.squeeze(-2), return_indices)


@functools.lru_cache(maxsize=256)
def _window_counts(size, kernel, stride, padding, ceil_mode, count_include_pad):
    """Per output position along one dim: how many cells its window counts (PyTorch's rule:
    clipped to the padded input, or to the input itself without ``count_include_pad``)."""
    counts = []
    for i in range(pooled_size(size, kernel, stride, padding, 1, ceil_mode)):
        start = i * stride - padding
        end = min(start + kernel, size + padding)
        if not count_include_pad:
            start, end = max(start, 0), min(end, size)
        counts.append(end - start)
    return tuple(counts)


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
    *,
    out=None,
):
    """Average over windows; PyTorch's rules for padding and ceil_mode in the divisor."""

    def compute():
        x, batched = _batch("avg_pool2d", input, 2)
        k, s, p, _ = _geometry("avg_pool2d", 2, kernel_size, stride, padding)
        result = _avg_pool2d(
            "avg_pool2d", x, k, s, p, ceil_mode, count_include_pad, divisor_override
        )
        saved = {
            "self": input,
            "kernel_size": k,
            "stride": () if stride is None else s,
            "padding": p,
            "ceil_mode": ceil_mode,
            "count_include_pad": count_include_pad,
            "divisor_override": divisor_override,
        }
        result = result if batched else result.squeeze(0)
        return present(result, "AvgPool2DBackward0", input, saved=saved)

    return pooled_into("avg_pool2d", out, input, compute)


def pooled_into(name: str, out, input, compute):
    """``out=`` of the average pools (ATen functions, as ``F.avg_pool2d`` is in PyTorch): out's
    dtype must be the result's, by the rule of conv2d's row (a pool is a box-filter conv)."""
    return into(name, "conv2d", out, (input,), compute)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    x, batched = _batch("avg_pool1d", input, 1)
    k, s, p, _ = _geometry("avg_pool1d", 1, kernel_size, stride, padding)
    out = _avg_pool2d(
        "avg_pool1d", x.unsqueeze(-2), (1, *k), (1, *s), (0, *p), ceil_mode, count_include_pad
    ).squeeze(-2)
    return out if batched else out.squeeze(0)


def _avg_pool2d(op, x, k, s, p, ceil_mode, count_include_pad, divisor=None):
    """Average pooling of a batched (N, C, H, W) ``x`` with checked window tuples."""
    if divisor == 0:
        raise RuntimeError(f"{op}: divisor must be not zero")
    n, c, h, w = x.shape
    counts = [
        _window_counts(size, k[i], s[i], p[i], ceil_mode, count_include_pad)
        for i, size in enumerate((h, w))
    ]
    oh, ow = len(counts[0]), len(counts[1])
    check_output_size(op, x.shape, (oh, ow))
    # Zeros on every side, plus on the right/bottom for ceil_mode's last (partial) windows.
    extra_h = max(0, (oh - 1) * s[0] + k[0] - h - 2 * p[0])
    extra_w = max(0, (ow - 1) * s[1] + k[1] - w - 2 * p[1])
    padded = OPS["constant_pad_nd"](
        x.reshape(n * c, 1, h, w), (p[1], p[1] + extra_w, p[0], p[0] + extra_h), 0
    )
    sums = OPS["im2col"](padded, k, (1, 1), (0, 0), s).sum(1).view(n, c, oh, ow)
    if divisor:
        return average(sums, divisor)
    if len(set(counts[0])) == 1 and len(set(counts[1])) == 1:
        return average(sums, counts[0][0] * counts[1][0])
    rows = ember.tensor(counts[0], dtype=x.dtype, device=x.device).view(-1, 1)
    cols = ember.tensor(counts[1], dtype=x.dtype, device=x.device)
    return average(sums, rows * cols)


def average(sums, counts):
    """Window sums over their cell counts; integers divide in integers, truncating, as PyTorch's
    kernels do (an int64 average stays int64)."""
    if sums.dtype.is_floating_point:
        return sums / counts
    return ember.div(sums, counts, rounding_mode="trunc")


def _adaptive_size(op: str, output_size, x, n: int = 2) -> tuple:
    """The n output sizes of an adaptive pool over the last n dims, None meaning the input's
    size; PyTorch's refusals of negative sizes and of inputs with an empty non-batch dim (no
    window to pool)."""
    sizes = (output_size,) * n if isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != n:
        raise RuntimeError(f"{op}: output_size must be {n}, got {list(sizes)}")
    sizes = tuple(size if out is None else out for out, size in zip(sizes, x.shape[-n:]))
    if any(s < 0 for s in sizes):
        raise RuntimeError(
            f"{op}: elements of output_size must be greater than or equal to 0 but received "
            f"{list(sizes)}"
        )
    for dim in range(1, x.ndim):
        if x.shape[dim] == 0:
            raise RuntimeError(
                f"{op}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {list(x.shape)} with dimension {dim} being empty"
            )
    return sizes


@functools.lru_cache(maxsize=256)
def _adaptive_edges(size: int, out: int):
    """PyTorch's adaptive windows along one dim: starts floor(i*size/out), ends ceil((i+1)*...)."""
    starts = [(i * size) // out for i in range(out)]
    ends = [-(-((i + 1) * size) // out) for i in range(out)]
    return starts, ends


def adaptive_avg_pool2d(input, output_size):
    """Averages over PyTorch's adaptive windows: a plain average pool when the sizes divide,
    an integral image otherwise."""
    x, batched = _batch("adaptive_avg_pool2d", input, 2)
    h, w = x.shape[-2:]
    out_h, out_w = _adaptive_size("adaptive_avg_pool2d", output_size, x)
    if (out_h, out_w) == (1, 1):  # PyTorch's mean, over the dims in its order
        return _unbatched(x.mean((-1, -2), keepdim=True), batched)
    elif out_h and out_w and h % out_h == 0 and w % out_w == 0:
        out = avg_pool2d(x, (h // out_h, w // out_w))
    else:
        integral = OPS["constant_pad_nd"](x.cumsum(-2).cumsum(-1), (1, 0, 1, 0), 0)
        (r0, r1), (c0, c1) = (
            [
                ember.tensor(e, dtype=ember.int64, device=x.device)
                for e in _adaptive_edges(size, out)
            ]
            for size, out in ((h, out_h), (w, out_w))
        )

        def corner(rows, cols):
            return integral.index_select(-2, rows).index_select(-1, cols)

        total = corner(r1, c1) - corner(r0, c1) - corner(r1, c0) + corner(r0, c0)
        out = total / ((r1 - r0).view(-1, 1) * (c1 - c0).view(1, -1)).to(x.dtype)
    out = _unbatched(out, batched)
    return present(out, "AdaptiveAvgPool2DBackward0", input, saved={"self": input})


def _unbatched(out, batched: bool):
    return out if batched else out.squeeze(0)


def adaptive_avg_pool1d(input, output_size):
    _batch("adaptive_avg_pool1d", input, 1)
    size = output_size if isinstance(output_size, int) else output_size[0]
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, size)).squeeze(-2)


@functools.lru_cache(maxsize=256)
def _adaptive_rows(size: int, out: int):
    """(out, longest window) positions of each adaptive window, short windows padded by
    repeating their last position (harmless for a max; the first maximum still wins)."""
    starts, ends = _adaptive_edges(size, out)
    longest = max(e - s for s, e in zip(starts, ends))
    return [[min(s + j, e - 1) for j in range(longest)] for s, e in zip(starts, ends)]


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Maxima over PyTorch's adaptive windows, with flat (H*W) indices like max_pool2d's (also
    when recording a graph: PyTorch's node keeps them as result1)."""
    recorded = input.requires_grad and ember.is_grad_enabled()
    values, indices = _adaptive_max_pool2d(input, output_size, return_indices or recorded)
    saved = {"self": input} if indices is None else {"self": input, "result1": indices}
    present(values, "AdaptiveMaxPool2DBackward0", input, saved=saved)
    return (values, indices) if return_indices else values


def _adaptive_max_pool2d(input, output_size, with_indices):
    """(values, indices): the indices None when not ``with_indices`` where they cost more
    (uneven windows)."""
    x, batched = _batch("adaptive_max_pool2d", input, 2)
    n, c, h, w = x.shape
    out_h, out_w = _adaptive_size("adaptive_max_pool2d", output_size, x)
    if not out_h or not out_w:  # no windows: empty results
        shape = (n, c, out_h, out_w)[0 if batched else 1 :]
        values = ember.zeros(shape, dtype=x.dtype, device=x.device)
        return values, ember.zeros(shape, dtype=ember.int64, device=x.device)
    if h % out_h == 0 and w % out_w == 0:
        return max_pool2d(input, (h // out_h, w // out_w), return_indices=True)
    rows, cols = (
        ember.tensor(_adaptive_rows(size, out), dtype=ember.int64, device=x.device)
        for size, out in ((h, out_h), (w, out_w))
    )
    kh, kw = rows.shape[1], cols.shape[1]
    picked = x.index_select(2, rows.reshape(-1)).index_select(3, cols.reshape(-1))
    windows = picked.view(n, c, out_h, kh, out_w, kw).permute(0, 1, 2, 4, 3, 5)
    values, local = windows.reshape(n, c, out_h, out_w, kh * kw).max(-1)
    if not batched:
        values, local = values.squeeze(0), local.squeeze(0)
    if not with_indices:
        return values, None
    shape = tuple(local.shape) + (1,)
    row = rows.view(out_h, 1, kh).expand(*shape[:-1], kh).gather(-1, (local // kw).view(shape))
    col = cols.view(1, out_w, kw).expand(*shape[:-1], kw).gather(-1, (local % kw).view(shape))
    return values, (row * w + col).squeeze(-1)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool2d(input, output_size, return_indices=True)
