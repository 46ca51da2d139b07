"""Op schemas: ``"add(Tensor input, Tensor other, *, Scalar alpha=1) -> Tensor"``.

The grammar is PyTorch's, trimmed: a qualified name (``ns::name`` for third-party ops), typed
arguments with optional defaults, ``*`` before keyword-only ones, and one return type or a
parenthesised tuple of named returns. Types: ``Tensor``, ``Scalar``, ``int``, ``float``, ``bool``,
``str``, ``ScalarType``, ``Layout``, ``Device``, ``Generator``, each with ``[]`` (list) and ``?``
(optional).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

BASE_TYPES = {
    "Tensor",
    "Scalar",
    "int",
    "float",
    "bool",
    "str",
    "ScalarType",
    "Layout",
    "Device",
    "Generator",
}
_NO_DEFAULT = object()
_HEAD = re.compile(r"^\s*([A-Za-z_][\w]*(?:::[A-Za-z_]\w*)?)\s*\((.*)\)\s*->\s*(.+?)\s*$", re.S)


class SchemaError(ValueError):
    """A schema string that does not parse; the message quotes it."""


@dataclass(frozen=True)
class Arg:
    name: str
    type: str  # base type
    is_list: bool
    optional: bool
    kwarg_only: bool
    default: object = _NO_DEFAULT

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT

    @property
    def is_tensor(self) -> bool:
        return self.type == "Tensor"


@dataclass(frozen=True)
class Schema:
    text: str
    namespace: str | None
    name: str
    args: tuple[Arg, ...]
    returns: tuple[tuple[str, str | None], ...]  # (type, name) pairs
    returns_tuple: bool

    @property
    def qualified_name(self) -> str:
        return f"{self.namespace}::{self.name}" if self.namespace else self.name

    @property
    def tensor_positions(self) -> tuple[int, ...]:
        """Positions of Tensor, Tensor? and Tensor[] arguments (the ones dispatch looks into)."""
        return tuple(i for i, a in enumerate(self.args) if a.is_tensor)

    @property
    def positional(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if not a.kwarg_only)


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets and quotes."""
    parts, depth, quote, current = [], 0, None, []
    for ch in text:
        if quote:
            current.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    tail = "".join(current).strip()
    if tail:
        parts.append(tail)
    return parts


def _parse_type(token: str, text: str) -> tuple[str, bool, bool]:
    optional = token.endswith("?")
    token = token.rstrip("?")
    is_list = token.endswith("[]") or bool(re.search(r"\[\d+\]$", token))
    token = re.sub(r"\[\d*\]$", "", token)
    optional = optional or token.endswith("?")  # Tensor?[]
    token = token.rstrip("?")
    if token not in BASE_TYPES:
        raise SchemaError(f"unknown type '{token}' in schema '{text}'")
    return token, is_list, optional


def _parse_default(raw: str, text: str):
    aliases = {
        "None": None,
        "True": True,
        "False": False,
        "inf": float("inf"),
        "-inf": -float("inf"),
    }
    if raw in aliases:
        return aliases[raw]
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError) as exc:
        raise SchemaError(f"bad default '{raw}' in schema '{text}'") from exc


def parse(text: str) -> Schema:
    """Parse a schema string; raises SchemaError naming the problem."""
    match = _HEAD.match(text)
    if match is None:
        raise SchemaError(f"schema must look like 'name(Type arg, ...) -> Ret', got '{text}'")
    qualified, arg_text, ret_text = match.groups()
    namespace, _, name = qualified.rpartition("::")
    args, kwarg_only, seen = [], False, set()
    for part in _split_top(arg_text):
        if part == "*":
            kwarg_only = True
            continue
        decl, eq, raw_default = part.partition("=")
        pieces = decl.split()
        if len(pieces) != 2:
            raise SchemaError(f"argument '{part}' must be 'Type name' in schema '{text}'")
        base, is_list, optional = _parse_type(pieces[0], text)
        arg_name = pieces[1]
        if arg_name in seen:
            raise SchemaError(f"argument '{arg_name}' appears twice in schema '{text}'")
        seen.add(arg_name)
        default = _parse_default(raw_default.strip(), text) if eq else _NO_DEFAULT
        if default is None and not optional:
            raise SchemaError(
                f"argument '{arg_name}' defaults to None but its type '{pieces[0]}' is not "
                f"optional (write '{pieces[0]}?') in schema '{text}'"
            )
        if isinstance(default, tuple):
            default = list(default)
        args.append(Arg(arg_name, base, is_list, optional, kwarg_only, default))
    _check_default_order(args, text)
    ret_text = ret_text.strip()
    returns_tuple = ret_text.startswith("(")
    ret_items = _split_top(ret_text[1:-1]) if returns_tuple else [ret_text]
    returns = []
    for item in ret_items:
        pieces = item.split()
        if len(pieces) > (2 if returns_tuple else 1):
            raise SchemaError(f"return '{item}' must be 'Type' or 'Type name' in schema '{text}'")
        _parse_type(pieces[0], text)
        returns.append((pieces[0], pieces[1] if len(pieces) > 1 else None))
    return Schema(text, namespace or None, name, tuple(args), tuple(returns), returns_tuple)


def _check_default_order(args: list[Arg], text: str) -> None:
    seen_default = False
    for arg in args:
        if arg.kwarg_only:
            continue
        if arg.has_default:
            seen_default = True
        elif seen_default:
            raise SchemaError(
                f"argument '{arg.name}' without a default follows one with a default in '{text}'"
            )


def python_signature(schema: Schema, first: str | None = None) -> str:
    """The parameter list of the generated Python function, e.g. ``input, other, *, alpha=1``.

    ``first`` renames the first argument (``self`` for Tensor methods).
    """
    parts, star = [], False
    for i, arg in enumerate(schema.args):
        name = first if (i == 0 and first) else arg.name
        if arg.kwarg_only and not star:
            parts.append("*")
            star = True
        parts.append(f"{name}={arg.default!r}" if arg.has_default else name)
    return ", ".join(parts)
