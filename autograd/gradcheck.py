"""Finite-difference checks of gradients: ``gradcheck`` and ``gradgradcheck`` (float64).

As in PyTorch, only outputs that require grad are differentiated; every other floating output
must not depend on the inputs at all (its numerical Jacobian is zero), which catches ops whose
result silently drops out of the graph. Integer outputs (indices) are ignored.
"""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor

from . import grad_mode
from .engine import grad as autograd_grad
from .gradcheck_complex import as_real_problem


class GradcheckError(RuntimeError):
    """Analytical and numerical gradients disagree; the message shows both Jacobians."""


def _as_tuple(x):
    return x if isinstance(x, tuple) else tuple(x) if isinstance(x, list) else (x,)


def _differentiable(inputs):
    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]


def _outputs(func, inputs):
    """The floating outputs of ``func``: the ones with a Jacobian."""
    return [o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor) and o.is_floating_point()]


def _host(t: Tensor) -> np.ndarray:
    values = t.detach().resolve_conj().resolve_neg()  # lazy views are read as their values
    return values.cpu().numpy().astype(np.float64).reshape(-1)


def numerical_jacobian(func, inputs, eps=1e-6) -> list:
    """Per differentiable input, one matrix per floating output: d out / d in by central
    differences, in float64 (rows: output elements, columns: input elements)."""
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
                _write(x, values)
                # grad mode as the caller's: func may differentiate (gradgradcheck)
                results.append([_host(o) for o in _outputs(func, inputs)])
            flat[j] = original
            columns.append([(p - m) / (2 * eps) for p, m in zip(*results)])
        _write(x, values)
        if columns:
            jacobians.append([np.stack(c, axis=1) for c in zip(*columns)])
        else:  # an empty input: every output's Jacobian has no columns
            sizes = [o.numel() for o in _outputs(func, inputs)]
            jacobians.append([np.zeros((n, 0)) for n in sizes])
    return jacobians


def _write(x: Tensor, values: np.ndarray) -> None:
    from ember import tensor

    with grad_mode.no_grad():
        x.detach().copy_(tensor(values, dtype=x.dtype, device=x.device))


def _backward_rows(out: Tensor, inputs: list) -> list:
    """One row per element of ``out``: the gradient of that element w.r.t. each input."""
    from ember import zeros

    rows = []
    for j in range(out.numel()):
        with grad_mode.no_grad():
            onehot = zeros(out.numel(), dtype=out.dtype, device=out.device)
            onehot[j] = 1.0
        rows.append(_gradient_rows(out, inputs, onehot.reshape(out.shape)))
    return rows


def _gradient_rows(out: Tensor, inputs: list, grad_output: Tensor) -> list:
    """The gradient of ``out`` (weighted by ``grad_output``) w.r.t. each input, flat on the
    host; zeros for an input it does not reach."""
    grads = autograd_grad(out, inputs, grad_output, retain_graph=True, allow_unused=True)
    return [_checked(g, x, k) for k, (g, x) in enumerate(zip(grads, inputs))]


def _checked(g, x: Tensor, k: int) -> np.ndarray:
    if g is None:
        return np.zeros(x.numel())
    if tuple(g.shape) != tuple(x.shape) or g.dtype is not x.dtype or g.device != x.device:
        raise GradcheckError(
            f"gradient of input {k} is {g.dtype.name}{list(g.shape)} on {g.device}; the input is "
            f"{x.dtype.name}{list(x.shape)} on {x.device}"
        )
    return _host(g)


def analytical_jacobian(func, inputs, nondet_tol=0.0) -> list:
    """Per differentiable input, one matrix per floating output, by backward passes with one-hot
    output gradients (zeros for outputs that do not require grad). Runs the first backward of
    each output twice: a formula that is not deterministic (reentrant) is an error."""
    inputs = _as_tuple(inputs)
    diff = _differentiable(inputs)
    targets = [inputs[i] for i in diff]
    table = [[] for _ in diff]
    for k, out in enumerate(_outputs(func, inputs)):
        if out.requires_grad:
            rows = _backward_rows(out, targets)
            if rows:
                again = _backward_rows(out.reshape(-1)[0], targets)[0]
                for i, (first, second) in enumerate(zip(rows[0], again)):
                    if np.abs(first - second).max(initial=0) > nondet_tol:
                        raise GradcheckError(
                            f"backward is not reentrant: the gradient of output {k} w.r.t. "
                            f"input {diff[i]} differs between two runs by more than {nondet_tol}"
                        )
        else:
            rows = [[np.zeros(t.numel()) for t in targets] for _ in range(out.numel())]
        for i, t in enumerate(targets):
            matrix = np.stack([r[i] for r in rows]) if rows else np.zeros((0, t.numel()))
            table[i].append(matrix)
    return table


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
    check_grad_dtypes=False,
    check_batched_grad=False,
    check_batched_forward_grad=False,
    check_forward_ad=False,
    check_backward_ad=True,
    fast_mode=False,
    masked=None,
) -> bool:
    """Compare autograd's Jacobian of ``func`` at ``inputs`` with central differences.

    Args:
        func: takes ``inputs`` and returns a Tensor or a tuple of them.
        inputs: tensors (and other arguments); those that require grad should be float64.
        eps: finite-difference step.
        atol, rtol: tolerances of the comparison.
        raise_exception: raise GradcheckError on mismatch (else return False).
        nondet_tol: how far two backward passes may differ.
        check_undefined_grad: zero (undefined) output gradients must give zero input ones.
        check_grad_dtypes: accepted; ember always checks each gradient's dtype and shape.
        check_batched_grad: a batch of output gradients in one backward (vmap) too.
        check_batched_forward_grad: a batch of tangents in one forward-mode pass too.
        check_forward_ad: the forward-mode Jacobian against the numerical one too.
        check_backward_ad: the backward Jacobian against the numerical one.
        fast_mode: compare ``v^T J u`` for random unit ``u``, ``v`` instead of whole
            Jacobians (two evaluations per input, one backward per output: gradcheck_fast).
        masked: sparse inputs' masked semantics; ember has no sparse tensors.

    Returns:
        True when the Jacobians match.
    """
    if masked:
        raise NotImplementedError("gradcheck(masked=True): ember has no sparse tensors")
    # complex tensors: checked through their real views (see gradcheck_complex)
    func, inputs = as_real_problem(func, _as_tuple(inputs))
    for i in _differentiable(inputs):
        if inputs[i].dtype.name != "float64":
            import warnings

            warnings.warn(
                f"gradcheck: input {i} is {inputs[i].dtype.name}, not float64; expect noise",
                stacklevel=2,
            )
    try:
        if fast_mode:
            from .gradcheck_fast import fast_check

            fast_check(func, inputs, eps, atol, rtol, nondet_tol, check_backward_ad,
                       check_forward_ad)  # fmt: skip
        else:
            numeric = numerical_jacobian(func, inputs, eps)
            _compare(func, inputs, numeric, "backward" if check_backward_ad else None,
                     nondet_tol, atol, rtol)  # fmt: skip
            if check_forward_ad:
                _compare(func, inputs, numeric, "forward", nondet_tol, atol, rtol)
        _optional_checks(func, inputs, atol, rtol, check_undefined_grad and check_backward_ad,
                         check_batched_grad, check_batched_forward_grad)  # fmt: skip
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _optional_checks(func, inputs, atol, rtol, undefined, batched, batched_forward) -> None:
    from . import gradcheck_modes as modes

    diff = _differentiable(inputs)
    if undefined:
        modes.check_undefined_grad(func, inputs, diff)
    if batched:
        modes.check_batched_grad(func, inputs, diff, atol, rtol)
    if batched_forward:
        modes.check_batched_forward_grad(func, inputs, diff, atol, rtol)


def _compare(func, inputs, numeric, mode, nondet_tol, atol, rtol) -> None:
    """The analytical Jacobian (``mode``: "backward" or "forward"; None checks nothing) against
    the numerical one; GradcheckError naming the output and input that differ."""
    if mode is None:
        return
    if mode == "forward":
        from .gradcheck_modes import forward_jacobian

        analytic = forward_jacobian(func, inputs, _differentiable(inputs))
    else:
        analytic = analytical_jacobian(func, inputs, nondet_tol)
    tracked = [o.requires_grad for o in _outputs(func, inputs)]
    for n, (num_i, ana_i) in zip(_differentiable(inputs), zip(numeric, analytic)):
        for k, (num, ana) in enumerate(zip(num_i, ana_i)):
            if np.allclose(ana, num, rtol=rtol, atol=atol):
                continue
            if not tracked[k] and mode == "backward":
                raise GradcheckError(
                    f"output {k} does not require grad, but its numerical Jacobian with respect "
                    f"to input {n} is not zero:\n{num}\n"
                )
            what = "Jacobian" if mode == "backward" else "Jacobian computed with forward mode"
            raise GradcheckError(
                f"{what} mismatch for output {k} with respect to input {n},\n"
                f"numerical:\n{num}\nanalytical:\n{ana}\n"
            )


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    *,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    gen_non_contig_grad_outputs=False,
    raise_exception=True,
    nondet_tol=0.0,
    check_undefined_grad=True,
    check_grad_dtypes=False,
    check_batched_grad=False,
    check_fwd_over_rev=False,
    check_rev_over_rev=True,
    fast_mode=False,
    masked=False,
) -> bool:
    """gradcheck of the gradient of ``func``: checks second derivatives.

    ``grad_outputs`` (random when None; non-contiguous with ``gen_non_contig_grad_outputs``) are
    the output gradients of the first backward, one per output that requires grad; they take
    part in the check as inputs. ``check_rev_over_rev`` / ``check_fwd_over_rev`` check the
    backward / forward-mode derivative of that backward; the other flags are gradcheck's.
    """
    from ember import randn

    inputs = _as_tuple(inputs)
    diff = _differentiable(inputs)
    if grad_outputs is None:
        outs = [o for o in _outputs(func, inputs) if o.requires_grad]
        grad_outputs = tuple(_random_like(o, gen_non_contig_grad_outputs, randn) for o in outs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first_derivative(*args):
        xs, gs = args[:n_in], args[n_in:]
        ys = [o for o in _outputs(func, xs) if o.requires_grad]
        if not ys:
            return ()
        grads = autograd_grad(ys, [xs[i] for i in diff], gs, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        first_derivative,
        inputs + tuple(grad_outputs),
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev,
        fast_mode=fast_mode,
        masked=masked,
    )


def _random_like(out, non_contiguous: bool, randn):
    """A random output gradient that requires grad; every other element of a twice-as-wide
    buffer when ``non_contiguous``."""
    if not non_contiguous or out.ndim == 0:
        return randn(out.shape, dtype=out.dtype, device=out.device).requires_grad_(True)
    wide = randn((*out.shape[:-1], 2 * out.shape[-1]), dtype=out.dtype, device=out.device)
    return wide[..., ::2].detach().requires_grad_(True)
