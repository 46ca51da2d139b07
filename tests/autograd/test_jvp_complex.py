"""Forward-mode AD on complex tensors, against torch.autograd.forward_ad in the same test.

One case per row of the op table that takes complex tensors and is differentiable (in-place
forms included, generated from the rows), plus the rows that build complex tensors from real
ones: ember's tangent must equal torch's and the central finite difference along the tangent
(a JVP is real-linear, so ``(f(z + h t) - f(z - h t)) / 2h`` is exact to O(h^2) for complex
``z`` and ``t`` alike). Complex tensors are CPU only (optable/complex.py).
"""

# ruff: noqa: N803 - T is the library under test (ember or torch), in every case
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as torch_fw

import ember
from ember import _dtype as dt
from ember.autograd import forward_ad as ember_fw
from ember.dispatcher.optable import OPS

EPS = 1e-6


def _silu(T, x):
    return T.nn.functional.silu(x)


UNARY = "exp log sqrt rsqrt sin cos tan sinh cosh tanh sigmoid reciprocal neg abs square"
UNARY += " conj_physical angle sgn"
UNARY += " asin acos atan asinh acosh atanh log1p log2 log10 exp2 expm1 sinc positive"
BINARY = {"add": "__add__", "sub": "__sub__", "mul": "__mul__", "div": "__truediv__"}
BINARY["pow"] = "__pow__"

# row -> fn(T, a, b) of two complex 2x2 tensors (T is ember or torch)


def _unary(name: str):
    return lambda T, a, b: getattr(T, name)(a)


def _binary(method: str):
    return lambda T, a, b: getattr(a, method)(b)


CALLS = {name: _unary(name) for name in UNARY.split()}
CALLS.update({name: _binary(method) for name, method in BINARY.items()})
CALLS.update({
    "silu": lambda T, a, b: _silu(T, a),
    "where": lambda T, a, b: T.where(a.abs() > 1, a, b),
    "sum": lambda T, a, b: a.sum(0),
    "prod": lambda T, a, b: a.prod(1),
    "mean": lambda T, a, b: a.mean(),
    "cumsum": lambda T, a, b: a.cumsum(1),
    "cumprod": lambda T, a, b: a.cumprod(0),
    "copy_": lambda T, a, b: T.zeros_like(a).copy_(b),
    "fill_": lambda T, a, b: a.clone().fill_(b[0, 1]),
    "clone": lambda T, a, b: a.clone(),
    "contiguous": lambda T, a, b: a.t().contiguous(),
    "mm": lambda T, a, b: T.mm(a, b.t()),
    "bmm": lambda T, a, b: T.bmm(a[None], b[None]),
    "matmul": lambda T, a, b: a @ b @ a,
    "view_as_real": lambda T, a, b: T.view_as_real(a * b),
    "_conj": lambda T, a, b: (a * b).conj() * a,
    "_neg_view": lambda T, a, b: (a * b)._neg_view() * a,
    "_linalg_eig": lambda T, a, b: T.linalg.eig(a)[0],
    "linalg_eig": lambda T, a, b: T.linalg.eig(a),
    "linalg_eigvals": lambda T, a, b: T.linalg.eigvals(a),
})  # fmt: skip
# complex results from real parts, and the complex functions that are compositions of rows
CALLS.update({
    "view_as_complex": lambda T, a, b: T.view_as_complex(T.view_as_real(a) * 2) * b,
    "complex": lambda T, a, b: T.complex(a.real, b.imag),
    "polar": lambda T, a, b: T.polar(a.abs(), b.angle()),
    "real": lambda T, a, b: a.real * 3,
    "imag": lambda T, a, b: a.imag,
    "conj": lambda T, a, b: a.conj() * b,
    "eig_of_real": lambda T, a, b: T.linalg.eig(a.real),
    "real_times_complex": lambda T, a, b: a.real * b + T.exp(a.imag),
})  # fmt: skip
# the rows widened to complex for OpInfo's complex128 runs (issues 13/14)
_INDEX = [[0, 1], [1, 0]]
CALLS.update({
    "logaddexp": lambda T, a, b: T.logaddexp(a, b),
    "lerp": lambda T, a, b: T.lerp(a, b, 0.3),
    "addcmul": lambda T, a, b: T.addcmul(a, a, b, value=0.5),
    "addcdiv": lambda T, a, b: T.addcdiv(a, a, b, value=0.5),
    "gather": lambda T, a, b: T.gather(a, 1, T.tensor(_INDEX)),
    "scatter": lambda T, a, b: T.scatter(a, 0, T.tensor([[1, 0]]), b),
    "scatter_add": lambda T, a, b: T.scatter_add(a, 1, T.tensor(_INDEX), b),
    "index_select": lambda T, a, b: T.index_select(a, 0, T.tensor([1, 1, 0])),
    "index_add": lambda T, a, b: T.index_add(a, 0, T.tensor([1, 0]), b, alpha=2),
    "take": lambda T, a, b: T.take(a, T.tensor([3, 0, 3])),
    "put_": lambda T, a, b: a.clone().put_(T.tensor([2, 1]), b[0], accumulate=True),
    "var": lambda T, a, b: a.var(0),
    "std": lambda T, a, b: a.std(1),
    "norm": lambda T, a, b: a.norm(),
    "dist": lambda T, a, b: T.dist(a, b, 3),
    "renorm": lambda T, a, b: a.renorm(2, 0, 0.5),
    "logcumsumexp": lambda T, a, b: T.logcumsumexp(a, 1),
    "l1_loss": lambda T, a, b: T.nn.functional.l1_loss(a, b),
    "linear": lambda T, a, b: T.nn.functional.linear(a, b, b[0]),
    "conv1d": lambda T, a, b: T.nn.functional.conv1d(a[None], b[:, :, None]),
    "conv2d": lambda T, a, b: T.nn.functional.conv2d(a[None, None], b[None, None], padding=1),
    "conv_transpose2d": lambda T, a, b: T.nn.functional.conv_transpose2d(
        a[None, None], b[None, None]
    ),
    "im2col": lambda T, a, b: T.nn.functional.unfold(a[None, None] * b, (1, 2)),
    "col2im": lambda T, a, b: T.nn.functional.fold(a[None] * b, (2, 2), (2, 1)),
    "unfold": lambda T, a, b: (a * b).unfold(1, 1, 1),
    "logaddexp_": lambda T, a, b: a.clone().logaddexp_(b),  # ember's only: no torch twin
    "softsign": lambda T, a, b: T.nn.functional.softsign(a),
    "softsign_": lambda T, a, b: OPS["softsign_"](a.clone()),  # ember's only: no torch twin
    "lerp_": lambda T, a, b: a.clone().lerp_(b, 0.7),
    "addcmul_": lambda T, a, b: a.clone().addcmul_(a, b),
    "addcdiv_": lambda T, a, b: a.clone().addcdiv_(b, a),
    "scatter_": lambda T, a, b: a.clone().scatter_(1, T.tensor([[1], [0]]), b),
    "scatter_add_": lambda T, a, b: a.clone().scatter_add_(0, T.tensor(_INDEX), b),
    "index_add_": lambda T, a, b: a.clone().index_add_(1, T.tensor([1, 0]), b),
    "renorm_": lambda T, a, b: a.clone().renorm_(1, 1, 0.7),
})  # fmt: skip
# the matrix products over the complex mm/bmm (optable/complex.py's PRODUCTS)
CALLS.update({
    "addmm": lambda T, a, b: T.addmm(a, a, b, beta=0.5, alpha=2),
    "addmv": lambda T, a, b: T.addmv(a[0], a, b[0]),
    "addbmm": lambda T, a, b: T.addbmm(a, a[None], b[None]),
    "baddbmm": lambda T, a, b: T.baddbmm(a[None], a[None], b[None]),
    "dot": lambda T, a, b: T.dot(a[0], b[0]),
    "vdot": lambda T, a, b: T.vdot(a[0], b[1]),
    "mv": lambda T, a, b: T.mv(a, b[0]),
    "inner": lambda T, a, b: T.inner(a, b),
    "einsum": lambda T, a, b: T.einsum("ij,jk->ik", a, b),
    "tensordot": lambda T, a, b: T.tensordot(a, b, dims=1),
    "matrix_power": lambda T, a, b: T.matrix_power(a, 3),
    "linalg_matrix_power": lambda T, a, b: T.linalg.matrix_power(a, 2),
    "linalg_multi_dot": lambda T, a, b: T.linalg.multi_dot([a, b, a]),
    "linalg_vander": lambda T, a, b: T.linalg.vander(a[0]),
    "cross": lambda T, a, b: T.cross(a.reshape(-1)[:3], b.reshape(-1)[1:], dim=0),
    "linalg_cross": lambda T, a, b: T.linalg.cross(a.reshape(-1)[:3], b.reshape(-1)[1:]),
})  # fmt: skip
# the FFT rows (complex tensors as their real view, optable/fft.py): real-linear maps
CALLS.update({
    f"fft.{name}": (lambda n: lambda T, a, b: getattr(T.fft, n)(a))(name)
    for name in ("fft", "ifft", "fft2", "ifftn", "irfft", "hfft", "irfft2")
})  # fmt: skip
CALLS.update({
    f"fft.{name}": (lambda n: lambda T, a, b: getattr(T.fft, n)(a.real * b.imag))(name)
    for name in ("rfft", "ihfft", "rfftn", "ihfft2")
})  # fmt: skip


def _inplace(name: str):
    base = name[:-1]
    if base in BINARY:
        return lambda T, a, b: getattr(a.clone(), name)(b)
    return lambda T, a, b: getattr(a.clone(), name)()


# torch's forward derivative of silu on complex inputs is t * conj(f'(z)) (its backward refuses
# complex, and the auto_element_wise JVP conjugates a derivative that is not the conjugate one);
# ember's is t * f'(z), the finite difference's, which the test checks instead.
TORCH_DIFFERS = frozenset({"silu", "silu_"})
# torch has no forward AD for these in-place forms (asinh_, acosh_, atanh_) or no such method
# (logaddexp_, softsign_): ember's tangents are checked against the finite difference only
TORCH_DIFFERS |= {"asinh_", "acosh_", "atanh_", "logaddexp_", "softsign_"}
# torch refuses in-place abs of a complex tensor (a real result cannot be written into it)
TORCH_REFUSES = frozenset({"abs_"})
# eigenvectors are normalised by LAPACK up to a phase that moves with the input: a finite
# difference of them is not the JVP (which keeps the phase gauge), so only the eigenvalues are
# checked by finite differences (the eigenvectors' tangents against torch's)
GAUGE = frozenset({"linalg_eig", "eig_of_real"})


def _complex_rows() -> list:
    rows = []
    for name, op in OPS.items():
        base = op.inplace_of or op
        if base.defn.differentiable and dt.complex128 in op.dtypes:
            rows.append(name)
    return rows


ROWS = _complex_rows()
for _name in ROWS:
    if _name not in CALLS and OPS[_name].inplace_of is not None:
        CALLS[_name] = _inplace(_name)


def _values(seed: int, shape=(2, 2)) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(0.4, 1.5, shape) * np.exp(1j * rng.uniform(-2.5, 2.5, shape))


def _numpy(t):
    return t.detach().resolve_conj().numpy()


def _jvp(T, fw, fn, primals, tangents):
    """(outputs, tangents) of fn at primals along tangents, through T's forward AD."""
    with fw.dual_level():
        duals = [fw.make_dual(p, t) for p, t in zip(primals, tangents)]
        out = fn(T, *duals)
        outs = out if isinstance(out, tuple) else (out,)
        found = [fw.unpack_dual(o) for o in outs]
        return [_numpy(f.primal) for f in found], [
            None if f.tangent is None else _numpy(f.tangent) for f in found
        ]


def _finite_difference(fn, primals, tangents) -> list:
    with ember.no_grad():
        plus = fn(ember, *[p + EPS * t for p, t in zip(primals, tangents)])
        minus = fn(ember, *[p - EPS * t for p, t in zip(primals, tangents)])
    plus = plus if isinstance(plus, tuple) else (plus,)
    minus = minus if isinstance(minus, tuple) else (minus,)
    return [(_numpy(p) - _numpy(m)) / (2 * EPS) for p, m in zip(plus, minus)]


def _inputs(T, dtype="complex128"):
    primals = [T.tensor(_values(s), dtype=getattr(T, dtype)) for s in (0, 1)]
    tangents = [T.tensor(_values(s), dtype=getattr(T, dtype)) for s in (2, 3)]
    return primals, tangents


@pytest.mark.parametrize("name", [n for n in CALLS if n not in TORCH_REFUSES])
def test_complex_jvp_matches_torch(name):
    fn = CALLS[name]
    primals, tangents = _inputs(ember)
    outs, found = _jvp(ember, ember_fw, fn, primals, tangents)
    checked = found[:1] if name in GAUGE else found
    for got, want in zip(checked, _finite_difference(fn, primals, tangents)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, err_msg=f"{name}: vs FD")
    if name in TORCH_DIFFERS:
        return
    t_outs, t_found = _jvp(torch, torch_fw, fn, *_inputs(torch))
    if name in GAUGE:  # LAPACK builds may pick another phase per eigenvector: align to ember's
        phase = (np.conj(t_outs[1]) * outs[1]).sum(-2, keepdims=True)
        t_outs[1], t_found[1] = t_outs[1] * phase, t_found[1] * phase
    for got, want in zip(outs, t_outs):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    for got, want in zip(found, t_found):
        assert got.dtype == want.dtype, f"{name}: tangent dtype {got.dtype} vs {want.dtype}"
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("name", ["exp", "mul", "mm", "abs", "angle", "view_as_real", "fft.fft"])
def test_complex64_tangents_match_torch(name):
    """complex64 stays complex64 (tangents included), within float32 rounding of torch's."""
    found = [
        _jvp(T, fw, CALLS[name], *_inputs(T, "complex64"))[1]
        for T, fw in ((ember, ember_fw), (torch, torch_fw))
    ]
    for got, want in zip(*found):
        assert got.dtype == want.dtype, f"{name}: tangent dtype {got.dtype} vs {want.dtype}"
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6, err_msg=name)


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.xfail(reason=why, strict=True)) for n, why in {}.items()]
    + ["abs_"],
)
def test_inplace_refusals_as_torch(name):
    primals, tangents = _inputs(ember)
    with pytest.raises(RuntimeError):
        _jvp(torch, torch_fw, CALLS[name], *_inputs(torch))
    with pytest.raises(RuntimeError):
        _jvp(ember, ember_fw, CALLS[name], primals, tangents)


def test_every_complex_row_has_a_case():
    assert set(ROWS) <= set(CALLS), sorted(set(ROWS) - set(CALLS))


@pytest.mark.parametrize(
    ("primal", "tangent"), [("complex128", "float64"), ("float64", "complex128")]
)
def test_make_dual_mixed_dtypes_as_torch(primal, tangent):
    """A real tangent of a complex primal, and a complex tangent of a real one (PyTorch keeps
    the latter complex), through an op."""
    found = []
    for T, fw in ((ember, ember_fw), (torch, torch_fw)):
        p = T.tensor(_values(4).astype(primal), dtype=getattr(T, primal))
        t = T.tensor(_values(5).astype(tangent), dtype=getattr(T, tangent))
        with fw.dual_level():
            found.append(_numpy(fw.unpack_dual(fw.make_dual(p, t) * 2).tangent))
    assert found[0].dtype == found[1].dtype
    np.testing.assert_allclose(found[0], found[1])


def test_func_jvp_on_complex_matches_torch():
    def f(T, z):
        return T.sin(z) * z.conj() + T.view_as_complex(T.view_as_real(z).flip(-1))

    found = []
    for T in (ember, torch):
        z = T.tensor(_values(6), dtype=T.complex128)
        t = T.tensor(_values(7), dtype=T.complex128)
        out, tangent = T.func.jvp(lambda x: f(T, x), (z,), (t,))  # noqa: B023
        found.append((_numpy(out), _numpy(tangent)))
    for got, want in zip(*found):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("api", ["jacfwd", "jacrev"])
@pytest.mark.parametrize("where", ["inputs", "outputs"])
def test_jacobians_refuse_complex_as_torch(where, api):
    def f(T, x):
        return T.exp(x) if where == "inputs" else T.exp(x * 1j)

    messages = []
    for T in (ember, torch):
        dtype = T.complex128 if where == "inputs" else T.float64
        x = T.ones(2, dtype=dtype)
        with pytest.raises(RuntimeError) as info:
            getattr(T.func, api)(lambda v: f(T, v))(x)  # noqa: B023
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_vjp_and_functional_jvp_on_complex_match_torch():
    found = []
    for T in (ember, torch):
        z = T.tensor(_values(8), dtype=T.complex128)
        t = T.tensor(_values(9), dtype=T.complex128)
        _, jvp = T.autograd.functional.jvp(lambda x: T.exp(x) * x, z, t)  # noqa: B023
        _, vjp_fn = T.func.vjp(lambda x: T.sin(x) * x.conj(), z)  # noqa: B023
        found.append((_numpy(jvp), _numpy(vjp_fn(t)[0])))
    for got, want in zip(*found):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_jacfwd_through_complex_intermediates_matches_torch():
    def f(T, x):
        return (T.exp(x * 1j) * (x + 2j)).abs() + T.angle(T.polar(x, x * 0.5))

    found = []
    for T in (ember, torch):
        x = T.tensor([0.3, -1.2, 2.0], dtype=T.float64)
        found.append(T.func.jacfwd(lambda v: f(T, v))(x).detach().numpy())  # noqa: B023
    np.testing.assert_allclose(found[0], found[1], rtol=1e-10, atol=1e-12)


def _into_slice(T, d):
    w = d.clone()
    w[1:].mul_(d[:2])
    return w


def _into_real_view(T, d):
    w = d.clone()
    T.view_as_real(w)[:, 0].mul_(3)
    w.imag.add_(d.real)
    return w


def _copy_and_add(T, d):
    w = T.zeros(3, dtype=T.complex128)
    w.add_(d * 2j)
    w.copy_(w * d)
    return w


@pytest.mark.parametrize("fn", [_into_slice, _into_real_view, _copy_and_add])
def test_inplace_writes_of_complex_tangents_match_torch(fn):
    """In-place ops write the new tangent into the base's tangent, real views of a complex
    base included (in real units)."""
    found = []
    for T, fw in ((ember, ember_fw), (torch, torch_fw)):
        z = T.tensor(_values(10, (3,)), dtype=T.complex128)
        t = T.tensor(_values(11, (3,)), dtype=T.complex128)
        with fw.dual_level():
            found.append(_numpy(fw.unpack_dual(fn(T, fw.make_dual(z, t))).tangent))
    np.testing.assert_allclose(found[0], found[1], rtol=1e-12, atol=1e-12)


COMPOSED = {
    "vmap_of_jvp": lambda T, z, t: T.func.vmap(
        lambda u: T.func.jvp(lambda x: T.sin(x) * x.abs(), (z,), (u,))[1]
    )(T.stack([t, t * 1j + 1])),
    "forward_over_reverse": lambda T, z, t: T.func.jvp(
        T.func.grad(lambda x: (T.exp(x) * x.conj()).real.sum()), (z,), (t,)
    )[1],
    "nested_jvp": lambda T, z, t: T.func.jvp(
        lambda x: T.func.jvp(lambda y: T.exp(y) * y, (x,), (t,))[1], (z,), (t * 2,)
    )[1],
}


@pytest.mark.parametrize("name", list(COMPOSED))
def test_composed_transforms_on_complex_match_torch(name):
    found = []
    for T in (ember, torch):
        z = T.tensor(_values(12, (3,)), dtype=T.complex128)
        t = T.tensor(_values(13, (3,)), dtype=T.complex128)
        found.append(_numpy(COMPOSED[name](T, z, t)))
    np.testing.assert_allclose(found[0], found[1], rtol=1e-10, atol=1e-12)
