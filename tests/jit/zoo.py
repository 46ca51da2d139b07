"""The nn module zoo the jit, fx and export tests run: each entry builds a small model in eval
mode, an example input, and inputs of other sizes that the captured graph must also handle.

``dynamic``: the dims a trace keeps symbolic (batch everywhere; the sequence too where the code
reads it from a shape; recurrent nets unroll their time loop, so their length is baked in, as
PyTorch's tracer bakes it).
"""

from __future__ import annotations

import importlib.util
import pathlib
from dataclasses import dataclass, field

import ember
import ember.nn as nn

ROOT = pathlib.Path(__file__).resolve().parents[2]


@dataclass
class Case:
    name: str
    model: object
    example: tuple
    others: list = field(default_factory=list)  # argument tuples of other sizes


def _gpt_class():
    spec = importlib.util.spec_from_file_location("train_gpt", ROOT / "examples" / "train_gpt.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.GPT


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))).log_softmax(-1)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(4, 6, 3, stride=2, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
            nn.AdaptiveAvgPool2d(2),
        )  # fmt: skip
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(24, 5))

    def forward(self, x):
        return self.head(self.features(x))


class Recurrent(nn.Module):
    """An embedding, a recurrent layer, a head: word_language_model's shape."""

    def __init__(self, kind: str):
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.rnn = getattr(nn, kind)(8, 12, num_layers=2, batch_first=True)
        self.head = nn.Linear(12, 20)

    def forward(self, tokens, hidden):
        out, hidden = self.rnn(self.embed(tokens), hidden)
        return self.head(out), hidden


def _hidden(kind: str, batch: int):
    h = ember.randn(2, batch, 12)
    return (h, ember.randn(2, batch, 12)) if kind == "LSTM" else h


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.encoder(x))


def _recurrent(kind: str) -> Case:
    tokens = ember.randint(0, 20, (3, 5))
    others = [(ember.randint(0, 20, (6, 5)), _hidden(kind, 6))]
    return Case(kind.lower(), Recurrent(kind), (tokens, _hidden(kind, 3)), others)


def cases() -> list[Case]:
    ember.manual_seed(0)
    built = [
        Case("mlp", MLP(), (ember.randn(4, 6),), [(ember.randn(9, 6),)]),
        Case("cnn", CNN(), (ember.randn(2, 1, 8, 8),), [(ember.randn(5, 1, 8, 8),)]),
        _recurrent("RNN"),
        _recurrent("LSTM"),
        _recurrent("GRU"),
        Case(
            "transformer",
            Encoder(),
            (ember.randn(2, 6, 16),),
            [(ember.randn(3, 6, 16),), (ember.randn(2, 9, 16),)],
        ),
        Case(
            "gpt",
            _gpt_class()(vocab=32, context=16, d_model=16, heads=2, layers=2, dropout=0.1),
            (ember.randint(0, 32, (2, 8)),),
            [(ember.randint(0, 32, (3, 8)),), (ember.randint(0, 32, (2, 12)),)],
        ),
    ]
    for case in built:
        case.model.eval()
    return built


CASES = {case.name: case for case in cases()}
