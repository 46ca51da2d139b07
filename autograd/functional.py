"""Higher-level derivatives built on ``grad``: vjp, jvp, vhp, hvp, jacobian, hessian.

As ``torch.autograd.functional``, step for step: inputs are detached copies that require grad
(unless ``create_graph``, which keeps the caller's graph), ``jvp`` and ``hvp`` use the double
backward trick (the gradient of ``u -> vjp(u) . v`` with respect to a dummy ``u``), outputs that
do not depend on an input give zeros (an error with ``strict=True``, with PyTorch's message for
each stage), and results are detached unless ``create_graph``. ``jacobian`` can vectorise its
backward passes with vmap (``vectorize=True``) or go forward (``strategy="forward-mode"``).
"""

from __future__ import annotations

from ember._tensor import Tensor

from . import grad_mode
from .engine import grad as autograd_grad


# ---- argument handling, as torch.autograd.functional's helpers --------------------------------
def _as_tuple(inp, arg_name=None, fn_name=None):
    if arg_name is None and fn_name is None:
        return inp if isinstance(inp, tuple) else tuple(inp) if isinstance(inp, list) else (inp,)
    is_tuple = isinstance(inp, tuple)
    inp = inp if is_tuple else (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            where = f"value at index {i}" if is_tuple else f"given {arg_name}"
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors "
                f"but the {where} has type {type(el)}."
            )
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph: bool, need_graph: bool) -> tuple:
    return tuple(
        t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(need_graph)
        for t in inputs
    )


def _grad_postprocess(inputs, create_graph: bool):
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(t.detach() for t in inputs)
    return tuple(_grad_postprocess(t, create_graph) for t in inputs)


def _validate_v(v, other, is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(
                f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}."
            )


_REQUIRES_GRAD = {
    "hessian": "The hessian of the user-provided function with respect to input {i} is "
    "independent of the input. This is not allowed in strict mode. You should ensure that your "
    "function is thrice differentiable and that the hessian depends on the inputs.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided "
    "function with respect to input {i} is independent of the input. This is not allowed in "
    "strict mode. You should ensure that your function is twice differentiable and that the "
    "jacobian depends on the inputs (this would be violated by a linear function for example).",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the "
    "user-provided function. This is not allowed in strict mode.",
    "outputs": "Output {i} of the user-provided function does not require gradients. The "
    "outputs must be computed in a differentiable manner from the input when running in strict "
    "mode.",
}


def _check_requires_grad(inputs, input_type: str, strict: bool) -> None:
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode."
            )
        if not inp.requires_grad:
            raise RuntimeError(_REQUIRES_GRAD[input_type].format(i=i))


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return autograd_grad(
        [o for o, _ in pairs],
        inputs,
        [g for _, g in pairs],
        allow_unused=True,
        create_graph=create_graph,
        retain_graph=retain_graph,
    )


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
    "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
    "grad_outputs when using the double backward trick to compute forward mode gradients. This "
    "is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This "
    "is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} "
    "in the grad_jacobian. This is not allowed in strict mode as it prevents from using the "
    "double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict: bool, create_graph: bool, stage: str) -> tuple:
    from ember import zeros_like

    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode when create_graph=True."
            )
        res.append(g)
    return tuple(res)


def _prepared(func, inputs, v, create_graph, strict, fn_name, v_over_inputs):
    """Inputs made differentiable, the outputs, and ``v`` checked against the inputs or the
    outputs (None allowed for a single one-element one)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
    if v_over_inputs:
        _check_v(v, inputs, is_inputs_tuple, "the input to the user-provided function is")
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    if not v_over_inputs:
        _check_v(v, outputs, is_outputs_tuple, "user-provided function returns")
    return is_inputs_tuple, inputs, v, is_outputs_tuple, outputs


def _check_v(v, against, is_tuple: bool, what: str) -> None:
    if v is not None:
        _validate_v(v, against, is_tuple)
    elif len(against) != 1 or against[0].nelement() != 1:
        if what.startswith("user"):
            raise RuntimeError(
                "The vector v can only be None if the user-provided function returns a single "
                "Tensor with a single element."
            )
        raise RuntimeError(
            f"The vector v can only be None if {what} a single Tensor with a single element."
        )


# ---- vjp, jvp, vhp, hvp ------------------------------------------------------------------------
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product (``torch.autograd.functional``)."""
    with grad_mode.enable_grad():
        is_in, inputs, v, is_out, outputs = _prepared(
            func, inputs, v, create_graph, strict, "vjp", False
        )
    with grad_mode.set_grad_enabled(True if create_graph else grad_mode.is_grad_enabled()):
        found = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(found, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_out), _tuple_postprocess(result, is_in)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)`` by the double backward trick (``torch.autograd.functional``)."""
    from ember import zeros_like

    with grad_mode.enable_grad():
        _, inputs, v, is_out, outputs = _prepared(
            func, inputs, v, create_graph, strict, "jvp", True
        )
        grad_outputs = tuple(zeros_like(o, requires_grad=True) for o in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with grad_mode.set_grad_enabled(True if create_graph else grad_mode.is_grad_enabled()):
        found = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(found, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_out), _tuple_postprocess(result, is_out)


def _scalar_function(outputs, is_out: bool, name: str) -> None:
    if is_out or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {name} should contain a single element"
        )


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)`` for a scalar ``func`` (``torch.autograd.functional.vhp``)."""
    with grad_mode.enable_grad():
        is_in, inputs, v, is_out, outputs = _prepared(
            func, inputs, v, create_graph, strict, "vhp", True
        )
        _scalar_function(outputs, is_out, "vhp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
    with grad_mode.set_grad_enabled(True if create_graph else grad_mode.is_grad_enabled()):
        found = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(found, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_out), _tuple_postprocess(result, is_in)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)`` for a scalar ``func``, by the double backward trick (it needs no
    symmetry of the Hessian; ``torch.autograd.functional.hvp``)."""
    from ember import zeros_like

    with grad_mode.enable_grad():
        is_in, inputs, v, is_out, outputs = _prepared(
            func, inputs, v, create_graph, strict, "hvp", True
        )
        _scalar_function(outputs, is_out, "hvp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_jac = tuple(zeros_like(t, requires_grad=True) for t in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with grad_mode.set_grad_enabled(True if create_graph else grad_mode.is_grad_enabled()):
        found = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(found, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_out), _tuple_postprocess(result, is_in)


# ---- jacobian, hessian ------------------------------------------------------------------------
def jacobian(
    func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"
):
    """The Jacobian of ``func`` at ``inputs``: ``J[out][in]`` of shape out.shape + in.shape (a
    single tensor when both are single tensors). Reverse mode runs one backward pass per output
    element, or one vectorised pass (``vectorize=True``); ``strategy="forward-mode"`` pushes
    the inputs' basis through forward AD (it needs ``vectorize=True``, as in PyTorch)."""
    from ._jacobian import jacobian_forward, jacobian_reverse

    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".'
        )
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either set '
                '`create_graph=False` or `strategy="reverse-mode"`.'
            )
        return jacobian_forward(func, inputs, strict, vectorize)
    return jacobian_reverse(func, inputs, create_graph, strict, vectorize)


def hessian(
    func,
    inputs,
    create_graph=False,
    strict=False,
    vectorize=False,
    outer_jacobian_strategy="reverse-mode",
):
    """The Hessian of a scalar ``func`` at ``inputs``: the Jacobian of its gradient."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def single_output(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        _scalar_function(t_out, is_out_tuple, "hessian")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(single_output, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(
        jac_func,
        inputs,
        create_graph=create_graph,
        strict=strict,
        vectorize=vectorize,
        strategy=outer_jacobian_strategy,
    )
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))
