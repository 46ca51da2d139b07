"""Nested Python containers flattened to leaves and rebuilt, as ``torch.utils._pytree`` does:
the function transforms take and return them (arguments and results of vmap, grad, jacrev...),
and ``ember.utils._pytree`` publishes the same trees. Nodes are tuples, lists, dicts,
namedtuples, OrderedDicts, defaultdicts, deques and the classes registered with
``register_node``; anything else, None included, is a leaf (PyTorch's rule).
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict, deque, namedtuple
from collections.abc import Callable
from typing import Any, NamedTuple


class NodeDef(NamedTuple):
    """How a registered container type flattens: ``flatten_fn(node) -> (children, context)``
    and ``unflatten_fn(children, context) -> node``."""

    type: Any
    flatten_fn: Callable
    unflatten_fn: Callable


SUPPORTED_NODES: dict[Any, NodeDef] = {}


def register_node(cls, flatten_fn: Callable, unflatten_fn: Callable) -> None:
    """Make ``cls`` a node type (its instances flatten through ``flatten_fn``)."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn)


class TreeSpec:
    """The structure of a flattened tree: its root's type (``namedtuple`` for every namedtuple
    class, whose context is then the class), a context, and its children's specs."""

    __slots__ = ("children_specs", "context", "num_leaves", "num_nodes", "type")

    def __init__(self, type, context, children_specs: list):
        self.type = type
        self.context = context
        self.children_specs = children_specs
        if type is None:
            self.num_leaves, self.num_nodes = 1, 1
        else:
            self.num_leaves = sum(child.num_leaves for child in children_specs)
            self.num_nodes = 1 + sum(child.num_nodes for child in children_specs)

    @property
    def num_children(self) -> int:
        return len(self.children_specs)

    def is_leaf(self) -> bool:
        return self.type is None

    def children(self) -> list:
        return list(self.children_specs)

    def child(self, index: int) -> TreeSpec:
        return self.children_specs[index]

    def unflatten(self, leaves) -> Any:
        """The tree of this structure holding ``leaves`` in order."""
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(
                f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec "
                f"refers to a pytree that holds {self.num_leaves} items ({self})."
            )
        return _build(self, iter(leaves))

    def flatten_up_to(self, tree) -> list:
        """The subtrees of ``tree`` at this structure's leaves (``tree`` has it as a prefix)."""
        out: list = []
        _up_to(self, tree, out)
        return out

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, TreeSpec)
            and self.type is other.type
            and self.context == other.context
            and self.children_specs == other.children_specs
        )

    def __repr__(self, indent: int = 0) -> str:
        if self.type is None:
            return "*"
        inner = ""
        if self.children_specs:
            indent += 2
            inner = self.children_specs[0].__repr__(indent)
            for child in self.children_specs[1:]:
                inner += ",\n" + " " * indent + child.__repr__(indent)
        return f"TreeSpec({self.type.__name__}, {self.context}, [{inner}])"


class LeafSpec(TreeSpec):
    """The structure of a leaf."""

    __slots__ = ()

    def __init__(self):
        super().__init__(None, None, [])


LEAF = LeafSpec()


def is_namedtuple_class(cls) -> bool:
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")


def node_type(tree):
    """The registry key of ``tree``'s type: ``namedtuple`` for every namedtuple class."""
    cls = tree.__class__
    return namedtuple if cls not in SUPPORTED_NODES and is_namedtuple_class(cls) else cls


def _children(tree, is_leaf=None):
    """``(type, context, children)`` of a node, or None for a leaf."""
    cls = tree.__class__
    # the transforms' common cases first, without the registry
    if cls is tuple or cls is list:
        return cls, None, list(tree)
    if cls is dict:
        keys = list(tree)
        return dict, keys, [tree[k] for k in keys]
    kind = node_type(tree)
    node = SUPPORTED_NODES.get(kind)
    if node is None:
        return None
    children, context = node.flatten_fn(tree)
    return kind, context, list(children)


def tree_flatten(tree, is_leaf: Callable | None = None) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` in order, and its structure; ``is_leaf(node)`` True stops there."""
    leaves: list = []
    return leaves, _flatten(tree, leaves, is_leaf)


def _flatten(tree, leaves: list, is_leaf) -> TreeSpec:
    found = None if is_leaf is not None and is_leaf(tree) else _children(tree)
    if found is None:
        leaves.append(tree)
        return LEAF
    kind, context, children = found
    return TreeSpec(kind, context, [_flatten(child, leaves, is_leaf) for child in children])


def tree_unflatten(leaves, spec: TreeSpec):
    """The tree of structure ``spec`` holding ``leaves`` in order."""
    if not isinstance(spec, TreeSpec):
        if not isinstance(leaves, TreeSpec):
            raise TypeError(
                f"Expected `treespec` to be an instance of PyTreeSpec but got item of type "
                f"{type(spec)}."
            )
        leaves, spec = spec, leaves
    return spec.unflatten(leaves)


def _build(spec: TreeSpec, it):
    if spec.type is None:
        return next(it)
    children = [_build(child, it) for child in spec.children_specs]
    kind = spec.type
    if kind is tuple:
        return tuple(children)
    if kind is list:
        return children
    return SUPPORTED_NODES[kind].unflatten_fn(children, spec.context)


_DICTS = (dict, OrderedDict, defaultdict)
_BUILTIN = (tuple, list, namedtuple, deque, *_DICTS)


def _up_to(spec: TreeSpec, tree, out: list) -> None:
    """PyTorch's ``flatten_up_to``, its checks and messages: mappings of the three dict types
    match each other by key set, a deque's maxlen is not compared."""
    if spec.type is None:
        out.append(tree)
        return
    kind = node_type(tree)
    mappings = spec.type in _DICTS and kind in _DICTS
    if spec.type not in _BUILTIN:
        if kind is not spec.type:
            raise ValueError(f"Type mismatch; expected {spec.type!r}, but got {kind!r}.")
    elif not mappings and kind is not spec.type:
        raise ValueError(f"Node type mismatch; expected {spec.type!r}, but got {kind!r}.")
    children, context = SUPPORTED_NODES[kind].flatten_fn(tree)
    if len(children) != spec.num_children:
        raise ValueError(
            f"Node arity mismatch; expected {spec.num_children}, but got {len(children)}."
        )
    if mappings:
        expected = spec.context[1] if spec.type is defaultdict else spec.context
        missing, extra = set(expected) - set(tree), set(tree) - set(expected)
        if missing or extra:
            message = f"; missing key(s): {missing}" if missing else ""
            message += f"; extra key(s): {extra}" if extra else ""
            raise ValueError(f"Node keys mismatch{message}.")
        children = [tree[key] for key in expected]
    elif spec.type not in _BUILTIN and context != spec.context:
        raise ValueError(f"Node context mismatch for custom node type {spec.type!r}.")
    elif kind is not deque and context != spec.context:
        raise ValueError(
            f"Node context mismatch for node type {spec.type!r}; expected {spec.context!r}, "
            f"but got {context!r}."
        )
    for child_spec, child in zip(spec.children_specs, children):
        _up_to(child_spec, child, out)


def tree_map(fn, tree, *rests, is_leaf: Callable | None = None):
    """``fn`` applied at each leaf of ``tree`` (and the matching subtrees of ``rests``)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    if not rests:
        return spec.unflatten([fn(leaf) for leaf in leaves])
    return spec.unflatten(map(fn, leaves, *[spec.flatten_up_to(r) for r in rests]))


def broadcast_prefix(prefix, spec: TreeSpec) -> list | None:
    """``prefix`` (a tree whose leaves stand for whole subtrees of ``spec``) expanded to one
    value per leaf of ``spec``; None when the structures do not match."""
    out: list = []
    try:
        _broadcast(prefix, spec, out)
    except ValueError:
        return None
    return out


def _broadcast(prefix, spec: TreeSpec, out: list) -> None:
    found = _children(prefix)
    if found is None:
        out.extend([prefix] * spec.num_leaves)
        return
    kind, _, children = found
    if kind is not spec.type or len(children) != spec.num_children:
        raise ValueError("structure mismatch")
    if kind in _DICTS:  # a mapping prefix matches by key
        expected = spec.context[1] if kind is defaultdict else spec.context
        if set(prefix) != set(expected):
            raise ValueError("keys mismatch")
        children = [prefix[k] for k in expected]
    for child, child_spec in zip(children, spec.children_specs):
        _broadcast(child, child_spec, out)


def _dict_flatten(d):
    return list(d.values()), list(d)


def _defaultdict_flatten(d):
    return list(d.values()), [d.default_factory, list(d)]


def _defaultdict_unflatten(values, context):
    factory, keys = context
    return defaultdict(factory, zip(keys, values))


# PyTorch's built-in node types (torch/utils/_pytree.py registers the same, with the same contexts)
for _kind, _flat, _unflat in (
    (tuple, lambda t: (list(t), None), lambda values, _: tuple(values)),
    (list, lambda t: (list(t), None), lambda values, _: list(values)),
    (dict, _dict_flatten, lambda values, keys: dict(zip(keys, values))),
    (namedtuple, lambda t: (list(t), type(t)), lambda values, cls: cls(*values)),
    (OrderedDict, _dict_flatten, lambda values, keys: OrderedDict(zip(keys, values))),
    (defaultdict, _defaultdict_flatten, _defaultdict_unflatten),
    (deque, lambda d: (list(d), d.maxlen), lambda values, maxlen: deque(values, maxlen=maxlen)),
):
    register_node(_kind, _flat, _unflat)
