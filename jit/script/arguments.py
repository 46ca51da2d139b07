"""Calling a scripted function: arguments bound by the Python signature and checked against
the graph's input types, with TorchScript's messages::

    f() Expected a value of type 'int' for argument 'n' but instead found type 'float'.
    Position: 1
    Value: 2.5
    Declaration: f(Tensor x, int n, int[] l, Tensor? o=None) -> Tensor
"""

from __future__ import annotations

import inspect

from ember._tensor import Tensor

from .. import types as T


def bind(name: str, signature, graph, inferred: set, args: tuple, kwargs: dict) -> tuple:
    """The graph's inputs for ``name(*args, **kwargs)``; RuntimeError when they do not fit."""
    params = signature.parameters
    if not kwargs and len(args) == len(params):
        values = args  # the common call: every argument positionally (no binding to do)
    else:
        values = _bound(name, signature, graph, args, kwargs)
    inputs = graph.inputs()
    for position, value in enumerate(values):
        kind = inputs[position]._type
        if value.__class__ is Tensor and isinstance(kind, T.TensorType):
            continue
        if not fits(value, kind):
            raise RuntimeError(_mismatch(name, signature, graph, inferred, position, value))
    return values


def _bound(name, signature, graph, args, kwargs) -> tuple:
    params = signature.parameters
    if len(args) + len(kwargs) > len(params):
        raise RuntimeError(
            f"{name}() expected at most {len(params)} argument(s) but received "
            f"{len(args) + len(kwargs)} argument(s). "
            f"Declaration: {declaration(name, signature, graph)}"
        )
    for key in kwargs:
        if key not in params:
            raise RuntimeError(
                f"Unknown keyword argument '{key}' for operator '{name}'. "
                f"Schema: {declaration(name, signature, graph)}"
            )
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as e:
        missing = _missing(signature, args, kwargs)
        text = f"{e}" if missing is None else f"is missing value for argument '{missing}'"
        raise RuntimeError(
            f"{name}() {text}. Declaration: {declaration(name, signature, graph)}"
        ) from None
    bound.apply_defaults()
    return tuple(bound.arguments.values())


def _mismatch(name, signature, graph, inferred, position, value) -> str:
    param = list(signature.parameters)[position]
    kind = graph.inputs()[position].type()
    shown = f"{kind.annotation()} (inferred)" if param in inferred else kind.annotation()
    lines = [
        f"{name}() Expected a value of type '{shown}' for argument '{param}' but instead "
        f"found type '{_type_name(value)}'."
    ]
    if param in inferred:
        lines.append(
            f"Inferred '{param}' to be of type 'Tensor' because it was not annotated with an "
            "explicit type."
        )
    lines += [f"Position: {position}", f"Value: {value!r}"]
    lines.append(f"Declaration: {declaration(name, signature, graph)}")
    return "\n".join(lines)


def fits(value, kind) -> bool:
    """Whether a Python value can be passed where the graph expects ``kind``."""
    if isinstance(kind, T.TensorType):
        return isinstance(value, Tensor)
    if isinstance(kind, T.OptionalType):
        return value is None or fits(value, kind.elem)
    if isinstance(kind, T.UnionType):
        return any(fits(value, member) for member in kind.elems)
    if isinstance(kind, T.ListType):
        return isinstance(value, list) and all(fits(v, kind.elem) for v in value)
    if isinstance(kind, T.TupleType):
        return (
            isinstance(value, tuple)
            and len(value) == len(kind.elems)
            and all(map(fits, value, kind.elems))
        )
    if isinstance(kind, T.DictType):
        return isinstance(value, dict) and all(
            fits(k, kind.key) and fits(v, kind.value) for k, v in value.items()
        )
    simple = {
        T.IntType: int,
        T.FloatType: (int, float),
        T.ComplexType: (int, float, complex),
        T.BoolType: bool,
        T.StrType: str,
        T.NoneType: type(None),
    }.get(kind)
    return simple is None or isinstance(value, simple)


def declaration(name: str, signature, graph) -> str:
    """``f(Tensor x, int n, int[] l, Tensor? o=None) -> Tensor``."""
    parts = []
    for (param, spec), value in zip(signature.parameters.items(), graph.inputs()):
        text = f"{_schema_type(value.type())} {param}"
        if spec.default is not inspect.Parameter.empty:
            text += f"={spec.default!r}"
        parts.append(text)
    (result,) = graph.outputs()
    returns = _schema_type(result.type())
    if isinstance(result.type(), T.TupleType):  # a tuple result is written as one element
        returns = f"({returns})"
    return f"{name}({', '.join(parts)}) -> {returns}"


def _schema_type(kind) -> str:
    return "Tensor" if isinstance(kind, T.TensorType) else str(kind)


def _type_name(value) -> str:
    return "Tensor" if isinstance(value, Tensor) else type(value).__name__


def _missing(signature, args, kwargs):
    for position, (param, spec) in enumerate(signature.parameters.items()):
        given = position < len(args) or param in kwargs
        if not given and spec.default is inspect.Parameter.empty:
            return param
    return None
