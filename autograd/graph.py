"""``ember.autograd.graph``: the backward graph as PyTorch exposes it.

``Node`` is the class of every ``grad_fn``; ``saved_tensors_hooks`` changes how tensors saved
for backward are stored (``save_on_cpu`` moves them to host memory, checkpointing drops them
and recomputes), ``disable_saved_tensors_hooks`` refuses such hooks in a block;
and ``GradientEdge``/``get_gradient_edge`` name where a tensor's gradient flows.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from ember._hooks import RemovableHandle
from ember._tensor import Tensor

from . import engine
from .node import SAVED_HOOKS, Node, gradient_edge


class saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Within the block, every tensor saved for backward is stored as ``pack_hook(tensor)``
    and given back as ``unpack_hook(packed)`` when backward needs it.

    Example:
        >>> with ember.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
        ...     y = x.exp()
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if SAVED_HOOKS.disabled is not None:
            raise RuntimeError(SAVED_HOOKS.disabled)
        SAVED_HOOKS.stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        SAVED_HOOKS.stack.pop()
        return False


class save_on_cpu(saved_tensors_hooks):  # noqa: N801
    """Saved tensors live in host memory until backward copies them back to their device
    (``pin_memory`` stages them in pinned memory for asynchronous copies)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        def pack_to_cpu(tensor):
            if not pin_memory or tensor.device.type == "cpu":
                return (tensor.device, tensor.cpu())
            return (tensor.device, tensor.cpu().pin_memory())

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


class disable_saved_tensors_hooks:  # noqa: N801
    """Within the block (or the decorated function), entering ``saved_tensors_hooks`` raises
    ``RuntimeError(error_message)``."""

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self):
        self.previous = SAVED_HOOKS.disabled
        SAVED_HOOKS.disabled = self.error_message
        return self

    def __exit__(self, *exc):
        SAVED_HOOKS.disabled = self.previous
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with disable_saved_tensors_hooks(self.error_message):
                return fn(*args, **kwargs)

        return wrapper


class GradientEdge(NamedTuple):
    """Where a gradient flows: a node and which of its inputs."""

    node: Node
    output_nr: int


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The edge ``tensor``'s gradient flows into (its grad_fn, or its leaf accumulator)."""
    edge = gradient_edge(tensor)
    if edge is None:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require "
            "gradients"
        )
    return GradientEdge(edge[0], edge[1])


def increment_version(tensor) -> None:
    """Count an in-place change made outside ember's ops (saved copies then refuse to unpack)."""
    tensors = tensor if isinstance(tensor, (list, tuple)) else (tensor,)
    for t in tensors:
        t._storage.version += 1


def allow_mutation_on_saved_tensors():
    """A block in which tensors saved for backward may change in place (backward sees their
    saved values): autograd/saved_mutation.py."""
    from .saved_mutation import allow_mutation_on_saved_tensors as allow

    return allow()


class _MultiHandle(RemovableHandle):
    """Removes the hooks ``register_multi_grad_hook`` put on each tensor."""

    def __init__(self, handles):
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def _grad_fn_or_grad_acc(t: Tensor):
    if t.requires_grad and t.grad_fn is None:
        return gradient_edge(t)[0]  # a leaf: its AccumulateGrad node
    return t.grad_fn


def register_multi_grad_hook(tensors, fn, *, mode: str = "all"):
    """Call ``fn`` once per backward pass over ``tensors``' gradients: with ``mode="all"``,
    ``fn(grads)`` after every gradient the pass computes for them is there (None for the
    tensors it does not reach); with ``mode="any"``, ``fn(grad)`` on the first one.

    Example:
        >>> handle = register_multi_grad_hook((a, b), lambda grads: print(grads))
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    if mode == "any":
        seen: set = set()

        def first(grad):
            task = engine.current_graph_task_id()
            if task not in seen:
                seen.add(task)
                fn(grad)

        return _MultiHandle(tuple(t.register_hook(first) for t in tensors if t.requires_grad))
    nodes = [_grad_fn_or_grad_acc(t) for t in tensors]
    expected: dict = {}  # per pass: how many of the hooks it runs, and the gradients so far
    buffers: dict = {}

    def hook_for(index: int):
        def hook(grad):
            task = engine.current_graph_task_id()
            if task not in expected:  # the first of this pass: count what it will run
                expected[task] = sum(map(engine.will_engine_execute_node, nodes))
                buffers[task] = [None] * len(nodes)
            buffers[task][index] = grad
            expected[task] -= 1
            if expected[task] == 0:
                del expected[task]
                fn(buffers.pop(task))

        return hook

    return _MultiHandle(tuple(t.register_hook(hook_for(i)) for i, t in enumerate(tensors)))


__all__ = [
    "GradientEdge",
    "allow_mutation_on_saved_tensors",
    "Node",
    "disable_saved_tensors_hooks",
    "get_gradient_edge",
    "increment_version",
    "register_multi_grad_hook",
    "save_on_cpu",
    "saved_tensors_hooks",
]
