"""Nested inputs and outputs as flat lists of leaves plus a spec of their structure.

Graphs take and return flat lists of values; a ScriptModule or ExportedProgram keeps the specs
to accept and rebuild the user's tuples, lists and dicts. Specs are plain JSON-able data, so
archives store them as they are.
"""

from __future__ import annotations

LEAF = {"type": "leaf"}


def flatten(tree) -> tuple[list, dict]:
    """``(leaves, spec)``: tuples, lists and dicts (string keys) are structure, the rest leaves."""
    leaves: list = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree, leaves: list) -> dict:
    if isinstance(tree, (tuple, list)) and not hasattr(tree, "_fields"):
        kind = "tuple" if isinstance(tree, tuple) else "list"
        return {"type": kind, "children": [_flatten(item, leaves) for item in tree]}
    if hasattr(tree, "_fields") and isinstance(tree, tuple):  # namedtuple: a tuple of fields
        return {"type": "tuple", "children": [_flatten(item, leaves) for item in tree]}
    if isinstance(tree, dict):
        keys = list(tree)
        if not all(isinstance(k, str) for k in keys):
            raise TypeError(f"dict keys must be strings to flatten, got {keys!r}")
        return {"type": "dict", "keys": keys, "children": [_flatten(tree[k], leaves) for k in keys]}
    leaves.append(tree)
    return LEAF


def unflatten(leaves, spec: dict):
    """The structure ``spec`` describes, filled with ``leaves`` in order."""
    it = iter(leaves)
    out = _unflatten(it, spec)
    if next(it, _END) is not _END:
        raise ValueError("unflatten: more leaves than the spec holds")
    return out


_END = object()


def _unflatten(it, spec: dict):
    kind = spec["type"]
    if kind == "leaf":
        value = next(it, _END)
        if value is _END:
            raise ValueError("unflatten: fewer leaves than the spec holds")
        return value
    children = [_unflatten(it, child) for child in spec["children"]]
    if kind == "tuple":
        return tuple(children)
    if kind == "list":
        return children
    return dict(zip(spec["keys"], children))


def num_leaves(spec: dict) -> int:
    if spec["type"] == "leaf":
        return 1
    return sum(num_leaves(child) for child in spec["children"])


def leaf_paths(spec: dict, prefix: str = "") -> list[str]:
    """Names for the leaves: ``x``, ``x.0``, ``x.key``."""
    if spec["type"] == "leaf":
        return [prefix]
    keys = spec.get("keys") or [str(i) for i in range(len(spec["children"]))]
    out = []
    for key, child in zip(keys, spec["children"]):
        out += leaf_paths(child, f"{prefix}.{key}" if prefix else str(key))
    return out


def check_spec(spec, depth: int = 0) -> None:
    """Raise ValueError unless ``spec`` is a well-formed spec (archives are not trusted)."""
    if depth > 64 or not isinstance(spec, dict):
        raise ValueError("malformed structure spec")
    kind = spec.get("type")
    if kind == "leaf":
        if set(spec) != {"type"}:
            raise ValueError("malformed structure spec")
        return
    if kind not in ("tuple", "list", "dict") or not isinstance(spec.get("children"), list):
        raise ValueError(f"malformed structure spec of type {kind!r}")
    if kind == "dict":
        keys = spec.get("keys")
        if not isinstance(keys, list) or len(keys) != len(spec["children"]):
            raise ValueError("malformed dict spec")
        if not all(isinstance(k, str) for k in keys):
            raise ValueError("malformed dict spec keys")
    for child in spec["children"]:
        check_spec(child, depth + 1)
