"""``repr(tensor)`` in PyTorch's format: fixed expectations, and PyTorch itself where installed."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember

# (expression over a module m, PyTorch's repr with 'torch' written 'ember')
EXPECTED = [
    ("m.tensor([1.0, 2.0, 3.0])", "tensor([1., 2., 3.])"),
    ("m.tensor([1.5, -2.25, 3.0])", "tensor([ 1.5000, -2.2500,  3.0000])"),
    ("m.tensor([[1, 2], [3, 40]])", "tensor([[ 1,  2],\n        [ 3, 40]])"),
    ("m.tensor([True, False])", "tensor([ True, False])"),
    ("m.tensor(3.5)", "tensor(3.5000)"),
    ("m.tensor(3)", "tensor(3)"),
    ("m.tensor(-0.0)", "tensor(-0.)"),
    ("m.tensor([])", "tensor([])"),
    ("m.tensor([1e-5, 1.0])", "tensor([1.0000e-05, 1.0000e+00])"),
    ("m.tensor([1e9, 1.0])", "tensor([1.0000e+09, 1.0000e+00])"),
    ("m.tensor([float('nan'), 2.0])", "tensor([nan, 2.])"),
    ("m.tensor([float('inf'), -float('inf'), 1.5])", "tensor([   inf,   -inf, 1.5000])"),
    ("m.tensor([1, 2], dtype=m.int32)", "tensor([1, 2], dtype=ember.int32)"),
    ("m.tensor([1.5, 2], dtype=m.float64)", "tensor([1.5000, 2.0000], dtype=ember.float64)"),
    ("m.tensor([1.5, 2], dtype=m.bfloat16)", "tensor([1.5000, 2.0000], dtype=ember.bfloat16)"),
    ("m.tensor([1, 255], dtype=m.uint8)", "tensor([  1, 255], dtype=ember.uint8)"),
    ("m.zeros(0, dtype=m.int64)", "tensor([], dtype=ember.int64)"),
    ("m.zeros(2, 0, 3)", "tensor([], size=(2, 0, 3))"),
    ("m.zeros(3, 0, dtype=m.int32)", "tensor([], size=(3, 0), dtype=ember.int32)"),
    ("m.ones(2, requires_grad=True)", "tensor([1., 1.], requires_grad=True)"),
    (
        "m.ones(2, dtype=m.float64, requires_grad=True)",
        "tensor([1., 1.], dtype=ember.float64, requires_grad=True)",
    ),
    ("m.arange(6).view(2, 3).T", "tensor([[0, 3],\n        [1, 4],\n        [2, 5]])"),
    ("m.arange(2000)", "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"),
    (
        "m.ones(2, 1, 2, 1)",
        "tensor([[[[1.],\n          [1.]]],\n\n\n        [[[1.],\n          [1.]]]])",
    ),
    (
        "m.arange(30.0) * 0.5",
        "tensor([ 0.0000,  0.5000,  1.0000,  1.5000,  2.0000,  2.5000,  3.0000,  3.5000,\n"
        "         4.0000,  4.5000,  5.0000,  5.5000,  6.0000,  6.5000,  7.0000,  7.5000,\n"
        "         8.0000,  8.5000,  9.0000,  9.5000, 10.0000, 10.5000, 11.0000, 11.5000,\n"
        "        12.0000, 12.5000, 13.0000, 13.5000, 14.0000, 14.5000])",
    ),
    (
        "m.arange(2000).view(200, 10)",
        "tensor([[   0,    1,    2,  ...,    7,    8,    9],\n"
        "        [  10,   11,   12,  ...,   17,   18,   19],\n"
        "        [  20,   21,   22,  ...,   27,   28,   29],\n"
        "        ...,\n"
        "        [1970, 1971, 1972,  ..., 1977, 1978, 1979],\n"
        "        [1980, 1981, 1982,  ..., 1987, 1988, 1989],\n"
        "        [1990, 1991, 1992,  ..., 1997, 1998, 1999]])",
    ),
]

# Typical tensors whose repr is compared with PyTorch's when it is installed.
EXPRESSIONS = [e for e, _ in EXPECTED] + [
    "m.tensor([[1.5, -20.0], [300.0, 4.0]])",
    "m.tensor([0.0001, 1.0])",
    "m.tensor([1000.5, 1.0])",
    "m.tensor([1001.5, 1.0])",
    "m.tensor([12345678.0, 1.5])",
    "m.tensor([123456.789])",
    "m.tensor([0.1, 0.2, 0.3])",
    "m.tensor([-5, 3, 100])",
    "m.tensor([2**40])",
    "m.tensor([1.123456789], dtype=m.float64)",
    "m.tensor([1.5, 2], dtype=m.float16)",
    "m.tensor(float('nan'))",
    "m.tensor(1e-5)",
    "m.tensor([[]])",
    "m.arange(24.0).view(2, 3, 4) / 7",
    "m.arange(40.0).view(2, 20) * 1.5",
    "m.arange(1200.0).view(30, 40) - 600",
    "m.linspace(-1, 1, 5)",
    "m.ones(2, requires_grad=True) * 2",
    "m.ones(3, requires_grad=True)[1]",
]

OPTIONS = [
    {"precision": 2},
    {"linewidth": 40},
    {"edgeitems": 1, "threshold": 10},
    {"edgeitems": 0, "threshold": 5},
    {"sci_mode": True},
    {"sci_mode": False},
    {"profile": "short"},
    {"threshold": 10},
]


@pytest.fixture(autouse=True)
def default_printoptions():
    yield
    ember.set_printoptions(profile="default")


@pytest.mark.parametrize("expression, expected", EXPECTED, ids=[e for e, _ in EXPECTED])
def test_repr(expression, expected):
    assert repr(eval(expression, {"m": ember, "math": math})) == expected


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_repr_matches_torch(expression):
    torch = pytest.importorskip("torch")
    ours = repr(eval(expression, {"m": ember}))
    assert ours == repr(eval(expression, {"m": torch})).replace("torch", "ember")


@pytest.mark.parametrize("options", OPTIONS, ids=[str(o) for o in OPTIONS])
@pytest.mark.parametrize(
    "expression",
    [
        "m.arange(2000.0).view(40, 50) / 3",
        "m.tensor([[1e-6, 5.0], [3.0, float('nan')]])",
        "m.arange(100).view(10, 10)",
        "m.tensor([0.0, 0.0])",
    ],
)
def test_printoptions_match_torch(expression, options):
    torch = pytest.importorskip("torch")
    try:
        ember.set_printoptions(**options)
        torch.set_printoptions(**options)
        ours = repr(eval(expression, {"m": ember}))
        theirs = repr(eval(expression, {"m": torch})).replace("torch", "ember")
    finally:
        torch.set_printoptions(profile="default")
    assert ours == theirs


def test_print_options_change_and_restore():
    ember.set_printoptions(precision=2)
    assert repr(ember.tensor([1.2345])) == "tensor([1.23])"
    ember.set_printoptions(profile="default")
    assert repr(ember.tensor([1.2345])) == "tensor([1.2345])"
    ember.set_printoptions(profile="full")
    assert "..." not in repr(ember.arange(1500))


def test_long_suffixes_wrap():
    text = repr(ember.arange(7.0, dtype=ember.float64).view(1, 7) / 3)
    assert text == (
        "tensor([[0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000]],\n"
        "       dtype=ember.float64)"
    )


def test_views_and_negative_strides_print_their_values():
    array = np.arange(6).reshape(2, 3)
    assert repr(ember.from_numpy(array[::-1, ::2])) == "tensor([[3, 5],\n        [0, 2]])"
    assert repr(ember.arange(4).expand(2, 4)) == "tensor([[0, 1, 2, 3],\n        [0, 1, 2, 3]])"


def test_format_and_str():
    t = ember.tensor(2.5)
    assert f"{t:.2f}" == "2.50"
    assert str(ember.tensor([1, 2])) == "tensor([1, 2])"
    assert f"{ember.tensor([1, 2])}" == "tensor([1, 2])"
