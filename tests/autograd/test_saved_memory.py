"""What a node keeps for backward, against PyTorch's ``_saved_*``: no more bytes than PyTorch's
node, and still PyTorch's gradients in float64 (issue 20's step memory, docs/threads.md).

The convolution rows save their input and weight, as PyTorch's ConvolutionBackward0, not the
column matrix of their im2col decomposition (nine times the input for a 3x3 kernel); ``pow`` by
a number saves its input only, as PowBackward0.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

from ..saved_graph import saved_bytes
from .oracle import compare, torch


def graphs(fn, arrays):
    """``fn(lib, *leaves)`` in ember (CPU) and in torch, from the same values."""
    ours = [ember.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    return fn(ember, *ours), fn(torch, *theirs)


RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 6, 9, 9))
W = RNG.standard_normal((8, 6, 3, 3))
B = RNG.standard_normal(8)

SAVERS = {
    "conv2d": (lambda lib, x, w, b: lib.nn.functional.conv2d(x, w, b), [X, W, B]),
    "conv1d": (lambda lib, x, w: lib.nn.functional.conv1d(x, w), [X[:, :, 0], W[:, :, 0]]),
    "pow_scalar": (lambda lib, x: lib.pow(x, 3.0), [X]),
    "pow_tensor": (lambda lib, x, y: lib.pow(x.abs(), y), [X, X + 1]),
    "gelu_tanh_written": (
        lambda lib, x: 0.5 * x * (1 + lib.tanh(0.8 * (x + 0.044715 * lib.pow(x, 3.0)))),
        [X],
    ),
}


@pytest.mark.parametrize("name", SAVERS)
def test_saves_no_more_than_torch(name):
    fn, arrays = SAVERS[name]
    ours, theirs = graphs(fn, arrays)
    assert saved_bytes(ours) <= saved_bytes(theirs)


def test_conv2d_keeps_no_columns():
    """The CNN's second layer: the graph keeps the input (and weight), not 9x the input."""
    ours, _ = graphs(SAVERS["conv2d"][0], SAVERS["conv2d"][1])
    assert saved_bytes(ours) == X.nbytes + W.nbytes


CONVS = {
    "plain": dict(),
    "stride_padding": dict(stride=2, padding=1),
    "dilation": dict(dilation=2, padding=(2, 1)),
    "groups": dict(groups=2, padding=1),
    "same_even_kernel": dict(padding="same"),
    "valid": dict(padding="valid", stride=(1, 2)),
}


@pytest.mark.parametrize("case", CONVS)
@pytest.mark.parametrize("batched", [True, False])
def test_conv2d_gradients(device, case, batched):
    kwargs = CONVS[case]
    groups = kwargs.get("groups", 1)
    kernel = (2, 4) if case == "same_even_kernel" else (3, 3)
    x = RNG.standard_normal((2, 4, 7, 8) if batched else (4, 7, 8))
    w = RNG.standard_normal((6, 4 // groups, *kernel))
    b = RNG.standard_normal(6)
    conv = lambda lib, x, w, b: lib.nn.functional.conv2d(x, w, b, **kwargs)  # noqa: E731
    compare(conv, [x, w, b], device, what=case)


@pytest.mark.parametrize("padding", [0, 2, "same"])
@pytest.mark.parametrize("batched", [True, False])
def test_conv1d_gradients(device, padding, batched):
    x = RNG.standard_normal((3, 4, 10) if batched else (4, 10))
    w = RNG.standard_normal((6, 2, 4))
    conv = lambda lib, x, w: lib.nn.functional.conv1d(x, w, padding=padding, groups=2)  # noqa: E731
    compare(conv, [x, w], device, what=f"padding {padding}")


def test_conv2d_only_the_gradients_asked():
    """A first layer (input without grad) gets no input gradient, the weight's is torch's."""
    x = ember.tensor(X)
    w = ember.tensor(W, requires_grad=True)
    ember.nn.functional.conv2d(x, w).sum().backward()
    want = torch.tensor(W, requires_grad=True)
    torch.nn.functional.conv2d(torch.tensor(X), want).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), want.grad.numpy(), rtol=1e-10)


def test_conv2d_double_backward():
    """The formula is ember ops: its own gradient is torch's too."""
    x = RNG.standard_normal((2, 3, 6, 6))
    w = RNG.standard_normal((4, 3, 3, 3))
    grads = {}
    for lib in (ember, torch):
        xs, ws = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        out = lib.nn.functional.conv2d(xs, ws, padding=1)
        gx, gw = lib.autograd.grad((out * out).sum(), (xs, ws), create_graph=True)
        (gx.pow(2).sum() + gw.pow(2).sum()).backward()
        grads[lib.__name__] = (xs.grad.detach().numpy(), ws.grad.detach().numpy())
    for got, want in zip(grads["ember"], grads["torch"]):
        np.testing.assert_allclose(got, want, rtol=1e-9)


def test_conv2d_complex_gradients():
    """Convolution is bilinear: the holomorphic rows' conjugation gives PyTorch's gradients."""
    x = RNG.standard_normal((2, 3, 5, 5)) + 1j * RNG.standard_normal((2, 3, 5, 5))
    w = RNG.standard_normal((4, 3, 3, 3)) + 1j * RNG.standard_normal((4, 3, 3, 3))
    ours = [ember.tensor(a, requires_grad=True) for a in (x, w)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w)]
    for lib, leaves in ((ember, ours), (torch, theirs)):
        lib.nn.functional.conv2d(*leaves).abs().sum().backward()
    for got, want in zip(ours, theirs):
        np.testing.assert_allclose(got.grad.numpy(), want.grad.numpy(), rtol=1e-9)


@pytest.mark.parametrize("exponent", [3.0, 2, -1.5])
def test_pow_scalar_gradients(device, exponent):
    compare(lambda lib, x: lib.pow(x, exponent), [np.abs(X[0, 0]) + 0.5], device)


def peak_of(fn) -> int:
    """Bytes the CPU caching allocator hands out at most while ``fn()`` runs, above those in
    use before it."""
    from ember.dispatcher.memory import backend_for

    cached = backend_for("cpu").allocator(None)
    cached.reset_peak_stats()
    base = cached.stats()["allocated_bytes.current"]
    fn()
    return cached.stats()["allocated_bytes.peak"] - base


def test_conv2d_backward_never_holds_the_whole_column_matrix():
    """The CNN's second convolution (bench_training.py), whose column matrix is 8.5 MiB: the
    backward goes through the batch in pieces of about conv_formulas.PIECE_BYTES."""
    from ember.autograd.conv_formulas import PIECE_BYTES

    x = ember.randn(64, 32, 13, 13, requires_grad=True)
    w = ember.randn(64, 32, 3, 3, requires_grad=True)
    out = ember.nn.functional.conv2d(x, w)
    grad = ember.ones_like(out)
    backward = peak_of(lambda: out.backward(grad))
    bound = 2 * PIECE_BYTES + 2 * x.nbytes  # a piece, its product, the pieces' and x's gradient
    columns = 64 * 32 * 9 * 11 * 11 * 4
    assert bound < columns
    assert backward <= bound


def test_max_pool2d_backward_makes_one_input_sized_buffer():
    x = ember.randn(64, 32, 26, 26, requires_grad=True)
    y = ember.nn.functional.max_pool2d(x, 2)
    grad = ember.ones_like(y)
    assert peak_of(lambda: y.backward(grad)) < 1.5 * x.nbytes


@pytest.mark.parametrize("kernel, stride", [(2, 2), (3, 1)])
def test_max_pool2d_gradients(device, kernel, stride):
    """Overlapping windows too (a position that wins several windows sums their gradients)."""
    x = np.round(RNG.standard_normal((2, 3, 7, 7)), 1)  # ties: the first maximum wins in both
    compare(lambda lib, x: lib.nn.functional.max_pool2d(x, kernel, stride), [x], device)


def test_max_pool2d_double_backward():
    x = RNG.standard_normal((2, 3, 6, 6))
    grads = []
    for lib in (ember, torch):
        xs = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.max_pool2d(xs, 3, 1)
        (gx,) = lib.autograd.grad((y * y).sum(), (xs,), create_graph=True)
        (gx * gx).sum().backward()
        grads.append(xs.grad.detach().numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10)


LN_W, LN_B = RNG.standard_normal((9, 9)), RNG.standard_normal((9, 9))
LAYER_NORMS = {  # (normalized_shape, with weight, with bias)
    "affine": ((9,), True, True),
    "weight_only": ((9,), True, False),
    "plain": ((9,), False, False),
    "two_dims": ((9, 9), True, True),
}


def _layer_norm_case(case):
    shape, weight, bias = LAYER_NORMS[case]
    arrays = [X, LN_W[-1] if len(shape) == 1 else LN_W, LN_B[-1] if len(shape) == 1 else LN_B]
    arrays = arrays[: 1 + weight + bias]

    def fn(lib, x, *affine):
        w = affine[0] if weight else None
        b = affine[-1] if bias else None
        return lib.nn.functional.layer_norm(x, shape, w, b)

    return fn, arrays


@pytest.mark.parametrize("case", LAYER_NORMS)
def test_layer_norm_saves_what_torch_saves(case):
    """The forward's mean and rstd are kept for the backward, as NativeLayerNormBackward0
    keeps them (result1, result2): the same bytes as PyTorch's graph, the same values."""
    fn, arrays = _layer_norm_case(case)
    ours, theirs = graphs(fn, arrays)
    assert saved_bytes(ours) == saved_bytes(theirs)
    for name in ("_saved_result1", "_saved_result2"):
        got, want = getattr(ours.grad_fn, name), getattr(theirs.grad_fn, name)
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("case", LAYER_NORMS)
def test_layer_norm_gradients(device, case):
    fn, arrays = _layer_norm_case(case)
    compare(fn, arrays, device, what=case)


def test_layer_norm_backward_reads_the_saved_statistics():
    """The backward takes mean and rstd from the node (not a second forward): statistics
    altered in the node change the input's gradient."""
    x = ember.tensor(X, requires_grad=True)
    y = ember.nn.functional.layer_norm(x, (9,))
    (first,) = ember.autograd.grad(y, x, ember.ones_like(y) + y.detach(), retain_graph=True)
    y.grad_fn._raw_saved_result2.tensor.numpy()[...] *= 2.0  # rstd doubled, in its memory
    (second,) = ember.autograd.grad(y, x, ember.ones_like(y) + y.detach())
    assert not np.allclose(first.numpy(), second.numpy())


def test_layer_norm_double_backward():
    """create_graph: the closed form (ember ops), whose gradients are torch's too."""
    fn, arrays = _layer_norm_case("affine")
    grads = {}
    for lib in (ember, torch):
        leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib, *leaves)
        first = lib.autograd.grad((out * out.sin()).sum(), leaves, create_graph=True)
        sum(g.pow(2).sum() for g in first).backward()
        grads[lib.__name__] = [t.grad.detach().numpy() for t in leaves]
    for got, want in zip(grads["ember"], grads["torch"]):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_layer_norm_under_compile_keeps_its_joint_graph(monkeypatch):
    """Under another layer (compile's tracing) the forward is the plain call: the statistics a
    kernel made unseen would make compiler/joint.py refuse the region's compiled backward."""
    import ember.compiler.joint as joint

    refused = []
    monkeypatch.setattr(joint, "_refuse", lambda why: refused.append(why))
    model = ember.nn.Sequential(ember.nn.Linear(8, 8), ember.nn.LayerNorm(8), ember.nn.Linear(8, 4))
    compiled = ember.compile(model)
    x = ember.randn(5, 8)
    for _ in range(3):
        compiled(x).sum().backward()
    assert refused == []
