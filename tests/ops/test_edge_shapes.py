"""Edge shapes against PyTorch, on every device: 0-d tensors through every reduction, scan and
softmax-like row of the op table (values and gradients), empty batches through the nn layers,
and zero-size views.

The 0-d cases are generated from the table: every row of kind reduction, scan or nn whose schema
has a ``dim`` argument, called with ``dim=0`` and ``dim=-1`` (and each ``keepdim``) in every dtype
the row accepts.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.dispatcher.opdef import Kind
from ember.dispatcher.optable import OPS

from .checks import accepted_dtypes

torch = pytest.importorskip("torch")


def _arg_names(op) -> tuple:
    return tuple(a.name for a in op.schema.args)


DIM_KINDS = (Kind.REDUCTION, Kind.SCAN, Kind.NN)
DIM_OPS = [
    name
    for name, op in OPS.items()
    if op.kind in DIM_KINDS
    and op.defn.function
    and op.inplace_of is None
    and "dim" in _arg_names(op)
    and op.schema.args[0].is_tensor
]
# (op, dtype) -> why ember differs from PyTorch on purpose or for now; strict: a fix shows.
KNOWN_DIFFERENCES = {
    (name, "uint8"): "PyTorch's all/any keep uint8 for uint8 inputs (legacy); ember returns bool"
    for name in ("all", "any")
}
ZERO_D_CASES = [
    pytest.param(
        name,
        d.name,
        dim,
        keepdim,
        marks=[pytest.mark.xfail(reason=KNOWN_DIFFERENCES[name, d.name], strict=True)]
        if (name, d.name) in KNOWN_DIFFERENCES
        else [],
    )
    for name in DIM_OPS
    for d in accepted_dtypes(OPS[name])
    for dim in (0, -1)
    for keepdim in ((False, True) if "keepdim" in _arg_names(OPS[name]) else (None,))
]
FLOATS = ("float32", "float64")


def _np(t) -> np.ndarray:
    """A host float64 (or int64/bool) array of an ember or torch tensor, for comparison."""
    t = t.detach().cpu()
    if t.dtype.is_floating_point:
        t = t.double()
    return np.asarray(t.numpy())


def assert_same(ours, theirs, what: str, rtol=1e-5, atol=1e-6) -> None:
    """Same shape, dtype and values (NaN where torch has NaN) as PyTorch's result(s)."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs), f"{what}: {ours!r}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{what}, output {i}", rtol, atol)
        return
    assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: shape {ours.shape} vs torch's"
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch."), f"{what}: {ours.dtype}"
    np.testing.assert_allclose(_np(ours), _np(theirs), rtol, atol, equal_nan=True, err_msg=what)


def _both(fn_ours, fn_theirs, what: str):
    """Both results, or both errors (PyTorch refusing means ember must refuse too)."""
    try:
        theirs = fn_theirs()
    except (RuntimeError, IndexError, TypeError) as exc:
        with pytest.raises(type(exc)):
            fn_ours()
        return None, None
    return fn_ours(), theirs


def _zero_d_kwargs(name: str, dim: int, keepdim) -> dict:
    kwargs = {"dim": dim}
    if keepdim is not None:
        kwargs["keepdim"] = keepdim
    return kwargs


def _outputs(result) -> tuple:
    return tuple(result) if isinstance(result, tuple) else (result,)


@pytest.mark.parametrize("name, dtype, dim, keepdim", ZERO_D_CASES)
def test_zero_dim_through_dim_ops(name, dtype, dim, keepdim, device):
    """A 0-d input takes dim 0 or -1 and gives PyTorch's 0-d result: no garbage (softmax once
    read uninitialised memory here), no IndexError from a shape without dims."""
    value = {"bool": True}.get(dtype, 3 if "int" in dtype else -1.5)
    ours_in = ember.tensor(value, dtype=getattr(ember, dtype), device=device)
    theirs_in = torch.tensor(value, dtype=getattr(torch, dtype))
    kwargs = _zero_d_kwargs(name, dim, keepdim)
    what = f"{name}[{dtype}] of a 0-d tensor with {kwargs} on {device}"
    ours, theirs = _both(
        lambda: getattr(ember, name)(ours_in, **kwargs),
        lambda: getattr(torch, name)(theirs_in, **kwargs),
        what,
    )
    if theirs is not None:
        tol = OPS[name].defn.tolerance(getattr(ember, dtype))
        assert_same(_outputs(ours), _outputs(theirs), what, *tol)


GRAD_CASES = [
    (name, dtype, dim, keepdim)
    for name, dtype, dim, keepdim in (case.values for case in ZERO_D_CASES)
    if dtype in FLOATS and OPS[name].defn.differentiable
]


@pytest.mark.parametrize("name, dtype, dim, keepdim", GRAD_CASES)
def test_zero_dim_gradients(name, dtype, dim, keepdim, device):
    """Backward through a 0-d reduction: the formulas see dim 0 of a shape without dims."""
    kwargs = _zero_d_kwargs(name, dim, keepdim)
    ours_in = ember.tensor(-1.5, dtype=getattr(ember, dtype), device=device, requires_grad=True)
    theirs_in = torch.tensor(-1.5, dtype=getattr(torch, dtype), requires_grad=True)
    ours = _outputs(getattr(ember, name)(ours_in, **kwargs))[0]
    theirs = _outputs(getattr(torch, name)(theirs_in, **kwargs))[0]
    ours.sum().backward()
    theirs.sum().backward()
    assert_same(ours_in.grad, theirs_in.grad, f"grad of {name}[{dtype}] with {kwargs} on {device}")


@pytest.mark.parametrize("name", [n for n in DIM_OPS if OPS[n].kind is Kind.NN])
def test_zero_dim_softmax_is_written(name, device):
    """Every element of the result is computed: fresh allocations of garbage give the same
    answer every time, on the fused kernel's path and through ``dtype=``."""
    x = ember.tensor(0.25, device=device)
    expected = getattr(torch, name)(torch.tensor(0.25), 0).item()
    for _ in range(5):
        junk = ember.full((64,), 1e30, device=device)  # dirties the allocator's free blocks
        del junk
        assert getattr(ember, name)(x, 0).item() == expected
        assert getattr(ember, name)(x, -1, dtype=ember.float64).item() == expected
