"""Calling a module with other tensors in place of its parameters and buffers (``functional
call``): the tensors are swapped in by name for the call and the originals put back after,
so gradients flow to the given tensors, not to the module's own."""

from __future__ import annotations

import contextlib
import warnings

__all__ = ["functional_call"]

_MISSING = object()


def _tied_names(module) -> dict:
    """name -> every name of the same tensor, for tensors the module holds under several
    names (tied weights)."""
    by_tensor: dict = {}
    named = list(module.named_parameters(remove_duplicate=False))
    named += list(module.named_buffers(remove_duplicate=False))
    for name, tensor in named:
        by_tensor.setdefault(id(tensor), set()).add(name)
    return {name: names for names in by_tensor.values() if len(names) > 1 for name in names}


def _untie(module, values: dict) -> dict:
    """``values`` plus, for each given tied tensor, the same value under its other names."""
    tied = _tied_names(module)
    given = [name for name in values if name in tied]
    for name in given:
        names = tied[name]
        chosen = {id(values[n]) for n in names if n in values}
        if len(chosen) > 1:
            raise ValueError(
                f"functional_call got multiple values for keys {sorted(names)}, which are "
                "tied. Consider using tie_weights=False"
            )
    untied = dict(values)
    for name in given:
        for other in tied[name]:
            untied[other] = values[name]
    return untied


def _check_keys(module, values: dict) -> None:
    valid = {n for n, _ in module.named_parameters(remove_duplicate=False)}
    valid |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
    missing, unexpected = sorted(valid - set(values)), sorted(set(values) - valid)
    errors = []
    if unexpected:
        errors.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        errors.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if errors:
        raise RuntimeError(
            f"Error(s) in reparametrizing for {module._get_name()}:\n\t" + "\n\t".join(errors)
        )


def _swap(module, name: str, value):
    """Put ``value`` at the dotted ``name`` (a parameter, buffer or plain attribute; deleted
    when ``value`` is _MISSING); returns what was there."""
    path, _, leaf = name.rpartition(".")
    owner = module.get_submodule(path) if path else module
    for table in (owner._parameters, owner._buffers):
        if leaf in table:
            old = table[leaf]
            if value is _MISSING:
                del table[leaf]
            else:
                table[leaf] = value  # any tensor, not only a Parameter, for the call
            return old
    old = owner.__dict__.get(leaf, _MISSING)
    if value is _MISSING:
        owner.__dict__.pop(leaf, None)
    else:
        object.__setattr__(owner, leaf, value)
    return old


@contextlib.contextmanager
def reparametrize_module(module, parameters_and_buffers: dict, tie_weights=False, strict=False):
    """Within the block, ``module`` holds ``parameters_and_buffers`` under their names."""
    values = _untie(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        _check_keys(module, values)
    originals = {}
    try:
        for name, value in values.items():
            originals[name] = _swap(module, name, value)
        yield
    finally:
        for name, old in reversed(list(originals.items())):
            _swap(module, name, old)


def _functional_call(
    module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False
):
    from ..parallel import DataParallel

    if isinstance(module, DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    kwargs = {} if kwargs is None else kwargs
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with reparametrize_module(module, parameters_and_buffers, tie_weights, strict):
        return module(*args, **kwargs)


def functional_call(
    module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False
):
    """``module(*args, **kwargs)`` with ``parameters_and_buffers`` ({dotted name: tensor}) in
    place of the module's own; tied tensors follow a given value unless ``tie_weights=False``;
    ``strict`` requires exactly the module's names. Deprecated in PyTorch in favour of
    ``func.functional_call``, with the same warning.

    Example:
        >>> net = ember.nn.Linear(3, 2)
        >>> w = {"weight": ember.zeros(2, 3), "bias": ember.ones(2)}
        >>> functional_call(net, w, ember.randn(4, 3))  # all ones
    """
    warnings.warn(
        "`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be "
        "removed in a future version of PyTorch. Please use `torch.func.functional_call` "
        "instead which is a drop-in replacement.",
        FutureWarning,
        stacklevel=2,
    )
    return _functional_call(
        module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict
    )
