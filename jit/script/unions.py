"""``Union[...]`` values in scripted code: ``isinstance`` tests on them and the narrowing of a
name in each branch (TorchScript's ``prim::isinstance`` and ``prim::unchecked_cast``).

``isinstance(x, int)`` on a ``Union[int, str, Tensor]`` is a run-time test when some members
match and others do not; the true branch sees ``x`` as the matching members, the false branch
as the rest (a single type, an Optional, or a smaller Union). ``x is None`` / ``is not None``
narrow a Union with a NoneType member the same way.
"""

from __future__ import annotations

import ast

from ember._tensor import Tensor

from .. import types as T
from ..ir import Value
from .sugar import PyObj, SugarTuple

_NAMES = {T.IntType: "int", T.FloatType: "float", T.BoolType: "bool", T.StrType: "str"}
_NAMES[T.NoneType] = "NoneType"


_NUMBERS = (T.IntType, T.FloatType, T.NumberType)


def numeric(kind):
    """``Union[int, float]`` takes part in arithmetic as a ``number`` (TorchScript's Scalar:
    the value's run-time type); a Union with a bool or any other member does not, as in
    TorchScript. Other types are returned as they are."""
    if isinstance(kind, T.UnionType) and all(m in _NUMBERS for m in kind.elems):
        return T.NumberType
    return kind


def unnarrowed(kind) -> bool:
    """An ``Any`` or a Union that is no ``number``: TorchScript compares it, tests ``in`` with
    it or computes with it only once ``isinstance`` (or ``is None``) has narrowed it."""
    return kind == T.AnyType or isinstance(numeric(kind), T.UnionType)


def member_name(kind) -> str | None:
    """The name ``isinstance`` tests a type by (prim::isinstance's run time uses the same)."""
    if isinstance(kind, T.TensorType):
        return "Tensor"
    if isinstance(kind, T.ListType):
        return "list"
    if isinstance(kind, T.TupleType):
        return "tuple"
    if isinstance(kind, T.DictType):
        return "dict"
    return _NAMES.get(kind)


def classes_of(sugar) -> tuple:
    """The classes ``isinstance``'s second argument names: one class or a tuple of them."""
    if isinstance(sugar, SugarTuple):  # isinstance(x, (int, float))
        return tuple(c for item in sugar.items for c in classes_of(item))
    obj = sugar.obj if isinstance(sugar, PyObj) else None
    return obj if isinstance(obj, tuple) else (obj,)


def class_names(classes) -> set:
    """The member names a class (or tuple of classes) of ``isinstance`` accepts."""
    names = set()
    for cls in classes if isinstance(classes, tuple) else (classes,):
        if isinstance(cls, type) and issubclass(cls, Tensor):
            names.add("Tensor")
        elif cls is type(None) or cls is None:
            names.add("NoneType")
        elif isinstance(cls, type):
            names.add(cls.__name__)
    return names


def split(kind: T.UnionType, names: set):
    """The members a test by ``names`` accepts, and the others."""
    yes = [m for m in kind.elems if member_name(m) in names]
    return yes, [m for m in kind.elems if member_name(m) not in names]


def any_members(names: set) -> list:
    """The types ``isinstance(x, C)`` narrows an ``Any`` value to (TorchScript refines ``Any``
    as it refines a Union, to the classes tested)."""
    members = [T.TensorType()] if "Tensor" in names else []
    return members + [kind for kind, name in _NAMES.items() if name in names]


def isinstance_test(em, value: Value, names: set) -> Value:
    if value.type() == T.AnyType:  # anything may be passed: always a run-time test
        shown = ",".join(sorted(names))
        return em.prim("prim::isinstance", [value, em.constant(shown)], T.BoolType)
    yes, no = split(value.type(), names)
    if not yes or not no:
        return em.constant(bool(yes))
    shown = ",".join(sorted({member_name(m) for m in yes}))
    return em.prim("prim::isinstance", [value, em.constant(shown)], T.BoolType)


def run_isinstance(value, names: str) -> bool:
    """prim::isinstance at run time: ``names`` as ``isinstance_test`` wrote them."""
    for name in names.split(","):
        if name == "Tensor" and isinstance(value, Tensor):
            return True
        if name == "NoneType" and value is None:
            return True
        if name == "int" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if (
            name in ("float", "bool", "str", "list", "tuple", "dict")
            and type(value).__name__ == name
        ):
            return True
    return False


def refinement(em, node):
    """``(when true, when false)`` narrowings of a Union name by ``isinstance(x, C)``,
    ``x is None`` or ``x is not None``; None when ``node`` is no such test."""
    if is_isinstance(node):
        name = node.args[0].id
        names = class_names(classes_of(em.expr(node.args[1])))
        positive = True
    elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and len(node.ops) == 1:
        op, right = node.ops[0], node.comparators[0]
        if not isinstance(op, (ast.Is, ast.IsNot)):
            return None
        if not (isinstance(right, ast.Constant) and right.value is None):
            return None
        name, names, positive = node.left.id, {"NoneType"}, isinstance(op, ast.Is)
    else:
        return None
    value = em.env.get(name)
    if isinstance(value, Value) and value.type() == T.AnyType and positive:
        return _cast(em, value, any_members(names), name), {}  # the false branch: still Any
    if not isinstance(value, Value) or not isinstance(value.type(), T.UnionType):
        return None
    yes, no = split(value.type(), names)
    narrowed = [_cast(em, value, members, name) for members in (yes, no)]
    when_true, when_false = narrowed if positive else narrowed[::-1]
    return when_true, when_false


def only_narrowed(before, values) -> bool:
    """Whether each branch's value of a Union name is the name's value before the ``if`` or a
    narrowing of it (then the name keeps its Union or Any type after the ``if``, as in
    TorchScript)."""
    if not isinstance(before, Value):
        return False
    if not isinstance(before.type(), T.UnionType) and before.type() != T.AnyType:
        return False
    for value in values:
        while isinstance(value, Value) and value.node().kind() == "prim::unchecked_cast":
            if value is before:
                break
            value = value.node().inputs()[0]
        if value is not before:
            return False
    return True


def _cast(em, value, members, name) -> dict:
    if not members:
        return {}
    cast = em.prim("prim::unchecked_cast", [value], T.union_of(members))
    return {name: cast.setDebugName(name)}


def is_isinstance(node) -> bool:
    """``isinstance(name, classes)``."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "isinstance"
        and len(node.args) == 2
        and isinstance(node.args[0], ast.Name)
    )
