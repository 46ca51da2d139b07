"""Expressions to IR: names, attributes, constants, operators, subscripts, containers,
comprehensions and conditions (with ``Optional`` refinement), for ``emitter.Emitter``.

Values are typed as they are made: ``int`` arithmetic gives ``prim::add`` of type int, anything
touching a tensor gives the op-table node (``ember::add``), comparisons of tensors give tensors
and an ``if`` on one converts it with ``prim::bool``, as TorchScript's ``aten::Bool`` does.
"""

from __future__ import annotations

import ast
import builtins
import math
import operator
import types as pytypes
from dataclasses import dataclass

from ember.dispatcher.optable import OPS

from .. import types as T
from ..ir import Value
from . import annotations
from .calls import Calls
from .frontend import namespace_of
from .sugar import Enumerate, ModuleRef, PyObj, Range, Sugar, SugarTuple, Zip

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
COMPARE = {
    ast.Eq: ("eq", "prim::eq"),
    ast.NotEq: ("ne", "prim::ne"),
    ast.Lt: ("lt", "prim::lt"),
    ast.LtE: ("le", "prim::le"),
    ast.Gt: ("gt", "prim::gt"),
    ast.GtE: ("ge", "prim::ge"),
}
# For a scalar on the left of a tensor: 2 - x is sub(2, x)... ops take a number first.
_SCALARS = (T.IntType, T.FloatType, T.BoolType, T.NumberType)


@dataclass
class Iteration:
    """How a ``for`` loop walks its iterable: a trip count and the item at counter ``i``, or
    (for modules and tuples) the items themselves, unrolled."""

    trip: Value | None = None
    item: object = None
    unrolled: list | None = None


class Expressions(Calls):
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
        if self.fits(have, wanted):
            return value
        raise self.source.error(
            f"Expected a value of type '{wanted.annotation()}' but instead found type "
            f"'{have.annotation()}'",
            node,
        )

    def fits(self, have, wanted) -> bool:
        if have == wanted:
            return True
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
        return self.list_value(items, elem)

    def expr_Dict(self, node, wanted=None):  # noqa: N802
        if any(k is None for k in node.keys):
            raise self.source.not_supported("dict unpacking (**) isn't supported", node)
        keys = [self.value(k) for k in node.keys]
        values = [self.value(v) for v in node.values]
        if isinstance(wanted, T.DictType):
            kind = wanted
        elif keys:
            kind = T.DictType(
                T._common(k.type() for k in keys), T._common(v.type() for v in values)
            )
        else:
            kind = T.DictType(T.StrType, T.Tensor)  # TorchScript's type of {}
        pairs = [item for pair in zip(keys, values) for item in pair]
        return self.prim("prim::DictConstruct", pairs, kind)

    def expr_JoinedStr(self, node, wanted=None):  # noqa: N802
        raise self.source.not_supported("f-strings aren't supported", node)

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
        kind = self.unify(outs[0].type(), outs[1].type(), "the if expression", node)
        return op.addOutput(kind)

    def expr_UnaryOp(self, node, wanted=None):  # noqa: N802
        operand = self.value(node.operand)
        if isinstance(node.op, ast.Not):
            return self.prim("prim::not", [self.to_bool(operand, node)], T.BoolType)
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.USub):
            if isinstance(operand.type(), T.TensorType):
                return self.call_op("neg", [operand], {})
            if self.is_constant(operand):
                return self.constant(-self.known(operand))
            return self.prim("prim::neg", [operand], operand.type())
        if isinstance(node.op, ast.Invert) and isinstance(operand.type(), T.TensorType):
            return self.call_op("bitwise_not", [operand], {})
        raise self.source.unsupported(node)

    def expr_BinOp(self, node, wanted=None):  # noqa: N802
        return self.binary(node.op, self.expr(node.left), self.expr(node.right), node)

    def binary(self, op, left, right, node, inplace=False):
        left, right = self.materialize(left), self.materialize(right)
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

    def compare(self, op, left, right, node) -> Value:
        name, prim = COMPARE[type(op)]
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
        kind = container.type()
        if not isinstance(kind, (T.DictType, T.ListType)) or isinstance(item.type(), T.TensorType):
            raise self.source.not_supported("'in' is supported on dicts and lists of scalars", node)
        found = self.prim("prim::contains", [container, item], T.BoolType)
        return self.prim("prim::not", [found], T.BoolType) if negate else found

    def identity(self, left, right, negate: bool, node) -> Value:
        """``x is None``: static unless ``x`` is Optional."""
        left, right = self.materialize(left), self.materialize(right)
        lt, rt = left.type(), right.type()
        if rt != T.NoneType and lt == T.NoneType:
            left, right, lt, rt = right, left, rt, lt
        if rt != T.NoneType:
            raise self.source.not_supported("'is' comparisons are only supported with None", node)
        if not isinstance(lt, T.OptionalType):
            return self.constant((lt == T.NoneType) != negate)
        return self.prim("prim::isnot" if negate else "prim::is", [left, right], T.BoolType)

    # ---- conditions -------------------------------------------------------------------------
    def to_bool(self, value, node) -> Value:
        value = self.materialize(value)
        kind = value.type()
        if kind == T.BoolType:
            return value
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
        refine = self.refinement(node)
        if refine is None:
            return cond, {}, {}
        name, refined, negate = refine
        return (cond, {name: refined}, {}) if negate else (cond, {}, {name: refined})

    def refinement(self, node):
        """``x is not None`` on an Optional name: (name, narrowed value, is-not)."""
        if not (isinstance(node, ast.Compare) and isinstance(node.left, ast.Name)):
            return None
        (op,), (right,) = node.ops, node.comparators
        if not isinstance(op, (ast.Is, ast.IsNot)) or not _is_none(right):
            return None
        value = self.env.get(node.left.id)
        if not isinstance(value, Value) or not isinstance(value.type(), T.OptionalType):
            return None
        narrowed = self.prim("prim::unchecked_cast", [value], value.type().elem)
        narrowed.setDebugName(node.left.id)
        return node.left.id, narrowed, isinstance(op, ast.IsNot)

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
    def expr_Subscript(self, node, wanted=None):  # noqa: N802
        base = self.expr(node.value)
        if isinstance(base, (ModuleRef, SugarTuple, PyObj)):
            return self.static_index(base, node)
        kind = base.type()
        if isinstance(kind, T.TensorType):
            return self.tensor_index(base, node.slice, node)
        if isinstance(kind, T.TupleType):
            index = self.require_constant(self.expr(node.slice), "tuple indices")
            if isinstance(index, int):
                return self.tuple_index(base, index)
            raise self.source.not_supported("tuple slicing isn't supported", node)
        if isinstance(kind, T.ListType):
            if isinstance(node.slice, ast.Slice):
                parts = (node.slice.lower, node.slice.upper, node.slice.step)
                bounds = [self.constant(None) if p is None else self.value(p) for p in parts]
                return self.prim("prim::ListSlice", [base, *bounds], kind)
            index = self.value(node.slice)
            return self.prim("prim::ListIndex", [base, index], kind.elem)
        if isinstance(kind, T.DictType):
            key = self.coerce(self.value(node.slice), kind.key, node)
            return self.prim("prim::DictIndex", [base, key], kind.value)
        raise self.source.error(f"'{kind.annotation()}' object is not subscriptable", node)

    def static_index(self, base, node):
        index = self.require_constant(self.expr(node.slice), "indices of modules and tuples")
        if isinstance(base, SugarTuple):
            return base.items[index]
        if isinstance(base, PyObj):
            return PyObj(base.obj[index])
        module = base.module
        from ember.nn.modules.container import ModuleDict

        key = str(index) if not isinstance(module, ModuleDict) else index
        if isinstance(index, int):
            names = list(module._modules)
            key = names[index]
        return ModuleRef(module._modules[key], base.qualified(key))

    def tensor_index(self, base, index, node) -> Value:
        """Basic indexing as views: ints select, slices slice, None unsqueezes; after an
        ``...`` the items count from the last dim (their dims are negative)."""
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        ellipsis = [i for i, item in enumerate(items) if _is_ellipsis(item)]
        if len(ellipsis) > 1:
            raise self.source.error("an index can only have a single ellipsis ('...')", node)
        head = items[: ellipsis[0]] if ellipsis else items
        tail = items[ellipsis[0] + 1 :] if ellipsis else []
        result, dim = base, 0
        for item in head:
            result, kept = self.index_item(result, item, dim, node)
            dim += kept
        kept_right = 0
        for item in reversed(tail):
            if isinstance(item, ast.Constant) and item.value is None:
                raise self.source.not_supported("None after '...' in an index", node)
            result, kept = self.index_item(result, item, -1 - kept_right, node)
            kept_right += kept
        return result

    def index_item(self, tensor, item, dim: int, node):
        """One index item at ``dim``: (the result, 1 if the dim is kept else 0)."""
        if isinstance(item, ast.Slice):
            if item.lower is None and item.upper is None and item.step is None:
                return tensor, 1
            parts = [item.lower, item.upper, item.step]
            start, end, step = (self.constant(None) if p is None else self.value(p) for p in parts)
            if item.step is None:
                step = self.constant(1)
            args = [tensor, self.constant(dim), start, end, step]
            return self.call_op("slice", args, {}), 1
        if isinstance(item, ast.Constant) and item.value is None:
            return self.call_op("unsqueeze", [tensor, self.constant(dim)], {}), 1
        position = self.value(item)
        if isinstance(position.type(), T.TensorType):
            raise self.source.not_supported("indexing with tensors isn't supported yet", node)
        return self.call_op("select", [tensor, self.constant(dim), position], {}), 0

    def unpack(self, value, count: int, node) -> list:
        if isinstance(value, SugarTuple):
            items = value.items
        elif isinstance(value, PyObj) and isinstance(value.obj, (tuple, list)):
            items = [PyObj(v) for v in value.obj]
        else:
            value = self.materialize(value)
            kind = value.type()
            if isinstance(kind, T.TupleType):
                items = self.graph.insert(
                    "prim::TupleUnpack", [value], num_outputs=len(kind.elems)
                ).outputs()
                for out, elem in zip(items, kind.elems):
                    out.setType(elem)
            elif isinstance(kind, T.ListType):
                items = self.graph.insert("prim::ListUnpack", [value], num_outputs=count).outputs()
                for out in items:
                    out.setType(kind.elem)
            else:
                raise self.source.error(f"cannot unpack a value of type {kind.annotation()}", node)
        if len(items) != count:
            raise self.source.error(
                f"too many values to unpack: need {count} but found {len(items)}", node
            )
        return list(items)

    def iteration(self, iterable, node) -> Iteration:
        if isinstance(iterable, Range):

            def item(i):
                if self.known(iterable.start) == 0 and iterable.step_value == 1:
                    return i
                scaled = (
                    i
                    if iterable.step_value == 1
                    else self.prim("prim::mul", [i, iterable.step], T.IntType)
                )
                return self.prim("prim::add", [iterable.start, scaled], T.IntType)

            return Iteration(self.range_length(iterable), item)
        if isinstance(iterable, ModuleRef):
            module = iterable.module
            return Iteration(
                unrolled=[ModuleRef(m, iterable.qualified(k)) for k, m in module._modules.items()]
            )
        if isinstance(iterable, SugarTuple):
            return Iteration(unrolled=list(iterable.items))
        if isinstance(iterable, PyObj) and isinstance(iterable.obj, (tuple, list)):
            return Iteration(unrolled=[PyObj(v) for v in iterable.obj])
        if isinstance(iterable, Enumerate):
            inner = self.iteration(iterable.inner, node)
            if inner.unrolled is not None:
                pairs = [
                    SugarTuple([self.constant(i + iterable.start), v])
                    for i, v in enumerate(inner.unrolled)
                ]
                return Iteration(unrolled=pairs)

            def pair(i):
                index = (
                    i
                    if iterable.start == 0
                    else self.prim("prim::add", [i, self.constant(iterable.start)], T.IntType)
                )
                return SugarTuple([index, inner.item(i)])

            return Iteration(inner.trip, pair)
        if isinstance(iterable, Zip):
            parts = [self.iteration(v, node) for v in iterable.items]
            if all(p.unrolled is not None for p in parts):
                return Iteration(
                    unrolled=[SugarTuple(list(t)) for t in zip(*(p.unrolled for p in parts))]
                )
            if any(p.unrolled is not None for p in parts):
                raise self.source.not_supported("zip of modules with lists isn't supported", node)
            trip = parts[0].trip
            for other in parts[1:]:
                trip = self.prim("prim::min", [trip, other.trip], T.IntType)
            return Iteration(trip, lambda i: SugarTuple([p.item(i) for p in parts]))
        value = self.materialize(iterable)
        kind = value.type()
        if isinstance(kind, T.ListType):
            trip = self.prim("prim::len", [value], T.IntType)
            return Iteration(trip, lambda i: self.prim("prim::ListIndex", [value, i], kind.elem))
        if isinstance(kind, T.TupleType):
            return Iteration(unrolled=[self.tuple_index(value, i) for i in range(len(kind.elems))])
        if isinstance(kind, T.DictType):  # iterates over the keys, as Python does
            keys = self.prim("prim::DictKeys", [value], T.ListType(kind.key))
            return self.iteration(keys, node)
        if isinstance(kind, T.TensorType):
            trip = self.prim("prim::size", [value, self.constant(0)], T.IntType)
            return Iteration(
                trip, lambda i: self.call_op("select", [value, self.constant(0), i], {})
            )
        raise self.source.error(f"'{kind.annotation()}' object is not iterable", node)

    def range_length(self, r: Range) -> Value:
        step = r.step_value
        if self.is_constant(r.start) and self.is_constant(r.stop):
            return self.constant(len(range(self.known(r.start), self.known(r.stop), step)))
        if self.known(r.start) == 0 and step == 1:
            return r.stop  # a negative count runs no iteration, as range() does
        if step > 0:
            span = self.prim("prim::sub", [r.stop, r.start], T.IntType)
            offset = self.constant(step - 1)
        else:
            span = self.prim("prim::sub", [r.start, r.stop], T.IntType)
            offset = self.constant(-step - 1)
        padded = self.prim("prim::add", [span, offset], T.IntType)
        count = self.prim("prim::floordiv", [padded, self.constant(abs(step))], T.IntType)
        return self.prim("prim::max", [count, self.constant(0)], T.IntType)

    def expr_ListComp(self, node, wanted=None):  # noqa: N802
        if len(node.generators) != 1 or node.generators[0].ifs or node.generators[0].is_async:
            raise self.source.not_supported("comprehensions with conditions or nested loops", node)
        gen = node.generators[0]
        plan = self.iteration(self.expr(gen.iter), gen.iter)
        saved = dict(self.env)
        try:
            if plan.unrolled is not None:
                items = []
                for item in plan.unrolled:
                    self.assign(gen.target, item)
                    items.append(self.value(node.elt))
                return self.list_value(items)
            result = self.list_value([], T.Tensor)
            loop = self.graph.insert(
                "prim::Loop", [plan.trip, self.constant(True), result], num_outputs=0
            )
            body = loop.addBlock()
            body.addInput("i", T.IntType)
            carried = body.addInput("acc", result.type())
            with self.graph.insert_point_guard(body):
                self.assign(gen.target, plan.item(body.inputs()[0]))
                element = self.value(node.elt)
                kind = T.ListType(element.type())
                grown = self.prim("prim::add", [carried, self.list_value([element])], kind)
                body.registerOutput(self.constant(True))
                body.registerOutput(grown)
            for value in (result, carried):
                value.setType(kind)
            return loop.addOutput(kind)
        finally:
            self.env = saved

    def list_append(self, call) -> bool:
        """``xs.append(v)`` on a list variable: rebinds ``xs`` to ``xs + [v]`` (lists are
        values in the graph; the rebinding makes the loop carry the list)."""
        func = call.func
        if not (
            isinstance(func, ast.Attribute)
            and func.attr == "append"
            and isinstance(func.value, ast.Name)
        ):
            return False
        current = self.env.get(func.value.id)
        if not isinstance(current, Value) or not isinstance(current.type(), T.ListType):
            return False
        if len(call.args) != 1 or call.keywords:
            raise self.source.error("append() takes exactly one argument", call)
        item = self.value(call.args[0])
        elem = current.type().elem
        if self.is_empty_list(current) and elem != item.type() and not self.fits(item.type(), elem):
            raise self.source.error(
                f"Could not append a value of type {item.type().annotation()} to a list of "
                f"{elem.annotation()} (annotate the empty list: ember.jit.annotate(List[...], []))",
                call,
            )
        grown = self.prim("prim::add", [current, self.list_value([item], elem)], current.type())
        grown.setDebugName(func.value.id)
        self.env[func.value.id] = grown
        return True


def _is_ellipsis(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_constant_object(obj) -> bool:
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return True
    if isinstance(obj, (tuple, list)):
        return all(_is_constant_object(o) for o in obj)
    from ember import _dtype as dt
    from ember._device import device

    return isinstance(obj, (dt.dtype, device))


def _is_constant_sugar(value) -> bool:
    return isinstance(value, PyObj) and _is_constant_object(value.obj)


__all__ = ["Expressions", "Iteration", "math", "pytypes"]
