"""``autograd.functional.jacobian``'s three ways, as PyTorch's: one backward pass per output
element, one vectorised backward pass (vmap over the outputs' standard basis), or forward AD
vectorised over the inputs' basis."""

from __future__ import annotations

from . import grad_mode
from .functional import (
    _as_tuple,
    _autograd_grad,
    _check_requires_grad,
    _grad_postprocess,
    _grad_preprocess,
    _tuple_postprocess,
)


def _basis(tensors, numels) -> tuple:
    """Rows of the identity of size sum(numels), split per tensor: ``[N, numel]`` each."""
    import ember

    total = sum(numels)
    out, offset = [], 0
    for t, n in zip(tensors, numels):
        chunk = ember.zeros((total, n), dtype=t.dtype, device=t.device)
        if n:
            chunk.diagonal(-offset).fill_(1)
        out.append(chunk)
        offset += n
    return tuple(out)


def jacobian_reverse(func, inputs, create_graph, strict, vectorize):
    with grad_mode.enable_grad():
        is_in, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_out, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if vectorize:
            if strict:
                raise RuntimeError(
                    "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` "
                    "are not supported together. Please either set `strict=False` or "
                    "`vectorize=False`."
                )
            table = _vectorised(outputs, inputs, create_graph)
        else:
            table = tuple(
                _rows(i, out, inputs, create_graph, strict) for i, out in enumerate(outputs)
            )
    table = _grad_postprocess(table, create_graph)
    return _tuple_postprocess(table, (is_out, is_in))


def _rows(i, out, inputs, create_graph, strict) -> tuple:
    import ember

    rows = tuple([] for _ in inputs)
    flat = out.reshape(-1)
    for j in range(out.nelement()):
        found = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
        for k, (row, g, x) in enumerate(zip(rows, found, inputs)):
            if g is None:
                if strict:
                    raise RuntimeError(
                        f"Output {i} of the user-provided function is independent of input {k}. "
                        "This is not allowed in strict mode."
                    )
                g = ember.zeros_like(x)
            elif strict and create_graph and not g.requires_grad:
                raise RuntimeError(
                    f"The jacobian of the user-provided function is independent of input {i}. "
                    "This is not allowed in strict mode when create_graph=True."
                )
            row.append(g)
    return tuple(
        ember.stack(row, 0).view(tuple(out.shape) + tuple(x.shape))
        if row
        else ember.zeros(tuple(out.shape) + tuple(x.shape), dtype=x.dtype, device=x.device)
        for row, x in zip(rows, inputs)
    )


def _vectorised(outputs, inputs, create_graph) -> tuple:
    """All rows at once: vmap over the outputs' basis as the backward pass's cotangents."""
    import ember

    from .vmap import vmap

    numels = tuple(o.numel() for o in outputs)
    basis = _basis(outputs, numels)
    flat = tuple(o.reshape(-1) for o in outputs)

    def vjp(*grad_output):
        found = _autograd_grad(
            flat, inputs, grad_output, create_graph=create_graph, retain_graph=True
        )
        return tuple(ember.zeros_like(x) if g is None else g for g, x in zip(found, inputs))

    per_input = vmap(vjp)(*basis)
    table = []
    for out_index, out in enumerate(outputs):
        start = sum(numels[:out_index])
        table.append(
            tuple(
                jac.narrow(0, start, numels[out_index]).reshape(tuple(out.shape) + tuple(x.shape))
                for jac, x in zip(per_input, inputs)
            )
        )
    return tuple(table)


def jacobian_forward(func, inputs, strict, vectorize):
    import ember

    from . import forward_ad
    from .vmap import vmap

    if strict:
        raise RuntimeError(
            'torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` '
            "are not supported together (yet). Please either set `strict=False` or "
            '`strategy="reverse-mode"`.'
        )
    if not vectorize:
        raise NotImplementedError(
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
            "only implemented for `vectorize=True`."
        )
    is_in, inputs = _as_tuple(inputs, "inputs", "jacobian")
    numels = tuple(x.numel() for x in inputs)
    info = []

    def jvp(*tangents):
        with forward_ad.dual_level():
            duals = tuple(forward_ad.make_dual(x, t.view_as(x)) for x, t in zip(inputs, tangents))
            is_out, dual_outputs = _as_tuple(func(*duals), "outputs")
            info[:] = [is_out, []]
            found = []
            for out in dual_outputs:
                primal, tangent = forward_ad.unpack_dual(out)
                info[1].append(primal)
                found.append(ember.zeros_like(primal) if tangent is None else tangent)
            return tuple(found)

    columns = vmap(jvp)(*_basis(inputs, numels))
    is_out, outputs = info
    table = []
    for col, out in zip(columns, outputs):
        row, start = [], 0
        for n, x in zip(numels, inputs):
            block = col.narrow(0, start, n)
            moved = block.permute(*range(1, block.ndim), 0) if block.ndim > 1 else block
            row.append(moved.reshape(tuple(out.shape) + tuple(x.shape)))
            start += n
        table.append(tuple(row))
    return _tuple_postprocess(tuple(table), (is_out, is_in))
