"""A model's graph for TensorBoard's Graphs dashboard: ``ember.jit.trace`` records it, and each
IR value becomes a ``NodeDef`` named by its module scope as ``torch.utils.tensorboard`` names
them (``Net/Linear[fc]/3``), with its output shape in ``_output_shapes``."""

import contextlib

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef


def _attrs(value, attributes=None):
    attr = {}
    if attributes is not None:
        attr["attr"] = AttrValue(s=attributes.encode("utf_8"))
    sizes = getattr(value.type(), "sizes", lambda: None)()
    if sizes is not None:
        shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=d) for d in sizes])
        attr["_output_shapes"] = AttrValue(list=AttrValue.ListValue(shape=[shape]))
    return attr


def _scope_path(model, scope):
    """``fc.0`` -> ``Net/Sequential[fc]/Linear[0]``, PyTorch's scope notation."""
    parts = [type(model).__name__]
    prefix = ""
    for name in filter(None, scope.split(".")):
        prefix = f"{prefix}.{name}" if prefix else name
        try:
            parts.append(f"{type(model.get_submodule(prefix)).__name__}[{name}]")
        except (AttributeError, TypeError):
            parts.append(name)
    return "/".join(parts)


def _node_defs(model, graph):
    """NodeDefs for the graph's inputs, every node's outputs and the graph's outputs."""
    names, defs = {}, []
    for value in graph.inputs():
        names[value] = f"input/{value.debugName()}"
        defs.append(NodeDef(name=names[value], op="IO Node", attr=_attrs(value)))
    for node in graph.nodes():
        attributes = str({k: node[k] for k in node.attributeNames()}).replace("'", " ")
        inputs = [names[v] for v in node.inputs() if v in names]
        for value in node.outputs():
            names[value] = f"{_scope_path(model, node.scopeName())}/{value.debugName()}"
            attr = _attrs(value, attributes)
            defs.append(NodeDef(name=names[value], op=node.kind(), input=inputs, attr=attr))
    for i, value in enumerate(graph.outputs(), start=1):
        attr = _attrs(value)
        defs.append(
            NodeDef(name=f"output/output.{i}", op="IO Node", input=[names[value]], attr=attr)
        )
    return defs


@contextlib.contextmanager
def _eval_mode(model):
    """Trace in eval mode, as PyTorch does, and restore the training flag after."""
    training = getattr(model, "training", None)
    if training is not None:
        model.train(False)
    try:
        yield
    finally:
        if training is not None:
            model.train(training)


def graph(model, args, verbose=False, use_strict_trace=True):
    """``(GraphDef, RunMetadata)`` of ``model`` traced by ``ember.jit.trace`` on ``args``."""
    import ember.jit

    with _eval_mode(model):
        traced = ember.jit.trace(model, args, strict=use_strict_trace)
    if verbose:
        print(traced.graph)
    stepstats = RunMetadata(
        step_stats=StepStats(dev_stats=[DeviceStepStats(device="/device:CPU:0")])
    )
    graph_def = GraphDef(node=_node_defs(model, traced.graph), versions=VersionDef(producer=22))
    return graph_def, stepstats
