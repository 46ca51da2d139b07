"""Regenerate the hook-spec section of docs/distributed.md from distributed/hookspecs.py.

python docs/distributed_md.py           # rewrite docs/distributed.md in place
python docs/distributed_md.py --check   # exit 1 when it is stale (tests run this)
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

from ember.distributed import hookspecs

DOC = Path(__file__).with_name("distributed.md")
_SECTION = re.compile(r"(<!-- generated: hooks -->\n).*?(<!-- end generated -->)", re.S)


def hooks() -> str:
    parts = [f"```text\n{inspect.getdoc(hookspecs)}\n```\n"]
    for name, fn in inspect.getmembers(hookspecs, inspect.isfunction):
        if name.startswith("ember_"):
            parts.append(
                f"### `{name}{inspect.signature(fn)}`\n\n```text\n{inspect.getdoc(fn)}\n```\n"
            )
    return "\n".join(parts)


def render(text: str) -> str:
    return _SECTION.sub(lambda m: m.group(1) + hooks() + m.group(2), text)


def main(argv: list[str]) -> int:
    current = DOC.read_text()
    fresh = render(current)
    if "--check" in argv:
        if fresh != current:
            print(f"{DOC} is stale: run python docs/distributed_md.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
