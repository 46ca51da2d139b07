"""Expressions to IR: names, attributes, constants, operators and literals, for
``emitter.Emitter`` (with ``conditions``, ``containers`` and ``calls`` as mixins).

Values are typed as they are made: ``int`` arithmetic gives ``prim::add`` of type int, anything
touching a tensor gives the op-table node (``ember::add``), comparisons of tensors give tensors
and an ``if`` on one converts it with ``prim::bool``, as TorchScript's ``aten::Bool`` does.
"""

from __future__ import annotations

import ast
import builtins
import operator

from ember.dispatcher.optable import OPS

from .. import types as T
from ..ir import Value
from . import annotations
from .attributes import ModuleState
from .calls import Calls
from .classes import MAGIC, UNARY_MAGIC, Classes
from .conditions import Conditions
from .containers import Containers
from .frontend import namespace_of
from .lists import Lists
from .scopes import Unmerged
from .strings import Strings
from .sugar import PyObj, Sugar, SugarTuple
from .unions import numeric

# Python operator -> (op-table op for tensors, prim for scalars, Python function for folding)
BINARY = {
    ast.Add: ("add", "prim::add", operator.add),
    ast.Sub: ("sub", "prim::sub", operator.sub),
    ast.Mult: ("mul", "prim::mul", operator.mul),
    ast.Div: ("div", "prim::truediv", operator.truediv),
    ast.FloorDiv: ("floor_divide", "prim::floordiv", operator.floordiv),
    ast.Mod: ("remainder", "prim::mod", operator.mod),
    ast.Pow: ("pow", "prim::pow", operator.pow),
    ast.MatMult: ("matmul", None, None),
    ast.BitAnd: ("bitwise_and", None, None),
    ast.BitOr: ("bitwise_or", None, None),
    ast.BitXor: ("bitwise_xor", None, None),
}
_SCALARS = (T.IntType, T.FloatType, T.BoolType, T.NumberType)


_SCALAR_NAMES = {T.IntType: "int", T.FloatType: "float"}


class Expressions(Calls, Conditions, Containers, Strings, ModuleState, Lists, Classes):
    # ---- constants and helpers --------------------------------------------------------------
    def constant(self, value, type_=None) -> Value:
        if type_ is None:
            type_ = T.type_of(value)
            if isinstance(value, list) and not value:
                type_ = T.ListType(T.Tensor)
        return self.graph.insertConstant(value, type_)

    def known(self, value):
        """The Python value of a constant graph value, else None."""
        if isinstance(value, Value) and value.node().kind() == "prim::Constant":
            return value.node()["value"]
        return None

    def is_constant(self, value) -> bool:
        return isinstance(value, Value) and value.node().kind() == "prim::Constant"

    def require_constant(self, value, what: str):
        if isinstance(value, PyObj):
            return value.obj
        if not isinstance(value, (Value, Sugar)):  # a Python default, from a signature
            return value
        if not self.is_constant(value):
            raise self.source.not_supported(f"{what} must be a constant", self.current)
        return value.node()["value"]

    def prim(self, kind: str, inputs, type_) -> Value:
        node = self.graph.insert(kind, [self.materialize(v) for v in inputs])
        node.setSourceRange(self.where())
        return node.output().setType(type_)

    def where(self, node=None) -> str:
        node = node or self.current
        line = getattr(node, "lineno", 1) + self.source.first_line - 1
        return f"{self.source.filename}:{line}"

    def tuple_value(self, values) -> Value:
        values = [self.materialize(v) for v in values]
        kind = T.TupleType(v.type() for v in values)
        return self.prim("prim::TupleConstruct", values, kind)

    def list_value(self, values, elem=None) -> Value:
        values = [self.materialize(v) for v in values]
        if elem is None:
            elem = T._common(v.type() for v in values) if values else T.Tensor
        return self.prim("prim::ListConstruct", values, T.ListType(elem))

    def tuple_index(self, value, i: int) -> Value:
        kind = value.type()
        return self.prim("prim::TupleIndex", [value, self.constant(i)], kind.elems[i])

    def materialize(self, value) -> Value:
        """A graph value for a compile-time one (constants, tuples of values)."""
        if isinstance(value, Value):
            return value
        if isinstance(value, PyObj):
            obj = value.obj
            if _is_constant_object(obj):
                return self.constant(list(obj) if isinstance(obj, list) else obj)
        if isinstance(value, SugarTuple):
            return self.tuple_value(value.items)
        raise self.source.error(f"{value.describe()} cannot be used as a value", self.current)

    def coerce(self, value, wanted, node) -> Value:
        value = self.materialize(value)
        have = value.type()
        if have == wanted or wanted == T.AnyType:
            return value
        if isinstance(wanted, T.TensorType) and isinstance(have, T.TensorType):
            return value
        if isinstance(wanted, T.OptionalType) and (
            have == T.NoneType or self.fits(have, wanted.elem)
        ):
            return value
        if isinstance(wanted, T.ListType) and self.is_empty_list(value):
            return value.setType(wanted)
        if wanted == T.FloatType and have == T.IntType and self.is_constant(value):
            return self.constant(float(self.known(value)))
        if have == T.NumberType and wanted in (T.IntType, T.FloatType):  # aten::Int / Float
            return self.prim(f"prim::{_SCALAR_NAMES[wanted]}", [value], wanted)
        if self.fits(have, wanted):
            return value
        raise self.source.error(
            f"Expected a value of type '{wanted.annotation()}' but instead found type "
            f"'{have.annotation()}'",
            node,
        )

    def fits(self, have, wanted) -> bool:
        if have == wanted or wanted == T.AnyType:
            return True
        if isinstance(have, T.UnionType):
            return all(self.fits(member, wanted) for member in have.elems)
        if isinstance(wanted, T.UnionType):
            return any(self.fits(have, member) for member in wanted.elems)
        if isinstance(wanted, T.OptionalType):
            return have == T.NoneType or self.fits(have, wanted.elem)
        if isinstance(have, T.TensorType) and isinstance(wanted, T.TensorType):
            return True
        if isinstance(have, T.TupleType) and isinstance(wanted, T.TupleType):
            return len(have.elems) == len(wanted.elems) and all(
                self.fits(a, b) for a, b in zip(have.elems, wanted.elems)
            )
        if isinstance(have, T.ListType) and isinstance(wanted, T.ListType):
            return self.fits(have.elem, wanted.elem)
        return wanted == T.NumberType and have in (T.IntType, T.FloatType)

    def is_empty_list(self, value) -> bool:
        node = value.node()
        return node.kind() == "prim::ListConstruct" and not node.inputs()

    def annotation(self, node) -> T.Type:
        try:
            return annotations.resolve(ast.unparse(node), self.namespace())
        except annotations.AnnotationError as e:
            raise self.source.error(str(e), node) from None

    # ---- names ------------------------------------------------------------------------------
    def namespace(self) -> dict:
        scope = dict(vars(builtins))
        scope.update(namespace_of(self.source.fn))
        return scope

    def name(self, ident: str, node):
        found = self.env.get(ident)
        if isinstance(found, Unmerged):
            raise found.used(self.source, node)
        if found is not None:
            return found
        scope = self.namespace()
        if ident in scope:
            return PyObj(scope[ident])
        raise self.source.error(f"undefined value {ident}", node)

    # ---- expressions ------------------------------------------------------------------------
    def expr(self, node, wanted=None):
        saved, self.current = self.current, node
        try:
            method = getattr(self, f"expr_{type(node).__name__}", None)
            if method is None:
                raise self.source.unsupported(node)
            return method(node, wanted) if wanted is not None else method(node)
        finally:
            self.current = saved

    def value(self, node) -> Value:
        return self.materialize(self.expr(node))

    def expr_Constant(self, node, wanted=None):  # noqa: N802
        if node.value is Ellipsis:
            raise self.source.not_supported("Ellipsis is not supported here", node)
        return self.constant(node.value)

    def expr_Name(self, node, wanted=None):  # noqa: N802
        return self.name(node.id, node)

    def expr_Attribute(self, node, wanted=None):  # noqa: N802
        owner = self.expr(node.value)
        return self.attribute(owner, node.attr, node)

    def expr_Tuple(self, node, wanted=None):  # noqa: N802
        items = [self.expr(e) for e in node.elts]
        if any(isinstance(i, Sugar) and not _is_constant_sugar(i) for i in items):
            return SugarTuple(items)
        return self.tuple_value(items)

    def expr_List(self, node, wanted=None):  # noqa: N802
        items = [self.value(e) for e in node.elts]
        elem = wanted.elem if isinstance(wanted, T.ListType) else None
        self.check_literal(
            items,
            elem,
            lambda unified: (
                f"List type annotation `{wanted.annotation()}` did not match the "
                f"types of the given list elements, which were unified to {unified}"
            ),
            node,
        )
        return self.list_value(items, elem)

    def check_literal(self, items, wanted, message, node) -> None:
        """A literal's items must fit the annotation's type, else TorchScript's error naming
        their unified type (``[[]]`` is a list of ``List[Tensor]``, ``[1]`` is no
        ``List[float]``)."""
        if wanted is None or all(self.fits(v.type(), wanted) for v in items):
            return
        found = (T.Tensor if isinstance(v.type(), T.TensorType) else v.type() for v in items)
        kinds = sorted(dict.fromkeys(found), key=T.Type.annotation)
        unified = kinds[0] if len(kinds) == 1 else T.UnionType(kinds)
        raise self.source.error(message(unified.annotation()), node)

    def expr_Dict(self, node, wanted=None):  # noqa: N802
        if any(k is None for k in node.keys):
            raise self.source.not_supported("dict unpacking (**) isn't supported", node)
        keys = [self.value(k) for k in node.keys]
        values = [self.value(v) for v in node.values]
        if isinstance(wanted, T.DictType):
            kind = wanted
            for what, given, want in (("keys", keys, kind.key), ("values", values, kind.value)):
                self.check_literal(
                    given,
                    want,
                    lambda unified, what=what: (
                        f"Type annotation was inferred to be `{kind.annotation()}`, but the "
                        f"type of {what} given by the dict literal is {unified}"
                    ),
                    node,
                )
        elif keys:
            kind = T.DictType(
                T._common(k.type() for k in keys), T._common(v.type() for v in values)
            )
        else:
            kind = T.DictType(T.StrType, T.Tensor)  # TorchScript's type of {}
        pairs = [item for pair in zip(keys, values) for item in pair]
        return self.prim("prim::DictConstruct", pairs, kind)

    def expr_IfExp(self, node, wanted=None):  # noqa: N802
        cond, refine_true, refine_false = self.condition_with_refinement(node.test)
        known = self.known(cond)
        if known is not None:
            saved = dict(self.env)
            self.env.update(refine_true if known else refine_false)
            try:
                return self.expr(node.body if known else node.orelse)
            finally:
                self.env = saved
        outs = []
        op = self.graph.insert("prim::If", [cond], num_outputs=0)
        for branch, refine in ((node.body, refine_true), (node.orelse, refine_false)):
            saved = dict(self.env)
            self.env.update(refine)
            block = op.addBlock()
            with self.graph.insert_point_guard(block):
                value = self.value(branch)
                block.registerOutput(value)
            outs.append(value)
            self.env = saved
        kind = self.unified(outs[0].type(), outs[1].type(), "the if expression")
        if kind is None:
            raise self.source.error(
                f"if-expression's true branch has type {self.shown(outs[0])} but false branch "
                f"has type {self.shown(outs[1])}",
                node,
            )
        return op.addOutput(kind)

    def expr_UnaryOp(self, node, wanted=None):  # noqa: N802
        operand = self.value(node.operand)
        called = self.magic(operand, UNARY_MAGIC.get(type(node.op), ""), [], node)
        if called is not None:
            return called
        if isinstance(node.op, ast.Not):
            return self.prim("prim::not", [self.to_bool(operand, node)], T.BoolType)
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.USub):
            if isinstance(operand.type(), T.TensorType):
                return self.call_op("neg", [operand], {})
            if self.is_constant(operand):
                return self.constant(-self.known(operand))
            return self.prim("prim::neg", [operand], numeric(operand.type()))
        if isinstance(node.op, ast.Invert) and isinstance(operand.type(), T.TensorType):
            return self.call_op("bitwise_not", [operand], {})
        raise self.source.unsupported(node)

    def expr_BinOp(self, node, wanted=None):  # noqa: N802
        return self.binary(node.op, self.expr(node.left), self.expr(node.right), node)

    def binary(self, op, left, right, node, inplace=False):
        left, right = self.materialize(left), self.materialize(right)
        called = self.magic(left, MAGIC.get(type(op), ""), [right], node)
        if called is not None:
            return called
        entry = BINARY.get(type(op))
        if entry is None:
            raise self.source.unsupported(node)
        name, prim, fold = entry
        lt, rt = left.type(), right.type()
        if isinstance(lt, T.TensorType) or isinstance(rt, T.TensorType):
            if inplace and isinstance(lt, T.TensorType) and name + "_" in OPS:
                return self.call_op(name + "_", [left, right], {})
            if not isinstance(lt, T.TensorType):  # 2 - x: the ops take the number first too
                return self.call_op(name, [left, right], {})
            return self.call_op(name, [left, right], {})
        if isinstance(lt, T.ListType) and isinstance(rt, T.ListType) and isinstance(op, ast.Add):
            return self.prim("prim::add", [left, right], lt)
        if lt == rt == T.StrType and isinstance(op, ast.Add):
            if self.is_constant(left) and self.is_constant(right):
                return self.constant(self.known(left) + self.known(right))
            return self.prim("prim::add", [left, right], T.StrType)
        lt, rt = numeric(lt), numeric(rt)
        if T.ComplexType in (lt, rt) and _complex_operands(op, lt, rt):
            if self.is_constant(left) and self.is_constant(right):
                return self.constant(fold(self.known(left), self.known(right)))
            return self.prim(prim, [left, right], T.ComplexType)
        if prim is None or lt not in _SCALARS or rt not in _SCALARS:
            raise self.source.error(
                f"Arguments for call are not valid: unsupported operand types for {name}: "
                f"'{lt.annotation()}' and '{rt.annotation()}'",
                node,
            )
        if self.is_constant(left) and self.is_constant(right):
            return self.constant(fold(self.known(left), self.known(right)))
        if isinstance(op, ast.Div) or T.FloatType in (lt, rt):
            kind = T.FloatType
        elif T.NumberType in (lt, rt):
            kind = T.NumberType
        else:
            kind = T.IntType
        return self.prim(prim, [left, right], kind)

    def expr_BoolOp(self, node, wanted=None):  # noqa: N802
        return self.condition(node)

    def expr_Compare(self, node, wanted=None):  # noqa: N802
        if len(node.ops) > 1:
            return self.condition(node)
        (op,), (right,) = node.ops, node.comparators
        left = self.expr(node.left)
        if isinstance(op, (ast.Is, ast.IsNot)):
            return self.identity(left, self.expr(right), isinstance(op, ast.IsNot), node)
        if isinstance(op, (ast.In, ast.NotIn)):
            return self.contains(
                self.value(right), self.value(node.left), isinstance(op, ast.NotIn), node
            )
        return self.compare(op, self.materialize(left), self.value(right), node)


# complex arithmetic: Python's operators on complex, float, int and bool operands (TorchScript's
# complex overloads; its floor division and modulo of complex are refused, as Python's)
_COMPLEX_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
_COMPLEX_OPERANDS = (T.ComplexType, T.FloatType, T.IntType, T.BoolType)


def _complex_operands(op, lt, rt) -> bool:
    return isinstance(op, _COMPLEX_OPS) and lt in _COMPLEX_OPERANDS and rt in _COMPLEX_OPERANDS


def _is_constant_object(obj) -> bool:
    if obj is None or isinstance(obj, (bool, int, float, complex, str)):
        return True
    if isinstance(obj, (tuple, list)):
        return all(_is_constant_object(o) for o in obj)
    from ember import _dtype as dt
    from ember._device import device

    return isinstance(obj, (dt.dtype, device))


def _is_constant_sugar(value) -> bool:
    return isinstance(value, PyObj) and _is_constant_object(value.obj)
