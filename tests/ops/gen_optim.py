"""Samples and property checks of the optimizers' fused steps (optable/optim_fused.py):
``_fused_adam_``, ``_fused_adamw_`` and ``_fused_sgd_`` against ``torch._fused_*_`` on the same
lists (float32 and float64 compared closely; float16/bfloat16 to their rounding)."""

from __future__ import annotations

import numpy as np
import pytest

from . import checks
from .sampling import Arr, Sample, arr

SHAPES = ((3, 4), (5,), (2, 1, 3))
TOL = {"float64": (1e-10, 1e-12), "float32": (2e-5, 2e-6)}
LOW_TOL = (2e-2, 2e-2)  # float16/bfloat16: one rounding of the float32 result, either way


def _one(value, dtype=np.float32) -> Arr:
    return Arr(np.array(value, dtype))


def _lists(dtype, rng, n, positive=(), layout="contiguous"):
    out = []
    for i in range(n):
        low = (0.0, 2.0) if i in positive else (-2.0, 2.0)
        out.append(
            [
                arr(dtype, s, rng, layout if len(s) == 2 else "contiguous", low=low[0], high=low[1])
                for s in SHAPES
            ]
        )
    return out


def _adam(op, dtype, device, rng):
    """Plain, L2/decoupled decay with amsgrad and maximize, strided lists, a grad_scale, a
    found_inf that skips, and the empty group."""
    cases = (
        ({}, "contiguous", None, None),
        ({"weight_decay": 0.1, "amsgrad": True, "maximize": True}, "contiguous", None, None),
        ({"weight_decay": 0.05}, "transposed", 4.0, 0.0),
        ({"amsgrad": True}, "contiguous", 2.0, 1.0),
    )
    for extra, layout, scale, found in cases:
        hp = {"lr": 0.1, "beta1": 0.9, "beta2": 0.99, "weight_decay": 0.0, "eps": 1e-8}
        hp.update({"amsgrad": False, "maximize": False}, **extra)
        lists = _lists(dtype, rng, 5, positive=(3, 4), layout=layout)
        if not hp["amsgrad"]:
            lists[4] = []
        steps = [_one(3.0) for _ in SHAPES]
        grad_scale = None if scale is None else _one([scale])
        found_inf = None if found is None else _one(found)
        yield Sample((*lists, steps, *hp.values(), grad_scale, found_inf))
    yield Sample(([], [], [], [], [], [], 0.1, 0.9, 0.99, 0.0, 1e-8, False, False, None, None))


def _sgd(op, dtype, device, rng):
    """No momentum, the first step (buffers filled), momentum with dampening and decay,
    Nesterov with maximize and a grad_scale, and a skipping found_inf."""
    cases = (
        (0.0, 0.0, False, False, True, None, None),
        (0.9, 0.0, False, False, True, None, None),
        (0.9, 0.5, False, False, False, None, None),
        (0.8, 0.0, True, True, False, 4.0, 0.0),
        (0.9, 0.0, False, False, False, 2.0, 1.0),
    )
    for momentum, dampening, nesterov, maximize, first, scale, found in cases:
        params, grads, bufs = _lists(dtype, rng, 3, layout="sliced" if nesterov else "contiguous")
        yield Sample((params, grads, bufs if momentum else [], 0.01, momentum, 0.1, dampening,
                      nesterov, maximize, first and momentum != 0,
                      None if scale is None else _one([scale]),
                      None if found is None else _one(found)))  # fmt: skip


def _torch_args(sample, torch, dtype):
    wanted = getattr(torch, dtype.name)

    def convert(a):
        if isinstance(a, list):
            return [convert(x) for x in a]
        if not isinstance(a, Arr):
            return a
        t = torch.from_numpy(np.array(a.values, np.float64))
        return t.to(wanted if a.values.dtype == dtype.np else torch.float32)

    return [convert(a) for a in sample.args]


def check_fused(op, dtype, device, sample):
    torch = pytest.importorskip("torch")
    got = sample.ember_args(device)
    assert op(*got) is None
    if not sample.args[0]:
        return  # the empty group: nothing to do (torch's op refuses empty lists)
    want = _torch_args(sample, torch, dtype)
    n = sum(1 for a in op.schema.args if a.is_tensor and a.is_list)
    kwargs = dict(zip([a.name for a in op.schema.args][n:], want[n:]))
    getattr(torch, op.name)(*want[:n], **kwargs)
    tol = TOL.get(dtype.name, LOW_TOL)
    for i, (ours, theirs) in enumerate(zip(got[:n], want[:n])):
        for t, w in zip(ours, theirs):
            if t.dtype is not dtype:  # the step counters
                continue
            w = w.to(torch.float64).numpy()
            checks.assert_matches(t, w, dtype, tol, f"{op.name}: list {i}")


GENERATORS = {"optim_fused": lambda op, *a: (_sgd if op.name == "_fused_sgd_" else _adam)(op, *a)}
PROPERTIES = {name: check_fused for name in ("_fused_adam_", "_fused_adamw_", "_fused_sgd_")}
