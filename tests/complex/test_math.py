"""Complex arithmetic on the CPU against torch: elementwise ops (tensor and Python complex
operands, broadcasting, in-place), reductions and the cgemm/zgemm products in every layout."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

DTYPES = ("complex64", "complex128")
TOL = {"complex64": (2e-5, 2e-5), "complex128": (1e-10, 1e-10)}


def _values(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape)


def _both(shape, dtype, seed=0):
    v = _values(shape, seed)
    return ember.tensor(v, dtype=getattr(ember, dtype)), torch.tensor(
        v, dtype=getattr(torch, dtype)
    )


def _close(got, want, dtype):
    assert got.dtype.name == str(want.dtype)[6:], (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    rtol, atol = TOL.get(dtype, (1e-5, 1e-6))
    np.testing.assert_allclose(got.numpy(), want.resolve_conj().numpy(), rtol=rtol, atol=atol)


UNARY = ["neg", "exp", "log", "sqrt", "rsqrt", "reciprocal", "square", "sin", "cos", "tan"]
UNARY += ["sinh", "cosh", "tanh", "sigmoid", "abs", "angle", "conj_physical"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", UNARY)
def test_unary(name, dtype):
    z, tz = _both((3, 4), dtype)
    _close(getattr(ember, name)(z), getattr(torch, name)(tz), dtype)
    _close(getattr(ember, name)(z.t()), getattr(torch, name)(tz.t()), dtype)  # strided input


BINARY = ["add", "sub", "mul", "div", "pow", "eq", "ne"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", BINARY)
def test_binary(name, dtype):
    a, ta = _both((3, 4), dtype, 1)
    b, tb = _both((4,), dtype, 2)
    _close(getattr(ember, name)(a, b), getattr(torch, name)(ta, tb), dtype)
    for scalar in (2, 1.5, 0.5 - 2j):
        _close(getattr(ember, name)(a, scalar), getattr(torch, name)(ta, scalar), dtype)
    x = ember.tensor([[1.0, -2.0, 0.5, 3.0]], dtype=getattr(ember, dtype).to_real())
    tx = torch.tensor([[1.0, -2.0, 0.5, 3.0]], dtype=getattr(torch, dtype).to_real())
    _close(getattr(ember, name)(x, a), getattr(torch, name)(tx, ta), dtype)  # real with complex


@pytest.mark.parametrize("dtype", DTYPES)
def test_inplace_and_operators(dtype):
    a, ta = _both((2, 3), dtype, 3)
    b, tb = _both((2, 3), dtype, 4)
    a.mul_(b).add_(1j).sub_(b, alpha=2)
    ta.mul_(tb).add_(1j).sub_(tb, alpha=2)
    _close(a, ta, dtype)
    _close(-a / (b + 1) ** 2 - 1j * a, -ta / (tb + 1) ** 2 - 1j * ta, dtype)
    _close(ember.where(a.abs() > 2, a, b), torch.where(ta.abs() > 2, ta, tb), dtype)


def test_real_tensor_refuses_a_complex_result_in_place():
    x = ember.ones(2)
    with pytest.raises(RuntimeError):
        x.add_(ember.ones(2, dtype=ember.complex64))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["sum", "mean", "prod", "cumsum", "cumprod"])
def test_reductions(name, dtype):
    z, tz = _both((3, 4, 2), dtype, 5)
    scale = 0.5 if name in ("prod", "cumprod") else 1.0  # keep products of 24 numbers tame
    z, tz = z * scale, tz * scale
    if name.startswith("cum"):
        _close(getattr(ember, name)(z, 1), getattr(torch, name)(tz, 1), dtype)
        return
    _close(getattr(ember, name)(z), getattr(torch, name)(tz), dtype)
    _close(getattr(ember, name)(z, 1), getattr(torch, name)(tz, 1), dtype)
    if name != "prod":
        _close(getattr(ember, name)(z, (0, 2), True), getattr(torch, name)(tz, (0, 2), True), dtype)


def test_sum_promotes_a_real_input_to_a_complex_dtype():
    x = ember.tensor([1.0, 2.0])
    got = ember.sum(x, dtype=ember.complex64)
    assert got.dtype is ember.complex64 and got.item() == 3


LAYOUTS = {
    "contiguous": lambda m: m,
    "transposed": lambda m: m.mT.contiguous().mT,
    "sliced": lambda m: m[..., ::2, :],
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout_a", list(LAYOUTS))
@pytest.mark.parametrize("layout_b", list(LAYOUTS))
def test_matrix_products(dtype, layout_a, layout_b):
    a, ta = _both((2, 10, 4), dtype, 6)
    b, tb = _both((2, 8, 3), dtype, 7)
    fa, fb = LAYOUTS[layout_a], LAYOUTS[layout_b]
    a, ta, b, tb = fa(a), fa(ta), fb(b), fb(tb)
    b, tb = b[:, :4], tb[:, :4]
    _close(ember.bmm(a, b), torch.bmm(ta, tb), dtype)
    _close(ember.mm(a[0], b[1]), torch.mm(ta[0], tb[1]), dtype)
    _close(a @ b, ta @ tb, dtype)
    _close(a[0] @ b[0][:, 0], ta[0] @ tb[0][:, 0], dtype)  # matrix-vector through matmul


def test_matmul_refuses_mixed_real_and_complex_as_torch():
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.ones(2, 3) @ torch.ones(3, 2, dtype=torch.complex64)
    with pytest.raises(RuntimeError, match="same dtype"):
        ember.ones(2, 3) @ ember.ones(3, 2, dtype=ember.complex64)


def test_empty_products():
    for shapes in (((0, 3), (3, 2)), ((2, 0), (0, 3)), ((2, 3), (3, 0))):
        a = ember.ones(*shapes[0], dtype=ember.complex64)
        b = ember.ones(*shapes[1], dtype=ember.complex64)
        want = torch.ones(*shapes[0], dtype=torch.complex64) @ torch.ones(
            *shapes[1], dtype=torch.complex64
        )
        _close(a @ b, want, "complex64")


def test_unsupported_ops_raise_naming_op_and_dtype():
    z = ember.ones(3, dtype=ember.complex64)
    with pytest.raises((RuntimeError, NotImplementedError), match="complex64"):
        ember.floor(z)
    with pytest.raises((RuntimeError, NotImplementedError), match="complex64"):
        ember.amax(z)
