"""Finite-difference checks of gradients: ``gradcheck`` and ``gradgradcheck`` (float64)."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor

from . import grad_mode
from .engine import grad as autograd_grad


class GradcheckError(RuntimeError):
    """Analytical and numerical gradients disagree; the message shows both Jacobians."""


def _as_tuple(x):
    return x if isinstance(x, tuple) else tuple(x) if isinstance(x, list) else (x,)


def _differentiable(inputs):
    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]


def _outputs(func, inputs):
    return [o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor)]


def numerical_jacobian(func, inputs, eps=1e-6) -> list:
    """One matrix per (input, output): d out / d in by central differences, in float64."""
    inputs = _as_tuple(inputs)
    jacobians = []
    for i in _differentiable(inputs):
        x = inputs[i]
        values = x.detach().cpu().numpy().astype(np.float64)
        flat = values.reshape(-1)
        columns = []
        for j in range(flat.size):
            original = flat[j]
            results = []
            for delta in (eps, -eps):
                flat[j] = original + delta
                with grad_mode.no_grad():
                    x.detach().copy_(_from(values, x))
                outs = _outputs(func, inputs)  # grad mode as the caller's: func may differentiate
                results.append(
                    [o.detach().cpu().numpy().astype(np.float64).reshape(-1) for o in outs]
                )
            flat[j] = original
            columns.append([(p - m) / (2 * eps) for p, m in zip(*results)])
        with grad_mode.no_grad():
            x.detach().copy_(_from(values, x))
        per_output = [
            np.stack([c[k] for c in columns], axis=1) if columns else None
            for k in range(len(columns[0]) if columns else 0)
        ]
        jacobians.append(per_output)
    return jacobians


def _from(values, like):
    from ember import tensor

    return tensor(values, dtype=like.dtype, device=like.device)


def analytical_jacobian(func, inputs) -> list:
    inputs = _as_tuple(inputs)
    diff = _differentiable(inputs)
    outs = _outputs(func, inputs)
    from ember import zeros_like

    rows = {i: [[] for _ in outs] for i in diff}
    for k, out in enumerate(outs):
        for j in range(out.numel()):
            onehot = zeros_like(out).reshape(-1)
            with grad_mode.no_grad():
                onehot[j] = 1.0
            grads = autograd_grad(
                out,
                [inputs[i] for i in diff],
                onehot.reshape(out.shape),
                retain_graph=True,
                allow_unused=True,
            )
            for i, g in zip(diff, grads):
                size = inputs[i].numel()
                row = np.zeros(size) if g is None else g.detach().cpu().numpy().reshape(-1)
                rows[i][k].append(row.astype(np.float64))
    return [
        [np.stack(r, axis=0) if r else np.zeros((0, inputs[i].numel())) for r in rows[i]]
        for i in diff
    ]


def gradcheck(
    func,
    inputs,
    *,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    raise_exception=True,
    nondet_tol=0.0,
    check_undefined_grad=True,
    fast_mode=False,
    **_ignored,
) -> bool:
    """Compare autograd's Jacobian of ``func`` at ``inputs`` with central differences.

    Inputs that require grad should be float64. Returns True, or raises GradcheckError (False with
    ``raise_exception=False``).
    """
    inputs = _as_tuple(inputs)
    for i in _differentiable(inputs):
        if inputs[i].dtype.name != "float64":
            import warnings

            warnings.warn(
                f"gradcheck: input {i} is {inputs[i].dtype.name}, not float64; expect noise",
                stacklevel=2,
            )
    numeric = numerical_jacobian(func, inputs, eps)
    analytic = analytical_jacobian(func, inputs)
    for n, (num_i, ana_i) in enumerate(zip(numeric, analytic)):
        for k, (num, ana) in enumerate(zip(num_i, ana_i)):
            if num is None:
                continue
            if not np.allclose(ana, num, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"Jacobian mismatch for output {k} with respect to input {n},\n"
                    f"numerical:\n{num}\nanalytical:\n{ana}\n"
                )
    return True


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    *,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    raise_exception=True,
    **_ignored,
) -> bool:
    """gradcheck of the gradient of ``func``: checks second derivatives."""
    from ember import randn

    inputs = _as_tuple(inputs)
    diff = _differentiable(inputs)
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(
            randn(o.shape, dtype=o.dtype, device=o.device).requires_grad_(True) for o in outs
        )
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first_derivative(*args):
        xs, gs = args[:n_in], args[n_in:]
        ys = _outputs(func, xs)
        grads = autograd_grad(ys, [xs[i] for i in diff], gs, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        first_derivative,
        inputs + tuple(grad_outputs),
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
    )
