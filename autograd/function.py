"""``ember.autograd.Function``: user-defined ops with a hand-written backward."""

from __future__ import annotations

import functools
import weakref

from ember._dtype import FLOATING
from ember._tensor import Tensor

from . import grad_mode
from .anomaly import record_trace
from .formula import fit
from .layer import _set_history
from .node import Node, SavedTensor, gradient_edge


class FunctionCtx:
    """The ``ctx`` of a custom Function: save tensors, read which inputs need gradients."""

    def __init__(self):
        self._saved: tuple = ()
        self.needs_input_grad: tuple = ()
        self._non_differentiable: set = set()
        self._dirty: set = set()
        self.materialize_grads = True
        self._node = None
        self._saved_forward: tuple = ()
        self._in_jvp = False

    def save_for_backward(self, *tensors) -> None:
        self._saved = tuple(SavedTensor(t) if isinstance(t, Tensor) else t for t in tensors)

    @property
    def saved_tensors(self) -> tuple:
        if self._in_jvp:
            return self._saved_forward
        node = self._node() if self._node is not None else None
        return tuple(s.unpack(node) if isinstance(s, SavedTensor) else s for s in self._saved)

    def _saved_outputs_as_aliases(self, outputs: list) -> None:
        """Saved outputs now hold this node as grad_fn: keep history-free aliases instead (as
        the formula layer does), or node -> ctx -> output -> node is a reference cycle."""
        index = {id(t): i for i, t in enumerate(outputs)}
        self._saved = tuple(
            SavedTensor(s.tensor, index[id(s.tensor)])
            if isinstance(s, SavedTensor) and id(s.tensor) in index
            else s
            for s in self._saved
        )

    def save_for_forward(self, *tensors) -> None:
        """Tensors for ``jvp`` (forward AD), read there as ``ctx.saved_tensors``."""
        self._saved_forward = tuple(tensors)

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors) -> None:
        self._dirty.update(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)

    def release(self) -> None:
        for saved in self._saved:
            if isinstance(saved, SavedTensor):
                saved.free()


class _FunctionOp:
    """Stands in for a table op in the node of a custom Function (names and schema)."""

    def __init__(self, cls):
        self.name = cls.__name__
        self.cls = cls


class FunctionNode(Node):
    __slots__ = ("cls", "ctx", "output_meta", "positions")

    def __init__(self, cls, ctx, edges, meta, positions, output_meta):
        outputs = len(output_meta) or 1
        self.fill(_FunctionOp(cls), None, tuple(edges), tuple(meta), outputs)
        self.ctx = ctx
        self.cls = cls
        self.positions = positions
        self.output_meta = output_meta

    @property
    def needs_input_grad(self) -> tuple:  # the ctx's, per forward argument
        return self.ctx.needs_input_grad

    def name(self) -> str:
        return f"{self.cls.__name__}Backward"

    def __getattr__(self, name: str):
        # In PyTorch a custom Function's grad_fn is its ctx: y.grad_fn.saved_tensors and
        # attributes set on ctx in forward/backward read through it.
        if name.startswith("__") or name == "ctx":
            raise AttributeError(name)
        return getattr(self.ctx, name)

    def apply(self, grads: list) -> tuple:
        import ember

        ctx = self.ctx
        if ctx.materialize_grads:
            grads = [
                g if g is not None else ember.zeros(m[0], dtype=m[1], device=m[2])
                for g, m in zip(grads, self.output_meta)
            ]
        result = self.cls.backward(ctx, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        out = []
        for position, meta in zip(self.positions, self.input_meta):
            g = result[position] if position < len(result) else None
            out.append(None if g is None or meta is None else fit(g, meta))
        return tuple(out)


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call ``apply``.

    ``backward`` returns one gradient per ``forward`` argument (None for non-tensors). The newer
    style, ``forward(*args)`` plus ``setup_context(ctx, inputs, output)``, works too.

    Example:
        >>> class Square(ember.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         (x,) = ctx.saved_tensors
        ...         return 2 * x * g
        >>> Square.apply(ember.ones(3, requires_grad=True)).sum().backward()
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a Function subclass must implement forward")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a Function subclass must implement backward")

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """Forward AD: the tangents of the outputs from the inputs' (zeros for tensors without
        one, None for other arguments). Tensors saved with ``ctx.save_for_forward`` are
        ``ctx.saved_tensors`` here."""
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with "
            "forward mode AD."
        )

    setup_context = None
    generate_vmap_rule = False

    @staticmethod
    def vmap(info, in_dims, *args):
        """Under ``vmap``: ``(outputs, out_dims)`` from the physical arguments (``in_dims``
        holds each one's batch dim, or None). Override it, or set ``generate_vmap_rule``."""
        raise NotImplementedError(
            "To use autograd.Function with vmap, you must either override the vmap staticmethod "
            "or set generate_vmap_rule=True."
        )

    @classmethod
    def apply(cls, *args, **kwargs):
        from .forward_ad import suspended
        from .function_vmap import apply_batched, batched_level

        batched = batched_level(args)
        if batched is not None:  # under vmap: the Function's vmap rule
            return apply_batched(cls, args, kwargs, batched)
        level = _tangent_level(args)
        ctx = FunctionCtx()
        positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        record = grad_mode.THREAD.mode.enabled and any(ctx.needs_input_grad)
        edges = [gradient_edge(args[i]) if record else None for i in positions]
        meta = [(args[i]._shape, args[i]._dtype, args[i]._storage.device) for i in positions]
        with grad_mode.no_grad(), suspended(level):
            if cls.setup_context is not None:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        if record:
            out = cls._record(ctx, args, out, positions, edges, meta)
        if level >= 0:
            _forward_tangents(cls, ctx, args, out, level)
        return out

    @classmethod
    def _record(cls, ctx, args, out, positions, edges, meta):
        outputs = out if isinstance(out, tuple) else (out,)
        tensors = [t for t in outputs if isinstance(t, Tensor)]
        output_meta = [(t._shape, t._dtype, t._storage.device) for t in tensors]
        node = FunctionNode(cls, ctx, edges, meta, positions, output_meta)
        ctx._node = weakref.ref(node)  # the node holds ctx: a strong reference back is a cycle
        record_trace(node)
        inputs = {id(args[i]) for i in positions}
        result, index = [], 0
        for t in outputs:
            if isinstance(t, Tensor):
                differentiable = id(t) not in ctx._non_differentiable
                if id(t) in inputs and id(t) not in ctx._dirty:
                    t = t.view_as(t)  # returning an input unchanged: give it its own identity
                if t._dtype.category == FLOATING and differentiable:
                    _set_history(t, node, index)
                index += 1
            result.append(t)
        ctx._saved_outputs_as_aliases(tensors)
        return tuple(result) if isinstance(out, tuple) else result[0]


def _tangent_level(args) -> int:
    """The innermost open forward-AD level among the arguments' tangents (-1: none)."""
    from .forward_ad import STATE

    if not STATE.open:
        return -1
    found = -1
    for a in args:
        if isinstance(a, Tensor):
            for level in a.__dict__.get("_fw") or ():
                if level in STATE.open and level > found:
                    found = level
    return found


def _forward_tangents(cls, ctx, args, out, level: int) -> None:
    """Run ``cls.jvp`` (with the level suspended) and give its tangents to the outputs."""
    import ember

    from .forward_ad import suspended, tangent_of
    from .jvp_rules import attach

    grads = []
    for a in args:
        if isinstance(a, Tensor):
            t = tangent_of(a, level)
            grads.append(ember.zeros_like(a) if t is None else t)
        else:
            grads.append(None)
    ctx._in_jvp = True
    try:
        with suspended(level):
            tangents = cls.jvp(ctx, *grads)
    finally:
        ctx._in_jvp = False
    attach(out, tangents, level)


def once_differentiable(backward):
    """Mark a backward as not differentiable itself: it runs with recording off."""

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        with grad_mode.no_grad():
            return backward(ctx, *grads)

    return wrapper
