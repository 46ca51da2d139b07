"""Bad input into layers: the error names the layer and the shapes involved (and the exception
type is PyTorch's), so a user can tell which layer of a model rejected what."""

from __future__ import annotations

import copy
import re

import pytest

import ember
import ember.nn as nn


def zeros(*shape, device="cpu", dtype=None):
    return ember.zeros(*shape, device=device, dtype=dtype)


def tokens(values):
    return lambda device: ember.tensor(values, device=device)


# id -> (layer, inputs: shapes of zero tensors (or a function of the device), exception type,
# patterns the message must contain: the layer's repr and the offending shapes)
CASES = {
    "Linear": (nn.Linear(4, 3), [(2, 5)], RuntimeError, [r"Linear\(in_features=4", r"\[2, 5\]"]),
    "Bilinear": (
        nn.Bilinear(4, 3, 2), [(2, 4), (2, 4)], RuntimeError,
        [r"Bilinear\(in1_features=4, in2_features=3", r"\[2, 4\]"],
    ),
    "Conv2d channels": (
        nn.Conv2d(3, 4, 3), [(2, 5, 8, 8)], RuntimeError, [r"Conv2d\(3, 4", r"\[2, 5, 8, 8\]"]
    ),
    "Conv2d rank": (nn.Conv2d(3, 4, 3), [(3, 8)], RuntimeError, [r"Conv2d", r"\[3, 8\]"]),
    "Conv2d too small": (
        nn.Conv2d(1, 1, 5), [(1, 1, 3, 3)], RuntimeError,
        [r"Conv2d", r"\[1, 1, 3, 3\]", r"Kernel size"],
    ),
    "Conv1d channels": (
        nn.Conv1d(2, 4, 3), [(2, 3, 8)], RuntimeError, [r"Conv1d\(2, 4", r"\[2, 3, 8\]"]
    ),
    "ConvTranspose2d channels": (
        nn.ConvTranspose2d(2, 4, 3), [(1, 3, 4, 4)], RuntimeError,
        [r"ConvTranspose2d\(2, 4", r"\[1, 3, 4, 4\]"],
    ),
    "MaxPool2d rank": (nn.MaxPool2d(2), [(4, 4)], RuntimeError, [r"MaxPool2d", r"\[4, 4\]"]),
    "MaxPool2d too small": (
        nn.MaxPool2d(5), [(1, 1, 3, 3)], RuntimeError, [r"MaxPool2d", r"\[1, 1, 3, 3\]"]
    ),
    "AvgPool2d rank": (nn.AvgPool2d(2), [(4,)], RuntimeError, [r"AvgPool2d", r"\[4\]"]),
    "BatchNorm1d channels": (
        nn.BatchNorm1d(3), [(4, 5)], RuntimeError, [r"BatchNorm1d\(3", r"\[4, 5\]"]
    ),
    "BatchNorm2d rank": (nn.BatchNorm2d(3), [(4, 3)], ValueError, [r"BatchNorm2d", r"4D", r"2D"]),
    "LayerNorm": (nn.LayerNorm(5), [(2, 4)], RuntimeError, [r"LayerNorm\(\(5,\)", r"\[2, 4\]"]),
    "GroupNorm": (
        nn.GroupNorm(2, 4), [(2, 6, 3)], RuntimeError, [r"GroupNorm\(2, 4", r"\[2, 6, 3\]"]
    ),
    "RMSNorm": (nn.RMSNorm(5), [(2, 4)], RuntimeError, [r"RMSNorm\(\(5,\)", r"\[2, 4\]"]),
    "Embedding range": (
        nn.Embedding(10, 3), tokens([[1, 12]]), IndexError, [r"Embedding\(10, 3", r"12"]
    ),
    "Embedding dtype": (nn.Embedding(10, 3), [(2,)], RuntimeError, [r"Embedding", r"float32"]),
    "LSTM input": (
        nn.LSTM(4, 6), [(5, 3, 5)], RuntimeError, [r"LSTM", r"input_size", r"4", r"5"]
    ),
    "GRU hidden": (
        nn.GRU(4, 6), [(5, 3, 4), (1, 2, 6)], RuntimeError,
        [r"GRU", r"\(1, 3, 6\)", r"\[1, 2, 6\]"],
    ),
    "LSTM rank": (nn.LSTM(4, 6), [(2, 5, 3, 4)], ValueError, [r"LSTM", r"\[2, 5, 3, 4\]"]),
    "GRUCell": (nn.GRUCell(4, 6), [(3, 5)], RuntimeError, [r"GRUCell", r"\[3, 5\]", "input_size"]),
    "MultiheadAttention": (
        nn.MultiheadAttention(8, 2), [(3, 2, 6)] * 3, AssertionError,
        [r"MultiheadAttention", r"embedding dimension of 8, but got 6"],
    ),
    "Unflatten": (nn.Unflatten(1, (2, 3)), [(4, 5)], RuntimeError, [r"Unflatten", r"\[4, 5\]"]),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_names_layer_and_shapes(device, case):
    layer, inputs, exc, patterns = CASES[case]
    layer = copy.deepcopy(layer).to(device)
    args = inputs(device) if callable(inputs) else [zeros(*s, device=device) for s in inputs]
    args = args if isinstance(args, list) else [args]
    with pytest.raises(exc) as info:
        layer(*args)
    for pattern in patterns:
        assert re.search(pattern, str(info.value)), f"{pattern!r} not in: {info.value}"


def test_loss_shape_errors(device):
    with pytest.raises(ValueError, match=r"Expected target size \[2\], got \[3\]|\[3\]"):
        nn.CrossEntropyLoss()(zeros(2, 4, device=device), ember.tensor([1, 2, 3], device=device))
    with pytest.raises(ValueError, match=r"\[2, 3\].*\[2, 4\]|\[2, 4\].*\[2, 3\]"):
        nn.BCELoss()(zeros(2, 4, device=device), zeros(2, 3, device=device))
    with pytest.warns(UserWarning, match="target size"):
        nn.MSELoss()(zeros(2, 4, device=device), zeros(4, device=device))
    with pytest.raises(ValueError, match="reduction"):
        nn.L1Loss(reduction="avg")(zeros(2, device=device), zeros(2, device=device))


def test_constructor_errors():
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="divisible by num_groups"):
        nn.GroupNorm(3, 4)
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNN(2, 3, nonlinearity="gelu")
    with pytest.raises(AssertionError, match="divisible by num_heads"):
        nn.MultiheadAttention(6, 4)
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2d(1, 1, 3, padding_mode="bogus")
    with pytest.raises(ValueError, match="strided"):
        nn.Conv2d(1, 1, 3, padding="same", stride=2)


def test_errors_of_user_modules_are_left_alone(device):
    """Only the innermost library layer adds its name: a user's module (even inside a
    Sequential) raises its own message unchanged, and an outer container adds nothing."""

    class Picky(nn.Module):
        def forward(self, x):
            raise ValueError("picky: no thanks")

    with pytest.raises(ValueError, match=r"^picky: no thanks$"):
        nn.Sequential(nn.Identity(), Picky())(zeros(2, device=device))
    with pytest.raises(RuntimeError) as info:
        nn.Sequential(nn.ReLU(), nn.Linear(3, 2)).to(device)(zeros(4, 5, device=device))
    assert str(info.value).startswith("Linear(in_features=3, out_features=2, bias=True) got")
    assert str(info.value).count("got input") == 1
