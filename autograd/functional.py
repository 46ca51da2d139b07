"""Higher-level derivatives built on ``grad``: jacobian, hessian, vjp, jvp, hvp, vhp."""

from __future__ import annotations

from ember._tensor import Tensor

from . import grad_mode
from .engine import grad as autograd_grad


def _tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _prepare(inputs, create_graph):
    return tuple(
        t.detach().requires_grad_(True) if not create_graph or not t.requires_grad else t
        for t in _tuple(inputs)
    )


def _zeros_where_none(grads, refs):
    from ember import zeros_like

    return tuple(zeros_like(r) if g is None else g for g, r in zip(grads, refs))


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``."""
    single = isinstance(inputs, Tensor)
    xs = _prepare(inputs, create_graph)
    with grad_mode.enable_grad():
        out = func(*xs)
        grads = autograd_grad(out, xs, v, create_graph=create_graph, allow_unused=True)
    grads = _zeros_where_none(grads, xs)
    value = grads[0] if single else grads
    if not create_graph:
        out, value = _detach(out), _detach(value)
    return out, value


def _detach(value):
    if isinstance(value, Tensor):
        return value.detach()
    return tuple(_detach(v) for v in value)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)`` by the double-vjp trick (two reverse passes)."""
    from ember import ones_like, zeros_like

    xs = _prepare(inputs, True)
    vs = _tuple(v) if v is not None else tuple(ones_like(x) for x in xs)
    with grad_mode.enable_grad():
        out = func(*xs)
        outs = _tuple(out)
        dummies = tuple(zeros_like(o).requires_grad_(True) for o in outs)
        grads = autograd_grad(outs, xs, dummies, create_graph=True, allow_unused=True)
        pairs = [(g, vv) for g, vv in zip(grads, vs) if g is not None]
        if not pairs:
            jv = tuple(zeros_like(o) for o in outs)
        else:
            jv = autograd_grad(
                [g for g, _ in pairs],
                dummies,
                [vv for _, vv in pairs],
                create_graph=create_graph,
                allow_unused=True,
            )
            jv = _zeros_where_none(jv, outs)
    result = jv[0] if isinstance(out, Tensor) else jv
    return (_detach(out), result if create_graph else _detach(result))


def jacobian(
    func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"
):
    """The Jacobian of ``func`` at ``inputs``: ``J[out][in]`` of shape out.shape + in.shape (a
    single tensor when both are single tensors)."""
    from ember import zeros_like

    single_in = isinstance(inputs, Tensor)
    xs = _prepare(inputs, create_graph)
    with grad_mode.enable_grad():
        out = func(*xs)
    outs = _tuple(out)
    table = []
    for o in outs:
        rows = [[] for _ in xs]
        flat = o.reshape(-1)
        for j in range(flat.numel()):
            with grad_mode.enable_grad():
                grads = autograd_grad(
                    flat[j], xs, retain_graph=True, create_graph=create_graph, allow_unused=True
                )
            for i, (g, x) in enumerate(zip(grads, xs)):
                rows[i].append(zeros_like(x) if g is None else g)
        from ember import stack, zeros

        blocks = []
        for i, x in enumerate(xs):
            if rows[i]:
                block = stack(rows[i]).reshape(tuple(o.shape) + tuple(x.shape))
            else:
                block = zeros(tuple(o.shape) + tuple(x.shape), dtype=x.dtype, device=x.device)
            blocks.append(block if create_graph else block.detach())
        table.append(blocks[0] if single_in else tuple(blocks))
    return table[0] if isinstance(out, Tensor) else tuple(table)


def hessian(
    func,
    inputs,
    create_graph=False,
    strict=False,
    vectorize=False,
    outer_jacobian_strategy="reverse-mode",
):
    """The Hessian of a scalar ``func`` at ``inputs``."""
    single_in = isinstance(inputs, Tensor)

    def gradient(*xs):
        with grad_mode.enable_grad():
            out = func(*xs)
            grads = autograd_grad(out, xs, create_graph=True, allow_unused=True)
        grads = _zeros_where_none(grads, xs)
        return grads[0] if single_in else grads

    return jacobian(gradient, inputs, create_graph=create_graph)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)``."""
    xs = _prepare(inputs, True)
    with grad_mode.enable_grad():
        out = func(*xs)
        grads = autograd_grad(out, xs, create_graph=True, allow_unused=True)
        pairs = [(g, vv) for g, vv in zip(grads, _tuple(v)) if g is not None]
        result = autograd_grad(
            [g for g, _ in pairs],
            xs,
            [vv for _, vv in pairs],
            create_graph=create_graph,
            allow_unused=True,
        )
    result = _zeros_where_none(result, xs)
    value = result[0] if isinstance(inputs, Tensor) else result
    return _detach(out), value if create_graph else _detach(value)


hvp = vhp  # the Hessian is symmetric for twice-differentiable functions
