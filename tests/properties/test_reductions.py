"""Every reduction of the op table with a numpy reference, over random dim subsets (negative,
any order, none), keepdim, every accepted dtype, inputs in any memory layout and with zero-size
dims, on every device; PyTorch is the oracle for which calls are refused and with what error.

Values are small whole numbers (products: 1, -1 and 2), so that sums and products are exact in
any order and dtype and only the reduction itself is under test; ties are frequent, which checks
that argmax/argmin/max/min pick the first of equal elements, as PyTorch does.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ember
from ember.dispatcher.opdef import Kind
from ember.dispatcher.optable import OPS

from ..ops import checks
from ..ops.sampling import Arr, Sample, call_args
from .strategies import (
    dim_argument,
    examples,
    layouts,
    seeds,
    shapes,
    torch_module,
    torch_tensor,
)

# Rows with a torch.<name> to compare with (sum_to_size is a Tensor method only, and takes a
# size, not dims; _segment_reduce takes a reduction's name and segment lengths, not dims:
# tests/ops and the OpInfo suite check them).
REDUCTIONS = sorted(
    name
    for name, op in OPS.items()
    if op.kind is Kind.REDUCTION
    and op.defn.reference is not None
    and op.defn.function
    and name != "_segment_reduce"
)
NORM_ORDERS = ("fro", 1, 2, math.inf, -math.inf, 0, 3)


def _values(name: str, dtype, shape, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    picks = (-1, 1, 2) if name == "prod" else (-3, -2, -1, 0, 1, 2, 3)
    if dtype.name == "bool":
        return rng.random(shape) < 0.5
    if not dtype.is_signed and not dtype.is_floating_point:
        picks = tuple(abs(p) for p in picks)
    return rng.choice(np.array(picks), shape).astype(dtype.np)


def _expanded(values: np.ndarray) -> np.ndarray:
    """The same values with dim 0 repeating its first row (for the stride-0 layout)."""
    return np.broadcast_to(values[:1], values.shape) if values.ndim else values


@st.composite
def reduction_calls(draw):
    """``(op, dtype, sample)``: a reduction row, an input dtype it accepts, and a full call."""
    op = OPS[draw(st.sampled_from(REDUCTIONS), "op")]
    dtype = draw(st.sampled_from(checks.accepted_dtypes(op)), "dtype")
    shape = draw(shapes(max_dims=4, max_side=4), "shape")
    layout = draw(layouts(shape), "layout")
    values = _values(op.name, dtype, shape, draw(seeds(), "values seed"))
    first = op.schema.args[0].name  # "input", or trapezoid's "y"
    named = {first: Arr(_expanded(values) if layout == "expanded" else values, layout)}
    for arg in op.schema.args[1:]:
        if arg.name == "dim":
            dims = dim_argument(arg, len(shape))
            if op.name == "logsumexp":  # PyTorch's logsumexp(x, dim=[]) is itself broken
                dims = dims.filter(bool)
            named["dim"] = draw(dims, "dim")
        elif arg.name == "keepdim":
            named["keepdim"] = draw(st.booleans(), "keepdim")
        elif arg.name == "correction":
            named["correction"] = draw(st.integers(0, 2), "correction")
        elif arg.name == "p":  # a string order is norm's only (dist's p is a Number)
            orders = NORM_ORDERS if op.name == "norm" else NORM_ORDERS[1:]
            named["p"] = draw(st.sampled_from(orders), "p")
        elif arg.name == "other":  # dist: a second input of the same shape and dtype
            named["other"] = Arr(_values(op.name, dtype, shape, draw(seeds(), "other seed")))
        elif arg.name == "q":  # quantiles: a scalar or a 1-D tensor of them, in [0, 1]
            q_shape = draw(st.sampled_from([(), (1,), (3,)]), "q shape")
            q = np.random.default_rng(draw(seeds(), "q seed")).random(q_shape)
            named["q"] = Arr(q.astype(dtype.np))
        elif arg.name == "k":  # kthvalue: out of range past the dim's size, as PyTorch refuses
            named["k"] = draw(st.integers(1, 4), "k")
    return op, dtype, Sample(call_args(op, **named))


def _torch_call(op, sample):
    """The same call in PyTorch, by keyword (None arguments left to PyTorch's defaults)."""
    torch = torch_module()
    names = [arg.name for arg in op.schema.args]
    kwargs = {
        n: torch_tensor(a.values) if isinstance(a, Arr) else a
        for n, a in zip(names[1:], sample.args[1:])
        if a is not None
    }
    return lambda: getattr(torch, op.name)(torch_tensor(sample.args[0].values), **kwargs)


def _torch_outcome(call):
    """``(PyTorch's result, None)``, or ``(None, its refusal)``."""
    try:
        return call(), None
    except Exception as exc:  # any refusal: the test then expects ember to refuse alike
        return None, exc


def _dtypes_of(found) -> list:
    """The ember dtypes of PyTorch's outputs: the oracle's, where a row's promotion does not
    tell (an empty trapezoid keeps y's dtype)."""
    outputs = found if isinstance(found, tuple) else (found,)
    return [getattr(ember, str(t.dtype).removeprefix("torch.")) for t in outputs]


def _numpy_refusal(op, sample):
    try:
        checks.reference(op, sample)
    except ValueError:  # no identity over an empty dim: PyTorch raises an IndexError for those
        return IndexError()
    return None


@examples(60)
@given(case=reduction_calls())
def test_reduction_matches_numpy(device, case):
    op, dtype, sample = case
    what = f"{op.name}[{dtype.name}]({sample!r}) on {device}"
    theirs, refusal = _torch_outcome(_torch_call(op, sample))
    if isinstance(refusal, TypeError):  # a narrower signature (prod takes one dim): numpy decides
        refusal = _numpy_refusal(op, sample)
    if refusal is not None:
        # The error names the op, or is PyTorch's own message (dist's empty inf norm is
        # vector_norm's words in PyTorch too).
        said = f"{re.escape(op.name)}|{re.escape(str(refusal))}" if str(refusal) else op.name
        with pytest.raises(type(refusal), match=said):
            op(*sample.ember_args(device))
        return
    got = checks.as_outputs(op(*sample.ember_args(device)))
    want = checks.as_outputs(checks.reference(op, sample))
    if theirs is None:  # PyTorch's narrower signature refused what numpy computes
        dtypes = checks.output_dtypes(op, dtype, len(got))
    else:
        dtypes = _dtypes_of(theirs)
    assert len(got) == len(want), f"{what}: {len(got)} outputs"
    for i, (g, w, d) in enumerate(zip(got, want, dtypes)):
        assert g.device.type == device, f"{what}: output {i} on {g.device}"
        checks.assert_matches(g, w, d, op.defn.tolerance(d), f"{what}, output {i}")


# ---- defects the property met ----------------------------------------------------------------
@pytest.mark.parametrize("name", ["amax", "amin", "argmax", "argmin"])
def test_empty_reduction_over_every_dim_raises_like_torch(name, device):
    torch = torch_module()
    error = RuntimeError if name in ("amax", "amin") else IndexError
    with pytest.raises(error, match="Expected reduction dim to be specified"):
        getattr(torch, name)(torch.zeros(0, 2))  # the expectation holds in PyTorch
    with pytest.raises(error, match="Expected reduction dim to be specified"):
        getattr(ember, name)(ember.zeros(0, 2, device=device))


@pytest.mark.parametrize("p", [math.inf, -math.inf, -1.0])
def test_empty_norm_without_identity_raises_like_torch(p, device):
    for dim, where in ((None, "on an empty tensor"), (0, "on the dimension 0")):
        with pytest.raises(RuntimeError, match=f"cannot compute the {p:g} norm {where}"):
            ember.norm(ember.zeros(0, 2, device=device), p=p, dim=dim)
    assert ember.norm(ember.zeros(0, 2, device=device), p=p, dim=1).shape == (0,)


def test_no_dims_reduce_like_torch(device):
    """PyTorch reads dim=[] as dim=(): every dim, except all/any, which reduce none."""
    torch = torch_module()
    wrong = []
    for name in ("sum", "amax", "count_nonzero", "std", "all"):
        for dims in ([], ()):
            want = getattr(torch, name)(torch.arange(6.0).view(2, 3), dim=dims).numpy()
            got = getattr(ember, name)(ember.arange(6.0, device=device).view(2, 3), dim=dims)
            if got.shape != want.shape or not np.allclose(got.cpu().numpy(), want):
                wrong.append(f"{name}(x, dim={dims!r}): {got.tolist()}, PyTorch {want.tolist()}")
    assert not wrong, "\n".join(wrong)
