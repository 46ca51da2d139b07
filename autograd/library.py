"""Formulas for third-party ops (``ember.library.register_autograd``), in PyTorch's convention.

``setup_context(ctx, inputs, output)`` runs after the forward and saves what the backward needs
(``ctx.save_for_backward(...)``, or plain attributes for non-tensors); ``backward(ctx, *grads)``
returns one gradient per op argument (None for non-tensors and for inputs that need none), or
one per tensor argument. The node is the same as a table op's, so the Autograd layer records
library ops like any other, and the engine undoes broadcasting and casts as usual.
"""

from __future__ import annotations

import weakref

from .formula import Plan, fit, scan
from .function import FunctionCtx
from .node import Node


class LibraryContext(FunctionCtx):
    """The ``ctx`` of a library op's backward: ``save_for_backward``, ``saved_tensors``,
    ``needs_input_grad`` (per argument), and any attribute ``setup_context`` sets."""

    def __init__(self, needs_input_grad: tuple):
        super().__init__()
        self.needs_input_grad = needs_input_grad
        self._output_meta: tuple = ()


class LibraryNode(Node):
    """A library op's node: its ctx is the ``LibraryContext`` the op's own functions use."""

    __slots__ = ("ctx",)


class LibraryFormula:
    """``backward`` and ``setup_context`` as the Autograd layer's formula interface."""

    __slots__ = ("backward", "plan", "setup_context")

    save: dict = {}  # read for in-place ops only; library ops are functional
    saves_result = True  # setup_context runs once the output exists
    forward = None  # the op runs through its runner (Formula.forward)

    def __init__(self, op, backward, setup_context=None):
        self.backward = backward
        self.setup_context = setup_context
        self.plan = Plan(op, {})

    def record(self, op, args, originals=None) -> LibraryNode:
        plan = self.plan
        edges, meta, needs, _, spans = scan(plan, args)
        per_argument = [False] * len(plan.position)
        for k, position in enumerate(plan.tensor_positions):
            per_argument[position] = needs[k]
        ctx = LibraryContext(tuple(per_argument))
        ctx._inputs = args
        ctx._spans = spans
        node = LibraryNode().fill(op, self, tuple(edges), tuple(meta))
        node.ctx = ctx
        return node

    def save_result(self, node: LibraryNode, out) -> None:
        ctx = node.ctx
        outputs = out if isinstance(out, tuple) else (out,)
        ctx._output_meta = tuple((t._shape, t._dtype, t._storage.device) for t in outputs)
        try:
            if self.setup_context is not None:
                self.setup_context(ctx, ctx._inputs, out)
            # Saved outputs get this node as grad_fn: keep history-free aliases (no cycle).
            ctx._saved_outputs_as_aliases(list(outputs))
        finally:
            ctx._inputs = None

    def apply(self, node, grads: list) -> tuple:
        if all(g is None for g in grads):
            return (None,) * len(node.edges)
        import ember

        ctx = node.ctx
        ctx._node = weakref.ref(node)  # saved outputs unpack with the node as their grad_fn
        grads = [  # PyTorch materialises the missing grads of multi-output ops as zeros
            g if g is not None else ember.zeros(m[0], dtype=m[1], device=m[2])
            for g, m in zip(grads, ctx._output_meta)
        ]
        result = self.backward(ctx, *grads)
        result = result if isinstance(result, tuple) else (result,)
        positions = self.plan.tensor_positions
        if len(result) == len(self.plan.position):  # one per argument: keep the tensor ones
            result = [result[i] for i in positions]
        if len(result) != len(positions):
            raise RuntimeError(
                f"backward of '{node.op.name}' returned {len(result)} gradients; expected one "
                f"per argument ({len(self.plan.position)}) or per tensor argument "
                f"({len(positions)})"
            )
        flat = list(result)
        if ctx._spans is not None:  # the layer records Tensor[] arguments flat
            flat = []
            for (start, stop), value in zip(ctx._spans, result):
                if isinstance(value, (list, tuple)):
                    flat.extend(value)
                elif stop - start == 1:
                    flat.append(value)
                else:
                    flat.extend([None] * (stop - start))
        return tuple(
            None if (g is None or m is None) else fit(g, m) for g, m in zip(flat, node.input_meta)
        )
