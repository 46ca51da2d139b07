"""``SummaryWriter.add_onnx_graph``: an ONNX file as a TensorBoard ``GraphDef``, node for node as
``torch.utils.tensorboard._onnx_graph`` builds it (the ``onnx`` package reads the file).

The graph's inputs and outputs become ``Variable`` nodes with their ONNX element type and
shape; each ONNX node becomes a node named by its first output, with its op type, its inputs
and its attributes as one ``parameters`` string. PyTorch prints every name as it goes; ember
does not."""

from __future__ import annotations

import itertools

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef


def load_onnx_graph(fname) -> GraphDef:
    """The ``GraphDef`` of the ONNX model in the file ``fname``."""
    try:
        import onnx
    except ImportError as exc:
        raise ImportError(
            "SummaryWriter.add_onnx_graph needs the onnx package: pip install onnx"
        ) from exc
    return parse(onnx.load(fname).graph)


def _variable(value) -> NodeDef:
    tensor_type = value.type.tensor_type
    dims = [TensorShapeProto.Dim(size=d.dim_value) for d in tensor_type.shape.dim]
    return NodeDef(
        name=value.name.encode(encoding="utf_8"),
        op="Variable",
        input=[],
        attr={
            "dtype": AttrValue(type=tensor_type.elem_type),
            "shape": AttrValue(shape=TensorShapeProto(dim=dims)),
        },
    )


def _operation(node) -> NodeDef:
    # PyTorch's rendering of the attributes: each one's set fields joined by " = "
    fields = [" = ".join(str(f[1]) for f in a.ListFields()) for a in node.attribute]
    return NodeDef(
        name=node.output[0].encode(encoding="utf_8"),
        op=node.op_type,
        input=node.input,
        attr={"parameters": AttrValue(s=", ".join(fields).encode(encoding="utf_8"))},
    )


def parse(graph) -> GraphDef:
    """An ``onnx.GraphProto`` as a ``GraphDef`` (producer version 22, as PyTorch writes)."""
    nodes = [_variable(v) for v in itertools.chain(graph.input, graph.output)]
    nodes += [_operation(node) for node in graph.node]
    return GraphDef(node=nodes, versions=VersionDef(producer=22))
