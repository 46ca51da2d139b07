"""Recurrent layers fed a PackedSequence (issue 16): ``pack_padded_sequence`` -> layer ->
``pad_packed_sequence`` exports as ONNX's RNN/GRU/LSTM node with its ``sequence_lens`` input
(as torch.onnx writes it), passes the full ONNX check, and onnxruntime reproduces ember's eager
outputs for other lengths and batches than the example's; the trace replays them too."""

from __future__ import annotations

import io
import warnings
from collections import Counter

import pytest

import ember
import ember.nn as nn
from ember.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .onnx_utils import assert_close, check_model, eager, export_bytes, run, session
from .test_onnx_recurrent import KINDS, VARIANTS

# (padded length, lengths): the example, one whose longest is shorter than the padding, a
# larger batch, a single sequence longer than the example's
LENGTHS = [(6, [6, 4, 2]), (5, [4, 3, 3, 1]), (8, [8, 8, 5, 3, 2, 1]), (9, [9])]
# the same for enforce_sorted=False: lengths in any order, ties included
UNSORTED = [(6, [2, 6, 4]), (5, [3, 1, 4, 3]), (8, [1, 8, 3, 8, 5, 2]), (9, [9])]


class Packed(nn.Module):
    """The layer over a padded batch and its lengths, packed around it."""

    def __init__(self, rnn, with_state: bool, padding_value: float = 0.0, sort: bool = True):
        super().__init__()
        self.rnn, self.with_state, self.padding_value = rnn, with_state, padding_value
        self.sort = sort

    def forward(self, x, lengths, *state):
        first = self.rnn.batch_first
        packed = pack_padded_sequence(x, lengths, batch_first=first, enforce_sorted=self.sort)
        if self.with_state:
            out, final = self.rnn(packed, state if isinstance(self.rnn, nn.LSTM) else state[0])
        else:
            out, final = self.rnn(packed)
        padded, lengths = pad_packed_sequence(out, first, self.padding_value)
        return padded, final, lengths


def _arguments(module: Packed, steps: int, lengths: list) -> tuple:
    rnn, batch = module.rnn, len(lengths)
    shape = (batch, steps, 6) if rnn.batch_first else (steps, batch, 6)
    args = (ember.randn(*shape), ember.tensor(lengths))
    if not module.with_state:
        return args
    lead = rnn.num_layers * (2 if rnn.bidirectional else 1)
    states = 2 if isinstance(rnn, nn.LSTM) else 1
    return (*args, *(ember.randn(lead, batch, rnn.hidden_size) for _ in range(states)))


def _export(module: Packed, args: tuple) -> bytes:
    seq, batch = (1, 0) if module.rnn.batch_first else (0, 1)
    names = ["x", "lengths", *(f"state{i}" for i in range(2, len(args)))]
    axes = {"x": {seq: "seq", batch: "batch"}, "lengths": {0: "batch"}}
    axes.update({name: {1: "batch"} for name in names[2:]})
    return export_bytes(module, args, input_names=names, dynamic_axes=axes)


# every kind, variant, with and without the initial state
CASES = [(k, v, state) for k in KINDS for v in VARIANTS for state in (False, True)]


def _packed_export(kind, variant, with_state, sort: bool) -> tuple:
    """The module, its exported ONNX model (checked) and the recurrent nodes in it."""
    cls, extra, op_type = KINDS[kind]
    ember.manual_seed(5)
    module = Packed(cls(6, 4, **extra, **variant[1]), with_state, sort=sort).eval()
    lengths = LENGTHS if sort else UNSORTED
    model_bytes = _export(module, _arguments(module, *lengths[0]))
    proto = check_model(model_bytes)
    nodes = [n for n in proto.graph.node if n.op_type == op_type]
    assert len(nodes) == module.rnn.num_layers
    assert all(len(n.input) > 4 and n.input[4] for n in nodes)  # sequence_lens is given
    assert not any(n.op_type in ("Loop", "Scan", "GatherND") for n in proto.graph.node)
    sess = session(model_bytes)
    for steps, batch in lengths:
        args = _arguments(module, steps, batch)
        assert_close(run(sess, args), eager(module, args), rtol=1e-4, atol=1e-5)
    return module, proto


@pytest.mark.parametrize(
    "kind, variant, with_state",
    CASES,
    ids=[f"{k}-{v[0]}-{'state' if state else 'no_state'}" for k, v, state in CASES],
)
def test_packed_layer_exports_with_sequence_lens(kind, variant, with_state):
    _packed_export(kind, variant, with_state, sort=True)


@pytest.mark.parametrize(
    "kind, variant, with_state",
    CASES,
    ids=[f"{k}-{v[0]}-{'state' if state else 'no_state'}" for k, v, state in CASES],
)
def test_unsorted_packed_layer_exports_with_the_permutation_around_it(kind, variant, with_state):
    """enforce_sorted=False: the same recurrent nodes, the sort a TopK and the permutations
    Gathers around them (torch.onnx's route for the sort pack_padded_sequence does), the
    outputs, final states and lengths in the caller's batch order at other batches too."""
    module, proto = _packed_export(kind, variant, with_state, sort=False)
    _, sorted_proto = _packed_export(kind, variant, with_state, sort=True)
    added = Counter(n.op_type for n in proto.graph.node)
    added.subtract(n.op_type for n in sorted_proto.graph.node)
    states = 2 if isinstance(module.rnn, nn.LSTM) else 1
    # Gathers: the input, the padded output, its lengths, the final states (and the initial
    # ones) by a permutation, and the batch size of each of the two TopKs (the lengths sorted
    # and the permutation inverted)
    gathers = 3 + states * (2 if with_state else 1) + 2
    want = {"TopK": 2, "Shape": 2, "Unsqueeze": 2, "Constant": 1, "Gather": gathers}
    assert +added == Counter(want)


@pytest.mark.parametrize("kind", list(KINDS))
def test_packed_trace_replays_other_lengths(kind):
    cls, extra, _ = KINDS[kind]
    ember.manual_seed(6)
    module = Packed(cls(6, 4, num_layers=2, bidirectional=True, **extra), True).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = ember.jit.trace(module, _arguments(module, *LENGTHS[0]))
    kinds = [node.kind() for node in traced.graph.nodes()]
    assert kinds.count("prim::PackedRNN") == 1 and "aten::index_select" not in kinds
    buffer = io.BytesIO()
    ember.jit.save(traced, buffer)
    buffer.seek(0)
    loaded = ember.jit.load(buffer)
    for steps, lengths in LENGTHS[1:]:
        args = _arguments(module, steps, lengths)
        assert_close(eager(traced, args), eager(module, args), rtol=1e-6, atol=1e-6)
        assert_close(eager(loaded, args), eager(module, args), rtol=1e-6, atol=1e-6)


def test_ember_export_of_a_packed_layer_runs_other_lengths_after_save_and_load():
    ember.manual_seed(7)
    module = Packed(nn.LSTM(6, 4, batch_first=True), False).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = ember.export.export(module, _arguments(module, *LENGTHS[0]))
    buffer = io.BytesIO()
    ember.export.save(program, buffer)
    buffer.seek(0)
    loaded = ember.export.load(buffer).module()
    for lengths in ([6, 4, 2], [6, 3, 1], [5, 5, 2]):  # the example's sizes (static shapes)
        args = _arguments(module, 6, lengths)
        assert_close(eager(loaded, args), eager(module, args), rtol=1e-6, atol=1e-6)


def test_a_padding_value_other_than_zero_is_refused():
    module = Packed(nn.GRU(6, 4), False, padding_value=-1.0).eval()
    with pytest.raises(ember.onnx.OnnxExporterError, match="padding value other than 0"):
        _export(module, _arguments(module, *LENGTHS[0]))


def test_packed_rows_read_directly_are_refused():
    class ReadsRows(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(6, 4)

        def forward(self, x, lengths):
            return self.rnn(pack_padded_sequence(x, lengths))[0].data * 2

    module = ReadsRows().eval()
    with pytest.raises(ember.onnx.OnnxExporterError, match="packed rows read by ember::mul"):
        export_bytes(module, (ember.randn(6, 3, 6), ember.tensor([6, 4, 2])))


@pytest.mark.parametrize("kind", list(KINDS))
def test_unsorted_packed_trace_replays_other_lengths(kind):
    cls, extra, _ = KINDS[kind]
    ember.manual_seed(8)
    module = Packed(cls(6, 4, num_layers=2, **extra), True, sort=False).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = ember.jit.trace(module, _arguments(module, *UNSORTED[0]))
    kinds = [node.kind() for node in traced.graph.nodes()]
    assert kinds.count("prim::PackedRNN") == 1 and kinds.count("ember::sort") == 1
    for steps, lengths in UNSORTED[1:]:
        args = _arguments(module, steps, lengths)
        assert_close(eager(traced, args), eager(module, args), rtol=1e-6, atol=1e-6)


def _sequence_lens_source(proto, op_type: str) -> list:
    """For each recurrent node: the dtype its sequence_lens is cast to and the graph input the
    chain of casts starts from."""
    producers = {out: node for node in proto.graph.node for out in node.output}
    found = []
    for node in proto.graph.node:
        if node.op_type == op_type:
            cast = producers[node.input[4]]
            (dtype,) = [a.i for a in cast.attribute if a.name == "to"]
            name = node.input[4]
            while name in producers and producers[name].op_type == "Cast":
                name = producers[name].input[0]
            found.append((dtype, name))
    return found


def test_sequence_lens_is_the_cast_lengths_input_as_torch_onnx_writes_it():
    torch = pytest.importorskip("torch")
    onnx = pytest.importorskip("onnx")

    class TorchPacked(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = torch.nn.LSTM(6, 4)

        def forward(self, x, lengths):
            packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths)
            return torch.nn.utils.rnn.pad_packed_sequence(self.rnn(packed)[0])[0]

    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        args = (torch.randn(6, 3, 6), torch.tensor([6, 4, 2]))
        torch.onnx.export(
            TorchPacked().eval(), args, buffer, dynamo=False, input_names=["x", "lengths"]
        )
    theirs = _sequence_lens_source(onnx.load_from_string(buffer.getvalue()), "LSTM")
    module = Packed(nn.LSTM(6, 4), False).eval()
    mine = _sequence_lens_source(
        check_model(_export(module, _arguments(module, 6, [6, 4, 2]))), "LSTM"
    )
    assert mine == theirs == [(onnx.TensorProto.INT32, "lengths")]
