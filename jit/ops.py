"""What op nodes mean: node kinds <-> op-table ops, and the facts passes need about them.

An op-table op ``add`` is the node kind ``ember::add``; a library op keeps its qualified name
(``myns::fused``). Facts come from the row: random ops are nondeterministic, ops that write into
an argument (``add_``, ``copy_``) have side effects, view ops alias their first input.
"""

from __future__ import annotations

from ember.dispatcher.opdef import Kind
from ember.dispatcher.optable import OPS

PREFIX = "ember::"


class UnknownOpError(KeyError):
    """A node kind that names no op of this process (a graph from a newer ember, or a library
    that is not installed)."""

    def __str__(self) -> str:
        return str(self.args[0])


def kind_of(op) -> str:
    """The node kind of an Op."""
    return op.name if "::" in op.name else PREFIX + op.name


def resolve(kind: str):
    """The Op a node kind calls; None for ``prim::`` kinds; UnknownOpError when unknown."""
    if kind.startswith("prim::"):
        return None
    if kind.startswith(PREFIX):
        found = OPS.get(kind[len(PREFIX) :])
        if found is None:
            raise UnknownOpError(f"unknown op '{kind}': ember has no op named {kind[7:]!r}")
        return found
    if "::" not in kind:
        raise UnknownOpError(f"unknown node kind '{kind}' (ops are 'ember::name' or 'ns::name')")
    from ember.library import find_op

    try:
        return find_op(kind)
    except KeyError:
        raise UnknownOpError(
            f"unknown op '{kind}': no installed op library defines it (install the package "
            "that provides it)"
        ) from None


def _base(op):
    return op.inplace_of or op


def is_nondeterministic(node) -> bool:
    op = node.op()
    return op is not None and _base(op).kind is Kind.RANDOM


def mutates(op) -> bool:
    """Whether the op writes into its first argument."""
    return op.mutates or op.name == "copy_"


def has_side_effects(node) -> bool:
    """Nodes dead-code elimination keeps even when their outputs are unused: writes into
    arguments, random draws (they advance the generator), prims that act on the world."""
    op = node.op()
    if op is None:
        from .prims import PRIMS

        spec = PRIMS.get(node.kind())
        return spec is None or spec.effects
    return mutates(op) or _base(op).kind is Kind.RANDOM


def prim_writes(node) -> bool:
    """Whether a prim node writes into its first input (``prim::index_put_``)."""
    from .prims import PRIMS

    spec = PRIMS.get(node.kind())
    return spec is not None and spec.writes


def is_view(op) -> bool:
    """Whether the op's output may share memory with its first input."""
    base = _base(op)
    return base.kind is Kind.VIEW or base.name in ("contiguous", "reshape", "flatten", "detach")
