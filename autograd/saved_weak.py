"""Inputs PyTorch's node saves and ember's formula does not need, readable without keeping them.

max_pool2d's backward needs the indices and the input's shape, index_add's the source's shape;
PyTorch's nodes still save the tensors (``_saved_self``, ``_saved_source``), which a program may
read. Saving them would keep their memory for the graph's life (max_pool2d's input is a CNN
block's largest activation). The node keeps a ``WeakInput`` instead: weak references to the
tensor and to its storage, its geometry and the storage's version. Reading gives the tensor
while anything else keeps its memory (the user, a module, another node that saved it: in
conv-relu-pool, relu's saved output is pool's input), checked against in-place writes as a
saved tensor is; once the memory is gone it says so (``GONE``). Backward never reads it.
"""

from __future__ import annotations

import weakref

from ember._tensor import Tensor, make
from ember.dispatcher.mathbits import set_bits

GONE = (
    "{node} does not keep its input '{name}' alive: ember's backward needs only its shape, so "
    "the node holds it weakly and it is readable while something else holds its memory (PyTorch's "
    "node keeps it). That memory has been freed; keep a reference to the input to read it."
)


class WeakInput:
    """An input as its node would have saved it, held weakly (the module docstring)."""

    __slots__ = ("bits", "geometry", "storage", "tensor", "version")

    def __init__(self, t: Tensor):
        self.tensor = weakref.ref(t)
        self.storage = weakref.ref(t._storage)
        self.geometry = (t._shape, t._stride, t._offset, t._dtype, t._contig)
        self.bits = (t._conj_bit, t._neg_bit)
        self.version = t._storage.version

    def unpack(self, owner, name: str, edge) -> Tensor:
        """The input, or an alias of its memory with its history (``edge``) when only the
        memory outlived the tensor object."""
        from .node import AccumulateGrad, check_version

        t = self.tensor()
        storage = self.storage()
        if t is not None and t._storage is storage:
            check_version(t, self.version, owner)
            return t
        if storage is None:
            raise RuntimeError(GONE.format(node=owner.name(), name=name))
        alias = make(storage, *self.geometry)
        if any(self.bits):
            set_bits(alias, *self.bits)
        check_version(alias, self.version, owner)
        if edge is not None:
            alias._requires_grad = True
            if not isinstance(edge[0], AccumulateGrad):  # a leaf's accumulator is no grad_fn
                alias._grad_fn = edge[0]
                if edge[1]:
                    alias.__dict__["_output_nr"] = edge[1]
        return alias


def keep(node, formula, args) -> None:
    """Record the inputs ``formula.weak`` names on ``node`` (those that are tensors)."""
    position = formula.plan.position
    kept = {
        name: WeakInput(args[position[name]])
        for name in formula.weak
        if position[name] < len(args) and isinstance(args[position[name]], Tensor)
    }
    if kept:
        node._weak = kept


def read(node, own: str, shown: str):
    """``node``'s weakly kept input ``own`` (PyTorch's ``_saved_<shown>``; None when it keeps
    none of that name)."""
    entry = node._weak.get(own)
    if entry is None:
        return None
    if node.released:
        from .node import FREED

        raise RuntimeError(FREED)
    edge = node.edges[node.formula.plan.tensor_index[own]]
    return entry.unpack(node, shown, edge)
