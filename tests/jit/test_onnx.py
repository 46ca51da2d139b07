"""ember.onnx.export across the nn module zoo and its options: the files pass the ONNX checker
and onnxruntime reproduces ember, also at other sizes on the dynamic axes."""

from __future__ import annotations

import io
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

from .onnx_utils import (
    assert_close,
    check_model,
    eager,
    export_bytes,
    onnx,
    run,
    session,
)
from .zoo import CASES, ROOT

# The dims each zoo model's inputs may vary in (recurrent layers are one ONNX node each, whose
# time loop follows the sequence length).
_TOKENS = {0: "batch", 1: "seq"}
DYNAMIC = {
    "mlp": {"x": {0: "batch"}},
    "cnn": {"x": {0: "batch"}},
    "rnn": {"tokens": _TOKENS, "hidden": {1: "batch"}},
    "lstm": {"tokens": _TOKENS, "hidden.0": {1: "batch"}, "hidden.1": {1: "batch"}},
    "gru": {"tokens": _TOKENS, "hidden": {1: "batch"}},
    "transformer": {"x": {0: "batch", 1: "seq"}},
    "gpt": {"idx": {0: "batch", 1: "seq"}},
}


@pytest.mark.parametrize("opset", [17, 20])
@pytest.mark.parametrize("name", list(CASES))
def test_zoo_matches_onnxruntime_at_other_sizes(name, opset):
    case = CASES[name]
    model_bytes = export_bytes(
        case.model, case.example, opset_version=opset, dynamic_axes=DYNAMIC[name]
    )
    proto = check_model(model_bytes)
    for value in proto.graph.input:
        dims = value.type.tensor_type.shape.dim
        for axis, label in DYNAMIC[name].get(value.name, {}).items():
            assert dims[axis].dim_param == label
    sess = session(model_bytes)
    for args in [case.example, *case.others, *_longer(name, case.others)]:
        assert_close(run(sess, args), eager(case.model, args), rtol=1e-4, atol=1e-5)


def _longer(name: str, others: list) -> list:
    """The recurrent zoo models' other inputs with a longer sequence (dim 1 of the tokens)."""
    if "seq" not in DYNAMIC[name].get("tokens", {}).values():
        return []
    return [(ember.cat([tokens, tokens[:, :3]], 1), *rest) for tokens, *rest in others]


def test_gpt_attention_has_a_causal_mask_of_the_run_time_length():
    """The mask follows the sequence length: a token's logits do not depend on later tokens."""
    case = CASES["gpt"]
    sess = session(export_bytes(case.model, case.example, dynamic_axes=DYNAMIC["gpt"]))
    idx = ember.randint(0, 32, (1, 11))
    changed = idx.clone()
    changed[0, 7:] = (changed[0, 7:] + 1) % 32
    a, b = run(sess, (idx,))[0], run(sess, (changed,))[0]
    np.testing.assert_allclose(a[0, :7], b[0, :7], rtol=1e-5, atol=1e-6)
    assert not np.allclose(a[0, 7:], b[0, 7:])


class RNNModel(nn.Module):
    """pytorch/examples' word_language_model model, as its export_onnx passes it."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (
                weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid),
            )
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU"])
def test_word_language_model_export(rnn_type, tmp_path):
    ember.manual_seed(1)
    model = RNNModel(rnn_type, 30, 8, 8, 2, tie_weights=True)
    model.eval()
    seq_len, batch_size = 6, 3
    dummy_input = ember.zeros(seq_len * batch_size, dtype=ember.int64).view(-1, batch_size)
    hidden = model.init_hidden(batch_size)
    path = tmp_path / "model.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ember.onnx.export(model, (dummy_input, hidden), str(path))
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    # tied weights are stored once, under the first name
    names = [t.name for t in proto.graph.initializer]
    assert len(names) == len(set(names))
    tokens = ember.randint(0, 30, (seq_len, batch_size))
    hidden = tuple(h.normal_() for h in hidden) if rnn_type == "LSTM" else hidden.normal_()
    assert_close(run(session(path.read_bytes()), (tokens, hidden)), eager(model, (tokens, hidden)))


class _Passthrough(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return x, self.fc(x), self.fc.weight, x


def test_outputs_that_are_inputs_weights_or_repeated():
    model, x = _Passthrough().eval(), ember.randn(2, 3)
    for folding in (True, False):
        model_bytes = export_bytes(
            model, (x,), output_names=["a", "b", "c", "d"], do_constant_folding=folding
        )
        proto = check_model(model_bytes)
        assert [v.name for v in proto.graph.output] == ["a", "b", "c", "d"]
        assert_close(run(session(model_bytes), (x,)), eager(model, (x,)))


def test_names_and_dynamic_axes_as_a_list():
    model = CASES["mlp"].model
    with pytest.warns(UserWarning, match="Automatically generated names"):
        model_bytes = _export(
            model,
            CASES["mlp"].example,
            input_names=["features"],
            output_names=["scores"],
            dynamic_axes={"features": [0], "scores": [0]},
        )
    proto = check_model(model_bytes)
    assert [v.name for v in proto.graph.input] == ["features"]
    assert [v.name for v in proto.graph.output] == ["scores"]
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == (
        "features_dynamic_axes_1"
    )
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == (
        "scores_dynamic_axes_1"
    )


def test_unknown_dynamic_axes_key_warns():
    with pytest.warns(UserWarning, match="Provided key nope for dynamic axes is not a valid"):
        _export(CASES["mlp"].model, CASES["mlp"].example, dynamic_axes={"nope": {0: "n"}})


def test_output_shapes_follow_the_dynamic_inputs():
    proto = check_model(export_bytes(CASES["cnn"].model, CASES["cnn"].example, **_batch("x")))
    dims = proto.graph.output[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch" and dims[1].dim_value == 5


def test_export_params_false_makes_the_weights_inputs():
    case = CASES["cnn"]
    model_bytes = export_bytes(case.model, case.example, export_params=False)
    proto = check_model(model_bytes)
    assert not proto.graph.initializer or all(
        not t.name.startswith("features.") for t in proto.graph.initializer
    )
    state = {**dict(case.model.named_parameters()), **dict(case.model.named_buffers())}
    inputs = [v.name for v in proto.graph.input]
    assert inputs[0] == "x" and set(inputs[1:]) <= set(state)
    feeds = {name: state[name].detach().numpy() for name in inputs[1:]}
    assert_close(run(session(model_bytes), case.example, feeds), eager(case.model, case.example))


def test_keep_initializers_as_inputs():
    case = CASES["mlp"]
    proto = check_model(export_bytes(case.model, case.example, keep_initializers_as_inputs=True))
    inputs = {v.name for v in proto.graph.input}
    assert {t.name for t in proto.graph.initializer} <= inputs


def test_constant_folding_folds_batch_norm_into_the_convolutions():
    case = CASES["cnn"]
    folded = check_model(export_bytes(case.model, case.example))
    plain = check_model(export_bytes(case.model, case.example, do_constant_folding=False))
    names = {t.name for t in plain.graph.initializer}
    assert "features.1.running_mean" in names and "features.0.weight" in names
    assert len(folded.graph.node) < len(plain.graph.node)
    for proto in (folded, plain):
        got = run(session(proto.SerializeToString()), case.example)
        assert_close(got, eager(case.model, case.example))


def test_layers_export_as_their_onnx_ops_and_losses_as_their_decomposition():
    """linear is Gemm, conv_transpose2d ConvTranspose (rules of their own); a loss, which has
    none, is traced as its decomposition's ops for export only (jit.trace keeps one node)."""
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    ops = [n.op_type for n in check_model(export_bytes(model, (ember.randn(5, 3),))).graph.node]
    assert ops.count("Gemm") == 2 and "MatMul" not in ops
    up = nn.ConvTranspose2d(3, 2, 3, stride=2)
    ops = [n.op_type for n in check_model(export_bytes(up, (ember.randn(1, 3, 4, 4),))).graph.node]
    assert ops == ["ConvTranspose"]

    def loss(a, t):
        return F.cross_entropy(a, t, label_smoothing=0.1)

    args = (ember.randn(4, 5), ember.randint(0, 5, (4,)))
    model_bytes = export_bytes(loss, args)
    ops = {n.op_type for n in check_model(model_bytes).graph.node}
    assert {"LogSoftmax", "GatherElements", "ReduceSum"} <= ops, ops
    assert_close(run(session(model_bytes), args), eager(loss, args))
    kinds = [n.kind() for n in ember.jit.trace(loss, args).graph.nodes()]
    assert "ember::cross_entropy_loss" in kinds and "ember::log_softmax" not in kinds


def test_exports_in_eval_mode_and_restores_the_mode():
    model = CASES["cnn"].model
    model.train()
    try:
        proto = check_model(export_bytes(model, CASES["cnn"].example))
        assert model.training
    finally:
        model.eval()
    assert not any(n.op_type in ("Dropout", "Bernoulli") for n in proto.graph.node)


def test_training_mode_with_dropout_names_the_random_op():
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match=r"'ember::\w+' to ONNX opset"):
        export_bytes(model, (ember.randn(2, 3),), training=ember.onnx.TrainingMode.TRAINING)


def test_op_without_mapping_names_op_and_opset():
    with pytest.raises(ember.onnx.UnsupportedOperatorError) as info:
        export_bytes(lambda x: x.cumprod(0) + 1, (ember.randn(3),), opset_version=18)
    assert str(info.value).startswith(
        "Exporting the operator 'ember::cumprod' to ONNX opset version 18 is not supported"
    )
    assert isinstance(info.value, RuntimeError)


def test_unsupported_opset():
    with pytest.raises(ValueError, match="Unsupported ONNX opset version: 9"):
        export_bytes(CASES["mlp"].model, CASES["mlp"].example, opset_version=9)


def test_traced_script_module_exports():
    case = CASES["transformer"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = ember.jit.trace(case.model, case.example)
    model_bytes = export_bytes(traced, case.example, **_batch("x"))
    check_model(model_bytes)
    other = case.others[0]
    assert_close(run(session(model_bytes), other), eager(case.model, other))


def test_keyword_arguments_and_is_in_onnx_export():
    seen = []

    class Scaled(nn.Module):
        def forward(self, x, scale=None):
            seen.append(ember.onnx.is_in_onnx_export())
            return x * scale

    x, scale = ember.randn(2, 3), ember.randn(3)
    model_bytes = export_bytes(Scaled(), (x, {"scale": scale}))
    assert_close(run(session(model_bytes), (x, scale)), [(x * scale).numpy()])
    assert seen == [True] and not ember.onnx.is_in_onnx_export()


def test_verify_compares_with_onnxruntime():
    case = CASES["gpt"]
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ember.onnx.export(case.model, case.example, buffer, verify=True)
    assert buffer.getvalue()


def test_import_without_onnx_and_what_to_install():
    code = (
        "import sys; sys.modules['onnx'] = None\n"
        "import ember, ember.onnx\n"
        "try:\n"
        "    ember.onnx.export(ember.nn.Linear(2, 2), (ember.randn(1, 2),), 'x.onnx')\n"
        "except ModuleNotFoundError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert "pip install 'ember[onnx]'" in out.stdout


def _batch(name: str) -> dict:
    return {"input_names": [name], "dynamic_axes": {name: {0: "batch"}}}


def _export(model, args, **options) -> bytes:
    buffer = io.BytesIO()
    ember.onnx.export(model, args, buffer, **options)
    return buffer.getvalue()
