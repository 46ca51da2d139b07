"""IR graph -> ONNX nodes: one walk over the graph, prims here, ops through the mapping table.

Each IR value maps to what the rules work with: a ``V`` for tensors and for sizes known only
at run time (0-d int64 tensors, from ``prim::size``), Python values for constants, Python lists
and tuples for lists of tensors, a 1-D int64 ``V`` for an ``int[]`` with run-time entries. Sizes
stay computed in the ONNX graph, so a model exported at one size runs at others where its
trace kept the size symbolic.
"""

from __future__ import annotations

from ember import _dtype as dt
from ember._tensor import Tensor

from .. import types as T
from ..ops import PREFIX, mutates
from ..prims import PRIMS
from .builder import GraphBuilder, V, static_int
from .errors import OnnxExporterError, UnsupportedOperatorError
from .symbolic import recurrent
from .table import TABLE, UNMAPPED


class Converter:
    """Converts one IR graph into ``builder``'s nodes.

    ``attribute``: name -> V for ``prim::GetAttr`` (initializers or graph inputs, made by the
    caller); ``inputs``: the V of each graph input.
    """

    def __init__(self, builder: GraphBuilder, attribute):
        self.g = builder
        self.attribute = attribute
        self.env: dict = {}

    def run(self, graph, inputs: list[V]) -> list:
        for value, v in zip(graph.inputs(), inputs):
            self.env[value] = v
        for node in graph.nodes():
            self.g.scope = node.scopeName()
            self.g.kind = node.kind()
            self.g.node = node
            try:
                self._convert(node)
            except OnnxExporterError as error:
                if node.sourceRange() and len(error.args) == 1:
                    error.args = (f"{error.args[0]}\n    (node defined in {node.sourceRange()})",)
                raise
        return [self.env[v] for v in graph.outputs()]

    def _convert(self, node) -> None:
        if node.blocks():
            raise UnsupportedOperatorError(node.kind(), self.g.opset, None)
        handler = _PRIMS.get(node.kind())
        if handler is not None:
            handler(self, node)
        elif node.kind().startswith("prim::"):
            self._prim_arithmetic(node)
        else:
            self._op(node)

    # ---- op-table ops --------------------------------------------------------------------
    def _op(self, node) -> None:
        kind = node.kind()
        op = node.op()
        base = op.inplace_of or op
        name = base.name if kind.startswith(PREFIX) else kind
        rule = TABLE.get(name)
        if rule is None:
            error = UnsupportedOperatorError(kind, self.g.opset, None)
            if name in UNMAPPED:
                error.args = (f"{error.args[0]} ({UNMAPPED[name]})",)
            raise error
        args = [self.env[v] for v in node.inputs()]
        result = rule(self.g, *args)
        outputs = node.outputs()
        if len(outputs) == 1 and not isinstance(outputs[0].type(), T.ListType):
            result = (result,)
        elif len(outputs) == 1:
            result = (list(result),)
        for value, produced in zip(outputs, result):
            self.env[value] = self._typed(value, produced)
        if mutates(op):
            # a write: later readers of the argument see the result
            self.env[node.inputsAt(0)] = self.env[outputs[0]]

    def _typed(self, value, produced):
        """Give the rule's result the traced dtype and sizes (casting when they differ)."""
        type_ = value.type()
        if not isinstance(produced, V) or not isinstance(type_, T.TensorType):
            return produced
        if type_.dtype() is not None and produced.dtype is not type_.dtype():
            produced = self.g.cast(produced, type_.dtype())
        if type_.sizes() is not None:
            produced.sizes = type_.sizes()
        return produced

    # ---- prims ---------------------------------------------------------------------------
    def _constant(self, node) -> None:
        value = node["value"]
        out = node.output()
        if isinstance(value, Tensor):
            scope = node.scopeName()
            hint = f"{scope}.constant" if scope else "constant"
            value = self.g.const_tensor(value, out.debugName() if out.hasDebugName() else hint)
        self.env[out] = value

    def _get_attr(self, node) -> None:
        self.env[node.output()] = self.attribute(node["name"])

    def _list(self, node) -> None:
        items = [self.env[v] for v in node.inputs()]
        out = node.output()
        elem = getattr(out.type(), "elem", None)
        if elem == T.IntType and any(isinstance(x, V) for x in items):
            items = self.g.ints(items)
        self.env[out] = items

    def _tuple(self, node) -> None:
        self.env[node.output()] = tuple(self.env[v] for v in node.inputs())

    def _unpack(self, node) -> None:
        items = self.env[node.input()]
        if isinstance(items, V):  # an int[] computed at run time
            items = [self.g.size_of_list(items, i) for i in range(len(node.outputs()))]
        for value, item in zip(node.outputs(), items):
            self.env[value] = self._typed(value, item)

    def _index(self, node) -> None:
        items, index = (self.env[v] for v in node.inputs())
        if isinstance(index, V) or isinstance(items, V):
            raise self.g.unsupported("indexing a list with a run-time index")
        self.env[node.output()] = items[index]

    def _size(self, node) -> None:
        tensor, dim = (self.env[v] for v in node.inputs())
        if isinstance(dim, V):
            raise self.g.unsupported("a run-time dimension index")
        out = self.g.size(tensor, dim)
        sizes = node.inputsAt(0).type().sizes()
        out.traced = sizes[dim] if sizes is not None and isinstance(sizes[dim], int) else None
        self.env[node.output()] = out

    def _numel(self, node) -> None:
        self.env[node.output()] = self.g.op("Size", self.env[node.input()], sizes=())

    def _dim(self, node) -> None:
        self.env[node.output()] = self.env[node.input()].rank

    def _static(self, node) -> None:
        tensor = self.env[node.input()]
        facts = {"prim::dtype": tensor.dtype, "prim::device": node.input().type().device()}
        self.env[node.output()] = facts[node.kind()]

    def _prim_arithmetic(self, node) -> None:
        """Integer arithmetic on sizes: folded when every input is known, else ONNX ops."""
        kind = node.kind()
        spec = PRIMS.get(kind)
        args = [self.env[v] for v in node.inputs()]
        if spec is None or spec.run is None:
            raise UnsupportedOperatorError(kind, self.g.opset, None)
        if not any(isinstance(a, V) for a in args):
            self.env[node.output()] = spec.run(*args)
            return
        handler = _SCALAR_OPS.get(kind)
        if handler is None:
            raise UnsupportedOperatorError(kind, self.g.opset, None)
        out = handler(self.g, *args)
        traced = [static_int(a) for a in args]
        if None not in traced:
            out.traced = spec.run(*traced)
        self.env[node.output()] = out


def _scalars(g: GraphBuilder, *args) -> list[V]:
    return [g.scalar(a, dt.int64) for a in args]


def _binary(op_type: str):
    def handler(g, a, b):
        return g.op(op_type, *_scalars(g, a, b), sizes=())

    return handler


def _floordiv(g, a, b):
    """Python's floor division of int64 scalars: ONNX ``Div`` truncates, so subtract the
    remainder first (``Mod`` with fmod=0 has the divisor's sign, as Python's ``%``)."""
    a, b = _scalars(g, a, b)
    rest = g.op("Mod", a, b, fmod=0)
    return g.op("Div", g.op("Sub", a, rest), b, sizes=())


def _compare(op_type: str, negate: bool = False):
    def handler(g, a, b):
        out = g.op(op_type, *_scalars(g, a, b), dtype=dt.bool_, sizes=())
        return g.op("Not", out) if negate else out

    return handler


_SCALAR_OPS = {
    "prim::add": _binary("Add"),
    "prim::sub": _binary("Sub"),
    "prim::mul": _binary("Mul"),
    "prim::floordiv": _floordiv,
    "prim::mod": lambda g, a, b: g.op("Mod", *_scalars(g, a, b), fmod=0),
    "prim::min": _binary("Min"),
    "prim::max": _binary("Max"),
    "prim::neg": lambda g, a: g.op("Neg", g.scalar(a, dt.int64)),
    "prim::int": lambda g, a: g.scalar(a, dt.int64),
    "prim::float": lambda g, a: g.scalar(a, dt.float64),
    "prim::eq": _compare("Equal"),
    "prim::ne": _compare("Equal", negate=True),
    "prim::lt": _compare("Less"),
    "prim::le": _compare("LessOrEqual"),
    "prim::gt": _compare("Greater"),
    "prim::ge": _compare("GreaterOrEqual"),
}


def _multi(rule):
    """A prim written by ``rule(g, *inputs)``, one ONNX value per output (jit/packed.py's:
    their values stand for packed rows, so the traced sizes are not theirs)."""

    def handler(self, node) -> None:
        readers = {use.user.kind() for use in node.outputs()[0].uses()} - recurrent.PACKED.keys()
        if node.kind() != "prim::PadPacked" and readers:
            raise self.g.unsupported(
                f"packed rows read by {sorted(readers)[0]} (ONNX holds the padded batch in "
                "their place: unpack them with pad_packed_sequence)"
            )
        produced = rule(self.g, *(self.env[v] for v in node.inputs()))
        for value, v in zip(node.outputs(), produced):
            self.env[value] = v

    return handler


_PRIMS = {
    **{kind: _multi(rule) for kind, rule in recurrent.PACKED.items()},
    "prim::Constant": Converter._constant,
    "prim::GetAttr": Converter._get_attr,
    "prim::ListConstruct": Converter._list,
    "prim::TupleConstruct": Converter._tuple,
    "prim::ListUnpack": Converter._unpack,
    "prim::TupleUnpack": Converter._unpack,
    "prim::TupleIndex": Converter._index,
    "prim::ListIndex": Converter._index,
    "prim::size": Converter._size,
    "prim::numel": Converter._numel,
    "prim::dim": Converter._dim,
    "prim::dtype": Converter._static,
    "prim::device": Converter._static,
}
