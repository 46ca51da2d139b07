"""``torch.utils._pytree``: nested containers flattened to leaves and rebuilt, with the node
types the function transforms use (autograd/_pytree.py holds the trees; this module is the
public surface programs and libraries import, e.g. to register their output classes).

Example:
    >>> leaves, spec = tree_flatten({"a": (1, 2), "b": [3]})
    >>> leaves
    [1, 2, 3]
    >>> tree_unflatten([x * 10 for x in leaves], spec)
    {'a': (10, 20), 'b': [30]}
"""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Callable
from typing import Any

from ember.autograd._pytree import (
    SUPPORTED_NODES,
    LeafSpec,
    TreeSpec,
    is_namedtuple_class,
    node_type,
    register_node,
    tree_flatten,
    tree_map,
    tree_unflatten,
)
from ember.autograd._pytree import NodeDef as NodeDef  # PyTorch's registry record

PyTree = Any
Context = Any

__all__ = [
    "Context",
    "LeafSpec",
    "PyTree",
    "TreeSpec",
    "is_namedtuple",
    "is_namedtuple_class",
    "is_namedtuple_instance",
    "register_pytree_node",
    "tree_all",
    "tree_all_only",
    "tree_any",
    "tree_any_only",
    "tree_flatten",
    "tree_is_leaf",
    "tree_iter",
    "tree_leaves",
    "tree_map",
    "tree_map_",
    "tree_map_only",
    "tree_map_only_",
    "tree_structure",
    "tree_unflatten",
    "treespec_pprint",
]


def register_pytree_node(
    cls,
    flatten_fn: Callable,
    unflatten_fn: Callable,
    *,
    serialized_type_name: str | None = None,
    to_dumpable_context: Callable | None = None,
    from_dumpable_context: Callable | None = None,
    flatten_with_keys_fn: Callable | None = None,
) -> None:
    """Make ``cls`` a node: ``flatten_fn(node) -> (children, context)``,
    ``unflatten_fn(children, context) -> node``. The serialization and key-path arguments are
    accepted for PyTorch's signature; ember does not serialize tree specs."""
    register_node(cls, flatten_fn, unflatten_fn)


def _register_pytree_node(
    cls, flatten_fn, unflatten_fn, to_str_fn=None, maybe_from_str_fn=None, **kw
):
    warnings.warn(
        "`torch.utils._pytree._register_pytree_node` is deprecated. Please use "
        "`torch.utils._pytree.register_pytree_node` instead.",
        FutureWarning,
        stacklevel=2,
    )
    register_pytree_node(cls, flatten_fn, unflatten_fn, **kw)


def is_namedtuple_instance(obj) -> bool:
    return is_namedtuple_class(type(obj))


def is_namedtuple(obj) -> bool:
    """Whether ``obj`` is a namedtuple class or instance."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def tree_is_leaf(tree: PyTree, is_leaf: Callable | None = None) -> bool:
    if is_leaf is not None and is_leaf(tree):
        return True
    return node_type(tree) not in SUPPORTED_NODES


def tree_iter(tree: PyTree, is_leaf: Callable | None = None):
    """The leaves of ``tree``, lazily."""
    if tree_is_leaf(tree, is_leaf):
        yield tree
        return
    children, _ = SUPPORTED_NODES[node_type(tree)].flatten_fn(tree)
    for child in children:
        yield from tree_iter(child, is_leaf)


def tree_leaves(tree: PyTree, is_leaf: Callable | None = None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: PyTree, is_leaf: Callable | None = None) -> TreeSpec:
    return tree_flatten(tree, is_leaf)[1]


def tree_map_(func: Callable, tree: PyTree, *rests: PyTree, is_leaf=None) -> PyTree:
    """``func`` called at each leaf for its effect; returns ``tree`` itself."""
    leaves, spec = tree_flatten(tree, is_leaf)
    deque(map(func, leaves, *[spec.flatten_up_to(r) for r in rests]), maxlen=0)
    return tree


def _type_test(type_or_types_or_pred) -> Callable:
    if isinstance(type_or_types_or_pred, (type, tuple)) or hasattr(
        type_or_types_or_pred, "__args__"
    ):
        return lambda x: isinstance(x, type_or_types_or_pred)
    if callable(type_or_types_or_pred):
        return type_or_types_or_pred
    raise TypeError("Argument must be a type, a tuple of types, or a callable.")


def map_only(type_or_types_or_pred) -> Callable:
    """A decorator: the function applies to leaves passing the type test, others pass through."""
    test = _type_test(type_or_types_or_pred)

    def wrapper(func):
        def wrapped(x):
            return func(x) if test(x) else x

        return wrapped

    return wrapper


def tree_map_only(type_or_types_or_pred, func: Callable, tree: PyTree, is_leaf=None) -> PyTree:
    return tree_map(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred, func: Callable, tree: PyTree, is_leaf=None) -> PyTree:
    return tree_map_(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable, tree: PyTree, is_leaf=None) -> bool:
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred: Callable, tree: PyTree, is_leaf=None) -> bool:
    return any(map(pred, tree_iter(tree, is_leaf)))


def tree_all_only(type_or_types, pred: Callable, tree: PyTree, is_leaf=None) -> bool:
    test = _type_test(type_or_types)
    return all(pred(x) for x in tree_iter(tree, is_leaf) if test(x))


def tree_any_only(type_or_types, pred: Callable, tree: PyTree, is_leaf=None) -> bool:
    test = _type_test(type_or_types)
    return any(pred(x) for x in tree_iter(tree, is_leaf) if test(x))


def arg_tree_leaves(*args: PyTree, **kwargs: PyTree) -> list:
    """The leaves of a call's arguments, positional then keyword."""
    leaves: list = []
    for tree in (*args, *kwargs.values()):
        leaves.extend(tree_iter(tree))
    return leaves


def treespec_pprint(treespec: TreeSpec) -> str:
    """``spec`` as the tree it describes, ``*`` at each leaf."""
    return repr(treespec.unflatten([_Asterisk()] * treespec.num_leaves))


class _Asterisk(str):
    __slots__ = ()

    def __new__(cls):
        return super().__new__(cls, "*")

    def __repr__(self) -> str:
        return "*"
