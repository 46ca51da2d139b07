"""The table of nn layers and functions that test_breadth.py runs against PyTorch.

A module case names a class of ``nn``, its constructor arguments and its inputs; a function case
names a function of ``nn.functional``, its keyword options and its inputs. An input is a shape
(random normal floats, which get gradients) or a generator ``fn(rng, dtype)`` for integer targets,
positive values, lengths and the like.
"""

from __future__ import annotations

import numpy as np
import pytest


class _Generated:
    """``make(rng, dtype)`` marked with whether its (float) values get a gradient (generated
    values are targets, lengths and variances, without one unless asked), with a stable repr
    for test ids (pytest-xdist workers must collect the same ids)."""

    def __init__(self, make, grad, label):
        self.make, self.grad, self.label = make, grad, label

    def __call__(self, rng, dtype):
        return self.make(rng, dtype)

    def __repr__(self) -> str:
        return self.label


def _generator(make, grad=False, label="generated"):
    return _Generated(make, grad, label)


def ints(high, shape, low=0):
    """Integer (int64) inputs in [low, high)."""
    return _generator(
        lambda rng, dtype: rng.integers(low, high, size=shape).astype(np.int64),
        label=f"ints({high}, {shape})",
    )


def positive(shape, low=0.1, grad=False):
    """Floats in [low, low + 2)."""
    return _generator(
        lambda rng, dtype: (rng.random(shape) * 2 + low).astype(dtype), grad, f"positive({shape})"
    )


def unit(shape, grad=False):
    """Floats in (0, 1), e.g. probabilities."""
    return _generator(
        lambda rng, dtype: (rng.random(shape) * 0.98 + 0.01).astype(dtype), grad, f"unit({shape})"
    )


def normal(shape, grad=False):
    """Normal floats, without a gradient unless asked (for functions PyTorch cannot
    differentiate)."""
    return _generator(
        lambda rng, dtype: rng.standard_normal(shape).astype(dtype), grad, f"normal({shape})"
    )


def signs(shape):
    """-1 or 1 (as floats), the targets of margin losses."""
    return _generator(
        lambda rng, dtype: rng.choice([-1.0, 1.0], size=shape).astype(dtype),
        label=f"signs({shape})",
    )


def const(value, grad=False):
    """A fixed array (its dtype kept, except floats that follow the case's dtype)."""

    def make(rng, dtype):
        array = np.asarray(value)
        return array.astype(dtype) if array.dtype.kind == "f" else array

    return _generator(make, grad, f"const({value})")


def grads_for(specs) -> list:
    """Which inputs get gradients: shapes do, generators when marked."""
    return [getattr(spec, "grad", False) if callable(spec) else True for spec in specs]


def inputs_for(specs, rng, dtype) -> list:
    out = []
    for spec in specs:
        if callable(spec):
            out.append(spec(rng, dtype))
        elif isinstance(spec, tuple):
            out.append((rng.standard_normal(spec) * 2).astype(dtype))
        else:
            out.append(spec)
    return out


def mcase(name, args=(), kwargs=None, inputs=((2, 3),), forward=None, id=None, f64=True):
    label = id or f"{name}-{args}-{kwargs or ''}"
    return pytest.param(name, args, kwargs or {}, inputs, forward or {}, f64, id=label)


def fcase(name, kwargs=None, inputs=((2, 3),), id=None, f64=True):
    label = id or f"{name}-{kwargs or ''}"
    return pytest.param(name, kwargs or {}, inputs, f64, id=label)


# Values near a kink (|x| == lambd...) make finite differences and torch disagree by nothing but
# the convention at the kink; random normals * 2 avoid them with probability 1.
ACTIVATION_MODULES = [
    mcase("Threshold", (0.1, 20.0)),
    mcase("Threshold", (-0.5, 2.0, False), inputs=[(3, 4, 2)]),
    mcase("Hardshrink"),
    mcase("Hardshrink", (1.2,)),
    mcase("Softshrink"),
    mcase("Softshrink", (0.8,), inputs=[(2, 3, 4)]),
    mcase("Tanhshrink"),
    mcase("Softmax2d", inputs=[(2, 3, 4, 5)]),
    mcase("Softmax2d", inputs=[(3, 4, 5)]),
    mcase("PReLU"),
    mcase("PReLU", (3, 0.1), inputs=[(2, 3, 4)]),
    mcase("PReLU", (3,), inputs=[(4, 3)]),
    mcase("PReLU", inputs=[(5,)]),
    mcase("RReLU", forward=None, id="RReLU-eval"),
]

ACTIVATION_FUNCTIONS = [
    fcase("hardshrink", {"lambd": 0.3}),
    fcase("softshrink", {"lambd": 0.0}),
    fcase("tanhshrink"),
    fcase("prelu", inputs=[(2, 3, 4), (3,)]),
    fcase("prelu", inputs=[(2, 3), (1,)]),
    fcase("rrelu", {"lower": 0.2, "upper": 0.4}),
    fcase("threshold", {"threshold": 0.5, "value": -3.0}),
]


def labels(classes, shape):
    """Multi-label targets: each row lists distinct classes, then -1 and arbitrary values
    (which PyTorch ignores after the first -1)."""

    def make(rng, dtype):
        rows = []
        for _ in range(int(np.prod(shape[:-1]))):
            row = rng.permutation(classes)[: shape[-1]]
            cut = rng.integers(0, shape[-1] + 1)
            if cut < shape[-1]:
                row[cut] = -1
            rows.append(row)
        return np.array(rows, dtype=np.int64).reshape(shape)

    return _generator(make, label=f"labels({classes}, {shape})")


W4 = const([0.5, 1.0, 2.0, 0.25])

LOSS_MODULES = [
    mcase("PoissonNLLLoss", inputs=[(3, 4), positive((3, 4))]),
    mcase(
        "PoissonNLLLoss", (False, True), inputs=[positive((3, 4), grad=True), positive((3, 4), 0.0)]
    ),
    mcase("PoissonNLLLoss", (True, True), {"reduction": "none"}, [(2, 5), positive((2, 5))]),
    mcase("GaussianNLLLoss", inputs=[(3, 4), (3, 4), positive((3, 4), grad=True)]),
    mcase("GaussianNLLLoss", (), {"full": True}, [(3, 4), (3, 4), positive((3,), grad=True)]),
    mcase(
        "GaussianNLLLoss", (), {"reduction": "sum"}, [(3, 4), (3, 4), positive((3, 1), grad=True)]
    ),
    mcase("GaussianNLLLoss", (), {"eps": 0.5}, [(2, 3), (2, 3), unit((2, 3), grad=True)]),
    mcase("SoftMarginLoss", inputs=[(3, 4), signs((3, 4))]),
    mcase("SoftMarginLoss", (), {"reduction": "none"}, [(5,), signs((5,))]),
    mcase("MultiLabelSoftMarginLoss", inputs=[(3, 4), ints(2, (3, 4))]),
    mcase("MultiLabelSoftMarginLoss", (W4,), {"reduction": "sum"}, [(3, 4), unit((3, 4))]),
    mcase("MultiLabelMarginLoss", inputs=[(5, 4), labels(4, (5, 4))]),
    mcase("MultiLabelMarginLoss", (), {"reduction": "none"}, [(4,), labels(4, (4,))]),
    mcase("MultiMarginLoss", inputs=[(5, 4), ints(4, (5,))]),
    mcase("MultiMarginLoss", (2, 0.5), inputs=[(5, 4), ints(4, (5,))]),
    mcase("MultiMarginLoss", (1, 1.0, W4), {"reduction": "none"}, [(5, 4), ints(4, (5,))]),
    mcase("MultiMarginLoss", (), {"reduction": "none"}, [(4,), const(2)]),
    mcase("HingeEmbeddingLoss", inputs=[(3, 4), signs((3, 4))]),
    mcase("HingeEmbeddingLoss", (0.5,), {"reduction": "sum"}, [(6,), signs((6,))]),
    mcase("MarginRankingLoss", inputs=[(5,), (5,), signs((5,))]),
    mcase("MarginRankingLoss", (0.3,), {"reduction": "none"}, [(5,), (5,), signs((5,))]),
    mcase("TripletMarginLoss", inputs=[(4, 3), (4, 3), (4, 3)]),
    mcase("TripletMarginLoss", (2.0, 1.0), {"swap": True}, [(4, 3), (4, 3), (4, 3)]),
    mcase("TripletMarginLoss", (), {"p": 3, "reduction": "none"}, [(4, 3), (4, 3), (4, 3)]),
    mcase("TripletMarginWithDistanceLoss", (), {"margin": 3.0}, [(4, 3), (4, 3), (4, 3)]),
    mcase("TripletMarginWithDistanceLoss", (), {"swap": True}, [(4, 3), (4, 3), (4, 3)]),
    mcase("NLLLoss2d", inputs=[(2, 3, 4, 4), ints(3, (2, 4, 4))]),
    mcase("PairwiseDistance", inputs=[(4, 3), (4, 3)]),
    mcase("PairwiseDistance", (1.0, 0.0, True), inputs=[(2, 4, 3), (4, 3)]),
    mcase("CosineSimilarity", inputs=[(4, 3), (4, 3)]),
    mcase("CosineSimilarity", (-1, 0.1), inputs=[(2, 4, 3), (1, 3)]),
    mcase(
        "CTCLoss",
        inputs=[(8, 3, 5), ints(5, (3, 4), 1), const([8, 6, 7]), const([4, 2, 3])],
    ),
    mcase(
        "CTCLoss",
        (4, "sum"),
        inputs=[(6, 2, 5), ints(4, (5,)), const([6, 6]), const([3, 2])],
        id="CTCLoss-concatenated",
    ),
    mcase(
        "CTCLoss",
        (0, "none", True),
        inputs=[
            (5, 3, 4),
            const([[1, 1, 1], [1, 2, 1], [2, 3, 0]]),
            const([3, 5, 5]),
            const([3, 3, 0]),
        ],
        id="CTCLoss-impossible-zero_infinity",
    ),
    mcase(
        "CTCLoss",
        (),
        {"reduction": "none"},
        inputs=[(7, 4), const([1, 2, 2]), const(7), const(3)],
        id="CTCLoss-unbatched",
    ),
]

LOSS_FUNCTIONS = [
    fcase(
        "poisson_nll_loss",
        {"log_input": False, "eps": 0.1},
        [positive((4,), grad=True), positive((4,))],
    ),
    fcase("gaussian_nll_loss", {"var": 0.5}, [(3, 2), (3, 2)], id="gaussian_nll_loss-float-var"),
    fcase("soft_margin_loss", {"reduction": "sum"}, [(3, 4), signs((3, 4))]),
    fcase("multilabel_soft_margin_loss", {}, [(4,), ints(2, (4,))]),
    fcase("multilabel_margin_loss", {"reduction": "sum"}, [(3, 5), labels(5, (3, 5))]),
    fcase("multi_margin_loss", {"p": 2, "margin": 2.0}, [(6, 3), ints(3, (6,))]),
    fcase("hinge_embedding_loss", {"margin": 2.0}, [(3, 4), const([1.0, -1.0, 0.0, 1.0])]),
    fcase("margin_ranking_loss", {"margin": 0.1}, [(2, 3), (2, 3), signs((2, 3))]),
    fcase("triplet_margin_loss", {"eps": 0.0, "swap": True}, [(5,), (5,), (5,)]),
    fcase("triplet_margin_with_distance_loss", {"reduction": "none"}, [(3, 5), (3, 5), (3, 5)]),
    fcase(
        "ctc_loss",
        {"input_lengths": [5, 4], "target_lengths": [2, 2], "reduction": "mean"},
        [(5, 2, 3), const([[1, 2], [2, 2]])],
    ),
]

PAD_MODULES = [
    mcase("ConstantPad1d", (2, 3.5), inputs=[(2, 3, 4)]),
    mcase("ConstantPad2d", ((1, 0, 2, -1), -1.0), inputs=[(2, 3, 4)]),
    mcase("ConstantPad3d", (1, 0.0), inputs=[(1, 2, 2, 3, 2)]),
    mcase("ZeroPad1d", ((0, 2),), inputs=[(3, 4)]),
    mcase("ZeroPad2d", (1,), inputs=[(2, 3, 4, 2)]),
    mcase("ZeroPad3d", ((1, 0, 0, 1, 2, 0),), inputs=[(2, 2, 3, 2)]),
    mcase("ReflectionPad1d", (2,), inputs=[(2, 3, 4)]),
    mcase("ReflectionPad2d", ((1, 2, 0, 2),), inputs=[(2, 3, 4, 3)]),
    mcase("ReflectionPad3d", (1,), inputs=[(1, 2, 3, 3, 2)]),
    mcase("ReplicationPad1d", ((3, 1),), inputs=[(3, 4)]),
    mcase("ReplicationPad2d", (2,), inputs=[(3, 2, 3)]),
    mcase("ReplicationPad3d", ((1, 0, 2, 1, 0, 1),), inputs=[(1, 2, 2, 3, 2)]),
    mcase("CircularPad1d", (2,), inputs=[(2, 3, 4)]),
    mcase("CircularPad2d", ((1, 0, 2, 1),), inputs=[(2, 3, 4)]),
    mcase("CircularPad3d", (1,), inputs=[(1, 2, 2, 3, 2)]),
]

VISION_MODULES = [
    mcase("PixelShuffle", (2,), inputs=[(2, 8, 3, 4)]),
    mcase("PixelShuffle", (3,), inputs=[(9, 2, 2)]),
    mcase("PixelUnshuffle", (2,), inputs=[(2, 3, 4, 6)]),
    mcase("PixelUnshuffle", (3,), inputs=[(2, 1, 2, 3, 6)]),
    mcase("ChannelShuffle", (2,), inputs=[(2, 6, 3)]),
    mcase("ChannelShuffle", (3,), inputs=[(1, 6, 2, 2)]),
    mcase("Upsample", (None, 2), inputs=[(2, 3, 4)]),
    mcase("Upsample", ((5, 3),), {"mode": "bilinear"}, [(1, 2, 3, 4)]),
    mcase("Upsample", (None, 1.5), {"mode": "trilinear", "align_corners": True}, [(1, 2, 2, 3, 2)]),
    mcase("UpsamplingNearest2d", (None, (2, 3)), inputs=[(1, 2, 3, 2)]),
    mcase("Upsample", (None, 1.6), {"mode": "bicubic"}, [(1, 2, 4, 5)]),
    mcase("Upsample", ((7, 3),), {"mode": "bicubic", "align_corners": True}, [(2, 1, 4, 5)]),
    mcase("UpsamplingBilinear2d", (6,), inputs=[(2, 2, 3, 4)]),
    mcase("Fold", ((4, 5), 2), inputs=[(2, 12, 12)]),
    mcase("Fold", (5, (2, 3), 1, 1, 2), inputs=[(1, 6, 9)]),
    mcase("Unfold", (2,), inputs=[(2, 3, 4, 5)]),
    mcase("Unfold", ((2, 3), 2, 1, (1, 2)), inputs=[(3, 5, 6)]),
]

VISION_FUNCTIONS = [
    fcase("pixel_shuffle", {"upscale_factor": 2}, [(4, 2, 2)]),
    fcase("pixel_unshuffle", {"downscale_factor": 2}, [(1, 1, 4, 4)]),
    fcase("channel_shuffle", {"groups": 2}, [(2, 4, 2)]),
    fcase("native_channel_shuffle", {"groups": 3}, [normal((1, 6, 2, 1))]),  # no torch gradient
    fcase("interpolate", {"size": (3, 4), "mode": "bilinear", "antialias": True}, [(2, 2, 9, 7)]),
    fcase(
        "interpolate", {"scale_factor": 0.4, "mode": "bicubic", "antialias": True}, [(1, 2, 8, 8)]
    ),
    fcase("interpolate", {"size": 9, "mode": "bicubic", "antialias": True}, [(1, 1, 5, 6)]),
    fcase("local_response_norm", {"size": 3, "k": 2.0}, [(2, 4, 3)]),
    fcase("affine_grid", {"size": [2, 3, 4, 5], "align_corners": False}, [(2, 2, 3)]),
    fcase("affine_grid", {"size": [1, 2, 3, 2, 4], "align_corners": True}, [(1, 3, 4)]),
    fcase("grid_sample", {"align_corners": False}, [(2, 3, 4, 5), unit((2, 3, 2, 2), grad=True)]),
    fcase(
        "grid_sample",
        {"mode": "bicubic", "padding_mode": "reflection", "align_corners": True},
        [(1, 2, 4, 4), (1, 3, 3, 2)],
    ),
    fcase(
        "grid_sample",
        {"mode": "nearest", "padding_mode": "border", "align_corners": False},
        [(1, 2, 3, 4, 3), (1, 2, 2, 2, 3)],
    ),
    fcase("pdist", {}, [(5, 3)]),
    fcase("pdist", {"p": 1.5}, [(4, 2)]),
    fcase("conv_tbc", {"pad": 1}, [(6, 2, 3), (3, 3, 4), (4,)]),
    fcase("hardtanh_", {"min_val": -0.5}, [normal((2, 3))]),  # in place: no leaf gradient
]


def unpool_indices(pooled, kernel, stride, padding=None):
    """Flat indices a max pool with ``kernel`` and ``stride`` could have returned for a pooled
    shape (N, C, *out): one random cell of each window (windows may overlap; distinct picks
    keep the scatter deterministic, so each window picks a cell no other window picked)."""

    def make(rng, dtype):
        n = len(kernel)
        out = pooled[-n:]
        pad = padding or (0,) * n
        sizes = [(o - 1) * s + k - 2 * p for o, k, s, p in zip(out, kernel, stride, pad)]
        flat = np.zeros(pooled, dtype=np.int64)
        for lead in np.ndindex(*pooled[:-n]):
            taken = set()
            for cell in np.ndindex(*out):
                while True:
                    coord = [
                        min(max(c * s - p + rng.integers(k), 0), size - 1)
                        for c, k, s, p, size in zip(cell, kernel, stride, pad, sizes)
                    ]
                    index = int(np.ravel_multi_index(coord, sizes))
                    if index not in taken:
                        break
                taken.add(index)
                flat[(*lead, *cell)] = index
        return flat

    return _generator(make, label=f"unpool_indices({pooled}, {kernel}, {stride})")


POOL_MODULES = [
    mcase("MaxPool3d", (2,), inputs=[(2, 2, 4, 4, 4)]),
    mcase("MaxPool3d", ((3, 2, 2), (2, 1, 2), 1), {"ceil_mode": True}, [(1, 2, 5, 4, 5)]),
    mcase("MaxPool3d", (2, 1, 0, 2), {"return_indices": True}, [(2, 4, 5, 4)]),
    mcase("AvgPool3d", (2,), inputs=[(2, 2, 4, 4, 4)]),
    mcase("AvgPool3d", (3, 2, 1), {"count_include_pad": False}, [(1, 2, 5, 4, 5)]),
    mcase("AvgPool3d", (3, 2, 1), {"ceil_mode": True, "divisor_override": 4}, [(2, 5, 4, 6)]),
    mcase("AdaptiveAvgPool3d", ((2, 3, 2),), inputs=[(2, 2, 5, 4, 3)]),
    mcase("AdaptiveAvgPool3d", (1,), inputs=[(2, 3, 4, 3)]),
    mcase("AdaptiveAvgPool3d", ((None, 3, 1),), inputs=[(1, 2, 3, 5, 4)]),
    mcase("AdaptiveMaxPool1d", (3,), inputs=[(2, 3, 7)]),
    mcase("AdaptiveMaxPool1d", (4, True), inputs=[(3, 8)]),
    mcase("AdaptiveMaxPool2d", ((3, 2), True), inputs=[(2, 2, 7, 5)]),
    mcase("AdaptiveMaxPool2d", (2,), inputs=[(2, 4, 4)]),
    mcase("AdaptiveMaxPool3d", ((2, 3, 2), True), inputs=[(1, 2, 5, 4, 3)]),
    mcase("AdaptiveMaxPool3d", (2,), inputs=[(2, 4, 4, 4)]),
    mcase("LPPool1d", (2, 3), inputs=[(2, 3, 7)]),
    mcase("LPPool1d", (1.5, 2, 1, True), inputs=[positive((2, 3, 6), grad=True)]),
    mcase("LPPool2d", (2, 2), inputs=[(2, 3, 4, 6)]),
    mcase("LPPool2d", (3, (2, 3), (1, 2)), inputs=[(2, 5, 5)]),
    mcase("LPPool3d", (2, 2), inputs=[(1, 2, 4, 4, 4)]),
    mcase("LPPool3d", (1, 2, 1, True), inputs=[positive((2, 3, 3, 3), grad=True)]),
    mcase(
        "FractionalMaxPool2d",
        (2, (4, 5)),
        {"_random_samples": unit((2, 3, 2))},
        [(2, 3, 9, 11)],
        id="FractionalMaxPool2d-size",
    ),
    mcase(
        "FractionalMaxPool2d",
        ((3, 2),),
        {"output_ratio": 0.5, "return_indices": True, "_random_samples": unit((1, 2, 2))},
        [(2, 8, 9)],
        id="FractionalMaxPool2d-ratio",
    ),
    mcase(
        "FractionalMaxPool3d",
        (2, (3, 4, 2)),
        {"_random_samples": unit((2, 2, 3)), "return_indices": True},
        [(2, 2, 7, 8, 5)],
        id="FractionalMaxPool3d-size",
    ),
    mcase(
        "MaxUnpool1d",
        (2,),
        inputs=[(2, 3, 4), unpool_indices((2, 3, 4), (2,), (2,))],
    ),
    mcase(
        "MaxUnpool2d",
        (2,),
        inputs=[(2, 3, 2, 3), unpool_indices((2, 3, 2, 3), (2, 2), (2, 2))],
        forward={"output_size": [5, 7]},
    ),
    mcase(
        "MaxUnpool2d",
        (3, 2, 1),
        inputs=[(1, 2, 3, 3), unpool_indices((1, 2, 3, 3), (3, 3), (2, 2), (1, 1))],
    ),
    mcase(
        "MaxUnpool3d",
        (2,),
        inputs=[(1, 2, 2, 2, 3), unpool_indices((1, 2, 2, 2, 3), (2, 2, 2), (2, 2, 2))],
    ),
]

POOL_FUNCTIONS = [
    fcase("max_pool3d", {"kernel_size": 2, "stride": 1, "dilation": (1, 2, 1)}, [(1, 2, 3, 5, 3)]),
    fcase("max_pool1d_with_indices", {"kernel_size": 3, "stride": 2}, [(2, 3, 9)]),
    fcase("max_pool2d_with_indices", {"kernel_size": 2, "padding": 1}, [(2, 3, 5, 5)]),
    fcase("max_pool3d_with_indices", {"kernel_size": 2}, [(2, 2, 4, 4, 2)]),
    fcase("avg_pool3d", {"kernel_size": (1, 2, 3)}, [(2, 2, 2, 4, 6)]),
    fcase("adaptive_max_pool1d_with_indices", {"output_size": 3}, [(2, 3, 8)]),
    fcase("adaptive_max_pool2d_with_indices", {"output_size": (2, 3)}, [(1, 2, 5, 7)]),
    fcase("adaptive_max_pool3d_with_indices", {"output_size": 2}, [(1, 2, 3, 5, 4)]),
    fcase("lp_pool2d", {"norm_type": float("inf"), "kernel_size": 2}, [(1, 2, 4, 4)]),
    fcase("lp_pool1d", {"norm_type": -float("inf"), "kernel_size": 2}, [(1, 2, 6)]),
    fcase(
        "fractional_max_pool2d_with_indices",
        {"kernel_size": 2, "output_size": 3, "_random_samples": unit((1, 2, 2))},
        [(1, 2, 6, 6)],
    ),
    fcase(
        "max_unpool2d",
        {"kernel_size": 2},
        [(1, 2, 2, 2), unpool_indices((1, 2, 2, 2), (2, 2), (2, 2))],
    ),
]

CONV_NORM_MODULES = [
    mcase("Conv3d", (2, 3, 2), inputs=[(2, 2, 4, 5, 3)]),
    mcase(
        "Conv3d",
        (4, 2, (3, 2, 1)),
        {"stride": (2, 1, 1), "padding": 1, "groups": 2},
        [(1, 4, 5, 3, 3)],
    ),
    mcase("Conv3d", (2, 2, 3), {"padding": "same", "padding_mode": "reflect"}, [(2, 4, 4, 3)]),
    mcase("ConvTranspose1d", (3, 2, 3), inputs=[(2, 3, 5)]),
    mcase("ConvTranspose1d", (4, 2, 3), {"stride": 2, "output_padding": 1, "groups": 2}, [(4, 6)]),
    mcase("ConvTranspose1d", (2, 3, 2), {"stride": 3}, [(1, 2, 4)], forward={"output_size": [12]}),
    mcase("ConvTranspose3d", (2, 3, 2), inputs=[(1, 2, 2, 3, 2)]),
    mcase(
        "ConvTranspose3d",
        (2, 2, (2, 3, 2)),
        {"stride": 2, "padding": (1, 0, 1), "dilation": (1, 2, 1), "bias": False},
        [(1, 2, 3, 2, 3)],
    ),
    mcase("BatchNorm3d", (3,), inputs=[(2, 3, 2, 3, 2)]),
    mcase("BatchNorm3d", (3,), {"affine": False, "momentum": None}, [(2, 3, 2, 2, 2)]),
    mcase("SyncBatchNorm", (3,), inputs=[(4, 3)]),
    mcase("SyncBatchNorm", (3,), {"track_running_stats": False}, [(2, 3, 4, 2, 2)]),
    mcase("InstanceNorm1d", (3,), inputs=[(2, 3, 5)]),
    mcase("InstanceNorm1d", (3,), {"affine": True, "track_running_stats": True}, [(3, 6)]),
    mcase("InstanceNorm2d", (3,), {"affine": True}, [(2, 3, 4, 5)]),
    mcase("InstanceNorm2d", (3,), {"track_running_stats": True, "momentum": 0.3}, [(2, 3, 4, 4)]),
    mcase("InstanceNorm3d", (2,), {"affine": True, "eps": 1e-3}, [(2, 2, 3, 3, 2)]),
    mcase("InstanceNorm3d", (2,), inputs=[(2, 3, 2, 4)]),
    mcase("LocalResponseNorm", (3,), inputs=[(2, 5, 4)]),
    mcase("LocalResponseNorm", (2, 0.1, 0.5, 2.0), inputs=[(2, 6, 3, 3)]),
    mcase("LocalResponseNorm", (4, 0.2), inputs=[(1, 5, 2, 2, 3)]),
    mcase("CrossMapLRN2d", (3, 0.5), inputs=[(2, 5, 3, 3)]),
    mcase("CrossMapLRN2d", (4, 0.1, 0.5, 2.0), inputs=[(2, 7, 2, 2)]),
    mcase("CrossMapLRN2d", (5, 0.3, 0.75, 1), inputs=[(1, 3, 2, 3)]),
]

MODULES = (
    ACTIVATION_MODULES
    + LOSS_MODULES
    + PAD_MODULES
    + VISION_MODULES
    + POOL_MODULES
    + CONV_NORM_MODULES
)
FUNCTIONS = ACTIVATION_FUNCTIONS + LOSS_FUNCTIONS + VISION_FUNCTIONS + POOL_FUNCTIONS
