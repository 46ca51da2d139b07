"""``@ember.jit._overload`` / ``@ember.jit._overload_method``: TorchScript's function overloads.

Declarations (bodies ``...``) give each overload's parameter and return types; the
undecorated definition that follows them is the implementation. A call from scripted code
picks the first declaration whose parameter types its arguments fit, converts the arguments
to those types and inlines the implementation under them (so ``isinstance(x, int)`` in its
body is decided when compiling), and the result takes the declared return type, as
TorchScript compiles one function per overload. Scripting an overloaded function directly is
TorchScript's error: nothing says which overload.
"""

from __future__ import annotations

import inspect

from .. import types as T
from .annotations import AnnotationError, resolve, to_type
from .frontend import ScriptError, namespace_of

# (module, qualified name) -> {code object: declaration}: a declaration run again (a class
# or function defined in a loop or a factory) replaces itself
_DECLARED: dict = {}


def _key(fn):
    fn = getattr(fn, "__func__", fn)
    return (getattr(fn, "__module__", None), getattr(fn, "__qualname__", None))


def _overload(fn):
    """Declare one overload of the function defined (undecorated) after it."""
    _DECLARED.setdefault(_key(fn), {})[fn.__code__] = fn
    return fn


_overload_method = _overload  # methods are keyed by their class's qualified name too


def declarations(fn) -> list:
    """The overloads declared for ``fn`` (an implementation), in declaration order."""
    impl = getattr(fn, "__func__", fn)
    found = _DECLARED.get(_key(fn), {})
    return [d for code, d in found.items() if code is not getattr(impl, "__code__", None)]


def qualified_name(fn) -> str:
    fn = getattr(fn, "__func__", fn)
    module = getattr(fn, "__module__", "__main__")
    return "__torch__." + ("" if module == "__main__" else f"{module}.") + fn.__qualname__


def refuse_direct(fn) -> None:
    if declarations(fn):
        raise ScriptError(
            f"Function {qualified_name(fn)} cannot be directly compiled because it is "
            "overloaded. It must be used in a context of a function where its inputs can "
            "determine which overload to call."
        )


def signature_types(declaration, method: bool):
    """(parameter names and types, return type or None) of a declaration (an unannotated
    parameter is a Tensor, as TorchScript's)."""
    scope = namespace_of(declaration)
    params = list(inspect.signature(declaration).parameters.values())[1 if method else 0 :]

    def typed(annotation):
        if annotation is inspect.Parameter.empty:
            return T.Tensor
        if isinstance(annotation, str):
            return resolve(annotation, scope)
        return to_type(annotation)

    returns = inspect.signature(declaration).return_annotation
    result = None if returns is inspect.Signature.empty else typed(returns)
    return [(p.name, typed(p.annotation)) for p in params], result


def choose(caller, fn, args, kwargs, node, method: bool):
    """The declaration the arguments fit: (arguments converted to its types, return type)."""
    values = [caller.materialize(a) for a in args]
    named = {k: caller.materialize(v) for k, v in kwargs.items()}
    tried = []
    for declaration in declarations(fn):
        try:
            params, result = signature_types(declaration, method)
        except AnnotationError as e:
            raise caller.source.error(str(e), node) from None
        tried.append(_schema(fn, params, result))
        if len(values) > len(params) or set(named) - {n for n, _ in params[len(values) :]}:
            continue
        given = dict(zip((n for n, _ in params), values)) | named
        if set(given) != {n for n, _ in params}:
            continue
        if all(_fits(caller, given[n].type(), kind) for n, kind in params):
            return [_convert(caller, given[n], kind, node) for n, kind in params], result
    variants = "\n".join(f"    {t}" for t in tried)
    raise ScriptError(
        "Arguments for call are not valid.\nThe following variants are available:\n"
        f"{variants}\n\nThe original call is:\n{caller.source.highlight(node)}"
    )


def _fits(caller, have, kind) -> bool:
    return caller.fits(have, kind) or (have == T.BoolType and kind == T.IntType)


def _convert(caller, value, kind, node):
    if value.type() == T.BoolType and kind == T.IntType:  # True is 1, as TorchScript's
        return caller.prim("prim::int", [value], T.IntType)
    return caller.coerce(value, kind, node)


def _schema(fn, params, result) -> str:
    shown = ", ".join(f"{kind.annotation()} {name}" for name, kind in params)
    returns = "" if result is None else f" -> {result.annotation()}"
    return f"{getattr(fn, '__name__', 'fn')}({shown}){returns}"
