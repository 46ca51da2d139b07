"""ember.linalg against torch.linalg, record by record (tests/linalg/cases.py), on every device:
the same outputs (values, dtypes, shapes, named fields) and, in float64, the same gradients."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

from .cases import CASES

torch = pytest.importorskip("torch")

DTYPES = {"float32": (ember.float32, torch.float32), "float64": (ember.float64, torch.float64)}
TOLERANCE = {"float32": (2e-4, 2e-5), "float64": (1e-9, 1e-10)}


def _flat(result) -> list:
    if isinstance(result, (tuple, list)):
        return [t for item in result for t in _flat(item)]
    return [result]


def _call(case, lib, tensors):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation warnings for the old names
        return case.fn(lib, *tensors)


def _make(case, rng, dtype_name, device):
    arrays = case.inputs(rng)
    ours = [ember.tensor(a, dtype=DTYPES[dtype_name][0], device=device) for a in arrays]
    theirs = [torch.tensor(a, dtype=DTYPES[dtype_name][1]) for a in arrays]
    return ours, theirs


def _same_fields(got, want, name) -> None:
    """Named results (torch.return_types) have ember twins with the same field names."""
    fields = getattr(type(want), "__match_args__", None)
    if fields:
        assert tuple(getattr(type(got), "_fields", ())) == tuple(fields), (
            f"{name}: result fields {getattr(type(got), '_fields', None)}, torch has {fields}"
        )


@pytest.mark.parametrize("dtype_name", sorted(DTYPES))
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_values_match_torch(case, dtype_name, device, rng):
    ours, theirs = _make(case, rng, dtype_name, device)
    got, want = _call(case, ember, ours), _call(case, torch, theirs)
    _same_fields(got, want, case.name)
    got, want = _flat(got), _flat(want)
    assert len(got) == len(want), f"{case.name}: {len(got)} outputs, torch gives {len(want)}"
    rtol, atol = TOLERANCE[dtype_name]
    for i, (g, w) in enumerate(zip(got, want)):
        what = f"{case.name} [{dtype_name}, {device}] output {i}"
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1], f"{what}: dtype"
        assert tuple(g.shape) == tuple(w.shape), f"{what}: shape {g.shape} vs {w.shape}"
        np.testing.assert_allclose(
            g.detach().cpu().numpy(), w.detach().numpy(), rtol=rtol, atol=atol, err_msg=what
        )


@pytest.mark.parametrize("case", [c for c in CASES if c.grad and c.torch_grad], ids=repr)
def test_gradients_match_torch(case, device, rng):
    ours, theirs = _make(case, rng, "float64", device)
    for t in (*ours, *theirs):
        t.requires_grad_(True)
    got, want = _flat(_call(case, ember, ours)), _flat(_call(case, torch, theirs))
    weights = [rng.standard_normal(tuple(w.shape)) for w in want]
    total_e = sum((g * ember.tensor(wt, device=device)).sum() for g, wt, w in
                  zip(got, weights, want) if w.dtype.is_floating_point)  # fmt: skip
    total_t = sum((w * torch.tensor(wt)).sum() for w, wt in zip(want, weights)
                  if w.dtype.is_floating_point)  # fmt: skip
    total_e.backward()
    total_t.backward()
    for i, (a, b) in enumerate(zip(ours, theirs)):
        what = f"{case.name} [{device}] gradient of input {i}"
        assert (a.grad is None) == (b.grad is None), what
        if b.grad is not None:
            np.testing.assert_allclose(
                a.grad.cpu().numpy(), b.grad.numpy(), rtol=1e-7, atol=1e-9, err_msg=what
            )
