"""Higher-level derivatives built on ``grad``: jacobian, hessian, vjp, jvp, hvp, vhp.

As in ``torch.autograd.functional``: inputs are detached copies that require grad (unless
``create_graph``, which keeps the caller's graph), outputs that do not depend on an input give
zeros (an error with ``strict=True``), and results are detached unless ``create_graph``.
"""

from __future__ import annotations

from ember._tensor import Tensor

from . import grad_mode
from .engine import grad as autograd_grad


def _tuple(x) -> tuple:
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _prepare(inputs, create_graph: bool) -> tuple:
    return tuple(
        t if create_graph and t.requires_grad else t.detach().requires_grad_(True)
        for t in _tuple(inputs)
    )


def _detach(value, create_graph: bool):
    if create_graph:
        return value
    if isinstance(value, Tensor):
        return value.detach()
    return tuple(_detach(v, False) for v in value)


def _grad(outputs, inputs, grad_outputs, create_graph, strict, where="The output") -> tuple:
    """Gradients of ``outputs`` w.r.t. ``inputs``: zeros where an input is unused (outputs that
    do not require grad contribute nothing), an error in strict mode."""
    from ember import zeros_like

    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    grads = (None,) * len(inputs)
    if pairs:
        grads = autograd_grad(
            [o for o, _ in pairs],
            inputs,
            [g for _, g in pairs],
            retain_graph=True,
            create_graph=create_graph,
            allow_unused=True,
        )
    for i, g in enumerate(grads):
        if g is None and strict:
            raise RuntimeError(
                f"{where} of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode."
            )
    return tuple(zeros_like(x) if g is None else g for g, x in zip(grads, inputs))


def _ones_for_scalars(outputs, v) -> tuple:
    from ember import ones_like

    if v is not None:
        return _tuple(v)
    for i, o in enumerate(outputs):
        if o.numel() != 1:
            raise RuntimeError(
                f"The vector v can only be None if the user-provided function returns a single "
                f"element; output {i} has {o.numel()} elements"
            )
    return tuple(ones_like(o) for o in outputs)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product."""
    xs = _prepare(inputs, create_graph)
    with grad_mode.enable_grad():
        out = func(*xs)
        outs = _tuple(out)
        grads = _grad(outs, xs, _ones_for_scalars(outs, v), create_graph, strict)
    value = grads[0] if isinstance(inputs, Tensor) else grads
    return _detach(out, create_graph), _detach(value, create_graph)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)``, by the double-vjp trick: J v is the gradient w.r.t. u of
    ``(u^T J) . v``, a linear function of dummy output gradients u."""
    from ember import zeros_like

    xs = _prepare(inputs, create_graph)
    vs = _ones_for_scalars(xs, v)
    with grad_mode.enable_grad():
        out = func(*xs)
        outs = _tuple(out)
        dummies = tuple(zeros_like(o).requires_grad_(True) for o in outs)
        grads = _grad(outs, xs, dummies, True, strict)
        pairs = [(g, w) for g, w in zip(grads, vs) if g.requires_grad]
        if pairs:
            jv = _grad([g for g, _ in pairs], dummies, [w for _, w in pairs], create_graph, False)
        else:
            jv = tuple(zeros_like(o) for o in outs)
    value = jv[0] if isinstance(out, Tensor) else jv
    return _detach(out, create_graph), _detach(value, create_graph)


def jacobian(
    func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"
):
    """The Jacobian of ``func`` at ``inputs``: ``J[out][in]`` of shape out.shape + in.shape (a
    single tensor when both are single tensors), one backward pass per output element."""
    from ember import stack, zeros

    xs = _prepare(inputs, create_graph)
    with grad_mode.enable_grad():
        out = func(*xs)
    table = []
    for k, o in enumerate(_tuple(out)):
        rows = []
        flat = o.reshape(-1)
        for j in range(flat.numel()):
            with grad_mode.enable_grad():
                where = f"Output {k}"
                rows.append(_grad((flat[j],), xs, (None,), create_graph, strict, where))
        blocks = []
        for i, x in enumerate(xs):
            shape = tuple(o.shape) + tuple(x.shape)
            if rows:
                block = stack([r[i] for r in rows]).reshape(shape)
            else:
                block = zeros(shape, dtype=x.dtype, device=x.device)
            blocks.append(_detach(block, create_graph))
        table.append(blocks[0] if isinstance(inputs, Tensor) else tuple(blocks))
    return table[0] if isinstance(out, Tensor) else tuple(table)


def hessian(
    func,
    inputs,
    create_graph=False,
    strict=False,
    vectorize=False,
    outer_jacobian_strategy="reverse-mode",
):
    """The Hessian of a scalar ``func`` at ``inputs``: the Jacobian of its gradient."""
    single = isinstance(inputs, Tensor)

    def gradient(*xs):
        with grad_mode.enable_grad():
            out = func(*xs)
            grads = _grad(_tuple(out), xs, (None,), True, strict)
        return grads[0] if single else grads

    return jacobian(gradient, inputs, create_graph=create_graph, strict=strict)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)`` for a scalar ``func``."""
    xs = _prepare(inputs, create_graph)
    with grad_mode.enable_grad():
        out = func(*xs)
        grads = _grad(_tuple(out), xs, (None,), True, strict)
        pairs = [(g, w) for g, w in zip(grads, _tuple(v)) if g.requires_grad]
        result = _grad([g for g, _ in pairs], xs, [w for _, w in pairs], create_graph, strict)
    value = result[0] if isinstance(inputs, Tensor) else result
    return _detach(out, create_graph), _detach(value, create_graph)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)``: equal to ``v^T H`` since Hessians of twice differentiable
    functions are symmetric."""
    return vhp(func, inputs, v, create_graph, strict)
