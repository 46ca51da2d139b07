"""Source to ``ast``, and the errors that point into it.

``ember.jit.script`` reads a function's source with ``inspect`` and parses it with ``ast``, as
``torch.jit.frontend`` does. Every error names the construct, the file and the line, and shows
the line with the construct underlined, in TorchScript's format::

    try blocks aren't supported:
      File "model.py", line 3
    def f(x):
        try:
        ~~~ <--- HERE
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import textwrap


class FrontendError(Exception):
    """An error in the script source (``torch.jit.frontend.FrontendError``)."""


class NotSupportedError(FrontendError):
    """A Python construct outside the TorchScript subset."""


class UnsupportedNodeError(NotSupportedError):
    """A statement or expression kind the compiler has no rule for (PyTorch's class)."""


class ScriptError(RuntimeError):
    """A type or name error found while compiling (``torch.jit.Error``: undefined values,
    mismatched branch types, wrong argument types)."""


# TorchScript's words for the statements it refuses (torch.jit.frontend.pretty_node_names).
# TorchScript's names of refused statements; any other construct is named by its ast class
# ("Set aren't supported", "NamedExpr aren't supported"), as torch.jit.frontend names it.
PRETTY_NAMES = {
    ast.FunctionDef: "function definitions",
    ast.AsyncFunctionDef: "async function definitions",
    ast.ClassDef: "class definitions",
    ast.Delete: "del statements",
    ast.With: "with statements",
    ast.Raise: "raise statements",
    ast.Assert: "assertions",
    ast.Import: "import statements",
    ast.ImportFrom: "import statements",
    ast.Global: "global variables",
    ast.Nonlocal: "nonlocal variables",
    ast.Try: "try blocks",
    ast.Lambda: "Lambda",
}
# How many characters TorchScript underlines for a refused statement: its keyword.
_KEYWORDS = {
    ast.Try: "try",
    ast.Global: "global",
    ast.Nonlocal: "nonlocal",
    ast.With: "with",
    ast.Delete: "del",
    ast.Import: "import",
    ast.ImportFrom: "from",
    ast.ClassDef: "class",
    ast.FunctionDef: "def",
    ast.Lambda: "l",
}


class Source:
    """A function's parsed source, with what maps ``ast`` positions back to the file."""

    def __init__(self, fn):
        try:
            lines, first = inspect.getsourcelines(fn)
            filename = inspect.getsourcefile(fn) or "<unknown>"
        except (OSError, TypeError) as e:
            raise OSError(
                f"Can't get source for {fn}. TorchScript requires source access in order to "
                "carry out compilation, make sure original .py files are available."
            ) from e
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        self.indent = _indent_of(text) - _indent_of(dedented)
        self.filename = filename
        self.first_line = first
        self.lines = dedented.splitlines()
        self.raw_lines = text.splitlines()  # as in the file: errors quote these
        self.tree = ast.parse(dedented)
        self.fn = fn

    def definition(self) -> ast.FunctionDef:
        node = self.tree.body[0]
        if not isinstance(node, ast.FunctionDef):
            raise NotSupportedError(f"Expected a function definition for {self.fn}")
        return node

    def highlight(self, node) -> str:
        """``File "...", line N``, the line with ``node`` underlined and the lines around it
        in the function (up to 2 before and 2 after), as TorchScript prints them (its
        ``SourceRange::print_with_context`` counts the newline ending the line before as the
        first of its 3 context newlines)."""
        row = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        width = _width(node, self.lines[row - 1], col)
        out = [f'  File "{self.filename}", line {row + self.first_line - 1}']
        out += self.raw_lines[max(0, row - 3) : row]
        out.append(" " * (col + self.indent) + "~" * width + " <--- HERE")
        out += self.raw_lines[row : row + 2]
        return "\n".join(out) + "\n"

    def span(self, node) -> str:
        """Like ``highlight``, for a construct over several lines (a whole ``if``): each of its
        lines is underlined from its first character (the construct's own on the first line)
        to its end, and ``<--- HERE`` marks the last (``SourceRange::print_with_context``;
        blank lines get no underline)."""
        row, col = node.lineno, node.col_offset
        end_row, end_col = node.end_lineno, node.end_col_offset
        out = [f'  File "{self.filename}", line {row + self.first_line - 1}']
        out += self.raw_lines[max(0, row - 3) : row - 1]
        for line_no in range(row, end_row + 1):
            line = self.raw_lines[line_no - 1]
            out.append(line)
            start = col + self.indent if line_no == row else len(line) - len(line.lstrip(" "))
            stop = end_col + self.indent if line_no == end_row else len(line)
            if stop > start:
                here = " <--- HERE" if line_no == end_row else ""
                out.append(" " * start + "~" * (stop - start) + here)
        out += self.raw_lines[end_row : end_row + 2]
        return "\n".join(out) + "\n"

    def unsupported(self, node) -> UnsupportedNodeError:
        """TorchScript underlines a refused construct's keyword, or else its first character."""
        name = PRETTY_NAMES.get(type(node), type(node).__name__)
        if type(node) not in _KEYWORDS:
            first = ast.Constant(None, lineno=node.lineno, col_offset=node.col_offset)
            first.end_lineno, first.end_col_offset = node.lineno, node.col_offset + 1
            node = first
        return UnsupportedNodeError(f"{name} aren't supported:\n{self.highlight(node)}")

    def not_supported(self, message: str, node) -> NotSupportedError:
        return NotSupportedError(f"{message}:\n{self.highlight(node)}")

    def error(self, message: str, node) -> ScriptError:
        return ScriptError(f"{message}:\n{self.highlight(node)}")


def namespace_of(fn) -> dict:
    """The names a function's body sees: its globals and closure (builtins come last)."""
    fn = getattr(fn, "__func__", fn)
    scope = dict(getattr(fn, "__globals__", {}))
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        with contextlib.suppress(ValueError):  # an empty cell: a name bound later
            scope[name] = cell.cell_contents
    return scope


def _indent_of(text: str) -> int:
    first = next((line for line in text.splitlines() if line.strip()), "")
    return len(first) - len(first.lstrip())


def _width(node, line: str, col: int) -> int:
    keyword = _KEYWORDS.get(type(node))
    if keyword is not None:
        return len(keyword)
    end_line = getattr(node, "end_lineno", None)
    end_col = getattr(node, "end_col_offset", None)
    if end_line == getattr(node, "lineno", None) and end_col is not None:
        return max(1, end_col - col)
    return max(1, len(line) - col)
