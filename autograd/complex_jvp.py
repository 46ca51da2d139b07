"""JVP rules of the complex rows that are not holomorphic, as PyTorch's derivatives.yaml writes
them: the VJP formula of these rows is the adjoint of a real-linear map that is not complex
linear, so the VJP given a tangent is not the JVP (autograd/jvp_rules.py's ``from_vjp``).

Real inputs keep the real rule (``from_vjp``); the conjugate and sgn need no rule here (each is
its own adjoint)."""

# ruff: noqa: N806 - matrices keep their mathematical names (L, V, dA), as in PyTorch
from __future__ import annotations

import ember as E


def _real_rule(op, args, tangents, out):
    from .jvp_rules import from_vjp

    return from_vjp(op, args, tangents, out)


def _safe_magnitude(z):
    magnitude = E.abs(z)
    zero = magnitude == 0
    return zero, E.where(zero, E.ones_like(magnitude), magnitude)


def _abs(op, args, tangents, out):
    """d|z| = Re(conj(sgn z) dz) (0 at 0)."""
    z, t = args[0], tangents[0]
    if not z.dtype.is_complex:
        return _real_rule(op, args, tangents, out)
    zero, magnitude = _safe_magnitude(z)
    found = E.real(E.conj_physical(z) * t) / magnitude
    return E.where(zero, E.zeros_like(found), found)


def _angle(op, args, tangents, out):
    """d arg z = Im(conj(z) dz) / |z|^2 (0 at 0); constant for real inputs."""
    z, t = args[0], tangents[0]
    if not z.dtype.is_complex:
        return E.zeros_like(out)
    zero, magnitude = _safe_magnitude(z)
    if not t.dtype.is_complex:
        t = E.complex(t, E.zeros_like(t))
    found = E.imag(E.conj_physical(z) * t) / (magnitude * magnitude)
    return E.where(zero, E.zeros_like(found), found)


def _view_as_real(op, args, tangents, out):
    t = tangents[0]
    if not t.dtype.is_complex:
        t = E.complex(t, E.zeros_like(t))
    return E.view_as_real(t.resolve_conj())


def _view_as_complex(op, args, tangents, out):
    return E.view_as_complex(tangents[0].contiguous())


def _eig(op, args, tangents, out):
    """PyTorch's linalg_eig_jvp: dP = V^-1 dA V, dL = diag(dP), dV = dX - V Re(diag(V^H dX))
    with dX = V (dP / (L_j - L_i)) off the diagonal (the eigenvectors keep unit norm)."""
    from .eig_formula import complex_solve

    L, V = out
    wants_v = V.numel() != 0 or L.numel() == 0
    if not wants_v:  # eigvals skipped the eigenvectors: its JVP needs them, as PyTorch's
        from ember.dispatcher.optable import OPS

        L, V = OPS["_linalg_eig"](args[0], True)
    dA = tangents[0]
    if not dA.dtype.is_complex:
        dA = E.complex(dA, E.zeros_like(dA))
    dP = complex_solve(V, dA @ V)
    eye = E.eye(L.shape[-1], dtype=E.real(L).dtype, device=L.device)
    dX = V @ (dP / (L.unsqueeze(-2) - L.unsqueeze(-1) + eye) * (1 - eye))
    norm = E.real((E.conj_physical(V) * dX).sum(-2)).unsqueeze(-2)
    dV = dX - V * norm if wants_v else None
    return dP.diagonal(0, -2, -1), dV


RULES = {
    "_linalg_eig": _eig,
    "abs": _abs,
    "angle": _angle,
    "view_as_real": _view_as_real,
    "view_as_complex": _view_as_complex,
}
