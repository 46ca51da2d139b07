"""Elementwise ops of the op table with two or more tensor operands broadcast like numpy, on
every device, whatever the operands' shapes (drawn by ``mutually_broadcastable_shapes``, zero
sizes included) and memory layouts; the values match each row's numpy reference."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from ember.dispatcher.opdef import Kind
from ember.dispatcher.optable import OPS

from ..ops import checks
from ..ops.sampling import Sample
from .strategies import examples, operand_spec, operands

NARY = sorted(
    name
    for name, op in OPS.items()
    if op.kind is Kind.ELEMENTWISE
    and op.info.get("arity", 1) >= 2
    and op.defn.reference is not None
    and not op.mutates
)


@st.composite
def nary_calls(draw):
    """``(op, dtype, sample, result shape)``: one call of an n-ary row, tensors everywhere."""
    op = OPS[draw(st.sampled_from(NARY), "op")]
    dtype = draw(st.sampled_from(checks.accepted_dtypes(op)), "dtype")
    arity = op.info["arity"]
    drawn = draw(hnp.mutually_broadcastable_shapes(num_shapes=arity, min_side=0, max_side=4))
    args = []
    for i, shape in enumerate(drawn.input_shapes):
        operand_dtype = ember.bool if i == 0 and op.info.get("condition") else dtype
        args.append(draw(operands(operand_dtype, shape, operand_spec(op, i, dtype)), f"arg {i}"))
    # Required scalars after the operands (threshold_backward's threshold): a small non-negative
    # integer, which every accepted dtype represents exactly (a negative one wraps for unsigned
    # operands in PyTorch, numpy compares it as is).
    for arg in op.schema.args[arity:]:
        if not arg.has_default:
            args.append(draw(st.integers(0, 2), arg.name))
    return op, dtype, Sample(tuple(args)).complete(op), drawn.result_shape


@examples(60)
@given(case=nary_calls())
def test_elementwise_op_broadcasts_like_numpy(case, device):
    op, dtype, sample, result_shape = case
    what = f"{op.name}[{dtype.name}]({sample!r}) on {device}"
    got = op(*sample.ember_args(device))
    assert tuple(got.shape) == result_shape, f"{what}: shape {list(got.shape)}"
    assert got.device.type == device, f"{what}: result on {got.device}"
    want = checks.reference(op, sample)
    result_dtype = checks.result_dtype(op, dtype)
    checks.assert_matches(got, want, result_dtype, op.defn.tolerance(result_dtype), what)
