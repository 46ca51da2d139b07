"""Hypothesis strategies the property suites share: shapes, operands in a drawn memory layout with
the values their op-table row needs, dim arguments, and PyTorch as the oracle for refusals.

Operands are ``tests.ops.sampling.Arr`` values (numpy values plus a layout), so one drawn case
gives the numpy reference its arrays and builds the ember tensors on any device, exactly as the
generated op tests do; values come from a drawn seed (hypothesis shrinks shapes, layouts and
arguments; the values of a failing case are reproduced by its seed).
"""

from __future__ import annotations

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ember import _dtype as dt

from ..ops.sampling import LAYOUTS, Arr, arr, layout_fits


def examples(count: int):
    """``settings`` for ``count`` examples under the default profile (60 examples), scaled with
    the loaded profile: ``HYPOTHESIS_PROFILE=ember-long`` runs each test proportionally longer."""
    return settings(max_examples=max(1, count * settings.default.max_examples // 60))


def shapes(min_dims=0, max_dims=4, min_side=0, max_side=4):
    return hnp.array_shapes(
        min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
    )


def seeds():
    return st.integers(0, 2**32 - 1)


# ---- operand values per op-table row ---------------------------------------------------------
# What each operand of an elementwise row needs, keyed by the row's ``samples`` name: the same
# constraints the generated tests pass to ``sampling.arr`` (tests/ops/gen_elementwise.py).
def _pow_specs(dtype) -> dict:
    if dtype.is_floating_point:
        return {0: {"low": 0.1, "high": 3.0}, 1: {"low": -2.0, "high": 2.0}}
    return {0: {"low": -3, "high": 3}, 1: {"low": 0, "high": 3}}


def _shift_specs(dtype) -> dict:
    bits = 8 * dtype.itemsize if dtype is not dt.bool_ else 1
    return {1: {"low": 0, "high": min(bits - 1, 5)}}


OPERAND_SPECS = {
    "binary_nonzero": lambda d: {1: {"nonzero": True}},
    "binary_positive": lambda d: {0: {"zeros": 0.3}, 1: {"low": 0.1, "high": 4.0}},
    "pow": _pow_specs,
    "shift": _shift_specs,
    "ternary_nonzero": lambda d: {2: {"nonzero": True}},
}


def operand_spec(op, position: int, dtype) -> dict:
    """Keyword arguments of ``sampling.values`` for operand ``position`` of ``op``."""
    base = op.inplace_of or op
    name = base.defn.samples or ""
    if name.startswith("unary"):
        low, high = base.defn.domain or (None, None)
        return {"low": low, "high": high, "nonzero": name == "unary_nonzero"}
    return OPERAND_SPECS.get(name, lambda d: {})(dtype).get(position, {})


def layouts(shape, choices=LAYOUTS):
    return st.sampled_from([name for name in choices if layout_fits(shape, name)])


@st.composite
def operands(draw, dtype, shape, spec=None, choices=LAYOUTS) -> Arr:
    """An ``Arr`` of ``dtype`` and ``shape`` in a drawn layout, values by ``spec``."""
    layout = draw(layouts(shape, choices), "layout")
    rng = np.random.default_rng(draw(seeds(), "values seed"))
    return arr(dtype, shape, rng, layout, **(spec or {}))


# ---- dims --------------------------------------------------------------------------------------
def one_dim(ndim: int):
    """A dim of an ``ndim``-d tensor, negative ones too (a 0-d tensor takes 0 and -1)."""
    wrap = max(ndim, 1)
    return st.integers(-wrap, wrap - 1)


def dim_lists(ndim: int):
    """Distinct dims, in any order, each possibly negative."""
    picks = st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim) if ndim else st.just([])
    return picks.flatmap(
        lambda dims: st.tuples(*(st.sampled_from((d, d - ndim)) for d in dims)).map(list)
    )


def dim_argument(arg, ndim: int):
    """A value for a schema argument named ``dim``: ``int``, ``int?``, ``int[]`` or ``int[]?``."""
    if arg.is_list:  # a list or a tuple: PyTorch reads both alike
        lists = dim_lists(ndim).flatmap(lambda dims: st.sampled_from((dims, tuple(dims))))
        return st.one_of(st.none(), lists) if arg.optional else lists
    return st.one_of(st.none(), one_dim(ndim)) if arg.optional else one_dim(ndim)


# ---- PyTorch as the oracle for what is refused ---------------------------------------------------
def torch_module():
    """PyTorch, imported on first use (importing it costs seconds; only the oracle needs it)."""
    import torch

    return torch


def torch_tensor(values: np.ndarray):
    """``values`` as a torch tensor (bfloat16, which numpy lacks, through float32)."""
    torch = torch_module()
    if values.dtype.name == "bfloat16":
        return torch.from_numpy(values.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.array(values))


def torch_refusal(fn):
    """The exception ``fn()`` raises in PyTorch (``fn`` builds torch tensors itself), or None."""
    try:
        fn()
    except Exception as exc:  # any refusal: the test then expects ember to refuse alike
        return exc
    return None
