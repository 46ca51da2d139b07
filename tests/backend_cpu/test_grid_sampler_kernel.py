"""The CPU's grid sampler kernels (csrc/grid_sampler.c) against PyTorch's CPU kernels: values and
both gradients in float64 over every mode, padding and align_corners, in 2-D and 3-D, with points
outside the input, NaN and infinite coordinates, strided inputs and grids, and the grid's
gradient alone; and that the CPU rows run the kernel, not the composite."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
from ember.autograd import gradgradcheck
from ember.dispatcher.optable import OPS
from ember.nn.functional import _grid_rows

torch = pytest.importorskip("torch")

F = ember.nn.functional
MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")
CASES = [
    (dims, mode, padding, align)
    for dims, mode, padding, align in itertools.product((2, 3), MODES, PADDINGS, (False, True))
    if not (dims == 3 and mode == "bicubic")
]
TOL = {"rtol": 1e-10, "atol": 1e-10}


def _shapes(dims: int):
    if dims == 2:
        return (2, 3, 5, 6), (2, 4, 3, 2)
    return (2, 2, 4, 3, 5), (2, 3, 2, 4, 3)


def _data(seed: int, dims: int, spread: float):
    """A random input and a grid of points within [-spread, spread]."""
    rng = np.random.default_rng(seed)
    shape, grid_shape = _shapes(dims)
    return rng.standard_normal(shape), rng.uniform(-spread, spread, grid_shape)


def _both(array: np.ndarray, grad: bool = True):
    """The same values as an ember and a torch tensor, both leaves."""
    ours = ember.tensor(array).requires_grad_(grad)
    theirs = torch.tensor(array).requires_grad_(grad)
    return ours, theirs


def _compare(x, grid, mode, padding, align, grad_input=True, strided=None):
    """Forward and both gradients of ember's and torch's grid_sample on the same data."""
    (ex, tx), (eg, tg) = _both(x, grad_input), _both(grid)
    ein, tin, egr, tgr = ex, tx, eg, tg
    if strided is not None:  # the same values through a strided view (strided(t) -> view)
        ein, tin, egr, tgr = (strided(t) for t in (ex, tx, eg, tg))
    kw = {"mode": mode, "padding_mode": padding, "align_corners": align}
    ours = F.grid_sample(ein, egr, **kw)
    theirs = torch.nn.functional.grid_sample(tin, tgr, **kw)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **TOL)
    weights = np.random.default_rng(1).standard_normal(tuple(theirs.shape))
    (ours * ember.tensor(weights)).sum().backward()
    (theirs * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(eg.grad.numpy(), tg.grad.numpy(), **TOL)
    if grad_input:
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), **TOL)
    else:
        assert ex.grad is None


@pytest.mark.parametrize("dims, mode, padding, align", CASES)
def test_values_and_gradients_match_torch(dims, mode, padding, align):
    x, grid = _data(0, dims, 1.6)
    # points inside, on and past the borders (reflection folds those more than once)
    edges = grid.reshape(-1)
    edges[::7] = np.resize([-1.0, 1.0, 0.0, -3.5, 2.75], edges[::7].size)
    _compare(x, grid, mode, padding, align)


@pytest.mark.parametrize("dims, mode, padding, align", CASES[::3])
def test_grid_gradient_alone(dims, mode, padding, align):
    x, grid = _data(2, dims, 1.2)
    _compare(x, grid, mode, padding, align, grad_input=False)


def _transposed(t):
    """A view with the first two dims' strides swapped and back: same values, not contiguous."""
    return t.transpose(0, 1).contiguous().transpose(0, 1) if t.shape[0] > 1 else t


@pytest.mark.parametrize("dims, mode, padding, align", CASES[::2])
def test_strided_input_and_grid(dims, mode, padding, align):
    x, grid = _data(3, dims, 1.3)
    _compare(x, grid, mode, padding, align, strided=_transposed)
    # a grid whose coordinates are its first dim (a conv output's (N, 2, H, W), moved last)
    moved = np.ascontiguousarray(np.moveaxis(grid, -1, 1))
    (eg, tg) = _both(moved)
    ours = F.grid_sample(ember.tensor(x), eg.movedim(1, -1), mode=mode, padding_mode=padding,
                         align_corners=align)  # fmt: skip
    theirs = torch.nn.functional.grid_sample(torch.tensor(x), tg.movedim(1, -1), mode=mode,
                                             padding_mode=padding, align_corners=align)  # fmt: skip
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **TOL)


SPECIAL = (np.nan, np.inf, -np.inf, 1e10, -1e10)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("dims, mode, padding, align", CASES)
def test_nan_and_infinite_coordinates(dims, mode, padding, align, dtype):
    """As PyTorch's kernels, which differ: 2-D's vectorised kernel (NaN weights make NaN under
    zeros padding, NaN clips to 0) and 3-D's scalar one (NaN clips to size - 1). Gradients where
    PyTorch computes them: its 2-D border and reflection backward reads out of bounds for NaN."""
    x, grid = _data(4, dims, 1.0)
    for i, value in enumerate(SPECIAL):  # one coordinate of each kind, each in its own point
        grid.reshape(-1, dims)[3 * i + 1, i % dims] = value
    kw = {"mode": mode, "padding_mode": padding, "align_corners": align}
    x, grid = x.astype(dtype), grid.astype(dtype)
    ours = F.grid_sample(ember.tensor(x), ember.tensor(grid), **kw)
    theirs = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(grid), **kw)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)
    if dims == 2 and padding != "zeros":
        return
    (ex, tx), (eg, tg) = _both(x), _both(grid)
    F.grid_sample(ex, eg, **kw).sum().backward()
    torch.nn.functional.grid_sample(tx, tg, **kw).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(eg.grad.numpy(), tg.grad.numpy(), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dims, mode, padding, align", CASES[::4])
def test_float32_matches_torch(dims, mode, padding, align):
    """Within float32 rounding: PyTorch's vectorised loops may fuse multiply-adds."""
    x, grid = (a.astype(np.float32) for a in _data(5, dims, 1.2))
    (ex, tx), (eg, tg) = _both(x), _both(grid)
    kw = {"mode": mode, "padding_mode": padding, "align_corners": align}
    ours, theirs = F.grid_sample(ex, eg, **kw), torch.nn.functional.grid_sample(tx, tg, **kw)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-5, atol=1e-5)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(eg.grad.numpy(), tg.grad.numpy(), rtol=1e-5, atol=1e-4)


def test_cpu_rows_run_the_kernel(monkeypatch):
    """The composite refuses to run: float32/64 on CPU never reach it, forward or backward;
    float16 (no kernel, as in PyTorch) does."""
    for name in ("grid_sampler_2d", "grid_sampler_3d"):
        for suffix in ("", "_backward"):
            for dtype in (ember.float32, ember.float64):
                assert OPS[name + suffix].kernel("cpu", dtype) is not None, (name, dtype)
            assert OPS[name + suffix].kernel("cpu", ember.float16) is None

    def composite(*args):
        raise AssertionError("the composite ran")

    monkeypatch.setattr(_grid_rows, "composite", composite)
    for dims, mode, padding, align in CASES:
        shape, grid_shape = _shapes(dims)
        for dtype in (ember.float32, ember.float64):
            x = ember.randn(shape, dtype=dtype, requires_grad=True)
            grid = ember.rand(grid_shape, dtype=dtype).mul(2).sub(1).requires_grad_()
            out = F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=align)
            out.sum().backward()
            assert x.grad is not None and grid.grad is not None
    with pytest.raises(AssertionError, match="the composite ran"):
        x = ember.randn((1, 1, 3, 3), dtype=ember.float16)
        F.grid_sample(x, ember.zeros((1, 2, 2, 2), dtype=ember.float16), align_corners=False)


@pytest.mark.parametrize("dims, mode, padding, align", CASES[::5])
def test_double_backward(dims, mode, padding, align):
    """The backward rows' decomposition carries a double backward, as the composite did."""
    rng = np.random.default_rng(6)
    shape = (1, 2, 3, 4) if dims == 2 else (1, 2, 2, 3, 3)
    grid_shape = (1, 2, 2, dims) if dims == 2 else (1, 2, 2, 2, 3)
    x = ember.tensor(rng.standard_normal(shape), requires_grad=True)
    grid = ember.tensor(rng.uniform(-1.1, 1.1, grid_shape), requires_grad=True)

    def fn(a, b):
        return F.grid_sample(a, b, mode=mode, padding_mode=padding, align_corners=align)

    assert gradgradcheck(fn, (x, grid))
