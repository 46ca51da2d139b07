"""The dispatch layer stack.

A call runs the highest-priority active layer; each layer does its work and continues below itself
with ``op.redispatch(self, args)``. The Backend layer is not in the stack: it is what runs when no
layer above wants the call (``Op.backend``). Planned layers and their priorities, highest first:

    profiling 400, tracing 300, vmap 250, flop counting 225, autocast 200, forward AD 150,
    autograd 100, saved-tensor mutation 60, selective checkpointing 50, checkpoint debug log 45,
    (backend)

(vmap above autocast and the AD layers so they see per-sample calls on physical tensors;
flop counting below vmap, to count the batched calls, and above autograd, to see composites
whole: ember/utils/_flop_layer.py;
the checkpoint layers below autograd so they see what autograd records: docs/func.md.)

A layer is active when its ``wants(op, args)`` says so; keep that to a few attribute reads, since it
runs on every op call while the layer is installed. Layers that are off (autocast outside
``autocast()``) should be removed from the stack rather than answer False.

A layer that wants only calls where some tensor argument requires grad (autograd) says so with
``grad_only = True``. While every installed layer does, ``STACK.grad_only_layers is
STACK.layers``, and a call site that already knows its tensor arguments (``a + b``, ``a.exp()``)
may check their ``_requires_grad`` itself and go straight to the Backend layer: the saving is the
layer loop, a method call per layer and the scan of the arguments (docs/eager_overhead.md). An
identity test of the tuple, not a flag, so that a stack whose ``layers`` is assigned directly
(tests restore it so) is never mistaken for a grad-only one.

A grad-only layer that records such calls through ``op.recorder`` (autograd, ``direct = True``)
is ``STACK.direct_layers`` while it is the only layer installed: then those call sites, once
they know some tensor argument requires grad, call ``op.recorder(*args)`` themselves (when the
op has one), skipping ``Op.__call__``, the layer loop and ``wants`` (the recording's cost,
docs/eager_overhead.md round 6).
"""

from __future__ import annotations


class Layer:
    """Base class of dispatch layers."""

    name = "layer"
    priority = 0
    # True when wants() is False for every call in which no tensor argument requires grad.
    grad_only = False
    # True when, alone in the stack, handle() of a call is op.recorder(*args) (the docstring).
    direct = False

    def wants(self, op, args) -> bool:
        return True

    def handle(self, op, args):
        return op.redispatch(self, args)

    def __repr__(self) -> str:
        return f"<layer {self.name} priority={self.priority}>"


class LayerStack:
    """The installed layers, highest priority first, as a tuple read on every call."""

    __slots__ = ("direct_layers", "grad_only_layers", "layers")

    def __init__(self):
        self.layers: tuple = ()
        self.grad_only_layers: tuple | None = self.layers  # see the module docstring
        self.direct_layers: tuple | None = None

    def replace(self, layers: tuple) -> None:
        """Install exactly ``layers`` (highest priority first), e.g. to restore a saved stack."""
        self.layers = layers
        self.grad_only_layers = layers if all(layer.grad_only for layer in layers) else None
        alone = len(layers) == 1 and layers[0].grad_only and layers[0].direct
        self.direct_layers = layers if alone else None

    def install(self, layer: Layer) -> None:
        if layer in self.layers:
            return
        if any(other.priority == layer.priority for other in self.layers):
            clash = next(o for o in self.layers if o.priority == layer.priority)
            raise ValueError(f"dispatch layer {layer!r} has the same priority as {clash!r}")
        self.replace(tuple(sorted(self.layers + (layer,), key=lambda item: -item.priority)))

    def saved(self) -> tuple:
        """The stack as ``restore`` takes it back."""
        return (self.layers, self.grad_only_layers, self.direct_layers)

    def restore(self, saved: tuple) -> None:
        """Reinstall a stack ``saved`` returned, without ``replace``'s scan of its layers (a
        compiled call with graph breaks installs its layer and removes it at every call)."""
        self.layers, self.grad_only_layers, self.direct_layers = saved

    def remove(self, layer: Layer) -> None:
        self.replace(tuple(item for item in self.layers if item is not layer))

    def installed(self, layer: Layer) -> bool:
        return layer in self.layers


STACK = LayerStack()


class installed:  # noqa: N801 - used like a function: ``with installed(layer): ...``
    """Context manager that installs a layer for the duration of a block."""

    def __init__(self, layer: Layer):
        self.layer = layer
        self.owned = False

    def __enter__(self):
        self.owned = not STACK.installed(self.layer)
        STACK.install(self.layer)
        return self.layer

    def __exit__(self, *exc):
        if self.owned:
            STACK.remove(self.layer)
