"""Samples and property checks of the multi-tensor rows (optable/foreach.py): ``_foreach_norm``,
``_foreach_mul_`` and ``_foreach_add_`` against ``torch._foreach_norm`` / ``_foreach_mul_`` /
``_foreach_add_`` on the same lists (float32 and float64 closely; float16/bfloat16 to one
rounding)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from . import checks
from .gen_optim import LOW_TOL, TOL
from .sampling import LARGE, Arr, Sample, arr


def _with(dtype, rng, shapes, bad=None, zero=False):
    out = [arr(dtype, shape, rng) for shape in shapes]
    if (bad is not None and dtype.is_floating_point) or zero:
        values = np.array(out[-1].values)
        values.reshape(-1)[values.size // 2] = 0 if zero else bad
        out[-1] = Arr(values)
    return out


def foreach_norm(op, dtype, device, rng):
    """Every order clip_grad_norm_ takes (2, 1, inf, -inf, 0, 3, 0.5), strided tensors, a large
    one (the parallel path), an empty tensor, a NaN, an inf."""
    shapes = ((3, 4), (5,), (2, 1, 3))
    for ord in (2.0, 1.0, math.inf, -math.inf, 0.0, 3.0, 0.5):
        yield Sample((_with(dtype, rng, shapes, zero=True), ord))
    strided = [arr(dtype, (3, 4), rng, "transposed"), arr(dtype, (6,), rng, "sliced")]
    yield Sample((strided, 2.0))
    yield Sample(([arr(dtype, (LARGE,), rng), arr(dtype, (0,), rng)], 2.0))
    yield Sample((_with(dtype, rng, shapes, bad=np.nan), math.inf))
    yield Sample((_with(dtype, rng, shapes, bad=np.inf), 2.0))


def foreach_mul(op, dtype, device, rng):
    """A 0-dim float32 tensor (clip_grads_with_norm_'s coefficient), a number, strided tensors,
    a large one."""
    shapes = ((3, 4), (5,), (2, 1, 3))
    yield Sample((_with(dtype, rng, shapes), Arr(np.array(0.37, np.float32))))
    yield Sample((_with(dtype, rng, shapes), 2.5))
    strided = [arr(dtype, (3, 4), rng, "transposed"), arr(dtype, (6,), rng, "sliced")]
    yield Sample((strided, Arr(np.array(0.1, np.float64))))
    yield Sample(([arr(dtype, (LARGE,), rng)], Arr(np.array(0.5, np.float32))))


def foreach_add(op, dtype, device, rng):
    """Adam's step counters (0-dim tensors plus 1), a fraction, strided tensors, a large one."""
    yield Sample(([Arr(np.array(float(k), dtype.np)) for k in range(4)], 1))
    yield Sample((_with(dtype, rng, ((3, 4), (5,), (2, 1, 3))), 0.3))
    strided = [arr(dtype, (3, 4), rng, "transposed"), arr(dtype, (6,), rng, "sliced")]
    yield Sample((strided, -2.5))
    yield Sample(([arr(dtype, (LARGE,), rng)], 1.0))


def _torch_list(torch, dtype, values):
    wanted = getattr(torch, dtype.name)
    return [torch.from_numpy(np.array(a.values, np.float64)).to(wanted) for a in values]


def _scalar(torch, a):
    return torch.from_numpy(np.array(a.values)) if isinstance(a, Arr) else a


def check_norm(op, dtype, device, sample):
    torch = pytest.importorskip("torch")
    tensors, ord, *rest = sample.ember_args(device)
    got = op(tensors, ord, *rest)
    want = torch._foreach_norm(_torch_list(torch, dtype, sample.args[0]), ord)
    assert len(got) == len(want), f"{op.name}: {len(got)} results for {len(want)} tensors"
    tol = TOL.get(dtype.name, LOW_TOL)
    for i, (ours, theirs) in enumerate(zip(got, want)):
        assert ours.shape == () and ours.dtype is dtype, f"{op.name}: result {i} {ours!r}"
        theirs = theirs.to(torch.float64).numpy()
        checks.assert_matches(ours, theirs, dtype, tol, f"{op.name}: ord {ord}, tensor {i}")


def _check_inplace_scalar(torch_name: str):
    """A check of an in-place ``_foreach_<op>_(tensors, scalar)`` row against torch's: the
    kernel and PyTorch compute in the opmath type, so the results agree bit for bit above 16
    bits (a float16/bfloat16 decomposition may round a float32 scalar first: one rounding)."""

    def check(op, dtype, device, sample):
        torch = pytest.importorskip("torch")
        tensors, other = sample.ember_args(device)
        assert op(tensors, other) is None
        want = _torch_list(torch, dtype, sample.args[0])
        getattr(torch, torch_name)(want, _scalar(torch, sample.args[1]))
        tol = (0.0, 0.0) if dtype.itemsize > 2 else LOW_TOL
        for i, (ours, theirs) in enumerate(zip(tensors, want)):
            checks.assert_matches(
                ours, theirs.to(torch.float64).numpy(), dtype, tol, f"{op.name}: tensor {i}"
            )

    return check


GENERATORS = {"foreach_norm": foreach_norm, "foreach_mul": foreach_mul, "foreach_add": foreach_add}
PROPERTIES = {
    "_foreach_norm": check_norm,
    "_foreach_mul_": _check_inplace_scalar("_foreach_mul_"),
    "_foreach_add_": _check_inplace_scalar("_foreach_add_"),
}
