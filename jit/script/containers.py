"""Subscripts, unpacking and iteration: tensor indexing (advanced.py), tuple/list/dict
indexing, ``for`` plans (a trip count and the item at each counter, or items
unrolled for modules and tuples) and list comprehensions.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .. import types as T
from ..ir import Value
from .advanced import TensorIndexing
from .sugar import Enumerate, ModuleRef, PyObj, Range, SugarTuple, Zip


@dataclass
class Iteration:
    """How a ``for`` loop walks its iterable: a trip count and the item at counter ``i``, or
    (for modules and tuples) the items themselves, unrolled."""

    trip: Value | None = None
    item: object = None
    unrolled: list | None = None


class Containers(TensorIndexing):
    def expr_Subscript(self, node, wanted=None):  # noqa: N802
        base = self.expr(node.value)
        if isinstance(base, (ModuleRef, SugarTuple, PyObj)):
            return self.static_index(base, node)
        kind = base.type()
        if isinstance(kind, T.ClassType):  # obj[i] is obj.__getitem__(i)
            called = self.magic(base, "__getitem__", [self.value(node.slice)], node)
            if called is not None:
                return called
        if isinstance(kind, T.TensorType):
            return self.tensor_index(base, node.slice, node)
        if isinstance(kind, T.TupleType) and isinstance(node.slice, ast.Slice):
            # constant bounds, as TorchScript's tuple slicing: a tuple of the items picked
            parts = (node.slice.lower, node.slice.upper, node.slice.step)
            bounds = [
                None if p is None else self.require_constant(self.expr(p), "tuple slice bounds")
                for p in parts
            ]
            picked = range(len(kind.elems))[slice(*bounds)]
            return self.tuple_value([self.tuple_index(base, i) for i in picked])
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
        """How ``for`` walks ``iterable`` (see ``Iteration``)."""
        if isinstance(iterable, Range):
            return Iteration(self.range_length(iterable), lambda i: self.range_item(iterable, i))
        if isinstance(iterable, ModuleRef):
            children = iterable.module._modules.items()
            return Iteration(unrolled=[ModuleRef(m, iterable.qualified(k)) for k, m in children])
        if isinstance(iterable, SugarTuple):
            return Iteration(unrolled=list(iterable.items))
        if isinstance(iterable, PyObj) and isinstance(iterable.obj, (tuple, list)):
            return Iteration(unrolled=[PyObj(v) for v in iterable.obj])
        if isinstance(iterable, Enumerate):
            return self.enumerated(iterable, node)
        if isinstance(iterable, Zip):
            return self.zipped(iterable, node)
        return self.value_iteration(self.materialize(iterable), node)

    def range_item(self, r: Range, i) -> Value:
        if self.known(r.start) == 0 and r.step_value == 1:
            return i
        scaled = i if r.step_value == 1 else self.prim("prim::mul", [i, r.step], T.IntType)
        return self.prim("prim::add", [r.start, scaled], T.IntType)

    def enumerated(self, iterable: Enumerate, node) -> Iteration:
        inner = self.iteration(iterable.inner, node)
        start = iterable.start
        if inner.unrolled is not None:
            items = enumerate(inner.unrolled, start)
            return Iteration(unrolled=[SugarTuple([self.constant(i), v]) for i, v in items])

        def pair(i):
            shifted = self.prim("prim::add", [i, self.constant(start)], T.IntType)
            return SugarTuple([i if start == 0 else shifted, inner.item(i)])

        return Iteration(inner.trip, pair)

    def zipped(self, iterable: Zip, node) -> Iteration:
        parts = [self.iteration(v, node) for v in iterable.items]
        if all(p.unrolled is not None for p in parts):
            rows = zip(*(p.unrolled for p in parts))
            return Iteration(unrolled=[SugarTuple(list(row)) for row in rows])
        if any(p.unrolled is not None for p in parts):
            raise self.source.not_supported("zip of modules with lists isn't supported", node)
        trip = parts[0].trip
        for other in parts[1:]:
            trip = self.prim("prim::min", [trip, other.trip], T.IntType)
        return Iteration(trip, lambda i: SugarTuple([p.item(i) for p in parts]))

    def value_iteration(self, value, node) -> Iteration:
        kind = value.type()
        if isinstance(kind, T.ListType):
            trip = self.prim("prim::len", [value], T.IntType)
            return Iteration(trip, lambda i: self.prim("prim::ListIndex", [value, i], kind.elem))
        if isinstance(kind, T.TupleType):
            return Iteration(unrolled=[self.tuple_index(value, i) for i in range(len(kind.elems))])
        if isinstance(kind, T.DictType):  # iterates over the keys, as Python does
            keys = self.prim("prim::DictKeys", [value], T.ListType(kind.key))
            return self.value_iteration(keys, node)
        if isinstance(kind, T.TensorType):
            trip = self.prim("prim::size", [value, self.constant(0)], T.IntType)
            dim = self.constant(0)
            return Iteration(trip, lambda i: self.call_op("select", [value, dim, i], {}))
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
        return self.comprehension(node, [node.elt])

    # TorchScript compiles a generator expression as the list comprehension (sum(x for ...))
    expr_GeneratorExp = expr_ListComp  # noqa: N815

    def expr_DictComp(self, node, wanted=None):  # noqa: N802
        return self.comprehension(node, [node.key, node.value])

    def comprehension(self, node, parts: list):
        """``[e for t in it]`` (``parts`` [e]) or ``{k: v for t in it}`` ([k, v]): unrolled
        over modules and tuples, else a ``prim::Loop`` carrying the growing list or dict."""
        refused = None
        if len(node.generators) != 1:
            refused = "Only a single generator is currently supported"
        elif node.generators[0].ifs or node.generators[0].is_async:
            refused = "Comprehension ifs are not supported yet"
        if refused is not None:  # TorchScript's words, at the comprehension's first character
            where = ast.Constant(None, lineno=node.lineno, col_offset=node.col_offset)
            where.end_lineno, where.end_col_offset = node.lineno, node.col_offset + 1
            raise self.source.not_supported(refused, where)
        gen = node.generators[0]
        plan = self.iteration(self.expr(gen.iter), gen.iter)
        saved = dict(self.env)
        dict_ = len(parts) == 2
        try:
            if plan.unrolled is not None:
                items = []
                for item in plan.unrolled:
                    self.assign(gen.target, item)
                    items.append([self.value(p) for p in parts])
                return self._collection(items, dict_)
            result = self._collection([], dict_)
            loop = self.graph.insert(
                "prim::Loop", [plan.trip, self.constant(True), result], num_outputs=0
            )
            body = loop.addBlock()
            body.addInput("i", T.IntType)
            carried = body.addInput("acc", result.type())
            with self.graph.insert_point_guard(body):
                self.assign(gen.target, plan.item(body.inputs()[0]))
                element = [self.value(p) for p in parts]
                if dict_:
                    kind = T.DictType(element[0].type(), element[1].type())
                    grown = self.prim("prim::DictSet", [carried, *element], kind)
                else:
                    kind = T.ListType(element[0].type())
                    grown = self.prim("prim::add", [carried, self.list_value(element)], kind)
                body.registerOutput(self.constant(True))
                body.registerOutput(grown)
            for value in (result, carried):
                value.setType(kind)
            return loop.addOutput(kind)
        finally:
            self.env = saved

    def _collection(self, items: list, dict_: bool):
        """The list of the items' single values, or the dict of their (key, value) pairs."""
        if not dict_:
            return self.list_value([e for (e,) in items])  # [] is List[Tensor], as TorchScript
        pairs = [self.materialize(v) for pair in items for v in pair]
        if not pairs:
            return self.prim("prim::DictConstruct", [], T.DictType(T.StrType, T.Tensor))
        keys, values = ([v.type() for v in pairs[i::2]] for i in (0, 1))
        kind = T.DictType(T._common(keys), T._common(values))
        return self.prim("prim::DictConstruct", pairs, kind)
