"""The graph IR: typed values in SSA form, nodes in blocks, structured control flow.

The shape of TorchScript's IR, and its method names (``graph.nodes()``, ``node.kind()``,
``value.type()``, ``value.replaceAllUsesWith(...)``), so that code inspecting PyTorch graphs reads
the same here:

- A ``Graph`` owns one top ``Block``. A block is an ordered list of ``Node``s, with parameters
  (the outputs of its ``prim::Param`` node: the graph's inputs, or a loop body's iteration
  variables) and results (the inputs of its ``prim::Return`` node).
- A ``Node`` has a kind (``"ember::add"`` for op-table ops, ``"myns::op"`` for library ops,
  ``"prim::..."`` for the structural vocabulary of ``jit.prims``), input values, output values,
  attributes (``prim::Constant``'s value, ``prim::GetAttr``'s name) and, for ``prim::If`` and
  ``prim::Loop``, nested blocks. Op nodes take every schema argument positionally, as
  ``Op.__call__`` does, so a node is exactly one call.
- A ``Value`` is defined once (by a node output or a block parameter), carries a ``jit.types``
  type and knows its uses.

Nothing here runs anything: execution is ``jit.codegen``, printing ``jit.printer``, validation
``Graph.lint()``.
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

from . import types as T


class Use(NamedTuple):
    """``user.inputs()[offset]`` is the used value."""

    user: Node
    offset: int


class Value:
    """An SSA value: defined once, used by any number of node inputs."""

    __slots__ = ("_debug_name", "_node", "_offset", "_type", "_unique", "_uses")

    def __init__(self, node: Node, offset: int, type_: T.Type, unique: int):
        self._node = node
        self._offset = offset
        self._type = type_
        self._unique = unique
        self._debug_name: str | None = None
        self._uses: list[Use] = []

    def node(self) -> Node:
        """The defining node (``prim::Param`` for block parameters and graph inputs)."""
        return self._node

    def offset(self) -> int:
        return self._offset

    def type(self) -> T.Type:
        return self._type

    def setType(self, type_: T.Type) -> Value:  # noqa: N802 - TorchScript's name
        self._type = type_
        return self

    def unique(self) -> int:
        return self._unique

    def debugName(self) -> str:  # noqa: N802
        return self._debug_name if self._debug_name is not None else str(self._unique)

    def setDebugName(self, name: str | None) -> Value:  # noqa: N802
        self._debug_name = name
        return self

    def hasDebugName(self) -> bool:  # noqa: N802
        return self._debug_name is not None

    def uses(self) -> list[Use]:
        return list(self._uses)

    def replaceAllUsesWith(self, other: Value) -> None:  # noqa: N802
        for user, offset in list(self._uses):
            user._inputs[offset] = other
            other._uses.append(Use(user, offset))
        self._uses.clear()

    def replaceAllUsesAfterNodeWith(self, node: Node, other: Value) -> None:  # noqa: N802
        """Replace the uses that come after ``node`` in program order (same block or nested)."""
        for user, offset in list(self._uses):
            if user.isAfter(node):
                user.replaceInput(offset, other)

    def __repr__(self) -> str:
        return f"%{self.debugName()} : {self._type}"


class Node:
    """One operation: kind, inputs, outputs, attributes, nested blocks."""

    __slots__ = (
        "_attrs",
        "_blocks",
        "_graph",
        "_inputs",
        "_kind",
        "_outputs",
        "_owner",
        "_scope",
        "_source",
    )

    def __init__(self, graph: Graph, kind: str):
        self._graph = graph
        self._kind = kind
        self._inputs: list[Value] = []
        self._outputs: list[Value] = []
        self._attrs: dict = {}
        self._blocks: list[Block] = []
        self._owner: Block | None = None
        self._scope = ""
        self._source = ""

    # ---- identity ----------------------------------------------------------------------------
    def kind(self) -> str:
        return self._kind

    def owningGraph(self) -> Graph:  # noqa: N802
        return self._graph

    def owningBlock(self) -> Block | None:  # noqa: N802
        return self._owner

    def scopeName(self) -> str:  # noqa: N802
        """The qualified name of the module whose forward recorded this node ('' at the top)."""
        return self._scope

    def setScope(self, scope: str) -> Node:  # noqa: N802
        self._scope = scope
        return self

    def sourceRange(self) -> str:  # noqa: N802
        """``file:line`` of the user code that made the call, when known."""
        return self._source

    def setSourceRange(self, source: str) -> Node:  # noqa: N802
        self._source = source
        return self

    # ---- inputs and outputs ------------------------------------------------------------------
    def inputs(self) -> list[Value]:
        return list(self._inputs)

    def outputs(self) -> list[Value]:
        return list(self._outputs)

    def inputsAt(self, i: int) -> Value:  # noqa: N802
        return self._inputs[i]

    def outputsAt(self, i: int) -> Value:  # noqa: N802
        return self._outputs[i]

    def input(self) -> Value:
        if len(self._inputs) != 1:
            raise RuntimeError(f"{self._kind} has {len(self._inputs)} inputs, not one")
        return self._inputs[0]

    def output(self) -> Value:
        if len(self._outputs) != 1:
            raise RuntimeError(f"{self._kind} has {len(self._outputs)} outputs, not one")
        return self._outputs[0]

    def addInput(self, value: Value) -> Value:  # noqa: N802
        value._uses.append(Use(self, len(self._inputs)))
        self._inputs.append(value)
        return value

    def replaceInput(self, i: int, value: Value) -> Value:  # noqa: N802
        old = self._inputs[i]
        old._uses.remove(Use(self, i))
        self._inputs[i] = value
        value._uses.append(Use(self, i))
        return old

    def replaceInputWith(self, old: Value, new: Value) -> None:  # noqa: N802
        for i, value in enumerate(self._inputs):
            if value is old:
                self.replaceInput(i, new)

    def removeInput(self, i: int) -> None:  # noqa: N802
        self._drop_uses()
        del self._inputs[i]
        self._add_uses()

    def removeAllInputs(self) -> None:  # noqa: N802
        self._drop_uses()
        self._inputs.clear()

    def _drop_uses(self) -> None:
        for i, value in enumerate(self._inputs):
            value._uses.remove(Use(self, i))

    def _add_uses(self) -> None:
        for i, value in enumerate(self._inputs):
            value._uses.append(Use(self, i))

    def addOutput(self, type_: T.Type = T.Tensor) -> Value:  # noqa: N802
        value = Value(self, len(self._outputs), type_, self._graph._next_unique())
        self._outputs.append(value)
        return value

    def eraseOutput(self, i: int) -> None:  # noqa: N802
        if self._outputs[i]._uses:
            raise RuntimeError(f"{self._kind}: output {i} still has uses")
        del self._outputs[i]
        for offset, value in enumerate(self._outputs):
            value._offset = offset

    # ---- attributes and blocks ---------------------------------------------------------------
    def attributeNames(self) -> list[str]:  # noqa: N802
        return list(self._attrs)

    def hasAttribute(self, name: str) -> bool:  # noqa: N802
        return name in self._attrs

    def __getitem__(self, name: str):
        return self._attrs[name]

    def setAttr(self, name: str, value) -> Node:  # noqa: N802
        self._attrs[name] = value
        return self

    def blocks(self) -> list[Block]:
        return list(self._blocks)

    def addBlock(self) -> Block:  # noqa: N802
        block = Block(self._graph, self)
        self._blocks.append(block)
        return block

    # ---- position ----------------------------------------------------------------------------
    def _index(self) -> int:
        if self._owner is None:
            raise RuntimeError(f"{self._kind} is not in a block")
        return self._owner._nodes.index(self)

    def insertBefore(self, other: Node) -> Node:  # noqa: N802
        """Insert this (unplaced) node just before ``other``."""
        block = other._owner
        block._nodes.insert(other._index(), self)
        self._owner = block
        return self

    def insertAfter(self, other: Node) -> Node:  # noqa: N802
        block = other._owner
        block._nodes.insert(other._index() + 1, self)
        self._owner = block
        return self

    def moveBefore(self, other: Node) -> None:  # noqa: N802
        self._owner._nodes.remove(self)
        self.insertBefore(other)

    def moveAfter(self, other: Node) -> None:  # noqa: N802
        self._owner._nodes.remove(self)
        self.insertAfter(other)

    def isAfter(self, other: Node) -> bool:  # noqa: N802
        """Program order: whether this node runs after ``other`` (nested blocks included)."""
        return _order_key(self) > _order_key(other)

    def isBefore(self, other: Node) -> bool:  # noqa: N802
        return _order_key(self) < _order_key(other)

    def destroy(self) -> None:
        """Remove the node; its outputs must be unused."""
        for value in self._outputs:
            if value._uses:
                users = ", ".join(use.user.kind() for use in value._uses)
                raise RuntimeError(
                    f"can't destroy {self._kind}: output %{value.debugName()} is used by {users}"
                )
        for block in self._blocks:
            block._return.removeAllInputs()
            for node in reversed(block._nodes):
                node._force_destroy()
        self.removeAllInputs()
        if self._owner is not None:
            self._owner._nodes.remove(self)
            self._owner = None

    def _force_destroy(self) -> None:
        for value in self._outputs:
            value._uses.clear()
        self.destroy()

    # ---- meaning (from the op table and the prim table) --------------------------------------
    def op(self):
        """The ``Op`` an op node calls, or None for ``prim::`` nodes."""
        from .ops import resolve

        return resolve(self._kind)

    def schema(self):
        op = self.op()
        return None if op is None else op.schema

    def isNondeterministic(self) -> bool:  # noqa: N802
        from .ops import is_nondeterministic

        return is_nondeterministic(self)

    def hasSideEffects(self) -> bool:  # noqa: N802
        from .ops import has_side_effects

        return has_side_effects(self)

    def __repr__(self) -> str:
        from .printer import node_text

        return node_text(self).rstrip()


def _order_key(node: Node) -> tuple:
    """Indices of the node and its enclosing nodes, outermost first: comparable program order."""
    key = []
    while node is not None and node._owner is not None:
        key.append(node._index())
        node = node._owner._owner
    return tuple(reversed(key))


class Block:
    """An ordered list of nodes with parameters and results."""

    __slots__ = ("_graph", "_nodes", "_owner", "_param", "_return")

    def __init__(self, graph: Graph, owner: Node | None):
        self._graph = graph
        self._owner = owner
        self._nodes: list[Node] = []
        self._param = Node(graph, "prim::Param")
        self._return = Node(graph, "prim::Return")
        self._param._owner = self._return._owner = self

    def nodes(self):
        return iter(list(self._nodes))

    def inputs(self) -> list[Value]:
        return self._param.outputs()

    def outputs(self) -> list[Value]:
        return self._return.inputs()

    def paramNode(self) -> Node:  # noqa: N802
        return self._param

    def returnNode(self) -> Node:  # noqa: N802
        return self._return

    def owningNode(self) -> Node | None:  # noqa: N802
        return self._owner

    def addInput(self, name: str | None = None, type_: T.Type = T.Tensor) -> Value:  # noqa: N802
        return self._param.addOutput(type_).setDebugName(name)

    def insertInput(self, i: int, name: str | None = None, type_: T.Type = T.Tensor) -> Value:  # noqa: N802
        """A new parameter at position ``i`` (the later ones move up by one)."""
        param = self._param
        value = Value(param, i, type_, self._graph._next_unique()).setDebugName(name)
        param._outputs.insert(i, value)
        for offset, later in enumerate(param._outputs):
            later._offset = offset
        return value

    def eraseInput(self, i: int) -> None:  # noqa: N802
        self._param.eraseOutput(i)

    def registerOutput(self, value: Value) -> int:  # noqa: N802
        self._return.addInput(value)
        return len(self._return._inputs) - 1

    def eraseOutput(self, i: int) -> None:  # noqa: N802
        self._return.removeInput(i)

    def appendNode(self, node: Node) -> Node:  # noqa: N802
        self._nodes.append(node)
        node._owner = self
        return node


class Graph:
    """A function body: inputs, nodes, outputs. ``str(graph)`` prints it like TorchScript."""

    def __init__(self):
        self._unique = 0
        self._block = Block(self, None)
        self._insert_block = self._block
        self._insert_before: Node | None = None  # None: at the end of _insert_block

    def _next_unique(self) -> int:
        self._unique += 1
        return self._unique - 1

    # ---- structure ---------------------------------------------------------------------------
    def block(self) -> Block:
        return self._block

    def inputs(self) -> list[Value]:
        return self._block.inputs()

    def outputs(self) -> list[Value]:
        return self._block.outputs()

    def nodes(self):
        return self._block.nodes()

    def all_nodes(self):
        """Every node, nested blocks included, in program order."""
        yield from _walk(self._block)

    def addInput(self, name: str | None = None, type_: T.Type = T.Tensor) -> Value:  # noqa: N802
        return self._block.addInput(name, type_)

    def eraseInput(self, i: int) -> None:  # noqa: N802
        self._block.eraseInput(i)

    def registerOutput(self, value: Value) -> int:  # noqa: N802
        return self._block.registerOutput(value)

    def eraseOutput(self, i: int) -> None:  # noqa: N802
        self._block.eraseOutput(i)

    def returnNode(self) -> Node:  # noqa: N802
        return self._block._return

    def paramNode(self) -> Node:  # noqa: N802
        return self._block._param

    # ---- building ----------------------------------------------------------------------------
    def create(self, kind: str, inputs=(), num_outputs: int = 1, **attrs) -> Node:
        """A new node, not yet in any block (``insertNode`` places it)."""
        node = Node(self, kind)
        for value in inputs:
            node.addInput(value)
        for _ in range(num_outputs):
            node.addOutput()
        node._attrs.update(attrs)
        return node

    def insertNode(self, node: Node) -> Node:  # noqa: N802
        """Place ``node`` at the insertion point (the end of the top block by default)."""
        if self._insert_before is not None:
            return node.insertBefore(self._insert_before)
        return self._insert_block.appendNode(node)

    def insert(self, kind: str, inputs=(), num_outputs: int = 1, **attrs) -> Node:
        return self.insertNode(self.create(kind, inputs, num_outputs, **attrs))

    def insertConstant(self, value, type_: T.Type | None = None) -> Value:  # noqa: N802
        node = self.insert("prim::Constant", value=value)
        return node.output().setType(type_ or T.type_of(value))

    def setInsertPoint(self, where) -> None:  # noqa: N802
        """Insert before node ``where``, or at the end of block ``where``."""
        if isinstance(where, Block):
            self._insert_block, self._insert_before = where, None
        else:
            self._insert_block, self._insert_before = where._owner, where

    @contextlib.contextmanager
    def insert_point_guard(self, where):
        saved = (self._insert_block, self._insert_before)
        self.setInsertPoint(where)
        try:
            yield
        finally:
            self._insert_block, self._insert_before = saved

    # ---- queries -----------------------------------------------------------------------------
    def findNode(self, kind: str, recurse: bool = True) -> Node | None:  # noqa: N802
        found = self.findAllNodes(kind, recurse)
        return found[0] if found else None

    def findAllNodes(self, kind: str, recurse: bool = True) -> list[Node]:  # noqa: N802
        nodes = self.all_nodes() if recurse else self._block._nodes
        return [n for n in nodes if n._kind == kind]

    def copy(self) -> Graph:
        from .graph_utils import copy_graph

        return copy_graph(self)

    def lint(self) -> None:
        """Check the invariants (definition before use, use lists, ownership); raises
        ``GraphError`` naming the first violation."""
        from .graph_utils import lint

        lint(self)

    def __str__(self) -> str:
        from .printer import graph_text

        return graph_text(self)

    def __repr__(self) -> str:
        return str(self)

    def str(self, print_source_locations: bool = True) -> str:
        from .printer import graph_text

        return graph_text(self, print_source_locations)


def _walk(block: Block):
    for node in block._nodes:
        yield node
        for inner in node._blocks:
            yield from _walk(inner)


class GraphError(RuntimeError):
    """A graph that breaks the IR's invariants (see ``Graph.lint``)."""
