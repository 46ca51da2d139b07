"""``@ember.jit.interface``: TorchScript's module interfaces.

A submodule slot annotated with an interface class (``impl: Scaler`` on the owner's class) is
called through the slot when the code runs instead of being inlined: ``self.impl(x, 3)`` is
``prim::CallInterface[name="impl", method="forward"]``, typed by the interface's declaration,
and generated code calls the slot's own compiled ``forward``. So another scripted module of a
compatible type assigned to the slot after scripting (``scripted.impl = ember.jit.script(B())``)
runs from then on, also after save/load. A module is compatible when it has every method the
interface declares, with the same parameter and return types (TorchScript's check and words).
"""

from __future__ import annotations

import sys

from ember.nn.modules.module import Module

from .. import types as T
from .frontend import ScriptError, namespace_of
from .overloads import qualified_name, signature_types

_MARK = "__ember_jit_interface__"


def interface(cls):
    """Declare ``cls`` an interface (``@ember.jit.interface``): its methods' annotations are
    the types every implementation must have."""
    setattr(cls, _MARK, True)
    return cls


def is_interface(obj) -> bool:
    return isinstance(obj, type) and obj.__dict__.get(_MARK, False)


def _evaluated(annotation, scope: dict):
    """An annotation object (a string one evaluated in ``scope``), or None."""
    if not isinstance(annotation, str):
        return annotation
    try:
        return eval(annotation, dict(scope))  # as typing.get_type_hints does
    except Exception:
        return None


def slot_interface(owner, name: str):
    """The interface the owner's class annotates its submodule slot ``name`` with, or None."""
    for cls in type(owner).__mro__:
        found = vars(cls).get("__annotations__", {}).get(name)
        if found is not None:
            found = _evaluated(found, vars(sys.modules.get(cls.__module__, sys)))
            return found if is_interface(found) else None
    return None


def parameter_interface(fn, name: str):
    """The interface a function's parameter is annotated with, or None."""
    raw = getattr(getattr(fn, "__func__", fn), "__annotations__", {}).get(name)
    found = _evaluated(raw, namespace_of(fn)) if raw is not None else None
    return found if is_interface(found) else None


def check_object(em, value, iface, node):
    """An object passed where ``iface`` is declared: its class must have the methods (calls
    on it are inlined from its own class)."""
    kind = value.type()
    cls = getattr(kind, "cls", None)
    for name, (params, result) in methods(iface).items():
        fn = getattr(cls, name, None)
        found = signature_types(fn, method=True) if callable(fn) else None
        ok = found is not None and len(found[0]) == len(params)
        ok = ok and all(_same(k, p) for (_, k), p in zip(found[0], params))
        if not ok or not _same(found[1] or T.NoneType, result):
            shown = kind.qualified_name() if isinstance(kind, T.ClassType) else kind.annotation()
            raise em.source.error(
                f"Object of type {shown} is not compatible with interface {qualified_name(iface)}",
                node,
            )
    return value


def methods(iface) -> dict:
    """name -> (parameter types, return type) the interface declares."""
    declared = {}
    for name, member in vars(iface).items():
        if callable(member) and not name.startswith("__"):
            params, result = signature_types(member, method=True)
            declared[name] = ([kind for _, kind in params], result or T.NoneType)
    return declared


def _of_module(module, name: str):
    """A module's method types: its compiled graph's, else its Python signature's."""
    from ..script_module import ScriptModule

    if isinstance(module, ScriptModule):
        method = module._methods.get(name)
        if method is None:
            return None
        graph = method.graph
        (output,) = graph.outputs()
        return [v.type() for v in graph.inputs()], output.type()
    fn = getattr(type(module), name, None)
    if fn is None or not callable(fn):
        return None
    params, result = signature_types(fn, method=True)
    return [kind for _, kind in params], result or T.NoneType


def _same(a, b) -> bool:
    if isinstance(a, T.TensorType) and isinstance(b, T.TensorType):
        return True
    return a == b


def incompatible(module, iface) -> str | None:
    """TorchScript's words for why ``module`` does not implement ``iface``; None when it does."""
    for name, (params, result) in methods(iface).items():
        found = _of_module(module, name)
        ok = found is not None and len(found[0]) == len(params)
        ok = ok and all(map(_same, found[0], params)) and _same(found[1], result)
        if not ok:
            cls = getattr(module, "original_name", None) or type(module).__name__
            owner = type(module).__module__ if not hasattr(module, "_methods") else "__main__"
            shown = "__torch__." + ("" if owner == "__main__" else f"{owner}.") + cls
            return (
                f"Object of type {shown} is not compatible with interface {qualified_name(iface)}"
            )
    return None


def check_slot(module, name: str, iface) -> None:
    reason = incompatible(module, iface)
    if reason is not None:
        raise ScriptError(
            f"Could not cast attribute '{name}' to type {qualified_name(iface)}: {reason}"
        )


def call(em, ref, args, kwargs, node, method: str = "forward"):
    """``self.<slot>(...)``: arguments checked against the interface's declaration."""
    check_slot(ref.module, ref.prefix.rsplit(".", 1)[-1], ref.interface)
    declared = methods(ref.interface).get(method)
    if declared is None:
        raise em.source.error(
            f"Tried to access nonexistent attribute or method '{method}' of type "
            f"'{qualified_name(ref.interface)}'",
            node,
        )
    params, result = declared
    if kwargs or len(args) != len(params):
        raise em.source.error(
            f"{method}() of interface {ref.interface.__name__} takes {len(params)} arguments",
            node,
        )
    inputs = [em.coerce(a, kind, node) for a, kind in zip(args, params)]
    made = em.graph.insert("prim::CallInterface", inputs, name=ref.prefix, method=method)
    made.setSourceRange(em.where())
    return made.output().setType(result)


def assign(owner, name: str, value) -> None:
    """``scripted.<slot> = module`` on a slot typed by an interface: TorchScript's checks."""
    from ..script_module import ScriptModule

    iface = owner.__dict__.get("_interfaces", {}).get(name)
    if iface is None or not isinstance(value, Module):
        return
    if not isinstance(value, ScriptModule):
        raise RuntimeError(
            "Cannot re-assign modules in a ScriptModule with non-scripted module, tried to "
            f"replace existing module '{name}': {value!r}"
        )
    reason = incompatible(value, iface)
    if reason is not None:
        raise RuntimeError(reason)
