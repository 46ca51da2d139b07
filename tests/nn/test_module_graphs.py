"""The backward graphs of the nn module zoo against PyTorch's, whole: every node's type and name,
next_functions and ``_saved_*`` values from the loss down to the leaves (tests/graph_walk.py),
for the models of tests/autograd/test_models.py, transformer encoder layers, the recurrent
layers and cells, a conv/batch-norm stack, MultiheadAttention's paths and the losses: no
difference remains."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

from ..autograd.test_models import MODELS as MODEL_ZOO
from ..autograd.test_models import _build
from ..graph_walk import differences


def _future(x):
    """A causal additive mask over x's sequence (dim 1), in x's library."""
    return x.new_full((x.shape[1], x.shape[1]), float("-inf")).triu(1)


# MultiheadAttention calls, each as PyTorch's function takes its paths: the returned weights
# (bmm, baddbmm over a mask) or not (scaled_dot_product_attention), self-attention or key is
# value (the packed projection split), a padding mask, the causal hint.
ATTENTION_CALLS = {
    "mha no weights": lambda a, x: a(x, x, x, need_weights=False),
    "mha no weights padding": lambda a, x: a(
        x, x, x, key_padding_mask=x[..., 0] > 1.0, need_weights=False
    ),
    "mha no weights causal": lambda a, x: a(
        x, x, x, attn_mask=_future(x), is_causal=True, need_weights=False
    ),
    "mha weights mask": lambda a, x: a(x, x, x, attn_mask=_future(x), average_attn_weights=False),
    "mha cross": lambda a, x: a(x, x * 2, x * 2),
    "mha cross no weights": lambda a, x: a(x, x * 2, x * 2, need_weights=False),
}


def _attention(nn, call):
    class Attend(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(8, 2, batch_first=True)

        def forward(self, x):
            return call(self.attn, x)

    return Attend()


def _modules(name):
    """(module maker, input shape) of the layers beyond test_models' zoo."""
    if name in ATTENTION_CALLS:
        return (lambda nn: _attention(nn, ATTENTION_CALLS[name])), (2, 5, 8)
    return {
        "encoder": (
            lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
            (2, 5, 8),
        ),
        "gru batch_first": (lambda nn: nn.GRU(4, 6, num_layers=2, batch_first=True), (2, 3, 4)),
        "rnn bidirectional": (lambda nn: nn.RNN(4, 6, bidirectional=True), (3, 2, 4)),
        "lstm proj": (lambda nn: nn.LSTM(4, 6, proj_size=3), (3, 2, 4)),
        "grucell": (lambda nn: nn.GRUCell(4, 6), (2, 4)),
        "conv bn pool": (
            lambda nn: nn.Sequential(
                nn.Conv2d(3, 4, 3),
                nn.BatchNorm2d(4),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Flatten(),
                nn.Linear(16, 3),
            ),
            (2, 3, 6, 6),
        ),
    }[name]


LAYERS = (
    "encoder",
    "gru batch_first",
    "rnn bidirectional",
    "lstm proj",
    "grucell",
    "conv bn pool",
    *ATTENTION_CALLS,
)


def _zoo_outputs(name):
    """The zoo model's cross-entropy loss, ember's and torch's, from the same weights."""
    theirs_model = _build(torch, name)
    ours_model = _build(ember, name, theirs_model)
    rng = np.random.default_rng(5)
    x = rng.standard_normal(MODEL_ZOO[name][1])
    target = rng.integers(0, 5, x.shape[0])
    losses = []
    for lib, model in ((ember, ours_model), (torch, theirs_model)):
        logits = model(lib, lib.tensor(x).requires_grad_())
        losses.append(lib.nn.functional.cross_entropy(logits, lib.tensor(target)))
    return losses


def _layer_outputs(name):
    make, shape = _modules(name)
    torch.manual_seed(0)
    theirs, ours = make(torch.nn).double(), make(ember.nn).double()
    ours.load_state_dict(
        {k: ember.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    )
    x = np.random.RandomState(1).standard_normal(shape)
    outputs = []
    for lib, module in ((ember, ours), (torch, theirs)):
        out = module(lib.tensor(x).requires_grad_())
        outputs.append((out[0] if isinstance(out, tuple) else out).sum())
    return outputs


def _data():
    r = np.random.RandomState(0)
    x, y = r.randn(4, 5), r.randn(4, 5)
    return {
        "x": x,
        "y": y,
        "p": 1 / (1 + np.exp(-x)),
        "t01": (r.rand(4, 5) > 0.5) * 1.0,
        "cls": r.randint(0, 5, 4),
        "pos": np.abs(y) + 0.1,
        "sign": np.sign(r.randn(4)),
        "labels": np.tile([2, 0, -1, 1, 3], (4, 1)),
    }


def _t(lib, values, grad=True, dtype=None):
    return lib.tensor(values, dtype=dtype or lib.float64, requires_grad=grad and dtype is None)


# loss name -> (lib, its nn.functional, data) -> loss
LOSSES = {
    "mse_loss": lambda lib, f, d: f.mse_loss(_t(lib, d["x"]), _t(lib, d["y"])),
    "l1_loss": lambda lib, f, d: f.l1_loss(_t(lib, d["x"]), _t(lib, d["y"])),
    "smooth_l1_loss": lambda lib, f, d: f.smooth_l1_loss(
        _t(lib, d["x"]), _t(lib, d["y"]), beta=0.5
    ),
    "huber_loss": lambda lib, f, d: f.huber_loss(_t(lib, d["x"]), _t(lib, d["y"]), delta=0.5),
    "binary_cross_entropy": lambda lib, f, d: f.binary_cross_entropy(
        _t(lib, d["p"]), _t(lib, d["t01"], False)
    ),
    "bce_with_logits pos_weight": lambda lib, f, d: f.binary_cross_entropy_with_logits(
        _t(lib, d["x"]), _t(lib, d["t01"], False), pos_weight=_t(lib, np.full(5, 2.0), False)
    ),
    "nll_loss": lambda lib, f, d: f.nll_loss(
        f.log_softmax(_t(lib, d["x"]), 1), _t(lib, d["cls"], dtype=lib.int64)
    ),
    "cross_entropy label_smoothing": lambda lib, f, d: f.cross_entropy(
        _t(lib, d["x"]), _t(lib, d["cls"], dtype=lib.int64), label_smoothing=0.1
    ),
    "cross_entropy probabilities": lambda lib, f, d: f.cross_entropy(
        _t(lib, d["x"]), _t(lib, d["p"] / d["p"].sum(1, keepdims=True), False)
    ),
    "kl_div": lambda lib, f, d: f.kl_div(
        f.log_softmax(_t(lib, d["x"]), 1), _t(lib, d["p"], False), reduction="batchmean"
    ),
    "poisson_nll_loss": lambda lib, f, d: f.poisson_nll_loss(
        _t(lib, d["x"]), _t(lib, d["pos"], False)
    ),
    "gaussian_nll_loss": lambda lib, f, d: f.gaussian_nll_loss(
        _t(lib, d["x"]), _t(lib, d["y"]), _t(lib, d["pos"])
    ),
    "soft_margin_loss": lambda lib, f, d: f.soft_margin_loss(
        _t(lib, d["x"]), _t(lib, np.sign(d["y"]), False)
    ),
    "soft_margin_loss none": lambda lib, f, d: f.soft_margin_loss(
        _t(lib, d["x"]), _t(lib, np.sign(d["y"]), False), reduction="none"
    ),
    "multilabel_soft_margin_loss": lambda lib, f, d: f.multilabel_soft_margin_loss(
        _t(lib, d["x"]), _t(lib, d["t01"], False)
    ),
    "multi_margin_loss": lambda lib, f, d: f.multi_margin_loss(
        _t(lib, d["x"]), _t(lib, d["cls"], dtype=lib.int64)
    ),
    "multi_margin_loss weighted": lambda lib, f, d: f.multi_margin_loss(
        _t(lib, d["x"]),
        _t(lib, d["cls"], dtype=lib.int64),
        p=2,
        margin=0.5,
        weight=_t(lib, d["pos"][0], False),
        reduction="sum",
    ),
    "multilabel_margin_loss": lambda lib, f, d: f.multilabel_margin_loss(
        _t(lib, d["x"]), _t(lib, d["labels"], dtype=lib.int64)
    ),
    "hinge_embedding_loss": lambda lib, f, d: f.hinge_embedding_loss(
        _t(lib, d["x"]), _t(lib, np.sign(d["y"]), False)
    ),
    "margin_ranking_loss": lambda lib, f, d: f.margin_ranking_loss(
        _t(lib, d["x"][:, 0]), _t(lib, d["y"][:, 0]), _t(lib, d["sign"], False)
    ),
    "cosine_embedding_loss": lambda lib, f, d: f.cosine_embedding_loss(
        _t(lib, d["x"]), _t(lib, d["y"]), _t(lib, d["sign"], False)
    ),
    "triplet_margin_loss": lambda lib, f, d: f.triplet_margin_loss(
        _t(lib, d["x"]), _t(lib, d["y"]), _t(lib, d["pos"])
    ),
}


def _loss_outputs(name):
    data = _data()
    return [LOSSES[name](lib, lib.nn.functional, data) for lib in (ember, torch)]


CASES = {
    **{name: _zoo_outputs for name in MODEL_ZOO},
    **{name: _layer_outputs for name in LAYERS},
    **{name: _loss_outputs for name in LOSSES},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_module_graph_matches_torch(name):
    ours, theirs = CASES[name](name)
    assert differences(ours.grad_fn, theirs.grad_fn) == []
