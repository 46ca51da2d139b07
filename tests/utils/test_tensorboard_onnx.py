"""SummaryWriter.add_onnx_graph: an ONNX file from ember.onnx.export logged as a GraphDef, read
back with tensorboard's EventAccumulator and compared with what torch's writer logs for the
same file."""

import pytest

import ember

torch = pytest.importorskip("torch")
pytest.importorskip("tensorboard")
onnx = pytest.importorskip("onnx")

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from torch.utils.tensorboard import SummaryWriter as TorchWriter  # noqa: E402

from ember.utils.tensorboard import SummaryWriter  # noqa: E402


def _graph(logdir):
    return EventAccumulator(str(logdir)).Reload().Graph()


@pytest.fixture
def mlp_file(tmp_path):
    model = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(), ember.nn.Linear(8, 3))
    path = tmp_path / "mlp.onnx"
    ember.onnx.export(model, (ember.randn(2, 4),), str(path), input_names=["x"], output_names=["y"])
    return path


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_add_onnx_graph_matches_torch(mlp_file, tmp_path):
    for writer_cls, logdir in ((SummaryWriter, tmp_path / "e"), (TorchWriter, tmp_path / "t")):
        with writer_cls(logdir) as writer:
            writer.add_onnx_graph(str(mlp_file))
    ours, theirs = _graph(tmp_path / "e"), _graph(tmp_path / "t")
    assert ours == theirs
    assert ours.versions.producer == 22
    model = onnx.load(str(mlp_file)).graph
    # the inputs and outputs as Variables with their ONNX type and shape, then one node per op
    x, y = ours.node[:2]
    assert (x.name, x.op, y.name, y.op) == ("x", "Variable", "y", "Variable")
    assert [d.size for d in x.attr["shape"].shape.dim] == [2, 4]
    assert [d.size for d in y.attr["shape"].shape.dim] == [2, 3]
    assert x.attr["dtype"].type == onnx.TensorProto.FLOAT
    ops = ours.node[2:]
    assert [(n.op, list(n.input)) for n in ops] == [(n.op_type, list(n.input)) for n in model.node]
    assert [n.name for n in ops] == [n.output[0] for n in model.node]
    assert ops[-1].name == "y"
    assert sum(n.op in ("Gemm", "MatMul") for n in ops) == 2 and "Relu" in {n.op for n in ops}


def test_missing_file_raises(tmp_path):
    with SummaryWriter(tmp_path) as writer, pytest.raises(FileNotFoundError):
        writer.add_onnx_graph(str(tmp_path / "nothing.onnx"))
