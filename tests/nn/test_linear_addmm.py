"""linear with a bias as one addmm (issue 20): the CPU's one-gemm kernel (beta 1 over the
bias) and the decomposition elsewhere, values and gradients against PyTorch, graph as its."""

from __future__ import annotations

import numpy as np
import pytest

import ember

from .oracle import assert_close, to_ember, to_torch

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "shape", [(8, 32), (1, 5), (2, 3, 7), (4, 0)], ids=["2d", "one-row", "3d-folded", "k0"]
)
def test_linear_matches_torch(device, rng, shape, dtype):
    features = shape[-1]
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((6, features)).astype(dtype)
    b = rng.standard_normal(6).astype(dtype)
    ours = [to_ember(a, device, True) for a in (x, w, b)]
    theirs = [to_torch(a, True) for a in (x, w, b)]
    out = ember.nn.functional.linear(*ours)
    expected = torch.nn.functional.linear(*theirs)
    assert_close(out, expected, "value", dtype=dtype)
    assert out.grad_fn.name() == expected.grad_fn.name()
    upstream = rng.standard_normal(tuple(expected.shape)).astype(dtype)
    out.backward(to_ember(upstream, device))
    expected.backward(to_torch(upstream))
    for a, e, what in zip(ours, theirs, ("input", "weight", "bias")):
        assert_close(a.grad, e.grad, f"{what} grad", dtype=dtype)


@pytest.mark.parametrize("bias_shape", [(5,), (1, 5), (4, 5)])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_addmm_bias_shapes_and_layouts(device, rng, bias_shape, layout):
    """A row bias broadcast to every row, or a full matrix; operands in place or transposed
    (the kernel hands BLAS either layout)."""
    a = rng.standard_normal((4, 3))
    b = rng.standard_normal((3, 5))
    c = rng.standard_normal(bias_shape)
    ae, be = to_ember(a, device), to_ember(b, device)
    if layout == "transposed":
        ae, be = to_ember(a.T.copy(), device).t(), to_ember(b.T.copy(), device).t()
    out = ember.addmm(to_ember(c, device), ae, be)
    assert_close(out, torch.addmm(to_torch(c), to_torch(a), to_torch(b)), "addmm", dtype="float64")


def test_addmm_scaled_and_integer_calls_decompose(rng):
    """beta/alpha other than 1 and integer dtypes take the decomposition: same as PyTorch's."""
    a, b, c = (rng.standard_normal(s) for s in ((4, 3), (3, 5), (5,)))
    out = ember.addmm(to_ember(c), to_ember(a), to_ember(b), beta=0.5, alpha=2)
    want = torch.addmm(to_torch(c), to_torch(a), to_torch(b), beta=0.5, alpha=2)
    assert_close(out, want, "scaled", dtype="float64")
    ai, bi, ci = (np.arange(np.prod(s)).reshape(s) for s in ((4, 3), (3, 5), (5,)))
    out = ember.addmm(to_ember(ci), to_ember(ai), to_ember(bi))
    np.testing.assert_array_equal(out.numpy(), ci + ai @ bi)
