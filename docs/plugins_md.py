"""Regenerate the generated sections of docs/plugins.md from the code: the hook specs, the
primitive ops and every kernel calling convention of the op table.

    python docs/plugins_md.py           # rewrite docs/plugins.md in place
    python docs/plugins_md.py --check   # exit 1 when it is stale (tests run this)

A section is the text between ``<!-- generated: NAME -->`` and ``<!-- end generated -->``.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections import defaultdict
from pathlib import Path

from ember.dispatcher import coverage, hookspecs
from ember.dispatcher.devices import REQUIRED_KERNELS
from ember.dispatcher.optable import OPS

DOC = Path(__file__).with_name("plugins.md")
_SECTION = re.compile(r"(<!-- generated: (\w+) -->\n).*?(<!-- end generated -->)", re.S)


def hooks() -> str:
    parts = []
    for name, fn in inspect.getmembers(hookspecs, inspect.isfunction):
        if name.startswith("ember_"):
            signature = f"{name}{inspect.signature(fn)}"
            parts.append(f"### `{signature}`\n\n```text\n{inspect.getdoc(fn)}\n```\n")
    return "\n".join(parts)


def _label(name: str) -> str:
    """The op with the non-tensor arguments its kernel receives as ``*params``."""
    args = OPS[name].schema.args
    operands = OPS[name].info.get("arity")
    if operands is None:  # unary and binary rows: their leading tensors
        operands = next((i for i, a in enumerate(args) if not a.is_tensor), len(args))
    params = [a.name for a in args[operands:]]
    return f"`{name}({', '.join(params)})`" if params else f"`{name}`"


def conventions() -> str:
    groups = defaultdict(list)
    for name in coverage.primitives(OPS) + coverage.fusable(OPS):
        defn = OPS[name].defn
        groups[(defn.kind.value, defn.kernel_args)].append(name)
    lines = ["| kind | kernel arguments | ops |", "| --- | --- | --- |"]
    for (kind, args), names in sorted(groups.items()):
        label = _label if "*params" in args else (lambda n: f"`{n}`")
        lines.append(f"| {kind} | `{args}` | {', '.join(label(n) for n in sorted(names))} |")
    return "\n".join(lines) + "\n"


def primitives() -> str:
    names = coverage.primitives(OPS)
    fused = coverage.fusable(OPS)
    required = ", ".join(f"`{n}`" for n in REQUIRED_KERNELS)
    return (
        f"Primitives ({len(names)}; {required} required, a backend without it is refused):\n\n"
        + f"```text\n{_wrap(names)}\n```\n\n"
        + f"Composites a backend may also implement as fused kernels ({len(fused)}):\n\n"
        + f"```text\n{_wrap(fused)}\n```\n"
    )


def _wrap(names: list, width: int = 100) -> str:
    lines, current = [], ""
    for name in names:
        if current and len(current) + len(name) + 1 > width:
            lines.append(current)
            current = ""
        current = f"{current} {name}" if current else name
    return "\n".join(lines + [current])


SECTIONS = {"hooks": hooks, "conventions": conventions, "primitives": primitives}


def render(text: str) -> str:
    def fill(match):
        return match.group(1) + SECTIONS[match.group(2)]() + match.group(3)

    return _SECTION.sub(fill, text)


def main(argv: list[str]) -> int:
    current = DOC.read_text()
    fresh = render(current)
    if "--check" in argv:
        if fresh != current:
            print(f"{DOC} is stale: run python docs/plugins_md.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
