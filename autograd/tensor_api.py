"""Tensor methods that belong to autograd: backward, hooks, retain_grad, detach_."""

from __future__ import annotations

from ember._tensor import Tensor

from .engine import backward as run_backward
from .node import add_tensor_hook, history, output_nr, retain, typed


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradient of this tensor into the leaves' ``.grad`` (see autograd.backward)."""
    run_backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def register_hook(self, hook):
    """Call ``hook(grad)`` with this tensor's gradient; it may return a replacement.

    Returns a handle whose ``remove()`` unregisters the hook.
    """
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self._grad_fn is None:
        return add_tensor_hook(self, hook)
    return self._grad_fn._add_pre_hook((output_nr(self), hook))


def register_post_accumulate_grad_hook(self, hook):
    """Call ``hook(tensor)`` after a backward pass accumulated into this leaf's ``.grad``.

    The hook returns None; it runs once per backward pass that reaches the leaf (not under
    ``autograd.grad``, which accumulates nothing). Returns a handle whose ``remove()``
    unregisters it.
    """
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self._grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    return add_tensor_hook(self, hook, "_post_accumulate_hooks")


def retain_grad(self) -> None:
    """Keep ``.grad`` for this non-leaf tensor after backward."""
    if self._grad_fn is None:
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        return
    if self.__dict__.get("_retains_grad"):
        return
    self.__dict__["_retains_grad"] = True
    retain(self)


def retains_grad(self) -> bool:
    return bool(self.__dict__.get("_retains_grad"))


_DETACH_VIEW = "Can't detach views in-place. Use detach() instead."


def detach_(self):
    """Detach this tensor from the graph in place (it becomes a leaf that doesn't require grad,
    with no forward-AD tangent)."""
    from .batched import BatchedTensor

    # Under vmap PyTorch detaches each sample, a view of the batch, so it always refuses.
    if self.__class__ is BatchedTensor or (self._base is not None and self._base._requires_grad):
        raise RuntimeError(_DETACH_VIEW)
    if self.__dict__.get("_fw") and self._base is not None:
        raise RuntimeError(_DETACH_VIEW)  # as PyTorch refuses a view of a dual tensor
    self._grad_fn = None
    self._requires_grad = False
    state = self.__dict__
    state.pop("_fw", None)
    # Output 0 of nothing, as PyTorch resets it (and what lets a recorder test a fresh output
    # by its missing grad_fn alone: a tensor has a nonzero _output_nr only with a grad_fn)
    state.pop("_output_nr", None)
    return self


def grad_fn(self):
    node = history(self)
    return None if node is None else typed(node)


def install() -> None:
    Tensor.backward = backward
    Tensor.register_hook = register_hook
    Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
    Tensor.retain_grad = retain_grad
    Tensor.retains_grad = property(retains_grad)
    Tensor.detach_ = detach_
    Tensor.grad_fn = property(grad_fn, doc="The node that created this tensor (None for leaves).")
