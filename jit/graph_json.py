"""Graphs as JSON (the archive's form), and back, trusting nothing on the way in.

Values are numbered in definition order; a node lists its input numbers, its outputs (debug
name and type), its attributes, nested blocks, scope and source location. Constants are JSON
with tags for what JSON lacks (tuples, dtypes, devices, non-finite floats, tensors by key in
the archive's tensor file). Reading checks every field's type, every reference and, through
``Graph.lint``, every op name and arity: a malformed graph raises ``GraphFormatError``, and
nothing in it is ever evaluated.
"""

from __future__ import annotations

import math

from ember import _dtype as dt
from ember._device import device as Device
from ember._tensor import Tensor

from . import types as T
from .ir import Graph, GraphError
from .prims import PRIMS

_MAX_TEXT = 4096  # scope and source strings: informative only


class GraphFormatError(ValueError):
    """A serialized graph that is malformed or refers to what does not exist."""


# ---- writing ------------------------------------------------------------------------------------
class GraphWriter:
    """Graphs to JSON; tensor constants go to ``self.tensors`` (key -> tensor)."""

    def __init__(self):
        self.tensors: dict = {}

    def graph(self, graph: Graph) -> dict:
        for node in graph.all_nodes():
            if _in_process(node.kind()):
                where = node.sourceRange() or "no source location"
                callee = node.inputsAt(0).node()["value"]
                raise RuntimeError(
                    f"ember.jit.save: can't save {node.kind()} ({where}): it calls the Python "
                    f"function {callee!r} (@ember.jit.ignore), and archives hold no code. Use "
                    "@ember.jit.unused, or make the function scriptable"
                )
        ids: dict = {}
        inputs = [self.define(v, ids) for v in graph.inputs()]
        nodes = [self.node(n, ids) for n in graph.nodes()]
        return {"inputs": inputs, "nodes": nodes, "outputs": [ids[v] for v in graph.outputs()]}

    def define(self, value, ids: dict) -> dict:
        ids[value] = len(ids)
        return {"name": value._debug_name, "type": value.type().to_json()}

    def node(self, node, ids: dict) -> dict:
        entry = {"kind": node.kind(), "inputs": [ids[v] for v in node.inputs()]}
        if node.attributeNames():
            entry["attrs"] = {k: self.constant(node[k], node) for k in node.attributeNames()}
        if node.blocks():
            entry["blocks"] = [self.block(b, ids) for b in node.blocks()]
        entry["outputs"] = [self.define(v, ids) for v in node.outputs()]
        if node.scopeName():
            entry["scope"] = node.scopeName()
        if node.sourceRange():
            entry["source"] = node.sourceRange()
        return entry

    def block(self, block, ids: dict) -> dict:
        inputs = [self.define(v, ids) for v in block.inputs()]
        nodes = [self.node(n, ids) for n in block.nodes()]
        return {"inputs": inputs, "nodes": nodes, "outputs": [ids[v] for v in block.outputs()]}

    def constant(self, value, node):
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else {"float": str(value)}
        if isinstance(value, list):
            return [self.constant(v, node) for v in value]
        if isinstance(value, complex):
            return {"complex": [self.constant(value.real, node), self.constant(value.imag, node)]}
        if isinstance(value, tuple):
            return {"tuple": [self.constant(v, node) for v in value]}
        if isinstance(value, dt.dtype):
            return {"dtype": value.name}
        if isinstance(value, Device):
            return {"device": str(value)}
        if isinstance(value, Tensor):
            key = f"constants.{len(self.tensors)}"
            self.tensors[key] = value
            return {"tensor": key}
        raise TypeError(
            f"ember.jit.save: can't save a constant of type {type(value).__name__} in node "
            f"{node.kind()} ({node.sourceRange() or 'no source location'}); only tensors, "
            "numbers, strings, dtypes, devices and lists/tuples of them are saved"
        )


# ---- reading ------------------------------------------------------------------------------------
class GraphReader:
    """JSON to graphs; ``tensors`` maps keys to the archive's constant tensors."""

    def __init__(self, tensors: dict, max_nodes: int = 1_000_000):
        self.tensors = tensors
        self.budget = max_nodes

    def graph(self, data) -> Graph:
        data = _dict(data, "graph", {"inputs", "nodes", "outputs"})
        graph = Graph()
        values: list = []
        for entry in _list(data["inputs"], "graph inputs"):
            name, type_ = self.declared(entry)
            values.append(graph.addInput(name, type_))
        self.nodes(graph, graph.block(), data["nodes"], values)
        for index in _list(data["outputs"], "graph outputs"):
            graph.registerOutput(self.ref(values, index))
        try:
            graph.lint()
        except GraphError as exc:
            raise GraphFormatError(str(exc)) from None
        return graph

    def nodes(self, graph: Graph, block, entries, values: list) -> None:
        for entry in _list(entries, "nodes"):
            self.budget -= 1
            if self.budget < 0:
                raise GraphFormatError("the graph has more nodes than any ember saves")
            block.appendNode(self.node(graph, entry, values))

    def node(self, graph: Graph, entry, values: list):
        allowed = {"kind", "inputs", "outputs", "attrs", "blocks", "scope", "source"}
        entry = _dict(entry, "node", allowed, required={"kind", "inputs", "outputs"})
        kind = entry["kind"]
        if not isinstance(kind, str) or len(kind) > 200:
            raise GraphFormatError(f"malformed node kind {kind!r}")
        if _in_process(kind):
            raise GraphFormatError(f"unknown prim '{kind}' (archives never call Python)")
        inputs = [self.ref(values, i) for i in _list(entry["inputs"], f"{kind} inputs")]
        node = graph.create(kind, inputs, 0)
        node.setScope(_text(entry.get("scope", ""), "scope"))
        node.setSourceRange(_text(entry.get("source", ""), "source"))
        attrs = entry.get("attrs", {})
        if not isinstance(attrs, dict):
            raise GraphFormatError(f"malformed {kind} attributes")
        for name, raw in attrs.items():
            node.setAttr(name, self.attribute(kind, name, raw))
        self.check_attrs(node)
        for block_entry in _list(entry.get("blocks", []), f"{kind} blocks"):
            block_entry = _dict(block_entry, "block", {"inputs", "nodes", "outputs"})
            block = node.addBlock()
            for param in _list(block_entry["inputs"], "block inputs"):
                values.append(block.addInput(*self.declared(param)))
            self.nodes(graph, block, block_entry["nodes"], values)
            for index in _list(block_entry["outputs"], "block outputs"):
                block.registerOutput(self.ref(values, index))
        for output in _list(entry["outputs"], f"{kind} outputs"):
            name, type_ = self.declared(output)
            values.append(node.addOutput(type_).setDebugName(name))
        return node

    def declared(self, entry) -> tuple:
        entry = _dict(entry, "value", {"name", "type"})
        name = entry["name"]
        if name is not None and (not isinstance(name, str) or len(name) > 500):
            raise GraphFormatError(f"malformed value name {name!r}")
        try:
            return name, T.from_json(entry["type"])
        except (ValueError, RuntimeError, TypeError) as exc:
            raise GraphFormatError(f"malformed value type: {exc}") from None

    def ref(self, values: list, index):
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(values):
            raise GraphFormatError(f"reference to undefined value {index!r}")
        return values[index]

    def check_attrs(self, node) -> None:
        spec = PRIMS.get(node.kind())
        expected = set(spec.attrs) if spec is not None else set()
        if set(node.attributeNames()) != expected:
            raise GraphFormatError(
                f"{node.kind()}: attributes {sorted(node.attributeNames())}, expected "
                f"{sorted(expected)}"
            )
        if node.kind() == "prim::GetAttr" and not isinstance(node["name"], str):
            raise GraphFormatError("prim::GetAttr: the name must be a string")

    def attribute(self, kind: str, name: str, raw):
        try:
            return self.constant(raw, 0)
        except RecursionError:
            raise GraphFormatError(f"{kind}: attribute {name} is nested too deeply") from None

    def constant(self, raw, depth: int):
        if depth > 32:
            raise GraphFormatError("a constant is nested too deeply")
        if raw is None or isinstance(raw, (bool, int, str, float)):
            return raw
        if isinstance(raw, list):
            return [self.constant(v, depth + 1) for v in raw]
        if not isinstance(raw, dict) or len(raw) != 1:
            raise GraphFormatError(f"malformed constant {str(raw)[:80]}")
        ((tag, body),) = raw.items()
        if tag == "tuple" and isinstance(body, list):
            return tuple(self.constant(v, depth + 1) for v in body)
        if tag == "float" and body in ("inf", "-inf", "nan"):
            return float(body)
        if tag == "complex" and isinstance(body, list) and len(body) == 2:
            parts = [self.constant(v, depth + 1) for v in body]
            if all(isinstance(p, (int, float)) and not isinstance(p, bool) for p in parts):
                return complex(*parts)
        if tag == "dtype" and body in T.DTYPES:
            return T.DTYPES[body]
        if tag == "device" and isinstance(body, str):
            try:
                return Device(body)
            except (RuntimeError, TypeError, ValueError) as exc:
                raise GraphFormatError(f"malformed device constant: {exc}") from None
        if tag == "tensor" and isinstance(body, str) and body in self.tensors:
            return self.tensors[body]
        raise GraphFormatError(f"malformed constant {str(raw)[:80]}")


def _in_process(kind: str) -> bool:
    """Prims that only exist in a running process (a call into Python)."""
    spec = PRIMS.get(kind)
    return spec is not None and spec.extra.get("in_process", False)


def _dict(data, what: str, allowed: set, required: set | None = None) -> dict:
    if not isinstance(data, dict):
        raise GraphFormatError(f"malformed {what}: expected an object")
    extra = set(data) - allowed
    missing = (allowed if required is None else required) - set(data)
    if extra or missing:
        raise GraphFormatError(
            f"malformed {what}: unexpected {sorted(extra)} missing {sorted(missing)}"
        )
    return data


def _list(data, what: str) -> list:
    if not isinstance(data, list):
        raise GraphFormatError(f"malformed {what}: expected a list")
    return data


def _text(data, what: str) -> str:
    if not isinstance(data, str) or len(data) > _MAX_TEXT:
        raise GraphFormatError(f"malformed {what}")
    return data
