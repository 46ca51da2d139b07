"""Python's builtins in scripted code: ``range``, ``len``, ``int``/``float``/``bool``/``str``,
``min``/``max``/``sum``/``abs``, ``hash``, ``isinstance``, ``enumerate``, ``zip``, ``print``
(``BUILTINS``: function -> lowering ``(emitter, args, kwargs, node) -> value``).
"""

from __future__ import annotations

import builtins

from ember._tensor import Tensor

from .. import types as T
from . import unions
from .classes import CONVERT_MAGIC
from .sugar import Enumerate, ModuleRef, Range, SugarTuple, Zip


def _range(em, args, kwargs, node):
    if kwargs or not 1 <= len(args) <= 3:
        raise em.source.error("range expected at most 3 arguments", node)
    values = [em.materialize(a) for a in args]
    for v in values:
        if v.type() != T.IntType:
            raise em.source.error(
                f"range(): expected int arguments, got {v.type().annotation()}", node
            )
    if len(values) == 1:
        values = [em.constant(0), values[0]]
    step = values[2] if len(values) == 3 else em.constant(1)
    step_value = em.require_constant(step, "range()'s step")
    if step_value == 0:
        raise em.source.error("range() arg 3 must not be zero", node)
    return Range(values[0], values[1], step, step_value)


def _len(em, args, kwargs, node):
    (value,) = args
    if isinstance(value, ModuleRef):
        return em.constant(len(value.module._modules))
    if isinstance(value, SugarTuple):
        return em.constant(len(value.items))
    value = em.materialize(value)
    called = em.magic(value, "__len__", [], node)
    if called is not None:
        return called
    kind = value.type()
    if isinstance(kind, T.TupleType):
        return em.constant(len(kind.elems))
    if isinstance(kind, T.TensorType):
        return em.prim("prim::size", [value, em.constant(0)], T.IntType)
    return em.prim("prim::len", [value], T.IntType)


def _convert(kind, prim):
    def lower(em, args, kwargs, node):
        (value,) = args
        value = em.materialize(value)
        if value.type() == kind:
            return value
        if em.is_constant(value):
            return em.constant(builtins.__dict__[kind.name](em.known(value)))
        return em.prim(prim, [value], kind)

    return lower


def _extreme(prim, fold):
    def lower(em, args, kwargs, node):
        values = [em.materialize(a) for a in args]
        if len(values) == 1 and isinstance(values[0].type(), T.ListType):
            return em.list_reduce(fold.__name__, values[0], node)
        if len(values) != 2 or any(isinstance(v.type(), T.TensorType) for v in values):
            raise em.source.not_supported(
                f"{fold.__name__}() of these arguments isn't supported", node
            )
        if all(em.is_constant(v) for v in values):
            return em.constant(fold(em.known(v) for v in values))
        kinds = [unions.numeric(v.type()) for v in values]
        if T.FloatType in kinds:  # a number (Union[int, float]) next to a float: as a float
            kind = T.FloatType
            values = [
                em.prim("prim::float", [v], kind) if k == T.NumberType else v
                for v, k in zip(values, kinds)
            ]
        else:
            kind = T.NumberType if T.NumberType in kinds else T.IntType
        return em.prim(prim, values, kind)

    return lower


def _isinstance(em, args, kwargs, node):
    value, classes = args
    value = em.materialize(value)
    classes = unions.classes_of(classes)
    kind = value.type()
    if isinstance(kind, T.UnionType) or kind == T.AnyType:
        return unions.isinstance_test(em, value, unions.class_names(classes))
    wanted = set()
    for cls in classes:
        if isinstance(cls, type) and issubclass(cls, Tensor):
            wanted.add("tensor")
        elif cls in (int, float, bool, str, list, tuple):
            wanted.add(cls.__name__)
    if isinstance(kind, T.OptionalType):  # a run-time test, refined as `is not None` is
        if _kind_name(kind.elem) in wanted:
            return em.prim("prim::isnot", [value, em.constant(None)], T.BoolType)
        return em.constant(type(None) in classes)
    return em.constant(_kind_name(kind) in wanted)


def _kind_name(kind) -> str | None:
    if isinstance(kind, T.TensorType):
        return "tensor"
    if isinstance(kind, T.ListType):
        return "list"
    if isinstance(kind, T.TupleType):
        return "tuple"
    return {T.IntType: "int", T.FloatType: "float", T.BoolType: "bool", T.StrType: "str"}.get(kind)


def _abs(em, args, kwargs, node):
    (value,) = [em.materialize(a) for a in args]
    if isinstance(value.type(), T.TensorType):
        return em.call_op("abs", [value], {})
    if em.is_constant(value):
        return em.constant(abs(em.known(value)))
    kind = unions.numeric(value.type())  # Union[int, float]: a number
    if kind == T.ComplexType:  # the modulus
        return em.prim("prim::abs", [value], T.FloatType)
    if kind not in (T.IntType, T.FloatType, T.NumberType):
        raise em.source.error(f"abs() of a {value.type().annotation()}", node)
    return em.prim("prim::abs", [value], kind)


def _sum(em, args, kwargs, node):
    values = [em.materialize(a) for a in args]
    if len(values) != 1 or kwargs or not isinstance(values[0].type(), T.ListType):
        raise em.source.not_supported("sum() of arguments other than one list", node)
    return em.list_reduce("sum", values[0], node)


def _of_a_list(name: str, result):
    """``any(xs)`` / ``all(xs)`` (``result`` bool) and ``sorted(xs)`` (None: the list's type)
    of one list, as TorchScript's ``aten::any``/``aten::all``/``aten::sorted``."""

    def lower(em, args, kwargs, node):
        values = [em.materialize(a) for a in args]
        if len(values) != 1 or kwargs or not isinstance(values[0].type(), T.ListType):
            raise em.source.not_supported(f"{name}() of arguments other than one list", node)
        return em.prim(f"prim::list_{name}", values, result or values[0].type())

    return lower


def _hasattr(em, args, kwargs, node):
    """``hasattr(self, "name")``: known when compiling, as TorchScript resolves it on the
    module's or class's type (a submodule slot holding None counts, as an attribute)."""
    if len(args) != 2 or kwargs:
        raise em.source.error("hasattr() takes exactly two arguments", node)
    owner, name = args
    name = em.require_constant(name, "hasattr()'s attribute name")
    if not isinstance(name, str):
        raise em.source.error("hasattr's second argument must be a string literal", node)
    if isinstance(owner, ModuleRef):
        return em.constant(hasattr(owner.module, name))
    kind = em.materialize(owner).type()
    if isinstance(kind, T.ClassType):
        return em.constant(name in kind.fields or hasattr(kind.cls, name))
    raise em.source.error(
        f"hasattr's first argument must be an object or module, got {kind.annotation()}", node
    )


def _enumerate(em, args, kwargs, node):
    start = em.require_constant(args[1], "enumerate()'s start") if len(args) > 1 else 0
    return Enumerate(args[0], start)


def _zip(em, args, kwargs, node):
    return Zip(list(args))


def _complex(em, args, kwargs, node):
    """``complex(real[, imag])`` of numbers (``prim::complex``)."""
    values = [em.materialize(a) for a in [*args, *kwargs.values()]]
    numbers = (T.IntType, T.FloatType, T.BoolType)
    allowed = numbers + (T.ComplexType,) if len(values) == 1 else numbers
    if kwargs or not 1 <= len(values) <= 2 or any(v.type() not in allowed for v in values):
        given = ", ".join(v.type().annotation() for v in values)
        raise em.source.error(
            f"Arguments for call are not valid: complex() takes one or two numbers, got ({given})",
            node,
        )
    if all(em.is_constant(v) for v in values):
        return em.constant(complex(*(em.known(v) for v in values)))
    return em.prim("prim::complex", values, T.ComplexType)


def _print(em, args, kwargs, node):
    if kwargs:
        raise em.source.not_supported("print() with keyword arguments isn't supported", node)
    em.graph.insert("prim::Print", [em.materialize(a) for a in args], num_outputs=0)
    return em.constant(None)


def _hash(em, args, kwargs, node):
    """``hash(v)``: TorchScript's ``aten::hash`` (jit/hashing.py) of the types it hashes."""
    if kwargs or len(args) != 1:
        raise em.source.error("hash() takes exactly one argument", node)
    value = em.materialize(args[0])
    unhashable = _unhashable(value.type())
    if unhashable is None:
        return em.prim("prim::hash", [value], T.IntType)
    if isinstance(unhashable, (T.ListType, T.DictType, T.ClassType)) or unhashable == T.ComplexType:
        # TorchScript compiles aten::hash of these and fails when it runs (an object's
        # __hash__ is not consulted: a.__hash__() is an ordinary method call)
        name = unhashable.qualified_name() if isinstance(unhashable, T.ClassType) else None
        message = f"unhashable type: '{name or unhashable.annotation()}'"
        em.graph.insert("prim::RaiseException", [em.constant(message)], num_outputs=0)
        return em.graph.insert("prim::Uninitialized").output().setType(T.IntType)
    raise em.source.not_supported(f"hash() of a {value.type().annotation()}", node)


def _unhashable(kind):
    """The first type inside ``kind`` that aten::hash does not hash, None when it hashes."""
    if isinstance(kind, T.TupleType):
        return next((u for u in map(_unhashable, kind.elems) if u is not None), None)
    if isinstance(kind, T.OptionalType):
        return _unhashable(kind.elem)
    return None if isinstance(kind, T.TensorType) or kind in _HASHED else kind


_HASHED = (T.IntType, T.FloatType, T.BoolType, T.StrType, T.NoneType, T.DeviceObjType)


def _converting(builtin, lower):
    """``int(a)``/``float(a)``/``bool(a)``/``str(a)`` call a script class's ``__int__``..."""

    def convert(em, args, kwargs, node):
        called = em.magic(args[0], CONVERT_MAGIC[builtin], [], node) if len(args) == 1 else None
        return lower(em, args, kwargs, node) if called is None else called

    return convert


BUILTINS = {
    range: _range,
    len: _len,
    int: _converting(int, _convert(T.IntType, "prim::int")),
    float: _converting(float, _convert(T.FloatType, "prim::float")),
    bool: _converting(bool, _convert(T.BoolType, "prim::bool")),
    min: _extreme("prim::min", min),
    max: _extreme("prim::max", max),
    isinstance: _isinstance,
    hasattr: _hasattr,
    enumerate: _enumerate,
    zip: _zip,
    print: _print,
    str: _converting(str, lambda em, args, kwargs, node: em.to_text(args[0])),
    sum: _sum,
    any: _of_a_list("any", T.BoolType),
    all: _of_a_list("all", T.BoolType),
    sorted: _of_a_list("sorted", None),
    abs: _abs,
    hash: _hash,
    complex: _complex,
}
