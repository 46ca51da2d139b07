"""Formulas for third-party ops (``ember.library.register_autograd``), in PyTorch's convention.

``setup_context(ctx, inputs, output)`` runs after the forward and saves what the backward needs
(``ctx.save_for_backward(...)``, or plain attributes for non-tensors); ``backward(ctx, *grads)``
returns one gradient per op argument (None for non-tensors and for inputs that need none), or
one per tensor argument. The node is the same as a table op's, so the Autograd layer records
library ops like any other, and the engine undoes broadcasting and casts as usual.
"""

from __future__ import annotations

from ember._tensor import Tensor

from .formula import fit
from .function import FunctionCtx
from .node import SavedTensor


class LibraryContext(FunctionCtx):
    """The ``ctx`` of a library op's backward: ``save_for_backward``, ``saved_tensors``,
    ``needs_input_grad`` (per argument), and any attribute ``setup_context`` sets."""

    def __init__(self, needs_input_grad: tuple):
        super().__init__()
        self.needs_input_grad = needs_input_grad
        self._outputs: tuple = ()
        self._output_meta: tuple = ()

    def save_for_backward(self, *tensors) -> None:
        # The op's own outputs are saved history-free (as the table formulas' "result" is):
        # holding them as they are would make a cycle through their grad_fn.
        outputs = {id(t) for t in self._outputs}
        self._saved = tuple(
            SavedTensor(t, self._node if id(t) in outputs else None) if isinstance(t, Tensor) else t
            for t in tensors
        )


class LibraryFormula:
    """``backward`` and ``setup_context`` as the Autograd layer's formula interface."""

    __slots__ = ("backward", "save", "setup_context")

    def __init__(self, backward, setup_context=None):
        self.backward = backward
        self.setup_context = setup_context
        self.save: dict = {}  # read for in-place ops only; library ops are functional

    def context(self, op, args, inplace_originals=None) -> LibraryContext:
        needs, widths = [], {}
        for position, value in enumerate(args):
            is_list = isinstance(value, (list, tuple))
            items = value if is_list else (value,)
            needs.append(any(isinstance(t, Tensor) and t._requires_grad for t in items))
            widths[position] = len(value) if is_list else None
        ctx = LibraryContext(tuple(needs))
        ctx._inputs = args
        ctx._widths = widths
        return ctx

    def save_result(self, ctx: LibraryContext, node, out) -> None:
        outputs = out if isinstance(out, tuple) else (out,)
        ctx._node = node
        ctx._outputs = outputs
        ctx._output_meta = tuple((t._shape, t._dtype, t._storage.device) for t in outputs)
        try:
            if self.setup_context is not None:
                self.setup_context(ctx, ctx._inputs, out)
        finally:
            ctx._inputs = None
            ctx._outputs = ()

    def apply(self, node, grads: list) -> tuple:
        if all(g is None for g in grads):
            return (None,) * len(node.next_functions)
        import ember

        ctx = node.ctx
        grads = [  # PyTorch materialises the missing grads of multi-output ops as zeros
            g if g is not None else ember.zeros(m[0], dtype=m[1], device=m[2])
            for g, m in zip(grads, ctx._output_meta)
        ]
        result = self.backward(ctx, *grads)
        result = result if isinstance(result, tuple) else (result,)
        op = node.op
        positions = op.tensor_positions
        if len(result) == len(op.schema.args):  # one per argument: keep the tensor ones
            result = [result[i] for i in positions]
        if len(result) != len(positions):
            raise RuntimeError(
                f"backward of '{op.name}' returned {len(result)} gradients; expected one per "
                f"argument ({len(op.schema.args)}) or per tensor argument ({len(positions)})"
            )
        flat = []  # the layer records Tensor[] arguments flat, one edge per tensor
        for position, value in zip(positions, result):
            width = ctx._widths.get(position)
            if width is None:
                flat.append(value)
            else:
                flat.extend(value if value is not None else [None] * width)
        return tuple(
            None if (g is None or m is None) else fit(g, m) for g, m in zip(flat, node.input_meta)
        )
