"""A training step captured whole: forward, ``loss.backward()``, optimizer steps, ``zero_grad``.

PyTorch's ``torch.compile`` of a function that calls ``loss.backward()`` breaks the graph there
and resumes in a second frame whose graph holds the optimizer step; ember keeps one region
instead. The capture records the forward ops; ``loss.backward()`` (the loss a graph tensor, no
gradient, inputs, retain_graph or create_graph), ``opt.step()`` of an optimizer with a
compiled step (optim_step.py) and ``opt.zero_grad()`` are kept as calls to replay in their
order: those before the backward run before the forward (they touch parameters and ``.grad``,
which the forward reads only as values, so the order is eager's), the others after it. The
forward region returns the loss along with the function's outputs; the replay runs it (as its
compiled forward/backward pair where joint.py builds one: the backward then runs the compiled
backward program), calls ``backward()`` on the loss, then the compiled steps and the
``zero_grad`` calls. An op recorded after the backward (``loss.detach()``, a metric) is a graph
break: the call runs eagerly for that guard set, as before.
"""

from __future__ import annotations

from ember._tensor import Tensor
from ember.jit import pytree


class TrainRegion:
    """The replay of a captured training step (see the module docstring)."""

    def __init__(self, forward, observer, out_leaves, out_spec):
        self.forward = forward  # a Region returning (outputs, [loss]), or None (no op)
        self.graph = forward.graph if forward is not None else None
        self.steps = list(observer.steps)
        self.before = list(observer.before)
        self.after = list(observer.after)
        self.backward = bool(observer.targets)
        self.out = (out_leaves, out_spec)  # without a forward: the constants returned
        self.compile_seconds = forward.compile_seconds if forward is not None else 0.0

    @property
    def static(self) -> bool:
        return self.forward is not None and self.forward.static

    @static.setter
    def static(self, value: bool) -> None:  # mode="reduce-overhead" (frame.py)
        if self.forward is not None:
            self.forward.static = value

    def run(self, root, tensors):
        for call in self.before:
            call()
        if self.forward is None:
            result = pytree.unflatten(list(self.out[0]), self.out[1])
        elif self.backward:
            result, (loss,) = self.forward.run(root, tensors)
            loss.backward()
        else:
            result = self.forward.run(root, tensors)
        for call in self.after:
            call()
        return result


def no_op_region(observer, out_leaves, out_spec):
    """A TrainRegion of the optimizer calls alone when the graph holds no op and the call
    returns no tensor (PyTorch's tutorial: ``@compile def fn(): opt.step()``), else None."""
    if observer.op_count() or any(isinstance(leaf, Tensor) for leaf in out_leaves):
        return None
    return TrainRegion(None, observer, out_leaves, out_spec)
