"""Views and in-place ops: how a write through a view reaches its base's history.

Views share their base's storage, so gradients are moved by storage position: a view's gradient
is scattered into a storage-shaped buffer and read back through the base's geometry (shape,
stride, offset). ``CopySlices`` is a base's history after an in-place op wrote into one of its
views; ``ViewOf`` is a view's history regenerated over its base's current history, after the
view was written through or its base was changed in place (PyTorch's view replay).
"""

from __future__ import annotations

import ember
from ember._tensor import Tensor

from .node import Node, gradient_edge


def strided_positions(shape, stride, offset, device):
    """Flat storage positions of every element of an (as_strided) view, row-major."""
    positions = ember.full((), offset, dtype=ember.int64, device=device)
    for size, step in zip(shape, stride):
        positions = positions.unsqueeze(-1) + ember.arange(size, device=device) * step
    return positions


def scatter_back(g, view, own, device):
    """Accumulate ``g`` through the ``view`` geometry (shape, stride, offset) into a storage-like
    buffer and read it back through the input's ``own`` geometry: the gradient of any view,
    overlapping or not."""
    storage = storage_buffer(g, view, own)
    storage.put_(strided_positions(*view, device).reshape(-1), g.reshape(-1), accumulate=True)
    return storage.take(strided_positions(*own, device))


class CopySlices(Node):
    """A base tensor's history after an in-place op wrote into one of its views.

    Backward: the base's gradient outside the view passes through unchanged; inside the view it
    goes through the in-place op's own backward, whose other inputs keep their gradients.
    """

    __slots__ = ("base_geometry", "ctx", "inner", "view_geometry")

    def __init__(self, base: Tensor, view: Tensor, inner: Node, base_edge):
        edges = (base_edge,) + tuple(inner.edges[1:])
        meta = ((base._shape, base._dtype, base._storage.device),) + tuple(inner.input_meta[1:])
        self.fill(inner.op, None, edges, meta)
        self.ctx = inner.ctx  # the in-place op's: what it saved
        self.base_geometry = _geometry(base)
        self.view_geometry = _geometry(view)
        self.inner = inner

    def name(self) -> str:
        if self.display is not None:  # a function shown as PyTorch's op (out-of-place index_put)
            return self.display[0]
        return "torch::autograd::CopySlices"

    @property
    def next_functions(self) -> tuple:
        """PyTorch's: the base's history, then the in-place node's other inputs as that node
        shows them (no entries for its index or mask, nor for a number it was given)."""
        if self.display is not None:
            return Node.next_functions.fget(self)
        base = Node.next_functions.fget(self)[0]
        return (base,) + self.inner.next_functions[1:]

    def release(self) -> None:
        self.inner.release()
        self.released = True

    def apply(self, grads: list) -> tuple:
        g = grads[0]
        if g is None:
            return (None,) * len(self.edges)
        device = g.device
        base_pos = _positions(self.base_geometry, device)
        view_pos = _positions(self.view_geometry, device)
        storage = storage_buffer(g, self.base_geometry, self.view_geometry)
        storage.put_(base_pos, g.reshape(-1))
        view_grad = storage.take(view_pos).reshape(self.view_geometry[0])
        inner = self.inner.apply([view_grad])
        if inner[0] is not None:
            storage.put_(view_pos, inner[0].reshape(-1))
        else:
            storage.put_(view_pos, 0.0)
        return (storage.take(base_pos).reshape(self.base_geometry[0]),) + tuple(inner[1:])


class ViewOf(Node):
    """History of a view after an in-place op: a fresh view of its (rebased) base."""

    __slots__ = ("base_geometry", "view_geometry")
    ctx = None

    def __init__(self, base: Tensor, view: Tensor, base_edge):
        meta = ((base._shape, base._dtype, base._storage.device),)
        self.fill(None, None, (base_edge,), meta)
        self.base_geometry = _geometry(base)
        self.view_geometry = _geometry(view)

    def name(self) -> str:
        return "AsStridedBackward0"

    # PyTorch's node keeps the view's geometry over its base's storage.
    @property
    def _saved_size(self) -> tuple:
        return tuple(self.view_geometry[0])

    @property
    def _saved_stride(self) -> tuple:
        return tuple(self.view_geometry[1])

    @property
    def _saved_storage_offset(self) -> int:
        return self.view_geometry[2]

    def apply(self, grads: list) -> tuple:
        g = grads[0]
        if g is None:
            return (None,)
        base_pos = _positions(self.base_geometry, g.device)
        view_pos = _positions(self.view_geometry, g.device)
        storage = storage_buffer(g, self.base_geometry, self.view_geometry)
        storage.put_(view_pos, g.reshape(-1), accumulate=True)
        return (storage.take(base_pos).reshape(self.base_geometry[0]),)


def replay(view: Tensor):
    """``view``'s history, regenerated over its base's current history when the base changed
    in place after the view's history was recorded (its values changed with the base)."""
    base = view._base
    node = ViewOf(base, view, gradient_edge(base))
    view._grad_fn = node
    view.__dict__.pop("_output_nr", None)
    view.__dict__["_view_of"] = base._grad_fn
    return node


def _geometry(t: Tensor) -> tuple:
    return (t._shape, t._stride, t._offset)


def _positions(geometry, device):
    return strided_positions(*geometry, device).reshape(-1)


def _extent(geometry) -> int:
    """One past the largest storage position a (shape, stride, offset) view touches."""
    shape, stride, offset = geometry
    if any(n == 0 for n in shape):
        return offset
    return 1 + offset + sum((n - 1) * s for n, s in zip(shape, stride) if s > 0)


def storage_buffer(g, *geometries):
    extent = max(_extent(geometry) for geometry in geometries)
    # new_zeros: batched when g is (jacrev runs backward formulas on batched gradients)
    return g.new_zeros(max(extent, 1), dtype=g.dtype, device=g.device)
