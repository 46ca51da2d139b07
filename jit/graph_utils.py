"""Graph-wide utilities: copying a graph and checking its invariants (``Graph.lint``)."""

from __future__ import annotations

from .ir import Block, Graph, GraphError, Node, Use, Value
from .ops import UnknownOpError, resolve
from .prims import PRIMS


def copy_graph(graph: Graph) -> Graph:
    """A deep copy: new nodes and values, same attributes (constant tensors are shared)."""
    new = Graph()
    mapping: dict = {}
    for value in graph.inputs():
        mapping[value] = new.addInput(value._debug_name, value._type)
    _copy_nodes(graph.block(), new.block(), new, mapping)
    for value in graph.outputs():
        new.registerOutput(mapping[value])
    return new


def _copy_nodes(source: Block, target: Block, graph: Graph, mapping: dict) -> None:
    for node in source._nodes:
        target.appendNode(copy_node(node, graph, mapping))


def copy_node(node: Node, graph: Graph, mapping: dict) -> Node:
    """A copy of ``node`` (and its blocks) for ``graph``, inputs looked up in ``mapping``; the
    copy's outputs are added to ``mapping``. The copy is not placed in a block."""
    made = graph.create(node._kind, [mapping[v] for v in node._inputs], 0, **node._attrs)
    made._scope, made._source = node._scope, node._source
    for value in node._outputs:
        out = made.addOutput(value._type).setDebugName(value._debug_name)
        mapping[value] = out
    for block in node._blocks:
        inner = made.addBlock()
        for param in block.inputs():
            mapping[param] = inner.addInput(param._debug_name, param._type)
        _copy_nodes(block, inner, graph, mapping)
        for value in block.outputs():
            inner.registerOutput(mapping[value])
    return made


def all_values(graph: Graph):
    """Every value: graph inputs, then node outputs and block parameters in program order."""
    yield from graph.inputs()
    for node in graph.all_nodes():
        for block in node.blocks():
            yield from block.inputs()
        yield from node.outputs()


def lint(graph: Graph) -> None:
    """Raise GraphError unless every invariant of the IR holds."""
    _Linter(graph).block(graph.block(), set())


class _Linter:
    def __init__(self, graph: Graph):
        self.graph = graph

    def fail(self, node: Node | None, message: str) -> None:
        where = f" (at {node.kind()})" if node is not None else ""
        raise GraphError(f"graph lint: {message}{where}")

    def block(self, block: Block, visible: set) -> None:
        visible = set(visible)
        for value in block.inputs():
            self.defined(block._param, value)
            visible.add(value)
        for node in block._nodes:
            if node._owner is not block:
                self.fail(node, "a node's owning block is not the block that lists it")
            if node._graph is not self.graph:
                self.fail(node, "a node belongs to another graph")
            self.uses(node, visible)
            self.meaning(node)
            for inner in node._blocks:
                if inner._owner is not node:
                    self.fail(node, "a nested block's owner is wrong")
                self.block(inner, visible)
            for value in node._outputs:
                self.defined(node, value)
                visible.add(value)
        self.uses(block._return, visible)

    def defined(self, node: Node, value: Value) -> None:
        if value._node is not node or node._outputs[value._offset] is not value:
            self.fail(node, f"value %{value.debugName()} does not know its defining node")
        for use in value._uses:
            if use.offset >= len(use.user._inputs) or use.user._inputs[use.offset] is not value:
                self.fail(node, f"%{value.debugName()} lists a use that does not use it")

    def uses(self, node: Node, visible: set) -> None:
        for i, value in enumerate(node._inputs):
            if value not in visible:
                self.fail(node, f"%{value.debugName()} is used before it is defined")
            if Use(node, i) not in value._uses:
                self.fail(node, f"input {i} (%{value.debugName()}) does not list this use")

    def meaning(self, node: Node) -> None:
        kind = node._kind
        if kind.startswith("prim::"):
            spec = PRIMS.get(kind)
            if spec is None:
                self.fail(node, f"unknown prim '{kind}'")
            missing = [a for a in spec.attrs if a not in node._attrs]
            if missing:
                self.fail(node, f"missing attributes {missing}")
            if spec.outputs is not None and len(node._outputs) != spec.outputs:
                self.fail(node, f"expected {spec.outputs} outputs, got {len(node._outputs)}")
            self.control(node)
            return
        try:
            op = resolve(kind)
        except UnknownOpError as exc:
            self.fail(node, str(exc))
        if len(node._inputs) != len(op.schema.args):
            self.fail(
                node,
                f"{len(node._inputs)} inputs for a schema of {len(op.schema.args)} arguments "
                f"({op.schema.text})",
            )
        if node._blocks:
            self.fail(node, "op nodes have no blocks")

    def control(self, node: Node) -> None:
        kind, blocks = node._kind, node._blocks
        if kind == "prim::If":
            if len(node._inputs) != 1 or len(blocks) != 2:
                self.fail(node, "prim::If takes one condition and two blocks")
            for block in blocks:
                if len(block.outputs()) != len(node._outputs) or block.inputs():
                    self.fail(node, "each prim::If block returns one value per output")
        elif kind == "prim::Loop":
            carried = len(node._inputs) - 2
            if carried < 0 or len(blocks) != 1:
                self.fail(node, "prim::Loop takes (max_trip_count, condition, *carried), 1 block")
            body = blocks[0]
            if len(body.inputs()) != carried + 1 or len(body.outputs()) != carried + 1:
                self.fail(node, "a prim::Loop body maps (i, *carried) to (cond, *carried)")
            if len(node._outputs) != carried:
                self.fail(node, "prim::Loop has one output per carried value")
        elif blocks:
            self.fail(node, "only prim::If and prim::Loop have blocks")
