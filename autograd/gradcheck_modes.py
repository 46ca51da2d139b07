"""gradcheck's optional checks, as PyTorch's ``check_*`` flags: the forward-mode Jacobian
(``check_forward_ad``), gradients for a batch of output gradients at once (``check_batched_grad``,
one backward under vmap) and a batch of tangents (``check_batched_forward_grad``), and output
gradients that are all zeros (``check_undefined_grad``: ember materialises an undefined output
gradient as zeros, so the formulas must give zero or no input gradients for them)."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor

from . import forward_ad, grad_mode
from .engine import grad as autograd_grad
from .gradcheck import GradcheckError, _as_tuple, _host


def _floating(outputs) -> list:
    return [o for o in outputs if isinstance(o, Tensor) and o.is_floating_point()]


def forward_jacobian(func, inputs, diff) -> list:
    """Per differentiable input, one matrix per floating output, by forward-mode AD with a
    one-hot tangent per input element (rows: output elements, columns: input elements)."""
    from ember import zeros

    table = []
    for i in diff:
        x = inputs[i]
        columns = []
        for j in range(x.numel()):
            with grad_mode.no_grad():
                tangent = zeros(x.numel(), dtype=x.dtype, device=x.device)
                tangent[j] = 1.0
            columns.append(tangents_along(func, inputs, i, tangent.reshape(x.shape)))
        if columns:
            table.append([np.stack(c, axis=1) for c in zip(*columns)])
        else:
            table.append([])
    return table


def tangents_along(func, inputs, i: int, tangent) -> list:
    """Per floating output of ``func``, its tangent (flat, on the host) when input ``i``
    moves along ``tangent``: one forward-mode pass, ``J tangent``."""
    with forward_ad.dual_level():
        args = list(inputs)
        args[i] = forward_ad.make_dual(inputs[i].detach(), tangent)
        return [_tangent(o) for o in _floating(_as_tuple(func(*args)))]


def _tangent(out) -> np.ndarray:
    tangent = forward_ad.unpack_dual(out).tangent
    return np.zeros(out.numel()) if tangent is None else _host(tangent)


def check_batched_grad(func, inputs, diff, atol, rtol) -> None:
    """Two output gradients at once through ``is_grads_batched`` against one at a time."""
    from ember import randn

    targets = [inputs[i] for i in diff]
    outs = [o for o in _floating(_as_tuple(func(*inputs))) if o.requires_grad]
    for k, out in enumerate(outs):
        batch = randn((2, *out.shape), dtype=out.dtype, device=out.device)
        together = autograd_grad(
            out, targets, batch, retain_graph=True, allow_unused=True, is_grads_batched=True
        )
        for b in range(2):
            alone = autograd_grad(out, targets, batch[b], retain_graph=True, allow_unused=True)
            for n, (g_all, g_one) in enumerate(zip(together, alone, strict=True)):
                if g_all is None and g_one is None:
                    continue
                got = np.zeros(targets[n].numel()) if g_all is None else _host(g_all[b])
                want = np.zeros(targets[n].numel()) if g_one is None else _host(g_one)
                if not np.allclose(got, want, rtol=rtol, atol=atol):
                    raise GradcheckError(
                        f"batched grad mismatch for output {k} with respect to input {diff[n]}:"
                        f"\nbatched:\n{got}\none at a time:\n{want}\n"
                    )


def check_batched_forward_grad(func, inputs, diff, atol, rtol) -> None:
    """Two tangents at once under vmap against one at a time."""
    from ember import randn
    from ember.func import jvp, vmap

    for i in diff:
        x = inputs[i]
        tangents = randn((2, *x.shape), dtype=x.dtype, device=x.device)

        def along(t, i=i, x=x):
            def only(xi):
                args = list(inputs)
                args[i] = xi
                return tuple(_floating(_as_tuple(func(*args))))

            return jvp(only, (x.detach(),), (t,))[1]

        together = vmap(along)(tangents)
        for b in range(2):
            for k, (t_all, t_one) in enumerate(zip(together, along(tangents[b]), strict=True)):
                if not np.allclose(_host(t_all[b]), _host(t_one), rtol=rtol, atol=atol):
                    raise GradcheckError(
                        f"batched forward grad mismatch for output {k} with respect to input "
                        f"{i}:\nbatched:\n{_host(t_all[b])}\none at a time:\n{_host(t_one)}\n"
                    )


def check_undefined_grad(func, inputs, diff) -> None:
    """Zero output gradients (ember's undefined ones) give zero or no input gradients."""
    from ember import zeros_like

    targets = [inputs[i] for i in diff]
    outs = [o for o in _floating(_as_tuple(func(*inputs))) if o.requires_grad]
    if not outs:
        return
    grads = autograd_grad(
        outs, targets, [zeros_like(o) for o in outs], retain_graph=True, allow_unused=True
    )
    for n, g in enumerate(grads):
        if g is not None and np.abs(_host(g)).max(initial=0) != 0:
            raise GradcheckError(
                f"zero (undefined) output gradients gave a nonzero gradient for input {diff[n]}"
            )
