"""What a formula sees of its forward call (``ctx``): the methods of a node that is its own ctx.

A formula is ``fn(ctx, *grad_outputs)``; ``ctx`` exposes the op's non-tensor arguments by schema
name, the tensors the formula declared in ``save`` (``result`` is the op's output),
``needs_input_grad`` and ``meta(name)`` = (shape, dtype, device) of any tensor argument.

The ctx is the graph node itself (``Node`` derives from ``Context``; ``node.ctx is node``):
recording a call builds one object, not a node and a context (docs/eager_overhead.md, round 7).
The node keeps only references: the call's arguments with the tensors blanked out
(``_values``; tensors are kept only when saved, as SavedTensor), the flat input metadata
(``input_meta``), the formula, whose ``plan`` maps names to positions. Saved outputs unpack with
the node as their grad_fn.
"""

from __future__ import annotations


class Context:
    """Reads of a formula node's call (the slots are the node's: ``formula``, ``input_meta``,
    ``needs_input_grad``, ``_values``, ``_saved``, ``_spans``, ``_strides``)."""

    __slots__ = ()

    def argument(self, name: str):
        """``ctx.<name>``: a saved tensor (a list for a Tensor[] argument), else the call's
        value of argument ``name``."""
        saved = self._saved.get(name) if self._saved else None
        if saved is not None:
            if isinstance(saved, tuple):
                return [s.unpack(self) for s in saved]
            return saved.unpack(self)
        plan = self.formula.plan
        position = plan.position.get(name)
        if position is not None:
            values = self._values
            value = values[position] if position < len(values) else plan.defaults[position]
            if value is not None or self._meta_of(name) is None:
                return value
        op = plan.op_name
        raise AttributeError(f"autograd formula of '{op}' reads '{name}', which it did not save")

    def _meta_of(self, name: str):
        index = self.formula.plan.tensor_index.get(name)
        if index is None:
            return None
        if self._spans is not None:
            start, stop = self._spans[index]
            return list(self.input_meta[start:stop])
        return self.input_meta[index]

    def meta(self, name: str) -> tuple:
        """(shape, dtype, device) of tensor argument ``name`` at forward time (a list of them
        for a Tensor[] argument; None for an argument that was not a tensor)."""
        return self._meta_of(name)

    def shape(self, name: str = "input") -> tuple:
        return self._meta_of(name)[0]

    def strides_of(self, name: str) -> tuple:
        """Strides of tensor argument ``name`` at forward time (for formulas that ask for them
        with ``strides=``: a gradient laid out like its input needs no copy later)."""
        return self._strides[name]

    def free_saved(self) -> None:
        if self._saved:
            for saved in self._saved.values():
                for item in saved if isinstance(saved, tuple) else (saved,):
                    item.free()
