"""nn.functional forms without a module of their own, against PyTorch: attention, pad,
interpolate, one_hot, normalize, unfold/fold, pooling indices, in-place activations."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F

from .oracle import assert_close, check_module, to_ember, to_torch

torch = pytest.importorskip("torch")
TF = torch.nn.functional
F32 = np.float32


def _normal(rng, *shape):
    return rng.standard_normal(shape).astype(F32)


def both(name, **kwargs):
    """``(ours, theirs)``: ``F.<name>`` with ``kwargs`` bound, in each framework."""

    def ours(*args):
        return getattr(F, name)(*args, **kwargs)

    def theirs(*args):
        return getattr(TF, name)(*args, **kwargs)

    return ours, theirs


# ---- scaled_dot_product_attention ------------------------------------------------------------
@pytest.mark.parametrize(
    "q, k, v, options",
    [
        ((2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 4), {}),
        ((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6), {}),
        ((2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 4), {"is_causal": True}),
        ((1, 2, 4, 8), (1, 2, 6, 8), (1, 2, 6, 3), {"is_causal": True}),
        ((6, 4), (6, 4), (6, 4), {"is_causal": True, "scale": 0.3}),
        ((2, 4, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4), {"enable_gqa": True}),
    ],
)
def test_sdpa(device, rng, q, k, v, options):
    ours, theirs = both("scaled_dot_product_attention", **options)
    check_module(ours, theirs, [_normal(rng, *q), _normal(rng, *k), _normal(rng, *v)], device)


@pytest.mark.parametrize("mask_kind", ["bool", "float", "bool-broadcast"])
def test_sdpa_masks(device, rng, mask_kind):
    q, k, v = _normal(rng, 2, 3, 4, 5), _normal(rng, 2, 3, 6, 5), _normal(rng, 2, 3, 6, 5)
    if mask_kind == "float":
        mask = _normal(rng, 4, 6)
    else:
        mask = rng.random((2, 1, 4, 6) if mask_kind == "bool-broadcast" else (4, 6)) > 0.3
        mask[..., 0] = True  # every query sees one key, so no row is all -inf
    ours, theirs = both("scaled_dot_product_attention")
    check_module(ours, theirs, [q, k, v, mask], device)


def test_sdpa_dropout_statistics(device):
    """With dropout, outputs are V averaged by kept weights scaled by 1/(1-p): mean preserved."""
    ember.manual_seed(0)
    q = ember.zeros(1, 1, 1, 4, device=device)  # uniform weights over the keys
    k = ember.zeros(1, 1, 4000, 4, device=device)
    v = ember.ones(1, 1, 4000, 1, device=device)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3)
    assert abs(out.item() - 1.0) < 0.05
    # A 4000-term float32 dot product: a GEMM that sums in blocks (CLBlast) may be off by n eps.
    exact = F.scaled_dot_product_attention(q, k, v, dropout_p=0.0).item()
    assert exact == pytest.approx(1.0, rel=4000 * 2**-24)


@pytest.mark.parametrize("is_causal", [True, False], ids=["causal", "full"])
def test_sdpa_dropout_matches_torch_with_the_same_mask(device, rng, is_causal):
    """Dropout on the attention weights, causal or not: with V = I the output is the dropped,
    rescaled weights, which reveals ember's mask; the same seed then gives the same mask with
    a random V, and torch computes ``(softmax(masked scores) * mask / (1 - p)) V`` from it."""
    p, shape = 0.4, (2, 3, 6, 4)
    q, k = _normal(rng, *shape), _normal(rng, *shape)
    ember.manual_seed(7)
    eye = ember.eye(6, device=device).expand(2, 3, 6, 6)
    dropped = (
        F.scaled_dot_product_attention(
            to_ember(q, device), to_ember(k, device), eye, dropout_p=p, is_causal=is_causal
        )
        .cpu()
        .numpy()
    )
    keep = dropped != 0
    assert 0.3 < 1 - keep[..., np.tril_indices(6)[0], np.tril_indices(6)[1]].mean() < 0.5
    if is_causal:
        assert not keep[..., np.triu_indices(6, 1)[0], np.triu_indices(6, 1)[1]].any()

    def ours(q, k, v):
        ember.manual_seed(7)
        return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=is_causal)

    def theirs(q, k, v):
        scores = q @ k.transpose(-2, -1) / 2.0
        if is_causal:
            scores = scores.masked_fill(torch.ones(6, 6, dtype=torch.bool).triu(1), -np.inf)
        return (scores.softmax(-1) * torch.from_numpy(keep) / (1 - p)) @ v

    check_module(ours, theirs, [q, k, _normal(rng, 2, 3, 6, 5)], device)


def test_sdpa_errors(device):
    q = ember.zeros(2, 3, 4, device=device)
    with pytest.raises(RuntimeError, match="scaled_dot_product_attention"):
        F.scaled_dot_product_attention(q, ember.zeros(2, 3, 5, device=device), q)


# ---- pad -------------------------------------------------------------------------------------
PADS = [
    ("constant", (1, 2), (2, 3, 4)),
    ("constant", (1, 0, 2, 1), (2, 3, 4, 5)),
    ("constant", (-1, 2, 0, -2), (2, 3, 4, 5)),
    ("reflect", (2, 1), (2, 3, 5)),
    ("reflect", (1, 2, 3, 0), (1, 2, 4, 5)),
    ("reflect", (3, 3), (4, 4)),
    ("replicate", (2, 3), (2, 3, 4)),
    ("replicate", (1, 2, 3, 4), (2, 2, 3, 3)),
    ("circular", (2, 1), (2, 3, 4)),
    ("circular", (1, 2, 2, 1), (1, 2, 3, 4)),
]


@pytest.mark.parametrize("mode, pad, shape", PADS)
def test_pad(device, rng, mode, pad, shape):
    ours, theirs = both("pad", pad=pad, mode=mode)
    check_module(ours, theirs, [_normal(rng, *shape)], device)


def test_pad_value_and_errors(device, rng):
    x = _normal(rng, 2, 3)
    assert_close(
        F.pad(to_ember(x, device), (1, 1), value=-2.5), TF.pad(to_torch(x), (1, 1), value=-2.5)
    )
    with pytest.raises(RuntimeError, match="pad"):
        F.pad(to_ember(x, device), (3, 0), mode="reflect")
    with pytest.raises(NotImplementedError, match="bogus"):
        F.pad(to_ember(x, device), (1, 0), mode="bogus")


# ---- interpolate -----------------------------------------------------------------------------
INTERPOLATE = [
    ((1, 2, 4, 5), {"size": (8, 7), "mode": "nearest"}),
    ((1, 2, 4, 5), {"scale_factor": 2, "mode": "nearest"}),
    ((2, 1, 7, 6), {"scale_factor": 0.5, "mode": "nearest"}),
    ((2, 1, 5, 5), {"size": 3, "mode": "nearest"}),
    ((2, 3, 4), {"size": 9, "mode": "nearest"}),
    ((2, 3, 4), {"scale_factor": 1.7, "mode": "nearest"}),
    ((1, 2, 4, 5), {"size": (7, 9), "mode": "bilinear"}),
    ((1, 2, 4, 5), {"size": (7, 9), "mode": "bilinear", "align_corners": True}),
    ((1, 2, 6, 6), {"scale_factor": 0.5, "mode": "bilinear"}),
    ((1, 2, 4, 5), {"scale_factor": (2, 1.5), "mode": "bilinear"}),
    ((1, 2, 4, 5), {"scale_factor": 1.6, "mode": "bilinear", "recompute_scale_factor": True}),
    ((1, 2, 5, 4), {"size": (3, 2), "mode": "bilinear", "align_corners": True}),
    ((2, 3, 5), {"size": 8, "mode": "linear"}),
    ((2, 3, 5), {"scale_factor": 2.5, "mode": "linear", "align_corners": True}),
    ((1, 1, 4, 4), {"size": (1, 1), "mode": "bilinear", "align_corners": True}),
    ((1, 2, 4, 5), {"size": (7, 9), "mode": "nearest-exact"}),
    ((1, 1, 2, 3, 4), {"size": (3, 5, 2), "mode": "trilinear"}),
    ((1, 1, 2, 3, 4), {"scale_factor": 2, "mode": "nearest"}),
    ((2, 3, 8, 6), {"size": (4, 3), "mode": "area"}),
    ((2, 3, 7, 5), {"size": (3, 2), "mode": "area"}),
    ((2, 3, 7), {"size": 3, "mode": "area"}),
]


@pytest.mark.parametrize("shape, options", INTERPOLATE)
def test_interpolate(device, rng, shape, options):
    ours, theirs = both("interpolate", **options)
    check_module(ours, theirs, [_normal(rng, *shape)], device)


def test_interpolate_errors(device):
    x = ember.zeros(1, 1, 4, 4, device=device)
    with pytest.raises(ValueError, match="size or scale_factor"):
        F.interpolate(x)
    with pytest.raises(NotImplementedError, match="'bicubic' needs 4D"):
        F.interpolate(x[0], size=3, mode="bicubic")
    with pytest.raises(ValueError, match="Anti-alias option is restricted to bilinear and bicubic"):
        F.interpolate(x, size=3, mode="nearest", antialias=True)
    with pytest.raises(NotImplementedError, match="'linear' needs 3D"):
        F.interpolate(x, size=3, mode="linear")
    with pytest.raises(ValueError, match="align_corners"):
        F.interpolate(x, size=3, mode="nearest", align_corners=True)


# ---- one_hot, normalize, unfold/fold ---------------------------------------------------------
@pytest.mark.parametrize("shape, num_classes", [((5,), -1), ((2, 3), 6), ((), 4), ((0,), 3)])
def test_one_hot(device, rng, shape, num_classes):
    x = rng.integers(0, 4, size=shape).astype(np.int64)
    ours = F.one_hot(to_ember(x, device), num_classes)
    theirs = TF.one_hot(to_torch(x), num_classes)
    assert ours.dtype == ember.int64
    np.testing.assert_array_equal(ours.cpu().numpy(), theirs.numpy())


def test_one_hot_errors(device):
    with pytest.raises(RuntimeError, match="LongTensor"):
        F.one_hot(ember.tensor([1.0, 2.0], device=device))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        F.one_hot(ember.tensor([1, 5], device=device), 3)
    with pytest.raises(RuntimeError, match="non-negative"):
        F.one_hot(ember.tensor([1, -1], device=device), 3)
    with pytest.raises(RuntimeError, match="empty tensor"):
        F.one_hot(ember.zeros(0, dtype=ember.int64, device=device))


@pytest.mark.parametrize(
    "shape, options",
    [((3, 4), {}), ((3, 4, 2), {"dim": -1}), ((3, 4), {"p": 1.0, "dim": 0}), ((2, 3), {"p": 3})],
)
def test_normalize(device, rng, shape, options):
    ours, theirs = both("normalize", **options)
    x = _normal(rng, *shape)
    x[0] = 0  # a zero vector: eps keeps it finite
    check_module(ours, theirs, [x], device)


UNFOLD = [
    ((2, 3, 5, 6), {"kernel_size": 2}),
    ((2, 3, 5, 6), {"kernel_size": (2, 3), "stride": (1, 2), "padding": 1, "dilation": (2, 1)}),
    ((3, 4, 4), {"kernel_size": 3, "padding": 1}),
]


@pytest.mark.parametrize("shape, options", UNFOLD)
def test_unfold_fold(device, rng, shape, options):
    ours, theirs = both("unfold", **options)
    cols, _ = check_module(ours, theirs, [_normal(rng, *shape)], device)
    ours, theirs = both("fold", output_size=shape[-2:], **options)
    check_module(ours, theirs, [_normal(rng, *cols.shape)], device)


# ---- pooling with indices, adaptive max, conv functional --------------------------------------
@pytest.mark.parametrize(
    "fn, shape, options",
    [
        ("max_pool2d", (2, 3, 7, 8), {"kernel_size": 3, "stride": 2, "padding": 1}),
        ("max_pool2d", (3, 7, 8), {"kernel_size": 2, "ceil_mode": True}),
        ("max_pool1d", (2, 3, 9), {"kernel_size": 3, "stride": 2, "dilation": 2}),
        ("adaptive_max_pool2d", (2, 3, 8, 6), {"output_size": (4, 3)}),
        ("adaptive_max_pool2d", (2, 3, 7, 5), {"output_size": (3, 2)}),
    ],
)
def test_pool_return_indices(device, rng, fn, shape, options):
    ours, theirs = both(fn, return_indices=True, **options)
    (_values, indices), (_tv, ti) = check_module(ours, theirs, [_normal(rng, *shape)], device)
    np.testing.assert_array_equal(indices.cpu().numpy(), ti.numpy())


@pytest.mark.parametrize(
    "name, args",
    [
        ("relu", ()),
        ("relu6", ()),
        ("silu", ()),
        ("mish", ()),
        ("hardswish", ()),
        ("hardsigmoid", ()),
        ("hardtanh", (-0.5, 0.5)),
        ("leaky_relu", (0.1,)),
        ("elu", (0.7,)),
        ("celu", (0.7,)),
        ("selu", ()),
        ("threshold", (0.2, -1.0)),
    ],
)
def test_inplace_activation(device, rng, name, args):
    x = _normal(rng, 3, 4)
    ours, theirs = to_ember(x, device), to_torch(x)
    out = getattr(F, name)(ours, *args, inplace=True)
    expected = getattr(TF, name)(theirs, *args, inplace=True)
    assert out is ours
    assert_close(ours, expected, name)


def test_inplace_activation_on_a_view_keeps_gradients(device, rng):
    x = _normal(rng, 3, 4)
    ours, theirs = to_ember(x, device, True), to_torch(x, True)
    a = F.leaky_relu(ours * 2, 0.2, inplace=True).sum()
    b = TF.leaky_relu(theirs * 2, 0.2, inplace=True).sum()
    a.backward()
    b.backward()
    assert_close(ours.grad, theirs.grad, "gradient")


@pytest.mark.parametrize(
    "name, args",
    [("softmax", (1,)), ("log_softmax", (0,)), ("softmin", (1,)), ("softmax", (-1,))],
)
def test_softmax_dtype(device, rng, name, args):
    x = _normal(rng, 3, 4)
    ours = getattr(F, name)(to_ember(x, device), *args, dtype=ember.float64)
    theirs = getattr(TF, name)(to_torch(x), *args, dtype=torch.float64)
    assert_close(ours, theirs, name, dtype="float64", rtol=1e-6)


def test_functional_conv_and_linear(device, rng):
    for name, shapes, options in [
        ("conv2d", [(2, 4, 6, 6), (6, 2, 3, 3), (6,)], {"stride": 2, "padding": 1, "groups": 2}),
        ("conv1d", [(2, 4, 9), (6, 4, 3)], {"dilation": 2}),
        ("conv_transpose2d", [(2, 4, 3, 3), (4, 3, 2, 2), (3,)], {"stride": 2}),
        ("linear", [(3, 5), (4, 5), (4,)], {}),
        ("bilinear", [(3, 5), (3, 2), (4, 5, 2)], {}),
    ]:
        ours, theirs = both(name, **options)
        check_module(ours, theirs, [_normal(rng, *s) for s in shapes], device)


def test_cosine_similarity_and_pairwise_distance(device, rng):
    a, b = _normal(rng, 4, 5), _normal(rng, 4, 5)
    a[1] = 0  # a zero vector: eps keeps value and gradient finite
    for name, options in [
        ("cosine_similarity", {}),
        ("cosine_similarity", {"dim": 0}),
        ("pairwise_distance", {}),
        ("pairwise_distance", {"p": 1.0, "keepdim": True}),
    ]:
        ours, theirs = both(name, **options)
        check_module(ours, theirs, [a, b], device)


def test_instance_norm_and_glu(device, rng):
    ours, theirs = both("instance_norm")
    check_module(ours, theirs, [_normal(rng, 2, 3, 5)], device)
    ours, theirs = both("glu", dim=1)
    check_module(ours, theirs, [_normal(rng, 2, 4, 3)], device)


@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_double_backward(device, rng, affine):
    """layer_norm has its own closed-form formula: its gradient must be differentiable too."""
    x, w, b, g = (rng.standard_normal(s) for s in ((3, 4, 5), (4, 5), (4, 5), (3, 4, 5)))
    grads = []
    for lib, convert in ((ember, lambda a: to_ember(a, device, True)), (torch, to_torch)):
        xs, ws, bs = convert(x), convert(w) if affine else None, convert(b) if affine else None
        if lib is torch:
            xs.requires_grad_()
            ws = ws.requires_grad_() if affine else None
        inputs = [xs] + ([ws] if affine else [])
        out = lib.nn.functional.layer_norm(xs, (4, 5), ws, bs)
        first = lib.autograd.grad((out * convert(g)).sum(), inputs, create_graph=True)
        second = lib.autograd.grad(sum((f * f).sum() for f in first), inputs)
        grads.append(first + second)
    for i, (a, b) in enumerate(zip(*grads)):
        assert_close(a, b, f"gradient {i}", dtype="float64", rtol=1e-7, atol=1e-9)
