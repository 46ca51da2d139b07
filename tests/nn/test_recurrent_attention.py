"""RNN/LSTM/GRU (and cells), MultiheadAttention and the Transformer layers against PyTorch's,
with PyTorch's weights copied in: outputs, final states, input and parameter gradients."""

from __future__ import annotations

import numpy as np
import pytest

import ember

from .oracle import check_module, check_param_grads, pair

torch = pytest.importorskip("torch")
F32 = np.float32


def _normal(rng, *shape):
    return rng.standard_normal(shape).astype(F32)


# ---- recurrent layers --------------------------------------------------------------------------
RNN_CONFIGS = [
    {},
    {"num_layers": 2},
    {"bidirectional": True},
    {"batch_first": True},
    {"bias": False},
    {"num_layers": 3, "bidirectional": True, "batch_first": True},
]


def _rnn_inputs(rng, name, config, with_state, batched=True):
    steps, batch, features, hidden = 5, 3, 4, 6
    shape = (batch, steps, features) if config.get("batch_first") else (steps, batch, features)
    x = _normal(rng, *shape) if batched else _normal(rng, steps, features)
    if not with_state:
        return [x]
    layers = config.get("num_layers", 1) * (2 if config.get("bidirectional") else 1)
    state_shape = (layers, batch, hidden) if batched else (layers, hidden)
    h = _normal(rng, *state_shape)
    return [x, (h, _normal(rng, *state_shape))] if name == "LSTM" else [x, h]


@pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "given-state"])
@pytest.mark.parametrize("config", RNN_CONFIGS, ids=str)
@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_recurrent(device, rng, name, config, with_state):
    ours, theirs = pair(name, 4, 6, device=device, **config)
    inputs = _rnn_inputs(rng, name, config, with_state)
    if with_state and name == "LSTM":  # (h, c) as one argument; gradients through both
        h, c = inputs[1]
        check_module(_with_cell_state(ours), _with_cell_state(theirs), [inputs[0], h, c], device)
        check_param_grads(ours, theirs)
    else:
        check_module(ours, theirs, inputs, device)


@pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "given-state"])
@pytest.mark.parametrize(
    "config", [{}, {"num_layers": 2, "bidirectional": True, "batch_first": True}], ids=str
)
def test_lstm_proj_size(device, rng, config, with_state):
    """h (and each layer's output) projected to proj_size by weight_hr; c keeps hidden_size."""
    ours, theirs = pair("LSTM", 4, 6, device=device, proj_size=3, **config)
    inputs = _rnn_inputs(rng, "LSTM", config, with_state)
    if with_state:
        h, c = inputs[1]
        h = np.ascontiguousarray(h[..., :3])
        check_module(_with_cell_state(ours), _with_cell_state(theirs), [inputs[0], h, c], device)
        check_param_grads(ours, theirs)
    else:
        check_module(ours, theirs, inputs, device)


def test_proj_size_errors():
    with pytest.raises(ValueError, match="only supported for LSTM"):
        ember.nn.GRU(4, 6, proj_size=2)
    with pytest.raises(ValueError, match="smaller than hidden_size"):
        ember.nn.LSTM(4, 6, proj_size=6)
    with pytest.raises(ValueError, match="positive integer or zero"):
        ember.nn.LSTM(4, 6, proj_size=-1)
    lstm = ember.nn.LSTM(4, 6, proj_size=2)
    with pytest.raises(RuntimeError, match=r"hidden\[0\] size \(1, 3, 2\), got \[1, 3, 6\]"):
        lstm(ember.zeros(5, 3, 4), (ember.zeros(1, 3, 6), ember.zeros(1, 3, 6)))


def _with_cell_state(module):
    """``module(x, (h, c))`` as a function of three tensors, so each gets its gradient."""
    return lambda x, h, c: module(x, (h, c))


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_recurrent_unbatched_and_relu(device, rng, name):
    extra = {"nonlinearity": "relu"} if name == "RNN" else {}
    ours, theirs = pair(name, 4, 6, device=device, num_layers=2, **extra)
    check_module(ours, theirs, _rnn_inputs(rng, name, {"num_layers": 2}, False, False), device)


def test_recurrent_float64(device, rng):
    ours, theirs = pair("LSTM", 4, 6, device=device, dtype="float64", bidirectional=True)
    x = rng.standard_normal((5, 3, 4))
    check_module(ours, theirs, [x], device, dtype="float64")


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_state", [False, True])
def test_cells(device, rng, name, bias, batched, with_state):
    ours, theirs = pair(name, 4, 5, device=device, bias=bias)
    lead = (3,) if batched else ()
    inputs = [_normal(rng, *lead, 4)]
    if with_state:
        inputs += [_normal(rng, *lead, 5)] * (2 if name == "LSTMCell" else 1)
    if name == "LSTMCell" and with_state:
        check_module(_with_cell_state(ours), _with_cell_state(theirs), inputs, device)
        check_param_grads(ours, theirs)
    else:
        check_module(ours, theirs, inputs, device)


def test_rnn_cell_relu(device, rng):
    ours, theirs = pair("RNNCell", 4, 5, device=device, nonlinearity="relu")
    check_module(ours, theirs, [_normal(rng, 3, 4)], device)


@pytest.mark.parametrize(
    "name, args, kwargs",
    [
        ("RNN", (4, 6), {}),
        ("RNN", (4, 6), {"num_layers": 2, "nonlinearity": "relu", "bias": False}),
        ("LSTM", (4, 6), {"batch_first": True, "dropout": 0.5, "num_layers": 2}),
        ("LSTM", (4, 6), {"proj_size": 2, "num_layers": 2, "bidirectional": True}),
        ("GRU", (4, 6), {"bidirectional": True}),
        ("RNNCell", (4, 6), {"nonlinearity": "relu"}),
        ("LSTMCell", (4, 6), {"bias": False}),
        ("GRUCell", (4, 6), {}),
    ],
)
def test_recurrent_repr_and_parameter_names(name, args, kwargs):
    ours, theirs = (
        getattr(ember.nn, name)(*args, **kwargs),
        getattr(torch.nn, name)(*args, **kwargs),
    )
    assert repr(ours) == repr(theirs)
    assert [(k, tuple(v.shape)) for k, v in ours.named_parameters()] == [
        (k, tuple(v.shape)) for k, v in theirs.named_parameters()
    ]


def test_recurrent_bad_input_names_layer_and_shapes(device):
    lstm = ember.nn.LSTM(4, 6).to(device)
    with pytest.raises(RuntimeError, match=r"LSTM.*input_size.*4.*5"):
        lstm(ember.zeros(5, 3, 5, device=device))
    with pytest.raises(RuntimeError, match=r"LSTM.*hidden\[0\] size \(1, 3, 6\), got \[1, 2, 6\]"):
        lstm(ember.zeros(5, 3, 4, device=device), (ember.zeros(1, 2, 6), ember.zeros(1, 2, 6)))


# ---- attention ------------------------------------------------------------------------------
MHA_CONFIGS = [
    ({}, {}),
    ({"batch_first": True}, {}),
    ({"bias": False}, {"average_attn_weights": False}),
    ({}, {"need_weights": False}),
    ({"kdim": 5, "vdim": 3}, {}),
    ({}, {"attn_mask": "bool"}),
    ({}, {"attn_mask": "float"}),
    ({"batch_first": True}, {"attn_mask": "bool3d"}),
    ({}, {"key_padding_mask": "bool"}),
    ({}, {"key_padding_mask": "float", "attn_mask": "float"}),
    ({}, {"is_causal": True, "attn_mask": "causal"}),
    ({"add_bias_kv": True}, {}),
    ({"add_zero_attn": True}, {"key_padding_mask": "bool"}),
    ({"add_bias_kv": True, "add_zero_attn": True, "batch_first": True}, {"attn_mask": "float"}),
    ({"add_bias_kv": True, "kdim": 5, "vdim": 3}, {"key_padding_mask": "float"}),
]


def _mha_masks(rng, options, batch, heads, length, source):
    made = {}
    for key, kind in options.items():
        if key not in ("attn_mask", "key_padding_mask"):
            made[key] = kind
            continue
        shape = (batch, source) if key == "key_padding_mask" else (length, source)
        if kind == "bool3d":
            shape = (batch * heads, length, source)
        if kind == "causal":
            made[key] = np.triu(np.ones((length, source), dtype=bool), 1)
        elif kind == "float":
            made[key] = _normal(rng, *shape)
        else:
            mask = rng.random(shape) > 0.6
            mask[..., 0] = False  # every query keeps a key
            made[key] = mask
    return made


# kdim/vdim different from embed_dim rule self-attention out: those configs run cross only.
MHA_CASES = [
    pytest.param(config, options, self_attention, id=f"{config}-{options}-{kind}")
    for config, options in MHA_CONFIGS
    for self_attention, kind in ((True, "self"), (False, "cross"))
    if not (self_attention and "kdim" in config)
]


@pytest.mark.parametrize("config, options, self_attention", MHA_CASES)
def test_multihead_attention(device, rng, config, options, self_attention):
    ours, theirs = pair("MultiheadAttention", 8, 2, device=device, **config)
    batch, length, source = 3, 4, 4 if self_attention else 6
    masks = _mha_masks(rng, options, batch, 2, length, source)
    lead = (batch, length) if config.get("batch_first") else (length, batch)
    src = (batch, source) if config.get("batch_first") else (source, batch)
    q = _normal(rng, *lead, 8)
    k = _normal(rng, *src, config.get("kdim", 8))
    v = _normal(rng, *src, config.get("vdim", 8))

    def wrap(module):
        if self_attention:
            return lambda x, **kw: module(x, x, x, **kw)
        return lambda q, k, v, **kw: module(q, k, v, **kw)

    inputs = [q] if self_attention else [q, k, v]
    check_module(wrap(ours), wrap(theirs), inputs, device, kwargs=masks)
    check_param_grads(ours, theirs)


def test_multihead_attention_unbatched(device, rng):
    ours, theirs = pair("MultiheadAttention", 8, 4, device=device)
    q, k = _normal(rng, 3, 8), _normal(rng, 5, 8)
    mask = np.array([False, True, False, False, True])
    check_module(ours, theirs, [q, k, k], device, kwargs={"key_padding_mask": mask})


# ---- transformer layers -----------------------------------------------------------------------
LAYER_CONFIGS = [
    {},
    {"norm_first": True},
    {"activation": "gelu", "batch_first": True},
    {"bias": False},
    {"layer_norm_eps": 1e-3, "norm_first": True, "batch_first": True},
]


def _seq(rng, config, length, batch=2, d=8):
    return _normal(rng, *((batch, length) if config.get("batch_first") else (length, batch)), d)


def _layer_masks(name):
    """Masks for a Transformer layer's forward: causal boolean / float target masks and key
    padding masks with a few padded positions."""
    padding = np.zeros((2, 6 if name == "TransformerDecoderLayer" else 5), dtype=bool)
    padding[-1, -2:] = True
    if name == "TransformerEncoderLayer":
        return {"src_mask": np.triu(np.ones((5, 5), bool), 1), "src_key_padding_mask": padding}
    return {
        "tgt_mask": np.triu(np.full((4, 4), -np.inf, F32), 1),
        "memory_key_padding_mask": padding,
        "tgt_is_causal": True,
    }


@pytest.mark.parametrize("masks", [False, True], ids=["no-mask", "masks"])
@pytest.mark.parametrize("config", LAYER_CONFIGS, ids=str)
@pytest.mark.parametrize("name", ["TransformerEncoderLayer", "TransformerDecoderLayer"])
def test_transformer_layer(device, rng, name, config, masks):
    ours, theirs = pair(name, 8, 2, 16, 0.0, device=device, **config)
    inputs = [_seq(rng, config, 5)]
    if name == "TransformerDecoderLayer":
        inputs = [_seq(rng, config, 4), _seq(rng, config, 6)]
    kwargs = _layer_masks(name) if masks else {}
    check_module(ours, theirs, inputs, device, kwargs=kwargs)


def test_transformer_encoder_stack(device, rng):
    torch.manual_seed(0)
    theirs = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0), 2, torch.nn.LayerNorm(8),
        enable_nested_tensor=False,
    )  # fmt: skip
    ours = ember.nn.TransformerEncoder(
        ember.nn.TransformerEncoderLayer(8, 2, 16, 0.0), 2, ember.nn.LayerNorm(8)
    )
    from .oracle import copy_state

    copy_state(theirs, ours, device)
    ours.to(device)
    mask = np.triu(np.ones((5, 5), bool), 1)
    check_module(ours, theirs, [_normal(rng, 5, 2, 8)], device, kwargs={"mask": mask})


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer(device, rng, batch_first):
    ours, theirs = pair("Transformer", 8, 2, 2, 1, 16, 0.0, device=device, batch_first=batch_first)
    src, tgt = (
        _seq(rng, {"batch_first": batch_first}, 5),
        _seq(rng, {"batch_first": batch_first}, 3),
    )
    tgt_mask = ember.nn.Transformer.generate_square_subsequent_mask(3).numpy()
    theirs_mask = torch.nn.Transformer.generate_square_subsequent_mask(3).numpy()
    np.testing.assert_array_equal(tgt_mask, theirs_mask)
    check_module(ours, theirs, [src, tgt], device, kwargs={"tgt_mask": tgt_mask})


def test_transformer_repr_matches_torch():
    torch.manual_seed(0)
    for build in (
        lambda nn: nn.TransformerEncoderLayer(8, 2, 16),
        lambda nn: nn.TransformerDecoderLayer(8, 2, 16, norm_first=True, activation="gelu"),
        lambda nn: nn.MultiheadAttention(8, 2, kdim=4, vdim=3, batch_first=True),
        lambda nn: nn.Transformer(8, 2, 1, 1, 16),
    ):
        ours, theirs = build(ember.nn), build(torch.nn)
        assert repr(ours) == repr(theirs)
        assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == [
            (k, tuple(v.shape)) for k, v in theirs.state_dict().items()
        ]


def test_multi_head_attention_forward_static_kv(device, rng):
    """The functional form with separate projections and static keys and values."""
    e, heads, batch, length, source = 6, 2, 3, 4, 5
    weights = [_normal(rng, e, e) for _ in range(3)] + [_normal(rng, e, e)]
    static = [_normal(rng, batch * heads, source, e // heads) for _ in range(2)]

    def call(framework):
        def run(q, k, v, wq, wk, wv, wo, sk, sv):
            return framework.nn.functional.multi_head_attention_forward(
                q,
                k,
                v,
                e,
                heads,
                None,
                None,
                None,
                None,
                False,
                0.0,
                wo,
                None,
                use_separate_proj_weight=True,
                q_proj_weight=wq,
                k_proj_weight=wk,
                v_proj_weight=wv,
                static_k=sk,
                static_v=sv,
                average_attn_weights=False,
            )

        return run

    q, k = _normal(rng, length, batch, e), _normal(rng, source, batch, e)
    check_module(call(ember), call(torch), [q, k, k, *weights, *static], device)
