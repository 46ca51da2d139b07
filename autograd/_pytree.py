"""Nested Python containers flattened to leaves and rebuilt: what ``torch.utils._pytree`` does
for the function transforms (arguments and results of vmap, grad, jacrev... may be tuples, lists,
dicts and namedtuples of tensors). Anything else, None included, is a leaf.
"""

from __future__ import annotations


class TreeSpec:
    """The structure of a flattened tree: a container type, its context, its children's specs."""

    __slots__ = ("children", "context", "kind")

    def __init__(self, kind, context, children: list):
        self.kind = kind
        self.context = context
        self.children = children

    @property
    def num_leaves(self) -> int:
        if self.kind is None:
            return 1
        return sum(child.num_leaves for child in self.children)

    def is_leaf(self) -> bool:
        return self.kind is None

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, TreeSpec)
            and self.kind is other.kind
            and self.context == other.context
            and self.children == other.children
        )

    def __repr__(self, indent: int = 0) -> str:
        if self.kind is None:
            return "*"
        name = "namedtuple" if self.kind is _NAMEDTUPLE else self.kind.__name__
        context = self.context.__name__ if self.kind is _NAMEDTUPLE else self.context
        pad = "  " * (indent + 1)
        parts = [c.__repr__(indent + 1) for c in self.children]
        inner = (",\n" + pad).join(parts)
        return f"TreeSpec({name}, {context}, [{inner}])"


LEAF = TreeSpec(None, None, [])
_NAMEDTUPLE = type("namedtuple", (), {})  # marker kind


def _children(tree):
    """``(kind, context, children)`` of a container, or None for a leaf."""
    cls = tree.__class__
    if cls is tuple or cls is list:
        return cls, None, list(tree)
    if cls is dict:
        keys = list(tree)
        return dict, keys, [tree[k] for k in keys]
    if isinstance(tree, tuple) and hasattr(cls, "_fields"):
        return _NAMEDTUPLE, cls, list(tree)
    return None


def tree_flatten(tree) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` in order, and its structure."""
    leaves: list = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree, leaves: list) -> TreeSpec:
    found = _children(tree)
    if found is None:
        leaves.append(tree)
        return LEAF
    kind, context, children = found
    return TreeSpec(kind, context, [_flatten(child, leaves) for child in children])


def tree_unflatten(leaves, spec: TreeSpec):
    """The tree of structure ``spec`` holding ``leaves`` in order."""
    it = iter(leaves)
    out = _build(spec, it)
    return out


def _build(spec: TreeSpec, it):
    if spec.kind is None:
        return next(it)
    children = [_build(child, it) for child in spec.children]
    if spec.kind is dict:
        return dict(zip(spec.context, children))
    if spec.kind is _NAMEDTUPLE:
        return spec.context(*children)
    return spec.kind(children)


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(leaf) for leaf in leaves], spec)


def broadcast_prefix(prefix, spec: TreeSpec) -> list | None:
    """``prefix`` (a tree whose leaves stand for whole subtrees of ``spec``) expanded to one
    value per leaf of ``spec``; None when the structures do not match."""
    out: list = []
    return out if _broadcast(prefix, spec, out) else None


def _broadcast(prefix, spec: TreeSpec, out: list) -> bool:
    found = _children(prefix)
    if found is None:
        out.extend([prefix] * spec.num_leaves)
        return True
    kind, context, children = found
    if kind is not spec.kind or len(children) != len(spec.children):
        return False
    if kind is dict and set(context) != set(spec.context):
        return False
    if kind is dict:
        children = [prefix[k] for k in spec.context]
    return all(_broadcast(c, s, out) for c, s in zip(children, spec.children))
