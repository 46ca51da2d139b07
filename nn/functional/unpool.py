"""max_unpool1d/2d/3d: the partial inverse of max pooling, one scatter of the pooled values
to their recorded flat positions (gradient: the gather back)."""

from __future__ import annotations

import math

import ember

from .conv import _batch


def _expand(value, n):
    return (value,) * n if isinstance(value, int) else tuple(value)


def _output_size(input, kernel, stride, padding, output_size):
    """PyTorch's _unpool_output_size: the default size, or a checked ``output_size``."""
    n = len(kernel)
    default = [
        (input.shape[input.ndim - n + d] - 1) * stride[d] + kernel[d] - 2 * padding[d]
        for d in range(n)
    ]
    if output_size is None:
        sizes = default
    else:
        sizes = list(output_size)
        if len(sizes) == n + 2:
            sizes = sizes[2:]
        if len(sizes) != n:
            raise ValueError(
                f"output_size should be a sequence containing {n} or {n + 2} elements, but it "
                f"has a length of '{len(sizes)}'"
            )
        for d in range(n):
            low, high = default[d] - stride[d], default[d] + stride[d]
            if not low < sizes[d] < high:
                raise ValueError(
                    f'invalid output_size "{output_size}" (dim {d} must be between {low} and '
                    f"{high})"
                )
    for d, size in enumerate(sizes):
        if size < 0:
            raise ValueError(
                "max_unpooling: output_size must contain non-negative spatial dimensions, but "
                f"got output_size[{d}]={size}"
            )
    return sizes


def _max_unpool(op, n, input, indices, kernel_size, stride, padding, output_size):
    kernel = _expand(kernel_size, n)
    stride = _expand(stride, n) if stride is not None else kernel
    padding = _expand(padding, n)
    sizes = _output_size(input, kernel, stride, padding, output_size)
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor "
            f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}"
        )
    x, batched = _batch(op, input, n)
    index = indices if batched else indices.unsqueeze(0)
    volume = math.prod(sizes)
    flat_index = index.reshape(*x.shape[:2], -1)
    if flat_index.numel() and (int(flat_index.min()) < 0 or int(flat_index.max()) >= volume):
        bad = int(flat_index.max()) if int(flat_index.max()) >= volume else int(flat_index.min())
        raise RuntimeError(
            f"Found an invalid max index: {bad} (output volumes are of size "
            f"{'x'.join(map(str, sizes))})"
        )
    out = ember.zeros(*x.shape[:2], volume, dtype=x.dtype, device=x.device)
    out = out.scatter(2, flat_index, x.reshape(*x.shape[:2], -1))
    out = out.view(*x.shape[:2], *sizes)
    return out if batched else out.squeeze(0)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Place (N, C, L) pooled values at their ``indices`` in zeros of the unpooled length."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Place (N, C, H, W) pooled values at their flat ``indices`` in zeros of the unpooled
    size."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Place (N, C, D, H, W) pooled values at their flat ``indices``."""
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)
