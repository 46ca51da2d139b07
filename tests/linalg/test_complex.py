"""Complex linalg against PyTorch: values in complex64/complex128 and the gradients of a real
loss (PyTorch's conjugate Wirtinger convention) in complex128, for the LAPACK-backed primitives
(dispatcher/lapack_complex.py), their composites and the products whose formulas conjugate."""

import numpy as np
import pytest
import torch

import ember

CASES = {
    "solve": (lambda m: m.linalg.solve, "AB"),
    "inv": (lambda m: m.linalg.inv, "A"),
    "det": (lambda m: m.linalg.det, "A"),
    "slogdet": (lambda m: lambda a: m.linalg.slogdet(a)[1], "A"),
    "logdet": (lambda m: m.logdet, "A"),
    "cholesky": (lambda m: m.linalg.cholesky, "P"),
    "cholesky_upper": (lambda m: lambda p: m.linalg.cholesky(p, upper=True), "P"),
    "solve_triangular": (lambda m: lambda a, b: m.linalg.solve_triangular(a, b, upper=True), "AB"),
    "solve_triangular_right": (
        lambda m: lambda a, b: m.linalg.solve_triangular(a, b.mT, upper=False, left=False),
        "AB",
    ),
    "lu_factor": (lambda m: lambda a: m.linalg.lu_factor(a)[0], "A"),
    "cholesky_solve": (lambda m: lambda p, b: m.cholesky_solve(b, m.linalg.cholesky(p)), "PB"),
    "addmm": (lambda m: lambda a, b: m.addmm(a[0], a[1], b[0], beta=1 + 2j, alpha=0.5 - 1j), "AA"),
    "vdot": (lambda m: lambda a, b: m.vdot(a[0, 0], b[0, :, 1]), "AB"),
    "vecdot": (lambda m: lambda a, b: m.linalg.vecdot(a[..., :3], b), "AB"),
}


def _inputs(letters, dtype):
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(2, 4, 4, dtype=dtype, generator=gen) + 2 * torch.eye(4, dtype=dtype)
    b = torch.randn(2, 4, 3, dtype=dtype, generator=gen)
    p = a @ a.mH + torch.eye(4, dtype=dtype)
    return [{"A": a, "B": b, "P": p}[x] for x in letters]


def _numpy(t):
    return t.detach().resolve_conj().numpy() if isinstance(t, torch.Tensor) else t.numpy()


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("name", sorted(CASES))
def test_values(name, dtype):
    make, letters = CASES[name]
    inputs = _inputs(letters, dtype)
    want = make(torch)(*inputs)
    got = make(ember)(*(ember.tensor(x.numpy()) for x in inputs))
    assert got.dtype.name == str(want.dtype).removeprefix("torch.")
    tol = 1e-3 if dtype == torch.complex64 else 1e-9
    np.testing.assert_allclose(_numpy(got), _numpy(want), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients(name):
    make, letters = CASES[name]
    inputs = _inputs(letters, torch.complex128)
    leaves_t = [x.clone().requires_grad_() for x in inputs]
    (make(torch)(*leaves_t).abs() ** 2).sum().backward()
    leaves_e = [ember.tensor(x.numpy(), requires_grad=True) for x in inputs]
    (make(ember)(*leaves_e).abs() ** 2).sum().backward()
    for e, t in zip(leaves_e, leaves_t):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve_sides(left, adjoint):
    a, b = _inputs("AB", torch.complex128)
    b = b if left else b.mT
    lu, piv = torch.linalg.lu_factor(a)
    want = torch.linalg.lu_solve(lu, piv, b, left=left, adjoint=adjoint)
    elu, epiv = ember.linalg.lu_factor(ember.tensor(a.numpy()))
    got = ember.linalg.lu_solve(elu, epiv, ember.tensor(b.numpy()), left=left, adjoint=adjoint)
    np.testing.assert_allclose(_numpy(got), _numpy(want), rtol=1e-9, atol=1e-9)


def test_gradcheck_solve():
    """torch's gradcheck of ember's complex solve (through numpy) against finite differences."""
    a, b = _inputs("AB", torch.complex128)

    class Solve(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ea = ember.tensor(a.detach().numpy(), requires_grad=True)
            eb = ember.tensor(b.detach().numpy(), requires_grad=True)
            ctx.saved = (ea, eb, ember.linalg.solve(ea, eb))
            return torch.from_numpy(ctx.saved[2].detach().numpy().copy())

        @staticmethod
        def backward(ctx, g):
            ea, eb, out = ctx.saved
            ga, gb = ember.autograd.grad(out, (ea, eb), ember.tensor(g.numpy()), retain_graph=True)
            return torch.from_numpy(ga.numpy().copy()), torch.from_numpy(gb.numpy().copy())

    assert torch.autograd.gradcheck(Solve.apply, (a.requires_grad_(), b.requires_grad_()))
