"""Python annotations as graph types: ``Tensor``, ``int``, ``List[int]``, ``Optional[Tensor]``,
``Tuple[Tensor, Tensor]``, ``Final[int]``...

Annotations arrive as objects (``fn.__annotations__``) or as strings (modules with
``from __future__ import annotations``), which are evaluated in the function's globals as
``typing.get_type_hints`` does.
"""

from __future__ import annotations

import types as pytypes
import typing

from ember._device import device as EmberDevice
from ember._tensor import Tensor as EmberTensor

from .. import types as T

_SCALARS = {
    int: T.IntType,
    float: T.FloatType,
    complex: T.ComplexType,
    bool: T.BoolType,
    str: T.StrType,
    type(None): T.NoneType,
    None: T.NoneType,
}


_NAMES = {
    "Tensor": EmberTensor,
    "List": typing.List,  # noqa: UP006
    "Tuple": typing.Tuple,  # noqa: UP006
    "Dict": typing.Dict,  # noqa: UP006
    "Optional": typing.Optional,
    "Union": typing.Union,
    "Any": typing.Any,
    "Final": typing.Final,
}


class AnnotationError(TypeError):
    """An annotation with no graph type."""


def resolve(annotation, namespace: dict) -> T.Type:
    """The graph type an annotation (object or string) names."""
    if isinstance(annotation, str):
        scope = dict(_NAMES)  # TorchScript knows these names wherever the source is
        scope.update(namespace)
        try:
            annotation = eval(annotation, scope)  # as typing.get_type_hints does
        except NameError as e:
            raise AnnotationError(f"Unknown type name '{e.name}'") from None
        except Exception as e:
            raise AnnotationError(f"Unknown type annotation: '{annotation}'") from e
        if isinstance(annotation, str):  # a quoted annotation: x: "Tensor"
            return resolve(annotation, namespace)
    return to_type(annotation)


def to_type(annotation) -> T.Type:
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    if isinstance(annotation, type) and issubclass(annotation, EmberTensor):
        return T.Tensor
    if annotation is EmberDevice:
        return T.DeviceObjType
    if is_named_tuple(annotation):
        return named_tuple_type(annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Final:
        return to_type(args[0]) if args else T.AnyType
    if origin in (list, typing.List) and len(args) == 1:  # noqa: UP006
        return T.ListType(to_type(args[0]))
    if origin in (dict, typing.Dict) and len(args) == 2:  # noqa: UP006
        return T.DictType(to_type(args[0]), to_type(args[1]))
    if origin in (tuple, typing.Tuple):  # noqa: UP006
        if len(args) == 2 and args[1] is Ellipsis:
            raise AnnotationError(f"Unknown type annotation: '{annotation}'")
        return T.TupleType(to_type(a) for a in args if a != ())
    if origin in (typing.Union, pytypes.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return T.OptionalType(to_type(rest[0]))
        return T.union_of(to_type(a) for a in args)
    if annotation is typing.Any:
        return T.AnyType
    from .classes import class_type, is_script_class

    if is_script_class(annotation):
        return class_type(annotation)
    raise AnnotationError(f"Unknown type annotation: '{annotation}'")


def is_named_tuple(obj) -> bool:
    return isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, "_fields")


def named_tuple_type(cls) -> T.NamedTupleType:
    """A ``typing.NamedTuple`` class's type (its fields must be annotated, as TorchScript asks)."""
    try:
        hints = typing.get_type_hints(cls)
    except Exception as e:
        raise AnnotationError(f"Unknown type annotation: '{cls.__name__}' ({e})") from None
    missing = [f for f in cls._fields if f not in hints]
    if missing:
        raise AnnotationError(
            f"NamedTuple {cls.__name__}: fields without a type annotation: {', '.join(missing)}"
        )
    elems = [to_type(hints[f]) for f in cls._fields]
    return T.NamedTupleType(cls.__name__, cls._fields, elems, cls)


def is_final(annotation) -> bool:
    if isinstance(annotation, str):
        return annotation.startswith(("Final", "typing.Final", "ember.jit.Final", "jit.Final"))
    return annotation is typing.Final or typing.get_origin(annotation) is typing.Final
