"""Graphs as Python: the readable ``.code`` of a ScriptModule is also what runs.

Every name in the generated source is made here (sanitised debug names, ``ops``, ``self``,
``CONSTANTS``); constants the source cannot spell as a literal (tensors, generators) are read
from ``CONSTANTS``; attribute names that are not plain identifiers are string literals. So a
graph loaded from an untrusted archive can only produce calls of the op table and the prim
vocabulary, never code of its author's choosing.
"""

from __future__ import annotations

import itertools
import keyword
import linecache
import math
import re
from dataclasses import dataclass

import ember
from ember import _dtype as dt
from ember._device import device as Device

from .ops import PREFIX, resolve
from .prims import PRIMS
from .scalars import RUNTIME

_RESERVED = {"self", "ops", "ember", "CONSTANTS", "_raise", "_rt", "annotations"}
_COUNTER = itertools.count()
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Constants:
    """``CONSTANTS.c0``... in generated code."""

    def __init__(self):
        self.values: list = []

    def add(self, value) -> str:
        self.values.append(value)
        name = f"c{len(self.values) - 1}"
        setattr(self, name, value)
        return f"CONSTANTS.{name}"


class _Ops:
    """``ops.add``, ``ops.myns.fused``: the ops a graph calls, as plain attributes (fast)."""

    def __init__(self):
        self._names: set = set()

    def use(self, kind: str) -> str:
        op = resolve(kind)
        if kind.startswith(PREFIX):
            name = kind[len(PREFIX) :]
            setattr(self, name, op)
            return f"ops.{name}"
        namespace, name = kind.split("::")
        holder = getattr(self, namespace, None)
        if holder is None:
            holder = _Ops()
            setattr(self, namespace, holder)
        setattr(holder, name, op)
        return f"ops.{namespace}.{name}"


@dataclass
class GeneratedCode:
    """A graph's Python source and the function compiled from it."""

    source: str
    fn: object
    constants: list


def generate(graph, name: str = "forward", method: bool = True) -> GeneratedCode:
    """Python source for ``graph`` and the compiled function: ``fn(self, *inputs) -> tuple``
    (``fn(*inputs)`` when not ``method``)."""
    writer = _Writer(graph)
    # a function called ops (or _rt...) must not rebind the names its own body calls through
    name = f"{name}_fn" if name in _RESERVED else name
    lines = writer.function(name, method)
    source = "\n".join(lines) + "\n"
    filename = f"<ember.jit {name} {next(_COUNTER)}>"
    full = "from __future__ import annotations\n" + source
    namespace = {
        "ops": writer.ops,
        "ember": ember,
        "CONSTANTS": writer.constants,
        "_raise": PRIMS["prim::RaiseException"].extra["run"],
        "_rt": RUNTIME,
        "__name__": "ember.jit.generated",
    }
    code = compile(full, filename, "exec")
    linecache.cache[filename] = (len(full), None, full.splitlines(True), filename)
    exec(code, namespace)  # the source is ours: see the module docstring
    return GeneratedCode(source, namespace[name], writer.constants.values)


def _field(name: str) -> str:
    """An object's field name, checked: it is written into generated code."""
    if not _IDENTIFIER.match(name) or keyword.iskeyword(name):
        raise ValueError(f"malformed field name {name!r}")
    return name


def _method(name: str) -> str:
    """A method called through an interface slot, checked: public names only."""
    if name.startswith("_"):
        raise ValueError(f"malformed method name {name!r}")
    return _field(name)


class _Writer:
    def __init__(self, graph):
        self.graph = graph
        self.names: dict = {}
        self.taken: set = set(_RESERVED) | set(keyword.kwlist)
        self.inline: dict = {}  # value -> expression (constants)
        self.constants = _Constants()
        self.ops = _Ops()
        self.anonymous = 0

    # ---- names and expressions ---------------------------------------------------------------
    def name(self, value) -> str:
        found = self.names.get(value)
        if found is None:
            if value._debug_name is None:
                self.anonymous += 1
                base = f"_{self.anonymous - 1}"
            else:
                base = re.sub(r"[^A-Za-z0-9_]", "_", value._debug_name) or "_"
            if base[0].isdigit():
                base = "_" + base
            found, n = base, 0
            while found in self.taken:
                n += 1
                found = f"{base}_{n}"
            self.taken.add(found)
            self.names[value] = found
        return found

    def expr(self, value) -> str:
        return self.inline.get(value) or self.name(value)

    def literal(self, value) -> str:
        """Python source for a constant (CONSTANTS.cN when it has no literal)."""
        if value is None or isinstance(value, (bool, int, str)):
            return repr(value)
        if isinstance(value, float):
            return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
        if isinstance(value, complex):
            return f"complex({self.literal(value.real)}, {self.literal(value.imag)})"
        if isinstance(value, dt.dtype):
            return f"ember.{value.name}"
        if isinstance(value, Device):
            return f"ember.device({str(value)!r})"
        if isinstance(value, (list, tuple)) and len(value) <= 16:
            items = [self.literal(v) for v in value]
            if not any(i.startswith("CONSTANTS.") for i in items):
                if isinstance(value, list):
                    return f"[{', '.join(items)}]"
                return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
        return self.constants.add(value)

    # ---- statements --------------------------------------------------------------------------
    def function(self, name: str, method: bool) -> list:
        params = ["self"] if method else []
        params += [f"{self.name(v)}: {v.type().annotation()}" for v in self.graph.inputs()]
        outputs = self.graph.outputs()
        returns = ", ".join(v.type().annotation() for v in outputs) or "()"  # Tuple[()]: none
        lines = [f"def {name}({', '.join(params)}) -> Tuple[{returns}]:"]
        body: list = []
        self.block(self.graph.block(), "    ", body)
        results = ", ".join(self.expr(v) for v in outputs)
        body.append(f"    return ({results}{',' if len(outputs) == 1 else ''})")
        return lines + body

    def block(self, block, indent: str, out: list) -> None:
        for node in block.nodes():
            self.node(node, indent, out)

    def node(self, node, indent: str, out: list) -> None:
        kind = node.kind()
        if kind == "prim::Constant":
            self.inline[node.output()] = self.literal(node["value"])
            return
        if kind == "prim::If":
            return self.if_(node, indent, out)
        if kind == "prim::Loop":
            return self.loop(node, indent, out)
        targets = ", ".join(self.name(v) for v in node.outputs())
        args = [self.expr(v) for v in node.inputs()]
        if kind in ("prim::GetAttr", "prim::ModuleAttr", "prim::GetModule"):
            value = self.attribute(node["name"])
        elif kind == "prim::CallInterface":
            value = f"{self.attribute(node['name'])}.{_method(node['method'])}({', '.join(args)})"
        elif kind == "prim::GetObjAttr":
            value = f"{args[0]}.{_field(node['name'])}"
        elif kind == "prim::SetObjAttr":
            out.append(f"{indent}{args[0]}.{_field(node['name'])} = {args[1]}")
            return
        elif kind == "prim::SetTensorAttr":
            out.append(f"{indent}_rt.set_tensor(self, {node['name']!r}, {args[0]})")
            return
        elif kind == "prim::SetModule":
            out.append(f"{indent}_rt.set_module(self, {node['name']!r}, {args[0]})")
            return
        elif kind == "prim::SetModuleAttr":
            out.append(f"{indent}{self.attribute(node['name'])} = {args[0]}")
            return
        elif kind in ("prim::ListUnpack", "prim::TupleUnpack"):
            if not node.outputs():
                return
            out.append(f"{indent}{targets}, = {args[0]}")
            return
        elif kind.startswith("prim::"):
            value = PRIMS[kind].code(*args)
        else:
            value = f"{self.ops.use(kind)}({', '.join(args)})"
        out.append(f"{indent}{targets} = {value}" if targets else f"{indent}{value}")

    def attribute(self, qualified: str) -> str:
        text = "self"
        for part in qualified.split("."):
            plain = _IDENTIFIER.match(part) and not keyword.iskeyword(part)
            text = f"{text}.{part}" if plain else f"getattr({text}, {part!r})"
        return text

    def assign(self, targets, sources, indent: str, out: list) -> None:
        if targets:
            left = ", ".join(self.name(v) for v in targets)
            right = ", ".join(self.expr(v) for v in sources)
            out.append(f"{indent}{left}, = ({right},)")

    def if_(self, node, indent: str, out: list) -> None:
        then, other = node.blocks()
        out.append(f"{indent}if {self.expr(node.inputsAt(0))}:")
        self.branch(then, node.outputs(), indent + "    ", out)
        out.append(f"{indent}else:")
        self.branch(other, node.outputs(), indent + "    ", out)

    def branch(self, block, outputs, indent: str, out: list) -> None:
        start = len(out)
        self.block(block, indent, out)
        self.assign(outputs, block.outputs(), indent, out)
        if len(out) == start:
            out.append(f"{indent}pass")

    def loop(self, node, indent: str, out: list) -> None:
        """``prim::Loop(max_trip, cond, *init)``: body ``(i, *carried) -> (cond, *carried)``."""
        (body,) = node.blocks()
        counter, *carried = body.inputs()
        trip, cond, *init = node.inputs()
        flag = self.name(_Fresh("cond"))
        self.assign(carried, init, indent, out)
        out.append(f"{indent}{flag} = {self.expr(cond)}")
        out.append(f"{indent}{self.name(counter)} = 0")
        out.append(f"{indent}while {flag} and {self.name(counter)} < {self.expr(trip)}:")
        inner = indent + "    "
        self.block(body, inner, out)
        next_cond, *next_carried = body.outputs()
        self.assign(carried, next_carried, inner, out)
        out.append(f"{inner}{flag} = {self.expr(next_cond)}")
        out.append(f"{inner}{self.name(counter)} += 1")
        self.assign(node.outputs(), carried, indent, out)


class _Fresh:
    """A value-like key for a name the generator needs itself."""

    def __init__(self, name: str):
        self._debug_name = name
