"""ember.special against torch.special, value by value, on edge values the generated op tests do
not sample: NaN, infinities, signed zeros, poles, negative arguments, huge and tiny magnitudes;
float32 and float64 on every device. Gradients of the differentiable ones against torch's."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ember
import ember.special

EDGES = [
    math.nan,
    math.inf,
    -math.inf,
    0.0,
    -0.0,
    1e-30,
    -1e-30,
    1e-5,
    0.25,
    0.5,
    0.999,
    1.0,
    1.5,
    2.0,
    3.7,
    8.0,
    8.5,
    10.0,
    26.0,
    30.0,
    50.0,
    100.0,
    700.0,
    1e4,
    1e20,
    -0.25,
    -0.5,
    -0.999,
    -1.0,
    -1.5,
    -2.0,
    -3.0,
    -3.7,
    -8.5,
    -10.0,
    -26.7,
    -30.0,
    -100.0,
    -1e4,
]
UNIT = [
    math.nan,
    -1.0,
    -0.999999,
    -0.9,
    -0.5,
    -1e-7,
    0.0,
    -0.0,
    1e-7,
    0.3,
    0.7,
    0.95,
    1.0,
    1.5,
    -1.5,
    1e-40,
    0.999999,
]

UNARY = [
    "airy_ai",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "digamma",
    "entr",
    "erfcx",
    "gammaln",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "log_ndtr",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "ndtr",
    "psi",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "sinc",
    "spherical_bessel_j0",
    "expit",
    "exp2",
    "expm1",
    "log1p",
    "erf",
    "erfc",
]
ON_UNIT = ["erfinv", "ndtri", "logit"]
BINARY = ["zeta", "gammainc", "gammaincc", "xlog1py", "xlogy"]
POLYNOMIALS = [
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
]
# ember evaluates float in double and rounds once, so float32 results compare with torch's float64
# result on the same float32 inputs, rounded to float32 (torch's own float32 evaluation of the
# oscillating functions is off by far more at large |x|)
TOL = {"float32": (3e-6, 1e-30), "float64": (1e-11, 1e-300)}


def _both(values, dtype_name, device):
    arr = np.array(values, dtype=dtype_name)
    return ember.tensor(arr, device=device), torch.tensor(arr.astype(np.float64))


# PyTorch's ndtr is 0.5 (1 + erf(x / sqrt 2)), which cancels to 0 below x = -8; ember's erfc
# form keeps the tail (SciPy's values, below 1e-15): a deliberate difference (docs/special.md)
ATOL = {"ndtr": 1e-15}


def _check(got, want, dtype_name, what, atol=None):
    rtol, atol = TOL[dtype_name][0], atol or TOL[dtype_name][1]
    got = got.detach().cpu().numpy().astype(np.float64)
    want = want.detach().numpy().astype(dtype_name).astype(np.float64)
    # outside float's range both may overflow at slightly different points
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    assert (np.signbit(got) == np.signbit(want))[got == 0].all(), f"{what}: sign of zero"


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("name", UNARY + ON_UNIT)
def test_unary_matches_torch(name, dtype_name, device):
    values = UNIT if name in ON_UNIT else EDGES
    x, tx = _both(values, dtype_name, device)
    got = getattr(ember.special, name)(x)
    assert got.dtype is getattr(ember, dtype_name)
    want = getattr(torch.special, name)(tx)
    _check(got, want, dtype_name, f"special.{name}({values})", ATOL.get(name))


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("name", BINARY)
def test_binary_matches_torch(name, dtype_name, device):
    grid = [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 3.0, 10.0, 100.0, math.inf, math.nan]
    a, b = np.meshgrid(grid, grid)
    x, tx = _both(a.ravel(), dtype_name, device)
    y, ty = _both(b.ravel(), dtype_name, device)
    got = getattr(ember.special, name)(x, y)
    # torch's asymptotic gammainc branch is 4e-10 off at a = x = 100 (ember: SciPy's and
    # mpmath's value to 1e-15)
    atol = 1e-9 if name.startswith("gammainc") and dtype_name == "float64" else None
    _check(got, getattr(torch.special, name)(tx, ty), dtype_name, f"special.{name}", atol)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_references_match_torch(name):
    """The op suites' float64 references (the property tests draw any degree): PyTorch
    truncates the degree before testing its sign, so a degree in (-1, 0) is degree 0."""
    from ember.dispatcher.optable._special_refs import polynomial

    xs, ns = np.meshgrid([-1.5, -0.5, 0.3, 1.096, 2.0], [-1.5, -0.9, -0.2527, 0.0, 0.7, 3.0, 4.5])
    want = getattr(torch.special, name)(torch.tensor(xs.ravel()), torch.tensor(ns.ravel()))
    got = polynomial(name)(xs.ravel(), ns.ravel())
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_match_torch(name, dtype_name, device):
    # NaN x: PyTorch returns an uninitialised value; ember gives NaN (below)
    xs = [-2.0, -1.0, -0.99, -0.5, -0.1, 0.0, 0.25, 0.5, 0.9, 1.0, 1.5, 3.0]
    ns = [-1.0, -0.25, 0.0, 1.0, 2.0, 3.0, 5.0, 6.0, 7.0, 12.0, 2.5]
    a, b = np.meshgrid(xs, ns)
    x, tx = _both(a.ravel(), dtype_name, device)
    n, tn = _both(b.ravel(), dtype_name, device)
    fn, tfn = getattr(ember.special, name), getattr(torch.special, name)
    _check(fn(x, n), tfn(tx, tn), dtype_name, f"special.{name}")
    _check(fn(x, 4), tfn(tx, 4), dtype_name, f"special.{name}(x, 4)")
    nan = ember.tensor([math.nan] * 3, dtype=getattr(ember, dtype_name), device=device)
    assert ember.isnan(fn(nan, ember.tensor([2.0, 3.0, 5.0], device=device))).all()


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_polygamma_and_multigammaln_match_torch(dtype_name, device):
    x, tx = _both([0.1, 0.5, 1.0, 2.5, 7.0, 30.0, -0.5, -1.5, -2.0, 0.0], dtype_name, device)
    for n in range(5):
        # float32 trigamma is PyTorch's float algorithm (docs/special.md): its float32 values
        t = tx.float() if n == 1 and dtype_name == "float32" else tx
        _check(ember.polygamma(n, x), torch.polygamma(n, t), dtype_name, f"polygamma({n})")
        _check(x.polygamma(n), t.polygamma(n), dtype_name, f"x.polygamma({n})")
    y, ty = _both([2.1, 3.0, 5.5, 10.0], dtype_name, device)
    for p in (1, 2, 4):
        want = torch.special.multigammaln(ty, p)
        _check(ember.special.multigammaln(y, p), want, dtype_name, f"multigammaln({p})")
        _check(ember.mvlgamma(y, p), want, dtype_name, f"mvlgamma({p})")


def test_logit_eps_matches_torch(device):
    x, tx = _both([-0.5, 0.0, 0.05, 0.5, 0.97, 1.0, 2.0], "float64", device)
    for eps in (None, 0.0, 0.1):
        _check(ember.logit(x, eps), torch.logit(tx, eps), "float64", f"logit(eps={eps})")


def test_top_level_aliases_and_methods(device):
    x, tx = _both([0.3, 1.7, 4.0], "float64", device)
    for name in ("lgamma", "digamma", "erfinv", "i0", "sinc", "logit"):
        values = [0.1, 0.5, 0.9] if name in ("erfinv", "logit") else [0.3, 1.7, 4.0]
        x, tx = _both(values, "float64", device)
        _check(getattr(ember, name)(x), getattr(torch, name)(tx), "float64", name)
        _check(getattr(x, name)(), getattr(tx, name)(), "float64", f"Tensor.{name}")
        y = x.clone()
        getattr(y, f"{name}_")()
        _check(y, getattr(tx, name)(), "float64", f"Tensor.{name}_")
    a, ta = _both([0.5, 2.0], "float64", device)
    _check(ember.igamma(a, a), torch.igamma(ta, ta), "float64", "igamma")
    _check(a.igammac(a), ta.igammac(ta), "float64", "Tensor.igammac")
    _check(ember.xlogy(a, a), torch.xlogy(ta, ta), "float64", "xlogy")


def test_integer_inputs_promote_to_float(device):
    x = ember.tensor([1, 2, 3], device=device)
    assert ember.special.gammaln(x).dtype is ember.float32
    assert ember.special.i0e(x).dtype is ember.float32
    assert ember.special.zeta(x + 1, x).dtype is ember.float32


def test_errors_match_torch():
    x = ember.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="polygamma\\(n, x\\) does not support negative n"):
        ember.polygamma(-1, x)
    with pytest.raises(RuntimeError, match="All elements must be greater than \\(p-1\\)/2"):
        ember.special.multigammaln(x, 4)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        ember.mvlgamma(x, 0)


def test_special_namespace_is_torchs():
    missing = sorted(set(torch.special.__all__) - set(dir(ember.special)))
    assert not missing, f"ember.special lacks {missing}"


GRADIENTS = [
    ("gammaln", [0.3, 1.7, 4.0, -0.5]),
    ("digamma", [0.3, 1.7, 4.0, -0.5]),
    ("erfinv", [-0.9, 0.1, 0.7]),
    ("i0", [-3.0, 0.0, 0.4, 9.0]),
    ("i0e", [-3.0, 0.4, 9.0]),
    ("i1", [-3.0, 0.0, 0.4, 9.0]),
    ("i1e", [-3.0, 0.0, 0.4, 9.0]),
    ("erfcx", [-2.0, 0.3, 5.0, 60.0]),
    ("ndtr", [-3.0, 0.2, 2.0]),
    ("ndtri", [0.01, 0.4, 0.9]),
    ("log_ndtr", [-30.0, -2.0, 0.5, 4.0]),
    ("entr", [0.1, 1.0, 3.0]),
    ("sinc", [-1.3, 0.0, 0.2, 2.5]),
    ("logit", [0.1, 0.5, 0.8]),
]


@pytest.mark.parametrize("name,values", GRADIENTS)
def test_gradient_matches_torch(name, values, device):
    x, tx = _both(values, "float64", device)
    x.requires_grad_()
    tx.requires_grad_()
    getattr(ember.special, name)(x).sum().backward()
    getattr(torch.special, name)(tx).sum().backward()
    _check(x.grad, tx.grad, "float64", f"d special.{name}")


def test_polygamma_and_xlog1py_gradients_match_torch(device):
    x, tx = _both([0.3, 1.7, 4.0], "float64", device)
    y, ty = _both([-0.5, 0.0, 2.0], "float64", device)
    for t in (x, tx, y, ty):
        t.requires_grad_()
    (ember.polygamma(2, x) + ember.special.xlog1py(x, y)).sum().backward()
    (torch.polygamma(2, tx) + torch.special.xlog1py(tx, ty)).sum().backward()
    _check(x.grad, tx.grad, "float64", "d polygamma + xlog1py / dx")
    _check(y.grad, ty.grad, "float64", "d xlog1py / dy")


def test_xpu_runs_special_functions_through_the_declared_cpu_fallback():
    """xpu's OpenCL codegen leaves special.c's functions out: they are CPU fallbacks, counted,
    and their results come back on the device."""
    from ember.dispatcher import coverage
    from ember.dispatcher.optable import OPS
    from ember.dispatcher.registry import FALLBACK_COUNTS

    from ..conftest import available_device_types

    if "xpu" not in available_device_types():
        pytest.skip("no xpu device")
    table = coverage.coverage("xpu", OPS)
    for name in ("lgamma", "special_i0e", "special_zeta", "special_airy_ai", "_fft_r2c"):
        assert table.status[name] == "cpu fallback", name
    before = FALLBACK_COUNTS["special_i0e"]
    x = ember.tensor([0.5, 2.0], device="xpu")
    y = ember.special.i0e(x)
    assert y.device.type == "xpu"
    assert FALLBACK_COUNTS["special_i0e"] == before + 1
