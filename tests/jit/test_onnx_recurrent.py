"""Recurrent layers as ONNX RNN/GRU/LSTM nodes (issue 16): every variant exported with dynamic
batch and sequence axes passes the full ONNX check, and onnxruntime reproduces ember's eager
outputs at other batch sizes and sequence lengths; the rows' traces replay at other lengths."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

from .onnx_utils import assert_close, check_model, eager, export_bytes, run, session

KINDS = {
    "rnn_tanh": (nn.RNN, {"nonlinearity": "tanh"}, "RNN"),
    "rnn_relu": (nn.RNN, {"nonlinearity": "relu"}, "RNN"),
    "gru": (nn.GRU, {}, "GRU"),
    "lstm": (nn.LSTM, {}, "LSTM"),
}
# (id, constructor keywords): stacked, bidirectional, batch-first, bias-free, dropout (eval)
VARIANTS = [
    ("one_layer", {}),
    ("stacked", {"num_layers": 2, "dropout": 0.3}),
    ("bidirectional", {"num_layers": 2, "bidirectional": True}),
    ("batch_first", {"batch_first": True, "bidirectional": True}),
    ("no_bias", {"bias": False, "num_layers": 2}),
]
SIZES = [(5, 3), (2, 7)]  # (sequence length, batch): the example, then other sizes


class Layer(nn.Module):
    """The layer alone, with or without its initial state as inputs."""

    def __init__(self, rnn, with_state: bool):
        super().__init__()
        self.rnn, self.with_state = rnn, with_state

    def forward(self, x, *state):
        if self.with_state:
            return self.rnn(x, state if isinstance(self.rnn, nn.LSTM) else state[0])
        return self.rnn(x)


def _arguments(module: Layer, steps: int, batch: int) -> tuple:
    rnn = module.rnn
    shape = (batch, steps, 6) if rnn.batch_first else (steps, batch, 6)
    x = ember.randn(*shape)
    if not module.with_state:
        return (x,)
    lead = rnn.num_layers * (2 if rnn.bidirectional else 1)
    states = 2 if isinstance(rnn, nn.LSTM) else 1
    return (x, *(ember.randn(lead, batch, rnn.hidden_size) for _ in range(states)))


def _dynamic_axes(module: Layer, args: tuple) -> dict:
    seq, batch = (1, 0) if module.rnn.batch_first else (0, 1)
    axes = {"x": {seq: "seq", batch: "batch"}}
    for i in range(1, len(args)):
        axes[f"state{i}"] = {1: "batch"}
    return axes


def _export(module: Layer, args: tuple) -> bytes:
    names = ["x", *(f"state{i}" for i in range(1, len(args)))]
    return export_bytes(module, args, input_names=names, dynamic_axes=_dynamic_axes(module, args))


@pytest.mark.parametrize("with_state", [False, True], ids=["no_state", "state"])
@pytest.mark.parametrize("variant, options", VARIANTS, ids=[v[0] for v in VARIANTS])
@pytest.mark.parametrize("kind", list(KINDS))
def test_layer_exports_as_one_recurrent_node_per_layer(kind, variant, options, with_state):
    cls, extra, op_type = KINDS[kind]
    ember.manual_seed(3)
    module = Layer(cls(6, 4, **extra, **options), with_state).eval()
    args = _arguments(module, *SIZES[0])
    model_bytes = _export(module, args)
    proto = check_model(model_bytes)
    nodes = [n for n in proto.graph.node if n.op_type == op_type]
    assert len(nodes) == module.rnn.num_layers
    assert not any(n.op_type in ("Loop", "Scan") for n in proto.graph.node)
    sess = session(model_bytes)
    for steps, batch in SIZES:
        args = _arguments(module, steps, batch)
        assert_close(run(sess, args), eager(module, args), rtol=1e-4, atol=1e-5)


def test_weights_as_graph_inputs():
    """export_params=False: the rule reorders gate blocks of graph inputs, not initializers."""
    ember.manual_seed(4)
    module = Layer(nn.LSTM(6, 4, num_layers=2, bidirectional=True), True).eval()
    args = _arguments(module, 5, 3)
    model_bytes = export_bytes(module, args, export_params=False)
    proto = check_model(model_bytes)
    assert not proto.graph.initializer or all(
        "weight" not in t.name and "bias" not in t.name for t in proto.graph.initializer
    )
    weights = {name: p.detach().numpy() for name, p in module.named_parameters()}
    feeds = dict(zip([i.name for i in proto.graph.input][len(args) :], weights.values()))
    assert_close(run(session(model_bytes), args, feeds), eager(module, args))


class WordLanguageModel(nn.Module):
    """pytorch/examples' word_language_model: Embedding -> LSTM with (h0, c0) -> Linear,
    returning the output and the hidden state."""

    def __init__(self, ntoken=30, ninp=8, nhid=8, nlayers=2):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.drop = nn.Dropout(0.5)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=0.5)
        self.decoder = nn.Linear(nhid, ntoken)
        self.ntoken = ntoken

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden


def test_word_language_model_at_other_sequence_lengths_and_batches():
    ember.manual_seed(5)
    model = WordLanguageModel().eval()

    def arguments(steps, batch):
        tokens = ember.randint(0, 30, (steps, batch))
        return tokens, (ember.randn(2, batch, 8), ember.randn(2, batch, 8))

    axes = {
        "input": {0: "seq", 1: "batch"},
        "h0": {1: "batch"},
        "c0": {1: "batch"},
        "output": {0: "tokens"},
    }
    model_bytes = export_bytes(
        model,
        arguments(6, 3),
        input_names=["input", "h0", "c0"],
        output_names=["output", "h_n", "c_n"],
        dynamic_axes=axes,
    )
    proto = check_model(model_bytes)
    assert [n.op_type for n in proto.graph.node].count("LSTM") == 2
    sess = session(model_bytes)
    for steps, batch in [(6, 3), (11, 2), (1, 5)]:
        args = arguments(steps, batch)
        assert_close(run(sess, args), eager(model, args), rtol=1e-4, atol=1e-5)


def test_projection_and_training_dropout_are_refused():
    from ember.onnx import UnsupportedOperatorError

    x = ember.randn(3, 2, 6)
    with pytest.raises(UnsupportedOperatorError, match=r"ember::lstm.*projections"):
        export_bytes(nn.LSTM(6, 4, proj_size=2), (x,))
    gru = nn.GRU(6, 4, num_layers=2, dropout=0.5)
    with pytest.raises(UnsupportedOperatorError, match=r"ember::gru.*dropout in training"):
        export_bytes(gru, (x,), training=ember.onnx.TrainingMode.TRAINING)


@pytest.mark.parametrize("kind", list(KINDS))
def test_trace_records_one_node_and_replays_at_other_lengths(kind):
    """jit.trace keeps the layer whole (as PyTorch's aten::lstm), so the time loop is not
    unrolled into the graph: a trace made at one sequence length runs at another."""
    cls, extra, _ = KINDS[kind]
    ember.manual_seed(6)
    module = cls(6, 4, num_layers=2, bidirectional=True, **extra).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = ember.jit.trace(module, ember.randn(5, 3, 6))
    kinds = [node.kind() for node in traced.graph.nodes()]
    assert kinds.count(f"ember::{kind}") == 1
    assert "ember::stack" not in kinds
    x = ember.randn(9, 2, 6)
    for got, want in zip(_leaves(traced(x)), _leaves(module(x))):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)


def _leaves(out) -> list:
    output, hidden = out
    return [output, *(hidden if isinstance(hidden, tuple) else (hidden,))]


class _Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(6, 4, num_layers=2)

    def forward(self, x):
        return self.rnn(x)[0]


def test_export_with_a_dynamic_sequence_dim():
    """ember.export's re-traces one size above and below agree on the graph: the sequence
    length is no longer read into Python."""
    ember.manual_seed(7)
    model = _Head().eval()
    seq = ember.export.Dim("seq", max=64)
    ep = ember.export.export(model, (ember.randn(5, 3, 6),), dynamic_shapes={"x": {0: seq}})
    x = ember.randn(12, 3, 6)
    np.testing.assert_allclose(
        ep.module()(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6
    )
