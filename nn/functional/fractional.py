"""Fractional max pooling (Graham, 2014): pseudo-random window starts per (sample, channel),
drawn from PyTorch's interval rule so the same ``_random_samples`` give the same windows."""

from __future__ import annotations

import ember

from .pooling import _result


def _pair_like(value, n):
    return (value,) * n if isinstance(value, (int, float)) else tuple(value)


def _output_sizes(op, x, n, output_size, output_ratio):
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    if output_size is not None:
        return _pair_like(output_size, n)
    ratio = _pair_like(output_ratio, n)
    if len(ratio) != n:
        raise ValueError(f"{op} requires output_ratio to either be a single Int or tuple of Ints.")
    return tuple(int(x.shape[x.ndim - n + i] * ratio[i]) for i in range(n))


def _starts(samples, size: int, out: int, pool: int):
    """Window starts (..., out) from samples (...,): PyTorch's generate_intervals,
    ``int((i + u) alpha) - int(u alpha)`` in the samples' dtype, the last window at the end."""
    if out == 1:
        return ember.full(
            (*samples.shape, 1), size - pool, dtype=ember.int64, device=samples.device
        )
    alpha = ember.tensor(float(size - pool), dtype=samples.dtype) / (out - 1)
    alpha = alpha.to(samples.device)
    steps = ember.arange(out - 1, device=samples.device).to(samples.dtype)
    u = samples.unsqueeze(-1)
    starts = ((steps + u) * alpha).trunc() - (u * alpha).trunc()
    last = ember.full((*samples.shape, 1), size - pool, dtype=ember.int64, device=samples.device)
    return ember.cat([starts.to(ember.int64), last], -1)


def _check(op, x, n, kernel, sizes):
    if x.ndim not in (n + 1, n + 2):
        raise RuntimeError(
            f"{op}(): Expected {n + 1}D or {n + 2}D tensor, but got: {list(x.shape)}"
        )
    for i, (k, o) in enumerate(zip(kernel, sizes)):
        size = x.shape[x.ndim - n + i]
        if o + k - 1 > size:
            raise RuntimeError(
                f"{op}(): pool size {k} and output size {o} are too large for input size {size} "
                f"(dim {x.ndim - n + i})"
            )


def _fractional(op, n, input, kernel_size, output_size, output_ratio, samples):
    kernel = _pair_like(kernel_size, n)
    sizes = _output_sizes(op, input, n, output_size, output_ratio)
    _check(op, input, n, kernel, sizes)
    batched = input.ndim == n + 2
    x = input if batched else input.unsqueeze(0)
    batch, channels = x.shape[:2]
    if samples is None:
        samples = ember.rand(batch, channels, n, dtype=x.dtype, device=x.device)
    # PyTorch pairs the samples with the dims from the last (width) backwards
    order = list(reversed(range(n))) if n == 2 else list(range(n))
    spatial = x.shape[2:]
    picked = x
    starts = []
    for i in range(n):
        starts.append(_starts(samples[:, :, order[i]], spatial[i], sizes[i], kernel[i]))
        # sizes, not -1: an empty batch has no size to infer
        pos = (starts[i].unsqueeze(-1) + ember.arange(kernel[i], device=x.device)).reshape(
            batch, channels, sizes[i] * kernel[i]
        )
        shape = list(picked.shape)
        shape[2 + i] = pos.shape[-1]
        view = [batch, channels] + [1] * n
        view[2 + i] = pos.shape[-1]
        picked = picked.gather(2 + i, pos.view(view).expand(shape))
    split = [v for i in range(n) for v in (sizes[i], kernel[i])]
    permute = [0, 1, *(2 + 2 * i for i in range(n)), *(3 + 2 * i for i in range(n))]
    windows = picked.reshape(batch, channels, *split).permute(*permute)
    cells = 1
    for k in kernel:
        cells *= k
    values, local = windows.reshape(batch, channels, *sizes, cells).max(-1)
    indices = _flat(local, starts, kernel, spatial)
    if not batched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return values, indices


def _flat(local, starts, kernel, spatial):
    """Flat input positions of the picks ``local`` (indices into the flattened windows):
    per dim, the window's start plus the pick's offset in it."""
    n = len(kernel)
    rest, coords = local, []
    for i in reversed(range(n)):
        offset = rest % kernel[i]
        rest = rest // kernel[i]
        view = [*starts[i].shape[:2]] + [1] * n
        view[2 + i] = starts[i].shape[-1]
        coords.append(starts[i].view(view) + offset)
    flat = None
    for i, coord in enumerate(reversed(coords)):
        flat = coord if flat is None else flat * spatial[i] + coord
    return flat


def fractional_max_pool2d_with_indices(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    return _fractional(
        "fractional_max_pool2d",
        2,
        input,
        kernel_size,
        output_size,
        output_ratio,
        _random_samples,
    )


def fractional_max_pool2d(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    """Max over pseudo-random (kH, kW) windows of (N, C, H, W), the output ``output_size`` or
    ``output_ratio`` of the input's."""
    values, indices = fractional_max_pool2d_with_indices(
        input, kernel_size, output_size, output_ratio, _random_samples=_random_samples
    )
    return _result(values, indices, return_indices)


def fractional_max_pool3d_with_indices(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    return _fractional(
        "fractional_max_pool3d",
        3,
        input,
        kernel_size,
        output_size,
        output_ratio,
        _random_samples,
    )


def fractional_max_pool3d(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    """Max over pseudo-random (kT, kH, kW) windows of (N, C, T, H, W)."""
    values, indices = fractional_max_pool3d_with_indices(
        input, kernel_size, output_size, output_ratio, _random_samples=_random_samples
    )
    return _result(values, indices, return_indices)
