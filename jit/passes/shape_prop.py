"""Shape propagation: every value's type from the op table's rules, without computing data.

The graph runs on ``meta`` tensors (``ember.dispatcher.meta``): each op's runner derives its
output shape, dtype and strides exactly as on a real device, and the meta kernel does nothing.
The types recorded are the tensors' shapes and dtypes, on the device the inputs declare.
"""

from __future__ import annotations

import ember
from ember._device import device as Device
from ember._tensor import Tensor

from ..interpreter import GraphInterpreter
from ..types import TensorType, type_of
from .freeze import attribute_of

META = Device("meta")


def meta_like(t: Tensor) -> Tensor:
    out = ember.empty(t.shape, dtype=t.dtype, device="meta")
    return out.requires_grad_(t.requires_grad) if t.requires_grad else out


def _meta_input(type_, given):
    if given is not None:
        return meta_like(given) if isinstance(given, Tensor) else given
    if not isinstance(type_, TensorType) or not type_.is_complete():
        raise ValueError(
            f"propagate_shapes: input type {type_} is not complete; give example inputs"
        )
    return ember.empty(type_.sizes(), dtype=type_.dtype(), device="meta")


class _Recorder(GraphInterpreter):
    def __init__(self, graph, attribute, device):
        super().__init__(graph, attribute, self.meta_constant)
        self.device = device
        self.device_args = device_constants(graph)

    def meta_constant(self, node):
        value = node["value"]
        if isinstance(value, Tensor):
            return meta_like(value)
        if isinstance(value, Device) or (node in self.device_args and value is not None):
            return META
        return value

    def on_value(self, value, result) -> None:
        if value.node().kind() == "prim::Constant" and not isinstance(result, Tensor):
            # A device argument runs as meta here; its type is the constant's own.
            value.setType(type_of(value.node()["value"]))
            return
        found = type_of(result)
        if isinstance(found, TensorType):
            device = value.type().device() if isinstance(value.type(), TensorType) else None
            found = found.with_(device=device or self.device)
        value.setType(found)


def device_constants(graph) -> set:
    """The constant nodes an op takes as a ``Device`` argument (strings such as ``"cpu"``
    included), e.g. ``ember.arange(n, device=x.device)`` baked in by a trace."""
    found = set()
    for node in graph.all_nodes():
        op = node.op()
        if op is None:
            continue
        for arg, value in zip(op.schema.args, node.inputs()):
            if arg.type == "Device" and value.node().kind() == "prim::Constant":
                found.add(value.node())
    return found


def propagate_shapes(graph, inputs=None, module=None):
    """Set the type of every value of ``graph``.

    Args:
        graph: the graph; its input types give the shapes unless ``inputs`` does.
        inputs: example values (tensors on any device, meta included) or None per input.
        module: the module whose parameters and buffers ``prim::GetAttr`` reads.

    Returns:
        the graph's outputs as meta tensors.
    """
    given = list(inputs) if inputs is not None else [None] * len(graph.inputs())
    args = [_meta_input(v.type(), g) for v, g in zip(graph.inputs(), given, strict=True)]
    devices = [g.device for g in given if isinstance(g, Tensor) and g.device.type != "meta"]
    declared = [v.type().device() for v in graph.inputs() if isinstance(v.type(), TensorType)]
    device = (devices or [d for d in declared if d is not None] or [None])[0]
    attribute = None if module is None else (lambda name: meta_like(attribute_of(module, name)))
    # Grad mode as the caller has it: requires_grad propagates by autograd's own rule.
    return _Recorder(graph, attribute, device).run(*args)
