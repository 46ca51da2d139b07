"""ember.masked against torch.masked beyond what the OpInfo samples cover: integer, bool and
uint8 identities, integer masks, ``dim=()``, and the errors (type and message) PyTorch raises.
The OpInfo suite (tests/ops/test_opinfo.py) checks the float samples and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

X = np.array([[3, -1, 7, 2], [0, 5, -4, 6], [1, 1, 8, -2]])
MASK = np.array([[True, False, True, False], [False, False, False, False], [True] * 4])

# (op, input dtype, positional args, keyword args); "mask" stands for MASK, "row" for MASK[0]
VALUES = [
    ("sum", "int32", (1,), {"mask": "mask"}),  # promoted to int64
    ("sum", "bool", (), {"mask": "mask"}),
    ("prod", "bool", (0,), {"mask": "mask", "keepdim": True}),
    ("prod", "int16", ((0, 1),), {"mask": "row"}),
    ("amax", "uint8", (1,), {"mask": "mask"}),  # the fully masked row gives uint8's minimum
    ("amin", "int32", (1,), {"mask": "mask"}),
    ("argmax", "int64", (1,), {"mask": "mask"}),
    ("argmin", "float32", (), {"mask": "row"}),
    ("amax", "float64", ((),), {"mask": "mask"}),  # dim=() reduces every dim
    ("sum", "float32", (None,), {"mask": "int_mask", "dtype": "float64"}),
    ("norm", "float64", (float("-inf"), 1), {"mask": "mask"}),
    ("norm", "float64", (1, (0, 1)), {"mask": "row", "keepdim": True}),
    ("var", "int64", (1,), {"mask": "mask", "unbiased": False}),
    ("std", "float64", (0,), {"mask": "mask", "correction": 2, "keepdim": True}),
    ("mean", "int64", (1,), {"mask": "mask", "dtype": "float64"}),
    ("median", "int64", (1,), {"mask": "row"}),
    ("logsumexp", "int64", (1,), {"mask": "row"}),
    ("cumsum", "int32", (1,), {"mask": "mask"}),
    ("cumprod", "float32", (0,), {"mask": "mask", "dtype": "float64"}),
    ("softmax", "float32", (1,), {"mask": "mask"}),
    ("log_softmax", "float64", (0,), {"mask": "row", "dtype": "float32"}),
    ("softmin", "float64", (-1,), {"mask": "mask"}),
    ("normalize", "float64", (1.0, 1), {"mask": "mask", "eps": 0.5}),
]

ERRORS = [
    ("sum", "float32", ((1, 1),), {"mask": "mask"}),  # dim twice
    ("amax", "float32", (2,), {"mask": "mask"}),  # dim out of range
    ("mean", "int64", (1,), {"mask": "mask"}),  # no floating dtype
    ("median", "int64", (1,), {"mask": "mask"}),  # an integer row fully masked out
    ("sum", "float32", (), {"mask": "too_many_dims"}),
    ("var", "float32", (1, True), {"mask": "mask", "correction": 1}),
]


def _arguments(lib, dtype, args, kwargs, device=None):
    masks = {
        "mask": MASK,
        "row": MASK[0],
        "int_mask": MASK.astype(np.int64),
        "too_many_dims": MASK[None],
    }

    def make(array, dtype_name=None):
        name = dtype_name or str(array.dtype)
        if lib is torch:
            return torch.tensor(array.tolist(), dtype=getattr(torch, name))
        return ember.tensor(array.tolist(), dtype=getattr(ember, name), device=device)

    def value(v):
        if isinstance(v, str) and v in masks:
            return make(masks[v])
        if isinstance(v, str):
            return getattr(lib, v)
        return v

    x = make(X if dtype != "bool" else X > 0, dtype)
    return x, args, {k: value(v) for k, v in kwargs.items()}


def _call(lib, case, device=None):
    name, dtype, args, kwargs = case
    x, args, kwargs = _arguments(lib, dtype, args, kwargs, device)
    return getattr(lib.masked, name)(x, *args, **kwargs)


@pytest.mark.parametrize("case", VALUES, ids=lambda c: f"{c[0]}-{c[1]}")
def test_values_match_torch(case, device):
    expected = _call(torch, case)
    actual = _call(ember, case, device)
    assert str(actual.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    got = np.asarray(actual.cpu().numpy())
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-6, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("case", ERRORS, ids=lambda c: f"{c[0]}-{c[1]}")
def test_errors_match_torch(case):
    with pytest.raises(Exception) as expected:
        _call(torch, case)
    with pytest.raises(type(expected.value)) as actual:
        _call(ember, case)
    assert str(actual.value) == str(expected.value).replace("torch.", "ember.")
