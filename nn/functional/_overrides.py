"""The helpers torch.nn.functional exports for its own plumbing, kept for programs that call
them: the ``__torch_function__`` override protocol (for user types that define it; ember's
own Tensor never overrides), boolean_dispatch and assert_int_or_pair."""

from __future__ import annotations

from typing import Optional  # noqa: F401 - torch.nn.functional re-exports it


def _overloaded(relevant_args) -> list:
    """The argument types defining ``__torch_function__``, subclasses before their bases."""
    types: list = []
    for arg in relevant_args:
        kind = type(arg)
        if kind in types or not hasattr(kind, "__torch_function__"):
            continue
        position = len(types)
        for i, seen in enumerate(types):
            if issubclass(kind, seen):
                position = i
                break
        types.insert(position, kind)
    return types


def has_torch_function(relevant_args) -> bool:
    """Whether some argument's type overrides functions through ``__torch_function__``."""
    return bool(_overloaded(relevant_args))


def has_torch_function_unary(input) -> bool:
    return has_torch_function((input,))


def has_torch_function_variadic(*args) -> bool:
    return has_torch_function(args)


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Call the first ``__torch_function__`` among the overloaded types that does not return
    NotImplemented (the protocol's dispatch order)."""
    types = _overloaded(relevant_args)
    for kind in types:
        result = kind.__torch_function__(public_api, tuple(types), args, kwargs)
        if result is not NotImplemented:
            return result
    name = getattr(public_api, "__name__", repr(public_api))
    raise TypeError(
        f"no implementation found for '{name}' on types that implement __torch_function__: "
        f"{[kind for kind in types]}"
    )


def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name, func_name):
    """A function calling ``if_true`` or ``if_false`` by a boolean argument (by name, else by
    position ``arg_index``, else ``default``), as max_pool2d dispatches on return_indices."""

    def fn(*args, **kwargs):
        flag = default
        if arg_name in kwargs:
            flag = kwargs[arg_name]
        elif arg_index < len(args):
            flag = args[arg_index]
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)

    fn.__doc__ = if_true.__doc__ or if_false.__doc__
    fn.__module__, fn.__name__ = module_name, func_name
    return fn


def assert_int_or_pair(arg, arg_name: str, message: str) -> None:
    assert isinstance(arg, int) or len(arg) == 2, message.format(arg_name)
