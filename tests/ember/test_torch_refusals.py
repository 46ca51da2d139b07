"""Calls PyTorch refuses, refused by ember with the same exception type and PyTorch's message
(ember may add the shapes and dtypes after it), and their neighbours PyTorch takes, giving the
same values. Each case is ``lib -> result`` run on torch and on ember alike."""

from __future__ import annotations

import math
import re

import pytest

import ember

torch = pytest.importorskip("torch")


def _functional(lib):
    return lib.nn.functional


CASES = {
    # narrow: PyTorch's checks in its order
    "narrow past the end": lambda m: m.zeros(3).narrow(0, 2, 2),
    "narrow start below": lambda m: m.zeros(3).narrow(0, -4, 1),
    "narrow start above": lambda m: m.zeros(3).narrow(0, 4, 0),
    "narrow at the end": lambda m: m.zeros(3).narrow(0, 3, 0),
    "narrow negative length": lambda m: m.zeros(3).narrow(0, 0, -1),
    "narrow 0-d": lambda m: m.zeros(()).narrow(0, 0, 1),
    "unflatten empty sizes": lambda m: m.zeros(1).unflatten(0, ()),
    "chunk 0-d": lambda m: m.zeros(()).chunk(2),
    "unbind 0-d": lambda m: m.zeros(()).unbind(0),
    # reductions without identity over empty tensors
    "amax of empty": lambda m: m.amax(m.zeros(0, 2)),
    "amax of empty, dim []": lambda m: m.amax(m.zeros(0, 2), []),
    "amax of empty, dim 0": lambda m: m.amax(m.zeros(0, 2), 0),
    "amin of empty, dim 1": lambda m: m.amin(m.zeros(0, 2), 1),
    "argmax of empty": lambda m: m.argmax(m.zeros(0, 2)),
    "argmin of empty, dim 0": lambda m: m.argmin(m.zeros(0, 2), 0),
    "max of empty": lambda m: m.max(m.zeros(0)),
    "inf norm of empty": lambda m: m.norm(m.zeros(0), p=math.inf),
    "-1 norm of empty, dim 0": lambda m: m.norm(m.zeros(0, 2), p=-1, dim=0),
    # argument types
    "cat of a tensor": lambda m: m.cat(m.ones(2)),
    "stack of a tensor": lambda m: m.stack(m.ones(2, 2)),
    "alpha a string": lambda m: m.add(m.ones(2), 1, alpha="a"),
    "alpha None in place": lambda m: m.ones(2).add_(1, alpha=None),
    "float alpha, int tensors": lambda m: m.add(m.ones(2, dtype=m.int64), 1, alpha=1.5),
    "bool alpha, float tensors": lambda m: m.sub(m.ones(2), 1, alpha=True),
    "float alpha": lambda m: m.add(m.ones(2), 1, alpha=1.5),
    "linear of a list": lambda m: _functional(m).linear([1.0, 2.0], m.ones(2, 2)),
    "linear, weight a list": lambda m: _functional(m).linear(m.ones(2), [[1.0, 2.0]]),
    "relu of a list": lambda m: _functional(m).relu([1.0]),
    "dropout of a list": lambda m: _functional(m).dropout([1.0]),
    "copy_ from a list": lambda m: m.ones(2).copy_([1.0, 2.0]),
    "copy_ from a number": lambda m: m.ones(2).copy_(3.0),
    # masked_fill: bool masks, 0-d values, values the dtype holds
    "masked_fill 300 into uint8": lambda m: m.zeros(2, dtype=m.uint8).masked_fill(
        m.tensor([True, False]), 300
    ),
    "masked_fill -1 into uint8": lambda m: m.zeros(2, dtype=m.uint8).masked_fill(
        m.tensor([True, False]), -1
    ),
    "masked_fill 1e300 into float32": lambda m: m.zeros(2).masked_fill(
        m.tensor([True, False]), 1e300
    ),
    "masked_fill 0-d 300 into uint8": lambda m: m.zeros(2, dtype=m.uint8).masked_fill(
        m.tensor([True, False]), m.tensor(300)
    ),
    "masked_fill uint8 mask": lambda m: m.zeros(2).masked_fill(
        m.tensor([1, 0], dtype=m.uint8), 1.0
    ),
    "masked_fill 1-d value": lambda m: m.zeros(2).masked_fill(m.tensor([True, False]), m.ones(1)),
    "setitem 300 into uint8": lambda m: m.zeros(2, dtype=m.uint8).__setitem__(0, 300),
    # index_fill: the same value checks, int64 indices in range, a vector or scalar index
    "index_fill": lambda m: m.zeros(3, 4).index_fill(1, m.tensor([0, 2, -1]), 5.0),
    "index_fill_ 0-d value": lambda m: m.zeros(3, 4).index_fill_(0, m.tensor(1), m.tensor(7.0)),
    "index_fill 300 into uint8": lambda m: m.zeros(2, dtype=m.uint8).index_fill(
        0, m.tensor([0]), 300
    ),
    "index_fill 0-d 300 into uint8": lambda m: m.zeros(2, dtype=m.uint8).index_fill(
        0, m.tensor([0]), m.tensor(300)
    ),
    "index_fill 1-d value": lambda m: m.zeros(2).index_fill(0, m.tensor([0]), m.ones(1)),
    "index_fill int32 index": lambda m: m.zeros(2).index_fill(0, m.tensor([0], dtype=m.int32), 1.0),
    "index_fill index past the end": lambda m: m.zeros(3, 4).index_fill(1, m.tensor([4]), 1.0),
    "index_fill 2-d index": lambda m: m.zeros(3, 4).index_fill(1, m.tensor([[0]]), 1.0),
    "index_fill of a 0-d tensor": lambda m: m.index_fill(m.zeros(()), 0, m.tensor([0]), 2.0),
}


def _outcome(fn, lib):
    try:
        result = fn(lib)
    except Exception as exc:  # the refusal is the outcome under test
        return exc
    if isinstance(result, (tuple, list)):
        return [r.tolist() for r in result]
    return result.tolist() if hasattr(result, "tolist") else result


@pytest.mark.parametrize("name", list(CASES))
def test_outcome_as_torch(name):
    want = _outcome(CASES[name], torch)
    got = _outcome(CASES[name], ember)
    if isinstance(want, Exception):
        assert isinstance(got, Exception), f"{name}: ember gives {got!r}; PyTorch raises {want!r}"
        assert type(got) is type(want), f"{name}: {type(got).__name__}: {got}; PyTorch {want!r}"
        assert re.search(re.escape(str(want).splitlines()[0][:45]), str(got)), (
            f"{name}: {got}; PyTorch: {want}"
        )
    else:
        assert not isinstance(got, Exception), f"{name}: ember raises {got!r}; PyTorch {want}"
        assert got == want, f"{name}: {got}; PyTorch {want}"
