"""Sample generators for the nn rows: softmax family, padding, im2col/col2im, max pooling,
grid sampling."""

from __future__ import annotations

import math

from .sampling import LARGE, Arr, Sample, arr, call_args

C, T, S, N = "contiguous", "transposed", "sliced", "negative"


def along_dim(op, dtype, device, rng):
    """softmax / log_softmax: every dim, non-contiguous inputs, empty and large inputs."""
    cases = (
        ((5,), C, 0),
        ((3, 4), C, -1),
        ((3, 4), T, 0),
        ((2, 3, 4), N, 1),
        ((2, 3, 4), S, 2),
        ((0, 4), C, 1),
        ((4, LARGE // 4), C, 1),
    )
    for shape, layout, dim in cases:
        yield Sample(
            call_args(op, input=arr(dtype, shape, rng, layout, low=-3.0, high=3.0), dim=dim)
        )


def layer_norm(op, dtype, device, rng):
    """Over the last one or two dims, with and without weight/bias (broadcast ones too),
    non-contiguous, empty and large inputs."""
    cases = (
        ((5,), (5,), C, True),
        ((3, 4), (4,), T, True),
        ((2, 3, 4), (3, 4), N, True),
        ((2, 3, 4), (4,), S, False),
        ((0, 4), (4,), C, True),
        ((LARGE // 64, 64), (64,), C, True),
    )
    for shape, normalized, layout, affine in cases:
        x = arr(dtype, shape, rng, layout, low=-3.0, high=3.0)
        w = arr(dtype, normalized, rng, low=0.5, high=2.0) if affine else None
        b = arr(dtype, normalized, rng) if affine else None
        yield Sample(
            call_args(op, input=x, normalized_shape=normalized, weight=w, bias=b, eps=1e-5)
        )


def pad(op, dtype, device, rng):
    """constant_pad_nd: positive, zero and negative (cropping) pads, over 1-3 trailing dims."""
    cases = (
        ((3,), (1, 2), 0),
        ((2, 3), (1, 0, 0, 2), 1),
        ((2, 3, 4), (2, 1, 1, 1), -1),
        ((2, 5), (-1, 2), 0),
        ((1, 2, 3, 4), (1, 1, -1, 0, 0, 1), 3),
        ((3, 4), (0, 0), 0),
    )
    for shape, pads, value in cases:
        x = arr(dtype, shape, rng, T if len(shape) >= 2 else C)
        fill = bool(value) if dtype.name == "bool" else value
        yield Sample(call_args(op, input=x, pad=pads, value=fill))


# (input shape, kernel, dilation, padding, stride)
CONV_CASES = (
    ((1, 1, 4, 4), (2, 2), (1, 1), (0, 0), (1, 1)),
    ((2, 3, 5, 6), (3, 3), (1, 1), (1, 1), (1, 1)),
    ((2, 2, 7, 7), (3, 2), (2, 1), (1, 0), (2, 3)),
    ((1, 4, 6, 5), (1, 1), (1, 1), (0, 0), (2, 2)),
)


def im2col(op, dtype, device, rng):
    for shape, kernel, dilation, padding, stride in CONV_CASES:
        x = arr(dtype, shape, rng, S)
        yield Sample(
            call_args(
                op, input=x, kernel_size=kernel, dilation=dilation, padding=padding, stride=stride
            )
        )


def col2im(op, dtype, device, rng):
    for (n, c, h, w), kernel, dilation, padding, stride in CONV_CASES:
        oh = (h + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
        ow = (w + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
        cols = arr(dtype, (n, c * kernel[0] * kernel[1], oh * ow), rng, C)
        yield Sample(
            call_args(
                op,
                input=cols,
                output_size=(h, w),
                kernel_size=kernel,
                dilation=dilation,
                padding=padding,
                stride=stride,
            )
        )


def max_pool2d(op, dtype, device, rng):
    """Windows with padding, dilation, ceil mode; 3-D (unbatched) and 4-D inputs. Values are
    distinct so the index of the maximum is unambiguous."""
    cases = (
        ((1, 1, 4, 4), (2, 2), (), (0, 0), (1, 1), False),
        ((2, 3, 5, 6), (3, 3), (2, 2), (1, 1), (1, 1), False),
        ((2, 5, 7), (2, 3), (2, 1), (1, 1), (2, 1), True),
        ((1, 2, 9, 9), (3, 3), (3, 3), (0, 0), (2, 2), False),
    )
    for shape, kernel, stride, padding, dilation, ceil_mode in cases:
        # Distinct small integers: exact in every float dtype, so the argmax is unambiguous.
        # (Shifted before the cast, so that a refused dtype such as bool keeps its dtype.)
        x = Arr((rng.permutation(math.prod(shape)).reshape(shape) - 50).astype(dtype.np))
        yield Sample(
            call_args(
                op,
                input=x,
                kernel_size=kernel,
                stride=stride,
                padding=padding,
                dilation=dilation,
                ceil_mode=ceil_mode,
            )
        )


def conv2d(op, dtype, device, rng):
    """Bias or not, strides, padding (ints, pairs, 'same', 'valid'), dilation, groups, and an
    unbatched input."""
    cases = (
        ((1, 1, 4, 4), (2, 1, 2, 2), True, 1, 0, 1, 1),
        ((2, 3, 5, 6), (4, 3, 3, 3), False, (1, 2), (1, 0), 1, 1),
        ((2, 4, 7, 7), (6, 2, 3, 2), True, 2, 1, (2, 1), 2),
        ((1, 2, 6, 5), (2, 2, 3, 3), True, 1, "same", 2, 1),
        ((2, 3, 5, 5), (2, 3, 2, 2), False, 1, "valid", 1, 1),
        ((3, 6, 6), (4, 3, 3, 3), True, 1, 1, 1, 1),
    )
    for shape, w_shape, bias, stride, padding, dilation, groups in cases:
        yield Sample(
            call_args(
                op,
                input=arr(dtype, shape, rng, S, low=-2.0, high=2.0),
                weight=arr(dtype, w_shape, rng, C, low=-1.0, high=1.0),
                bias=arr(dtype, (w_shape[0],), rng) if bias else None,
                stride=stride,
                padding=padding,
                dilation=dilation,
                groups=groups,
            )
        )


def grid_sampler(op, dtype, device, rng):
    """grid_sampler_2d/_3d and their backward: every mode, padding and align_corners, points
    inside and outside the input, strided inputs and grids; the backward with and without the
    input's gradient."""
    dims = 3 if "3d" in op.name else 2
    backward = op.name.endswith("_backward")
    # small enough for the gradient checks (tests/autograd/cases.py: 96 input elements, a
    # sliced layout's buffer counted whole)
    in_shape, out_spatial = ((2, 2, 3, 3), (2, 2)) if dims == 2 else ((1, 1, 2, 3, 3), (2, 2, 2))
    modes = (0, 1, 2) if dims == 2 else (0, 1)
    layouts = (C, T, S, N)
    for k, (mode, padding, align) in enumerate(
        (m, p, a) for m in modes for p in (0, 1, 2) for a in (False, True)
    ):
        x = arr(dtype, in_shape, rng, layouts[k % 4], low=-2.0, high=2.0)
        grid_shape = (in_shape[0], *out_spatial, dims)
        grid = arr(dtype, grid_shape, rng, layouts[(k + 1) % 4], low=-1.2, high=1.2)
        named = dict(input=x, grid=grid, interpolation_mode=mode, padding_mode=padding,
                     align_corners=align)  # fmt: skip
        if backward:
            grad = arr(dtype, (*in_shape[:2], *out_spatial), rng, layouts[(k + 2) % 4])
            named.update(grad_output=grad, output_mask=[k % 3 != 2, True])
        yield Sample(call_args(op, **named))
