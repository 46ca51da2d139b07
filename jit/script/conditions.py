"""Comparisons and conditions: tensor comparisons as ops, scalar ones as prims, ``and``/``or``
short-circuiting through ``prim::If``, ``is None`` (static unless the value is Optional) and the
refinement of an Optional name in the branch where it is known not to be None.
"""

from __future__ import annotations

import ast
import operator

from .. import types as T
from ..ir import Value
from . import unions
from .classes import MAGIC
from .unions import unnarrowed

COMPARE = {
    ast.Eq: ("eq", "prim::eq"),
    ast.NotEq: ("ne", "prim::ne"),
    ast.Lt: ("lt", "prim::lt"),
    ast.LtE: ("le", "prim::le"),
    ast.Gt: ("gt", "prim::gt"),
    ast.GtE: ("ge", "prim::ge"),
}

_VALUE_IDENTITY = (T.BoolType, T.IntType, T.FloatType)  # strs compare pointers: refused


class Conditions:
    def compare(self, op, left, right, node) -> Value:
        called = self.magic(left, MAGIC.get(type(op), ""), [right], node)
        if called is not None:
            return called
        name, prim = COMPARE[type(op)]
        self.refuse_unnarrowed(name, left, right, node)
        if isinstance(left.type(), T.TensorType) or isinstance(right.type(), T.TensorType):
            if not isinstance(left.type(), T.TensorType):
                swapped = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}.get(name, name)
                return self.call_op(swapped, [right, left], {})
            return self.call_op(name, [left, right], {})
        if self.is_constant(left) and self.is_constant(right):
            fold = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt}
            fold.update({ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge})
            return self.constant(fold[type(op)](self.known(left), self.known(right)))
        return self.prim(prim, [left, right], T.BoolType)

    def contains(self, container, item, negate: bool, node) -> Value:
        """``k in d`` / ``x in xs`` for dicts and lists of scalars."""
        found = self.magic(container, "__contains__", [item], node)
        if found is not None:
            return self.prim("prim::not", [found], T.BoolType) if negate else found
        kind = container.type()
        self.refuse_unnarrowed("__contains__", container, item, node)
        if kind == T.StrType and item.type() == T.StrType:  # a substring, as aten::__contains__
            found = self.prim("prim::str_contains", [container, item], T.BoolType)
            return self.prim("prim::not", [found], T.BoolType) if negate else found
        if not isinstance(kind, (T.DictType, T.ListType)) or isinstance(item.type(), T.TensorType):
            raise self.source.not_supported("'in' is supported on dicts and lists of scalars", node)
        found = self.prim("prim::contains", [container, item], T.BoolType)
        return self.prim("prim::not", [found], T.BoolType) if negate else found

    def refuse_unnarrowed(self, name: str, left, right, node) -> None:
        """TorchScript has no comparison or ``in`` of an ``Any`` value or of a Union that is
        no number: narrow it with ``isinstance`` first."""
        lt, rt = left.type(), right.type()
        if unnarrowed(lt) or unnarrowed(rt):
            raise self.source.error(
                f"Arguments for call are not valid: unsupported operand types for {name}: "
                f"'{lt.annotation()}' and '{rt.annotation()}'",
                node,
            )

    def identity(self, left, right, negate: bool, node) -> Value:
        """``x is None``: static unless ``x`` is Optional."""
        left, right = self.materialize(left), self.materialize(right)
        lt, rt = left.type(), right.type()
        if rt != T.NoneType and lt == T.NoneType:
            left, right, lt, rt = right, left, rt, lt
        if rt != T.NoneType and lt == rt and lt in _VALUE_IDENTITY:
            # TorchScript's aten::__is__ of two bools, ints or floats compares the values
            return self.prim("prim::ne" if negate else "prim::eq", [left, right], T.BoolType)
        if rt != T.NoneType:
            raise self.source.not_supported("'is' comparisons are only supported with None", node)
        if isinstance(lt, T.UnionType) and T.NoneType in lt.elems:
            pass  # a run-time test, narrowed by unions.refinement
        elif not isinstance(lt, T.OptionalType):
            return self.constant((lt == T.NoneType) != negate)
        return self.prim("prim::isnot" if negate else "prim::is", [left, right], T.BoolType)

    # ---- conditions -------------------------------------------------------------------------
    def to_bool(self, value, node) -> Value:
        value = self.materialize(value)
        kind = value.type()
        if kind == T.BoolType:
            return value
        called = self.magic(value, "__bool__", [], node)
        if called is not None:
            return called
        if isinstance(kind, T.TensorType) or kind in (T.IntType, T.FloatType):
            return self.prim("prim::bool", [value], T.BoolType)
        raise self.source.error(f"Could not cast value of type {kind.annotation()} to bool", node)

    def condition(self, node) -> Value:
        return self.condition_with_refinement(node)[0]

    def condition_with_refinement(self, node):
        """``(bool value, names refined when true, names refined when false)``."""
        if isinstance(node, ast.BoolOp):
            return self.bool_op(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            cond, when_true, when_false = self.condition_with_refinement(node.operand)
            known = self.known(cond)
            if known is not None:
                return self.constant(not known), when_false, when_true
            return self.prim("prim::not", [cond], T.BoolType), when_false, when_true
        if isinstance(node, ast.Compare) and len(node.ops) > 1:
            return self.chained(node), {}, {}
        cond = self.to_bool(self.expr(node), node)
        narrowed = unions.refinement(self, node)
        if narrowed is not None:
            return (cond, *narrowed)
        refine = self.refinement(node)
        if refine is None:
            return cond, {}, {}
        name, refined, negate = refine
        return (cond, {name: refined}, {}) if negate else (cond, {}, {name: refined})

    def refinement(self, node):
        """``x is not None`` (or ``isinstance(x, T)``) on an Optional name: (name, narrowed
        value, whether the narrowing holds when the condition is true)."""
        if unions.is_isinstance(node):
            name, positive = node.args[0].id, True
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Name):
            (op,), (right,) = node.ops, node.comparators
            if not isinstance(op, (ast.Is, ast.IsNot)) or not _is_none(right):
                return None
            name, positive = node.left.id, isinstance(op, ast.IsNot)
        else:
            return None
        value = self.env.get(name)
        if not isinstance(value, Value) or not isinstance(value.type(), T.OptionalType):
            return None
        narrowed = self.prim("prim::unchecked_cast", [value], value.type().elem)
        narrowed.setDebugName(name)
        return name, narrowed, positive

    def bool_op(self, node):
        is_and = isinstance(node.op, ast.And)
        cond, when_true, when_false = self.condition_with_refinement(node.values[0])
        for operand in node.values[1:]:
            known = self.known(cond)
            if known is not None and known != is_and:  # short-circuits at compile time
                return cond, when_true, when_false
            saved = dict(self.env)
            self.env.update(when_true if is_and else when_false)
            if known is not None:
                cond, t2, f2 = self.condition_with_refinement(operand)
                self.env = saved
                return cond, {**when_true, **t2}, {**when_false, **f2}
            node_if = self.graph.insert("prim::If", [cond], num_outputs=0)
            first, second = node_if.addBlock(), node_if.addBlock()
            evaluate, short = (first, second) if is_and else (second, first)
            with self.graph.insert_point_guard(evaluate):
                inner, t2, f2 = self.condition_with_refinement(operand)
                evaluate.registerOutput(inner)
            with self.graph.insert_point_guard(short):
                short.registerOutput(self.constant(not is_and))
            self.env = saved
            cond = node_if.addOutput(T.BoolType)
            when_true = {**when_true, **t2} if is_and else {}
            when_false = {} if is_and else {**when_false, **f2}
        return cond, when_true, when_false

    def and_values(self, first, second_thunk) -> Value:
        node = self.graph.insert("prim::If", [first], num_outputs=0)
        then, other = node.addBlock(), node.addBlock()
        with self.graph.insert_point_guard(then):
            then.registerOutput(second_thunk())
        with self.graph.insert_point_guard(other):
            other.registerOutput(self.constant(False))
        return node.addOutput(T.BoolType)

    def chained(self, node) -> Value:
        """``a < b < c`` is ``a < b and b < c``."""
        values = [self.value(node.left)] + [self.value(c) for c in node.comparators]
        parts = [self.compare(op, a, b, node) for op, a, b in zip(node.ops, values, values[1:])]
        cond = self.to_bool(parts[0], node)
        for part in parts[1:]:
            cond = self.prim("prim::and", [cond, self.to_bool(part, node)], T.BoolType)
        return cond

    # ---- subscripts, unpacking, iteration ---------------------------------------------------


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
