"""The function transforms of ``ember.func`` that differentiate: ``vjp``, ``grad``,
``grad_and_value`` and ``jvp``.

Reverse mode runs the ordinary autograd engine on *physical* tensors (autograd sits below vmap,
so the recorded graph is the batched computation). A transform called inside vmap therefore
works per sample as follows. Its differentiable inputs become fresh leaves batched at every vmap
level any argument is batched at (``A``: an input shared by the samples is expanded, so that
each sample gets its own gradient). The function's output may also be batched at levels no
argument is (a batched tensor captured by a closure, ``E``); for those the cotangent is a one-hot
tensor batched at the same levels, so the engine computes every sample's gradient in one
vectorised backward (cotangents may themselves be batched at new levels, ``N``: jacrev). The
gradients come back batched at ``A + E + N``.

A transform records the backward pass (create_graph) only when something outside it can
differentiate the result: an input that requires grad, a captured tensor that does, or an
enclosing transform. Forward mode is ``forward_ad`` with a level of its own per call.
"""

from __future__ import annotations

import functools

import ember as E
from ember._tensor import Tensor

from . import _pytree, forward_ad, grad_mode, node
from .batched import active_levels, level_of, unwrap_all, wrap_all
from .engine import grad as autograd_grad


# ---- argnums --------------------------------------------------------------------------------
def _wrap_argnum(argnum, num_args: int) -> int:
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def check_argnums(argnums, num_args: int):
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if isinstance(argnums, int):
        return _wrap_argnum(argnums, num_args)
    if not argnums:
        raise RuntimeError("argnums must be non-empty")
    if len(set(argnums)) != len(argnums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return tuple(_wrap_argnum(a, num_args) for a in argnums)


def slice_argnums(args: tuple, argnums):
    return args[argnums] if isinstance(argnums, int) else tuple(args[i] for i in argnums)


def replace_argnums(args: tuple, argnums, new):
    if isinstance(argnums, int):
        return tuple(new if i == argnums else a for i, a in enumerate(args))
    table = dict(zip(argnums, new))
    return tuple(table.get(i, a) for i, a in enumerate(args))


# ---- leaves and the backward pass --------------------------------------------------------------
def _levels_of_args(args) -> list:
    """The active vmap levels some tensor among ``args`` is batched at (outermost first)."""
    found = set()
    for leaf in _pytree.tree_flatten(args)[0]:
        if isinstance(leaf, Tensor):
            found.update(unwrap_all(leaf)[1])
    return [lv for lv in active_levels() if lv.id in found]


def _fresh_leaf(x: Tensor, levels: list):
    """``(physical leaf, logical input)``: ``x`` batched at ``levels`` as a tensor the engine can
    differentiate, keeping ``x``'s history (an outer transform's) and its tangents."""
    from .batched import expand_to_levels

    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    physical = expand_to_levels(x, levels) if levels else unwrap_all(x)[0]
    if physical.requires_grad:
        leaf = physical.view_as(physical)
    else:
        leaf = physical.detach().requires_grad_()
        forward_ad.copy_tangents(physical, leaf)
    return leaf, wrap_all(leaf, [lv.id for lv in levels])


def connected_outside(outputs, start: int, leaves) -> bool:
    """Whether the graph of ``outputs`` reaches a node made before ``start`` or a leaf other
    than ``leaves``: then something outside the transform can differentiate its results."""
    mine = {id(t) for t in leaves}
    seen, stack = set(), []
    for out in outputs:
        physical = unwrap_all(out)[0]
        if physical._grad_fn is not None:
            stack.append(physical._grad_fn)
        elif physical.requires_grad and id(physical) not in mine:
            return True
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, node.AccumulateGrad):
            variable = current.variable
            if variable is not None and id(variable) not in mine:
                return True
            continue
        if current.seq < start:
            return True
        stack.extend(edge[0] for edge in current.edges if edge is not None)
    return False


def next_sequence() -> int:
    return next(node._SEQUENCE)


def materialize(t: Tensor, level_ids: list) -> Tensor:
    """``t`` with its batch dims at ``level_ids`` made plain leading dims (expanded where it is
    not batched), in that order; batch dims at other levels stay batched."""
    physical, have = unwrap_all(t)
    keep = [lv for lv in have if lv not in level_ids]
    position = {lv: i for i, lv in enumerate(have)}
    rank = physical.dim()
    order = [position[lv] for lv in keep] + [position[lv] for lv in level_ids if lv in position]
    order += list(range(len(have), rank))
    if order != list(range(rank)):
        physical = physical.permute(order)
    for i, lv in enumerate(level_ids):
        if lv not in position:
            physical = physical.unsqueeze(len(keep) + i)
    sizes = [level_of(lv).batch_size for lv in level_ids]
    lead = len(keep)
    shape = list(physical.shape[:lead]) + sizes + list(physical.shape[lead + len(sizes) :])
    return wrap_all(physical.expand(shape), keep)


def _one_hot(level_ids: list, extra: list, rank: int, like: Tensor) -> Tensor:
    """Batched at ``extra`` (a subset of ``level_ids``): 1 where the sample of each extra level
    meets its own position among the plain dims of ``level_ids``, 0 elsewhere."""
    hot = None
    count, width = len(extra), len(level_ids)
    for k, lv in enumerate(extra):
        size = level_of(lv).batch_size
        shape = [1] * (count + width + rank)
        shape[k] = size
        shape[count + level_ids.index(lv)] = size
        factor = E.eye(size, dtype=like.dtype, device=like.device).reshape(shape)
        hot = factor if hot is None else hot * factor
    return wrap_all(hot, extra)


def backward(outputs, cotangents, leaves, arg_levels, create_graph: bool):
    """Per-sample gradients of ``outputs`` (logical) w.r.t. ``leaves`` (physical, batched at
    ``arg_levels``) for ``cotangents`` (logical); logical results batched at every level
    involved (see the module docstring). None for a leaf nothing depends on."""
    out_levels = set()
    for out in outputs:
        out_levels.update(unwrap_all(out)[1])
    a_ids = [lv.id for lv in arg_levels]
    extra = sorted(lv for lv in out_levels if lv not in a_ids)
    plain = sorted(set(a_ids) | set(extra))
    roots, grads_out = [], []
    for out, ct in zip(outputs, cotangents):
        if not unwrap_all(out)[0].requires_grad:
            continue
        roots.append(materialize(out, plain))
        g = materialize(ct, plain)
        if extra:
            g = g * _one_hot(plain, extra, out.dim(), g)
        grads_out.append(g)
    if not roots:
        return [None] * len(leaves)
    found = autograd_grad(
        roots, leaves, grads_out, retain_graph=True, create_graph=create_graph, allow_unused=True
    )
    return [None if g is None else _as_logical(g, a_ids) for g in found]


def _as_logical(g: Tensor, leaf_levels: list) -> Tensor:
    """A gradient of a leaf batched at ``leaf_levels`` (plain leading dims of the engine's
    result, which may itself be batched at other levels) as one batched at all of them."""
    physical, outer = unwrap_all(g)
    levels = outer + leaf_levels  # the physical dims: outer ones first, then the leaf's
    ordered = sorted(levels)
    if ordered != levels:
        rank = physical.dim()
        order = [levels.index(lv) for lv in ordered] + list(range(len(levels), rank))
        physical = physical.permute(order)
    return wrap_all(physical, ordered)


# ---- vjp, grad ----------------------------------------------------------------------------------
def _prepare(primals, argnums):
    """Leaves for the differentiable primals: ``(args for f, flat leaves, diff spec, levels)``."""
    levels = _levels_of_args(primals)
    diff = primals if argnums is None else slice_argnums(primals, argnums)
    flat, spec = _pytree.tree_flatten(diff)
    leaves, logical = [], []
    for x in flat:
        leaf, inner = _fresh_leaf(x, levels)
        leaves.append(leaf)
        logical.append(inner)
    inner_diff = _pytree.tree_unflatten(logical, spec)
    if argnums is None:
        args = inner_diff
    else:
        args = replace_argnums(primals, argnums, inner_diff)
    return args, leaves, spec, levels


def vjp(func, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn)`` (plus ``aux``): ``vjp_fn(cotangents)`` returns the
    vector-Jacobian product for each primal, as a tuple (``torch.func.vjp``)."""
    return vjp_with_argnums(func, primals, None, has_aux)


def vjp_with_argnums(func, primals, argnums, has_aux: bool):
    start = next_sequence()
    with grad_mode.enable_grad():
        args, leaves, spec, levels = _prepare(primals, argnums)
        output = func(*args)
        aux = None
        if has_aux:
            if not (isinstance(output, tuple) and len(output) == 2):
                raise RuntimeError(
                    "vjp(f, *primals): output of function f should be a tuple: (output, aux) if "
                    "has_aux is True"
                )
            output, aux = output
        flat_out, out_spec = _pytree.tree_flatten(output)
        _check_outputs(flat_out, "vjp(f, *primals)")
    outside = connected_outside(flat_out, start, leaves)

    def vjp_fn(cotangents, retain_graph: bool = True, create_graph=None):
        flat_ct, ct_spec = _pytree.tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of "
                f"outputs to the function. cotangents: {ct_spec}, primal output: {out_spec}"
            )
        if create_graph is None:
            create_graph = grad_mode.is_grad_enabled() and (
                outside or any(unwrap_all(c)[0].requires_grad for c in flat_ct)
            )
        with grad_mode.enable_grad():
            found = backward(flat_out, flat_ct, leaves, levels, create_graph)
        flat_primals = _flat_primals(primals, argnums)
        grads = [E.zeros_like(p) if g is None else g for g, p in zip(found, flat_primals)]
        result = _pytree.tree_unflatten(grads, spec)
        return result if argnums is not None else tuple(result)

    output = _detached(output, outside)
    return (output, vjp_fn, aux) if has_aux else (output, vjp_fn)


def _flat_primals(primals, argnums):
    diff = primals if argnums is None else slice_argnums(primals, argnums)
    return _pytree.tree_flatten(diff)[0]


def _detached(tree, keep: bool):
    """Outputs leave a transform without its private history unless something outside can
    differentiate them."""
    if keep:
        return tree
    return _pytree.tree_map(lambda t: t.detach() if isinstance(t, Tensor) else t, tree)


def _check_outputs(flat_out, api: str) -> None:
    if not flat_out:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output")
    for o in flat_out:
        if not isinstance(o, Tensor):
            raise RuntimeError(
                f"{api}: expected f(*primals) to return only tensors, got unsupported type "
                f"{type(o)}"
            )
        if not (o.is_floating_point() or o.is_complex()):
            raise RuntimeError(
                "vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got "
                f"Tensor with dtype {o.dtype}"
            )


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """A function returning ``(gradient, value)`` of the scalar ``func`` (``torch.func``).

    Args:
        func: returns a one-element (0-d) tensor, or ``(output, aux)`` with ``has_aux``.
        argnums: the argument (or tuple of them) to differentiate with respect to.
        has_aux: ``func`` also returns something not differentiated.

    Returns:
        ``(grad, value)``, or ``(grad, (value, aux))`` with ``has_aux``.
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        argnums_ = check_argnums(argnums, len(args))
        start = next_sequence()
        outer_enabled = grad_mode.is_grad_enabled()
        with grad_mode.enable_grad():
            inner, leaves, spec, levels = _prepare(args, argnums_)
            output = func(*inner, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(output, tuple) and len(output) == 2):
                    raise RuntimeError(
                        "grad_and_value(f)(*args): output of function f should be a tuple: "
                        "(output, aux) if has_aux is True"
                    )
                output, aux = output
            _check_scalar(output)
            outside = connected_outside([output], start, leaves)
            create_graph = outer_enabled and outside
            found = backward([output], [E.ones_like(output)], leaves, levels, create_graph)
        diff = _pytree.tree_flatten(slice_argnums(args, argnums_))[0]
        grads = [E.zeros_like(x) if g is None else g for g, x in zip(found, diff)]
        gradient = _pytree.tree_unflatten(grads, spec)
        value = _detached(output, outside)
        if has_aux:
            return gradient, (value, _detached(aux, outside))
        return gradient, value

    return wrapper


def _check_scalar(output) -> None:
    if not isinstance(output, Tensor):
        raise RuntimeError(
            f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(output)}"
        )
    if output.dim() != 0:
        raise RuntimeError(
            "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
            f"with {output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?"
        )


def grad(func, argnums=0, has_aux: bool = False):
    """The gradient of the scalar ``func`` with respect to argument(s) ``argnums``
    (``torch.func.grad``); with ``has_aux``, ``(gradient, aux)``.

    Example:
        >>> ember.func.grad(lambda x: (x * x).sum())(ember.ones(3))
        tensor([2., 2., 2.])
    """
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        gradient, value = inner(*args, **kwargs)
        if has_aux:
            return gradient, value[1]
        return gradient

    return wrapper


# ---- jvp ----------------------------------------------------------------------------------------
def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """``(func(*primals), J @ tangents)`` by forward-mode AD (``torch.func.jvp``)."""
    return jvp_with_argnums(func, primals, tangents, None, strict, has_aux)


def jvp_with_argnums(func, primals, tangents, argnums, strict, has_aux):
    api = "jvp(f, primals, tangents)"
    if strict:
        raise RuntimeError(f"{api}: strict=True is not supported (as in torch.func).")
    if not isinstance(primals, tuple):
        raise RuntimeError(
            f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals)."
        )
    diff = primals if argnums is None else slice_argnums(primals, argnums)
    flat_p, p_spec = _pytree.tree_flatten(diff)
    flat_t, t_spec = _pytree.tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(
            f"{api}: Expected primals and tangents to have the same python structure. For "
            "example, if primals is a tuple of 3 tensors, tangents also must be. Got primals "
            f"with structure {p_spec} and tangents with structure {t_spec}"
        )
    _check_tangents(api, flat_p, flat_t)
    level = forward_ad.enter_level()
    try:
        duals = [forward_ad.make_dual(p, t, level=level) for p, t in zip(flat_p, flat_t)]
        inner = _pytree.tree_unflatten(duals, p_spec)
        args = inner if argnums is None else replace_argnums(primals, argnums, inner)
        output = func(*args)
        aux = None
        if has_aux:
            if not (isinstance(output, tuple) and len(output) == 2):
                raise RuntimeError(
                    f"{api}: output of function f should be a tuple: (output, aux) if has_aux "
                    "is True"
                )
            output, aux = output
        flat_out, out_spec = _pytree.tree_flatten(output)
        for o in flat_out:
            if not isinstance(o, Tensor):
                raise RuntimeError(
                    f"{api}: expected f(*args) to return only tensors, got unsupported type "
                    f"{type(o)}"
                )
        found = [forward_ad.unpack_dual(o, level=level).tangent for o in flat_out]
        tangent_out = [E.zeros_like(o) if t is None else t for t, o in zip(found, flat_out)]
    finally:
        forward_ad.exit_level(level)
    primal_out = _pytree.tree_unflatten(flat_out, out_spec)
    tangent_tree = _pytree.tree_unflatten(tangent_out, out_spec)
    if has_aux:
        return primal_out, tangent_tree, aux
    return primal_out, tangent_tree


def _check_tangents(api, flat_p, flat_t) -> None:
    for p, t in zip(flat_p, flat_t):
        if not isinstance(p, Tensor) or not isinstance(t, Tensor):
            raise RuntimeError(f"{api}: Expected primals and tangents to only contain Tensors")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(
                f"{api}: Expected primals and tangents to have the same shape, got "
                f"{tuple(p.shape)} and {tuple(t.shape)}"
            )
