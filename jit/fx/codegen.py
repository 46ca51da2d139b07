"""An fx Graph as the Python source of ``forward`` (what ``GraphModule.recompile`` runs).

As PyTorch's: one statement per node, a value set to None after its last use (so memory goes as
early as in eager code), operators written as operators, ``self.<path>`` for modules and
attributes. Targets the source cannot name (local functions, constants without a literal) are
given to it through its globals.
"""

from __future__ import annotations

import builtins
import importlib
import keyword
import math
import operator
import re
from dataclasses import dataclass

from ember import _dtype as dt

from .node import Node, qualified_name

_BINARY = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
    operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
    operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.lshift: "<<",
    operator.rshift: ">>", operator.eq: "==", operator.ne: "!=", operator.lt: "<",
    operator.le: "<=", operator.gt: ">", operator.ge: ">=",
}  # fmt: skip
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~", operator.not_: "not "}
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass
class PythonCode:
    """``src``: the source of ``forward``; ``globals``: what it refers to."""

    src: str
    globals: dict


def _plain(name: str) -> bool:
    return bool(_IDENTIFIER.match(name)) and not keyword.iskeyword(name)


def attribute_path(base: str, qualified: str) -> str:
    for part in qualified.split("."):
        base = f"{base}.{part}" if _plain(part) else f"getattr({base}, {part!r})"
    return base


class _Writer:
    def __init__(self):
        self.globals: dict = {}

    def add_global(self, hint: str, obj) -> str:
        for name, existing in self.globals.items():
            if existing is obj:
                return name
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint) or "_g"
        name, n = base, 0
        while name in self.globals or hasattr(builtins, name):
            n += 1
            name = f"{base}_{n}"
        self.globals[name] = obj
        return name

    def function(self, fn) -> str:
        """A name for ``fn``: its importable qualified name when that finds it again."""
        qualified = qualified_name(fn)
        root, _, rest = qualified.partition(".")
        try:
            found = importlib.import_module(root)
            for part in rest.split(".") if rest else ():
                found = getattr(found, part)
        except (ImportError, AttributeError):
            found = None
        if found is fn and all(_plain(p) for p in qualified.split(".")):
            self.globals.setdefault(root, importlib.import_module(root))
            return qualified
        return self.add_global(getattr(fn, "__name__", "fn"), fn)

    def arg(self, value) -> str:
        if isinstance(value, Node):
            return value.name
        if isinstance(value, tuple) and not hasattr(value, "_fields"):
            items = [self.arg(v) for v in value]
            return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
        if isinstance(value, list):
            return f"[{', '.join(self.arg(v) for v in value)}]"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k!r}: {self.arg(v)}" for k, v in value.items()) + "}"
        if isinstance(value, slice):
            return f"slice({self.arg(value.start)}, {self.arg(value.stop)}, {self.arg(value.step)})"
        if value is None or isinstance(value, (bool, int, str)) or value is Ellipsis:
            return repr(value)
        if isinstance(value, float):
            return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
        if isinstance(value, dt.dtype):
            self.globals.setdefault("ember", importlib.import_module("ember"))
            return f"ember.{value.name}"
        return self.add_global(type(value).__name__.lower(), value)

    def call(self, node: Node) -> str:
        args = [self.arg(a) for a in node.args]
        args += [f"{k} = {self.arg(v)}" for k, v in node.kwargs.items()]
        target = node.target
        if node.op == "call_module":
            return f"{attribute_path('self', target)}({', '.join(args)})"
        if node.op == "call_method":
            return f"{args[0]}.{target}({', '.join(args[1:])})"
        if node.op == "get_attr":
            return attribute_path("self", target)
        if not node.kwargs:
            if target in _BINARY and len(args) == 2:
                return f"{args[0]} {_BINARY[target]} {args[1]}"
            if target in _UNARY and len(args) == 1:
                return f"{_UNARY[target]}{args[0]}"
            if target is operator.getitem and len(args) == 2:
                return f"{args[0]}[{args[1]}]"
            is_name = len(node.args) == 2 and isinstance(node.args[1], str) and _plain(node.args[1])
            if target is builtins.getattr and is_name:
                return f"{args[0]}.{node.args[1]}"
        return f"{self.function(target)}({', '.join(args)})"


def python_code(graph) -> PythonCode:
    writer = _Writer()
    params, body = ["self"], []
    last_use = _last_uses(graph)
    for node in graph.nodes:
        if node.op == "placeholder":
            default = f" = {writer.arg(node.args[0])}" if node.args else ""
            params.append(f"{node.target}{default}")
            if node.name != node.target.lstrip("*"):  # renamed off a builtin, as torch.fx does
                body.append(f"{node.name} = {node.target.lstrip('*')}")
            continue
        if node.op == "output":
            body.append(f"return {writer.arg(node.args[0])}")
            continue
        line = f"{node.name} = {writer.call(node)}"
        dead = [n.name for n in last_use.get(node, ())]
        if dead:
            line += f";  {' = '.join(dead)} = None"
        body.append(line)
    source = f"def forward({', '.join(params)}):\n" + "".join(f"    {line}\n" for line in body)
    return PythonCode(source, writer.globals)


def _last_uses(graph) -> dict:
    """node -> the values whose last use it is (to free them right after it)."""
    seen, found = set(), {}
    for node in reversed(list(graph.nodes)):
        if node.op == "output":
            for used in node.all_input_nodes:
                seen.add(used)
            continue
        for used in node.all_input_nodes:
            if used not in seen:
                seen.add(used)
                found.setdefault(node, []).append(used)
    return found
