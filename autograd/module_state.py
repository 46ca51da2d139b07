"""Modules as functions of their state: ``functional_call`` and ``stack_module_state``, so that
the transforms can differentiate or vmap over parameters (model ensembles, per-sample grads)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence


def _merge(parameter_and_buffer_dicts) -> dict:
    if isinstance(parameter_and_buffer_dicts, dict):
        return parameter_and_buffer_dicts
    if isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError(
                "Expected all elements of parameter_and_buffer_dicts to be dictionaries"
            )
        counts: dict = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(
                f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
                "ambiguous"
            )
        return {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    raise ValueError(
        "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
        f"{type(parameter_and_buffer_dicts)}"
    )


def _slots(module) -> dict:
    """Every parameter and buffer name (tied ones under each name) -> (owner module, table,
    attribute name, tensor)."""
    found = {}
    for prefix, sub in module.named_modules(remove_duplicate=False):
        for table in ("_parameters", "_buffers"):
            for name, value in getattr(sub, table).items():
                if value is not None:
                    full = f"{prefix}.{name}" if prefix else name
                    found[full] = (sub, table, name, value)
    return found


def _untie(slots: dict, given: dict) -> dict:
    """Values given for one name of tied tensors apply to every name of them."""
    names_of: dict = {}
    for name, (_, _, _, value) in slots.items():
        names_of.setdefault(id(value), set()).add(name)
    out = dict(given)
    for name in given:
        if name not in slots:
            continue
        tied = names_of[id(slots[name][3])]
        if len(tied) == 1:
            continue
        given_tied = tied & set(given)
        if len(given_tied) > 1 and len({id(given[n]) for n in given_tied}) != 1:
            raise ValueError(
                f"functional_call got multiple values for keys {sorted(tied)}, which are tied. "
                "Consider using tie_weights=False"
            )
        for other in tied:
            out[other] = given[name]
    return out


@contextlib.contextmanager
def reparametrized(module, values: dict, tie_weights: bool = True, strict: bool = False):
    """Within the block, ``module``'s parameters and buffers named in ``values`` are those
    tensors (any tensors, not only Parameters); the originals come back afterwards."""
    slots = _slots(module)
    if tie_weights:
        values = _untie(slots, values)
    if strict:
        _check_keys(module, slots, values)
    swapped = []
    try:
        for name, value in values.items():
            if name not in slots:
                owner, attr = _owner(module, name)
                swapped.append((owner, None, attr, getattr(owner, attr, None)))
                object.__setattr__(owner, attr, value)
                continue
            owner, table, attr, original = slots[name]
            swapped.append((owner, table, attr, original))
            getattr(owner, table)[attr] = value
        yield
    finally:
        for owner, table, attr, original in reversed(swapped):
            if table is None:
                object.__delattr__(owner, attr) if original is None else object.__setattr__(
                    owner, attr, original
                )
            else:
                getattr(owner, table)[attr] = original


def _owner(module, name: str):
    *path, attr = name.split(".")
    for part in path:
        module = getattr(module, part)
    return module, attr


def _check_keys(module, slots: dict, values: dict) -> None:
    unexpected = [k for k in values if k not in slots]
    missing = [k for k in slots if k not in values]
    messages = []
    if unexpected:
        messages.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        messages.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if messages:
        raise RuntimeError(
            f"Error(s) in reparametrizing for {type(module).__name__}:\n\t" + "\n\t".join(messages)
        )


def functional_call(
    module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False
):
    """Call ``module`` with its parameters and buffers replaced by the given tensors
    (``torch.func.functional_call``).

    Args:
        module: the module to call.
        parameter_and_buffer_dicts: ``{name: tensor}``, or a tuple of such dicts.
        args: the positional arguments (one value, or a tuple).
        kwargs: keyword arguments.
        tie_weights: a value given for one of tied parameters applies to all of them.
        strict: every parameter and buffer must be given, and no other name.

    Example:
        >>> model = ember.nn.Linear(3, 1)
        >>> params = {k: v.detach() for k, v in model.named_parameters()}
        >>> grads = ember.func.grad(lambda p, x: functional_call(model, p, (x,)).sum())(
        ...     params, ember.randn(4, 3))
    """
    values = _merge(parameter_and_buffer_dicts)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with reparametrized(module, values, tie_weights, strict):
        return module(*args, **(kwargs or {}))


def stack_module_state(models) -> tuple[dict, dict]:
    """The parameters and buffers of same-class ``models`` stacked along a new dim 0
    (``torch.func.stack_module_state``), for ``vmap`` over an ensemble."""
    import ember

    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode."
        )
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(tensors, name):
        grads = [t.requires_grad for t in tensors]
        if any(grads) and not all(grads):
            raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
        result = ember.stack(tensors)
        return result.detach().requires_grad_() if all(grads) else result

    params = [dict(m.named_parameters()) for m in models]
    buffers = [dict(m.named_buffers()) for m in models]
    return (
        {k: stacked([p[k] for p in params], k) for k in params[0]},
        {k: stacked([b[k] for b in buffers], k) for k in buffers[0]},
    )


def replace_all_batch_norm_modules_(root):
    """In place: every BatchNorm module in ``root`` stops tracking running statistics
    (``running_mean``, ``running_var`` and ``num_batches_tracked`` None), so it normalises with
    each batch's own, which vmap can map over; returns ``root`` (``torch.func``'s)."""
    from ember.nn.modules.normalization import _BatchNorm

    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
