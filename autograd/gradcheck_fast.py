"""gradcheck's fast mode (``fast_mode=True``), as PyTorch's (pytorch/pytorch issue 53876).

Slow mode builds whole Jacobians: two evaluations of the function per input element and one
backward per output element. Fast mode compares one number per (input, output) pair instead,
``v^T J u`` for random unit vectors ``u`` (input-sized) and ``v`` (output-sized): central
differences along ``u`` give ``J u`` in two evaluations per input, one backward with output
gradient ``v`` gives ``v^T J``. A wrong Jacobian changes that product unless its error is
orthogonal to a random ``u v^T``. The tolerance grows as PyTorch's does: ``atol`` applies to
every Jacobian entry, so ``v^T (atol) u`` is ``atol * sum(u) * sum(v)``.

The vectors come from a generator of their own with a fixed seed, as PyTorch's do, so a check
is repeatable and leaves ember's random stream alone. On a mismatch the slow check runs to
name the entries that differ.
"""

from __future__ import annotations

import numpy as np

from .gradcheck import (
    GradcheckError,
    _as_tuple,
    _compare,
    _differentiable,
    _gradient_rows,
    _host,
    _outputs,
    _write,
    numerical_jacobian,
)

SEED = 67280421310721  # torch.Generator()'s default seed, the one PyTorch's fast mode draws from

FAST_FAIL_SLOW_OK = (
    "Fast gradcheck failed but element-wise differences are small: slow mode passes. "
    "Call gradcheck/gradgradcheck with fast_mode=False for this function."
)


def _unit(rng, n: int) -> np.ndarray:
    """``n`` uniform draws in [0, 1) scaled to norm 1 (PyTorch's ``_vec_from_tensor``)."""
    vec = rng.random(n)
    norm = np.linalg.norm(vec)
    return vec / norm if norm else vec


def fast_check(func, inputs, eps, atol, rtol, nondet_tol, backward: bool, forward: bool) -> None:
    """Raise GradcheckError where ``v^T J u`` (backward) or ``J u`` (forward) differs from its
    central-difference estimate."""
    inputs = _as_tuple(inputs)
    diff = _differentiable(inputs)
    outs = _outputs(func, inputs)
    rng = np.random.default_rng(SEED)
    all_u = [_unit(rng, inputs[i].numel()) for i in diff]
    all_v = [_unit(rng, o.numel()) for o in outs]
    # the backward first: the numerical estimate writes into the inputs, which outs saved
    if backward:
        analytic = _analytical_vju(outs, [inputs[i] for i in diff], all_u, all_v, nondet_tol)
    numeric = [_numerical_ju(func, inputs, i, u, eps) for i, u in zip(diff, all_u)]
    if backward:
        for n, i in enumerate(diff):
            for k, v in enumerate(all_v):
                got, want = analytic[k][n], float(v @ numeric[n][k])
                tolerance = atol * all_u[n].sum() * v.sum()
                if not np.isclose(got, want, rtol=rtol, atol=tolerance):
                    _explain(func, inputs, eps, atol, rtol, nondet_tol, "backward",
                             f"v^T J u for output {k} with respect to input {i}: "
                             f"analytical {got!r}, numerical {want!r}")  # fmt: skip
    if forward:
        from .gradcheck_modes import tangents_along

        for n, i in enumerate(diff):
            tangents = tangents_along(func, inputs, i, _shaped_like(all_u[n], inputs[i]))
            tolerance = atol * all_u[n].sum()
            for k, (got, want) in enumerate(zip(tangents, numeric[n])):
                if not np.allclose(got, want, rtol=rtol, atol=tolerance):
                    _explain(func, inputs, eps, atol, rtol, nondet_tol, "forward",
                             f"J u (forward mode) for output {k} with respect to input {i}: "
                             f"analytical {got}, numerical {want}")  # fmt: skip


def _numerical_ju(func, inputs, i: int, u: np.ndarray, eps: float) -> list:
    """Per floating output, ``J u`` by central differences along ``u`` (two evaluations)."""
    x = inputs[i]
    values = x.detach().cpu().numpy().astype(np.float64)
    step = (eps * u).reshape(values.shape)
    results = []
    for sign in (1, -1):
        _write(x, values + sign * step)
        results.append([_host(o) for o in _outputs(func, inputs)])
    _write(x, values)
    return [(plus - minus) / (2 * eps) for plus, minus in zip(*results)]


def _analytical_vju(outs, targets, all_u, all_v, nondet_tol) -> list:
    """``[output][input]``: ``(v^T J) . u`` from one backward per output with gradient ``v``
    (run twice: a backward that is not deterministic is an error, as in slow mode)."""
    table = []
    for k, (out, v) in enumerate(zip(outs, all_v)):
        if not out.requires_grad:  # its Jacobian must be zero: numerical v^T J u says so
            table.append([0.0] * len(targets))
            continue
        seed = _shaped_like(v, out)
        first, again = (_gradient_rows(out, targets, seed) for _ in range(2))
        for n, (a, b) in enumerate(zip(first, again)):
            if np.abs(a - b).max(initial=0) > nondet_tol:
                raise GradcheckError(
                    f"backward is not reentrant: the gradient of output {k} w.r.t. input {n} "
                    f"differs between two runs by more than {nondet_tol}"
                )
        table.append([float(g @ u) for g, u in zip(first, all_u)])
    return table


def _shaped_like(values: np.ndarray, like):
    """``values`` as a tensor of ``like``'s shape, dtype and device."""
    from ember import tensor

    return tensor(values.reshape(tuple(like.shape)), dtype=like.dtype, device=like.device)


def _explain(func, inputs, eps, atol, rtol, nondet_tol, mode: str, summary: str) -> None:
    """Raise GradcheckError with ``summary`` and the slow check's whole Jacobians."""
    try:
        _compare(func, inputs, numerical_jacobian(func, inputs, eps), mode, nondet_tol, atol, rtol)
    except GradcheckError as slow:
        raise GradcheckError(f"fast mode: {summary}\nslow mode: {slow}") from None
    raise GradcheckError(f"fast mode: {summary}\n{FAST_FAIL_SLOW_OK}")
