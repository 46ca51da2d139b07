"""``ember.__future__``: opt-in behaviours of ``Module.to``/``.float()``/``._apply``, as PyTorch's.

``set_overwrite_module_params_on_conversion(True)``: conversions put new Parameter objects in the
module (old references keep the old data). ``set_swap_module_params_on_conversion(True)``: they
convert each parameter with ``ember.utils.swap_tensors``, so the Parameter object (and its grad
object) keeps its identity and takes the converted tensor's whole state. Both default False: the
parameter's ``.data`` is replaced.
"""

from __future__ import annotations

_FLAGS = {"overwrite": False, "swap": False}


def set_overwrite_module_params_on_conversion(value: bool) -> None:
    """Whether module conversions assign new Parameter objects instead of setting ``.data``."""
    _FLAGS["overwrite"] = bool(value)


def get_overwrite_module_params_on_conversion() -> bool:
    return _FLAGS["overwrite"]


def set_swap_module_params_on_conversion(value: bool) -> None:
    """Whether module conversions swap each parameter with its converted copy (swap_tensors)."""
    _FLAGS["swap"] = bool(value)


def get_swap_module_params_on_conversion() -> bool:
    return _FLAGS["swap"]


def convert_parameter(params: dict, key: str, fn) -> None:
    """Apply ``fn`` to ``params[key]`` and its grad under the flags above (``Module._apply``)."""
    from ember.autograd import no_grad
    from ember.nn import Parameter

    from ._swap import swap_tensors

    param = params[key]
    with no_grad():
        grad = param.grad
        if _FLAGS["swap"]:
            swap_tensors(param, Parameter(fn(param), requires_grad=param.requires_grad))
            if grad is not None:
                swap_tensors(grad, fn(grad))
                param.grad = grad
        elif _FLAGS["overwrite"]:
            params[key] = Parameter(fn(param), requires_grad=param.requires_grad)
            params[key].grad = None if grad is None else fn(grad)
        else:
            param.data = fn(param)
            if grad is not None:
                grad.data = fn(grad)
