"""Every in-place elementwise op of the op table (``add_``, ``exp_``, ``clamp_``...) on targets
that are not contiguous, against the row's numpy reference, on every device.

A target is built in a memory layout (transposed, strided with gaps, negative strides, or
expanded, which must be refused), or as one of two interleaved views of a shared base whose
sibling is the other operand, or it is its own other operand (``x.add_(x)``). Other operands
broadcast to the target's shape; one that broadcasts to a larger shape, or a result of a higher
dtype category than the target's (``int_tensor.exp_()``), must be refused, as in PyTorch.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from ember.dispatcher.opdef import Kind
from ember.dispatcher.optable import OPS

from ..ops import checks
from ..ops.sampling import Arr, Sample, build, values
from .strategies import examples, operand_spec, operands, seeds, shapes


def _operands_only(op) -> bool:
    """Whether the op needs nothing beyond its tensor operands: the property draws operands
    only (``polygamma_``'s order ``n`` has no default; the special-function generators in
    tests/ops/gen_special.py cover those rows)."""
    rest = op.schema.args[op.inplace_of.info["arity"] :]
    return all(arg.has_default for arg in rest)


INPLACE = sorted(
    name
    for name, op in OPS.items()
    if op.inplace_of is not None
    and op.inplace_of.kind is Kind.ELEMENTWISE
    and op.inplace_of.defn.reference is not None
    and _operands_only(op)
)
MODES = ("layout", "shared", "alias")


def _others(draw, op, dtype, target_shape, first: int):
    """Operands ``first``.. of ``op``, each broadcastable with the target (perhaps to more)."""
    out = []
    for i in range(first, op.inplace_of.info["arity"]):
        shape = draw(hnp.broadcastable_shapes(target_shape, min_side=0, max_side=4), f"arg {i}")
        out.append(draw(operands(dtype, shape, operand_spec(op, i, dtype)), f"arg {i}"))
    return out


@st.composite
def inplace_calls(draw):
    """``(op, dtype, mode, target Arr, other operand Arrs)``."""
    op = OPS[draw(st.sampled_from(INPLACE), "op")]
    dtype = draw(st.sampled_from(checks.accepted_dtypes(op)), "dtype")
    arity = op.inplace_of.info["arity"]
    mode = draw(st.sampled_from(MODES if arity > 1 else ("layout", "shared")), "mode")
    shape = draw(shapes(min_dims=0 if mode == "layout" else 1), "target shape")
    spec = operand_spec(op, 0, dtype)
    if mode == "alias":  # the target is also operand 1: it needs what both positions need
        spec = {**spec, **operand_spec(op, 1, dtype)}
    if mode == "layout":
        target = draw(operands(dtype, shape, spec), "target")
    else:
        rng = np.random.default_rng(draw(seeds(), "target seed"))
        target = Arr(values(dtype, shape, rng, **spec))
    others = _others(draw, op, dtype, shape, 1 if mode == "layout" else 2)
    if mode == "shared" and arity > 1:  # the sibling view is operand 1, of the target's shape
        rng = np.random.default_rng(draw(seeds(), "sibling seed"))
        others = [Arr(values(dtype, shape, rng, **operand_spec(op, 1, dtype))), *others]
    elif mode == "alias":
        others = [target, *others]
    return op, dtype, mode, target, others


def _interleaved(target: Arr, sibling: Arr | None) -> np.ndarray:
    """A base holding the target at even and the sibling at odd positions of its last dim."""
    v = target.values
    base = np.zeros(v.shape[:-1] + (2 * v.shape[-1],), v.dtype)
    base[..., 0::2] = v
    if sibling is not None:
        base[..., 1::2] = sibling.values
    return base


def _arguments(mode, target, others, device):
    """``(ember arguments, base, base values)``; the base is None unless ``mode`` is shared."""
    if mode == "shared":
        sibling = others[0] if others else None
        base_values = _interleaved(target, sibling)
        base = ember.from_numpy(base_values.copy()).to(device)
        views = [OPS["slice"](base, -1, start, None, 2) for start in (0, 1)]
        rest = [build(a, device) for a in others[1:]]
        return [views[0], *(views[1:] if sibling is not None else []), *rest], base, base_values
    first = build(target, device)
    rest = [first if a is target else build(a, device) for a in others]
    return [first, *rest], None, None


def _argument_check_refuses(op, args) -> bool:
    """The row's own argument check (``attrs['check']``: hardtanh's limits on unsigned...)."""
    check = op.inplace_of.info.get("check")
    try:
        if check is not None:
            check(*args)
    except RuntimeError:
        return True
    return False


def _refused(op, dtype, target: Arr, want: np.ndarray, args) -> bool:
    """Whether PyTorch refuses the write: the arguments fail the row's check, the result
    broadcasts beyond the target, is of a higher dtype category, or the target has elements
    sharing memory (stride 0)."""
    result_dtype = checks.result_dtype(op.inplace_of, dtype)
    return (
        _argument_check_refuses(op, args)
        or want.shape != target.values.shape
        or not checks.can_cast(result_dtype, dtype)
        or checks.writes_overlap(target)
    )


@examples(60)
@given(case=inplace_calls())
def test_inplace_op_writes_its_target_like_numpy(device, case):
    op, dtype, mode, target, others = case
    sample = Sample((target, *others)).complete(op)
    what = f"{op.name}[{dtype.name}]({sample!r}), {mode} target, on {device}"
    args, base, base_values = _arguments(mode, target, others, device)
    args += list(sample.args[len(args) :])
    try:
        want = np.asarray(checks.reference(op, sample))
    except ValueError:  # operands that do not broadcast together
        with pytest.raises(RuntimeError, match=op.name.rstrip("_")):
            op(*args)
        return
    if _refused(op, dtype, target, want, args):
        with pytest.raises(RuntimeError, match=op.name.rstrip("_")):
            op(*args)
        return
    before = checks.gaps(target, args[0])
    assert op(*args) is args[0], f"{what}: an in-place op returns its target"
    checks.assert_matches(args[0], want, dtype, op.defn.tolerance(dtype), what)
    checks.assert_gaps_kept(target, args[0], before, what)
    if base is not None:
        base_values[..., 0::2] = want
        checks.assert_matches(base, base_values, dtype, op.defn.tolerance(dtype), f"{what}: base")


# ---- partial overlap, which the property keeps out ------------------------------------------
BINARY_INPLACE = [
    n
    for n in INPLACE
    if OPS[n].inplace_of.info["arity"] == 2 and ember.float32 in checks.accepted_dtypes(OPS[n])
]
OVERLAP = "some elements of the input tensor and the written-to tensor refer to a single memory"


@pytest.mark.parametrize("write", ["op", "copy_", "setitem"])
def test_partially_overlapping_operands_are_refused(write, device):
    """Target and operand share some memory but are not the same view: PyTorch refuses."""
    for name in BINARY_INPLACE if write == "op" else [write]:
        x = ember.arange(1.0, 7.0, device=device)
        with pytest.raises(RuntimeError, match=OVERLAP):
            if write == "setitem":
                x[1:] = x[:-1]
            else:
                OPS[name](x[1:], x[:-1])
