"""Every op of the table x every device x every dtype it accepts, against its numpy reference.

Ops without a reference (random fills, factories with uninitialised memory, as_strided...) are
checked by properties instead (test_properties.py). Tolerances come from the op table
(``OpDef.tolerance``); the expected result dtype from the op's promotion kind.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import ember
from ember._dtype import SCALAR_NAMES
from ember.dispatcher.opdef import Promotion
from ember.dispatcher.optable import OPS

from ..conftest import FALLBACK_DEVICES, device_op_params
from . import checks
from .samples import generator_name, samples

REFERENCED = [name for name, op in OPS.items() if op.defn.reference is not None]
CASES = [(name, d.name) for name in REFERENCED for d in checks.accepted_dtypes(OPS[name])]

# Which cases each device checks. cpu: all. The fallback device ref (cpu's kernels behind a
# copy): the fixed third of tests/conftest.py's share, as in the other sweeps over ops. xpu:
# every op in the dtypes OpInfo checks there too (tests/ops/opinfo/runner.py's DTYPES), and
# the share of the cases in the narrower dtypes. Its kernels are OpenCL programs built at
# first use per op family and dtype, on CI's PoCL about 0.3 s a program and as much again per
# kernel at its first launch: the six narrower dtypes cost 347 of this sweep's 437
# worker-seconds on xpu, nearly all of it compiling, and ref's sweep 129 (2026-11-29). Every
# dtype still meets a third of the ops on xpu, and the helpers the kernels share (ember.h's
# half and bfloat16 conversions, the char and short loads) with them.
COMPILED_PER_DTYPE = frozenset({"xpu"})
EVERY_OP_DTYPES = frozenset({"float64", "float32", "int64", "bool"})


def _case_id(case) -> str:
    return f"{case[0]}-{case[1]}"


def _every_case(device, full) -> bool:
    return device not in FALLBACK_DEVICES and device not in COMPILED_PER_DTYPE


def _main_dtype_on_xpu(device, case) -> bool:
    return device in COMPILED_PER_DTYPE and case[1] in EVERY_OP_DTYPES


REJECTED = [
    (name, d.name)
    for name, op in OPS.items()
    if generator_name(op) is not None
    for d in checks.rejected_dtypes(op)
]


def _describe(op, dtype, sample) -> str:
    return f"{op.name}[{dtype.name}] with {sample!r}"


def _refusal(op, args):
    """The error a row's argument check (``attrs['check']``) gives these arguments, if any."""
    check = (op.inplace_of or op).info.get("check")
    try:
        if check is not None:
            check(*args)
    except RuntimeError as exc:
        return exc
    return None


def _expect_refusal(op, args) -> bool:
    """Asserts the op raises what its argument check says; False when there is nothing to say."""
    refusal = _refusal(op, args)
    if refusal is None:
        return False
    with pytest.raises(RuntimeError, match=re.escape(str(refusal))):
        op(*args)
    return True


def check_functional(op, dtype, device, sample) -> None:
    what = _describe(op, dtype, sample)
    args = sample.ember_args(device)
    if _expect_refusal(op, args):
        return
    want = checks.as_outputs(checks.reference(op, sample))
    got = checks.as_outputs(op(*args))
    assert len(got) == len(want), f"{what}: {len(got)} outputs, the reference has {len(want)}"
    got = checks.align_signs(op, got, want)
    dtypes = checks.output_dtypes(op, dtype, len(got), sample.dtype)
    for i, (g, w, d) in enumerate(zip(got, want, dtypes)):
        if w is None:  # an output not asked for (output_mask): None, PyTorch's undefined tensor
            assert g is None, f"{what}, output {i}: expected None, got {type(g).__name__}"
            continue
        checks.assert_matches(g, w, d, op.defn.tolerance(d), f"{what}, output {i}")
    first = args[0] if args else None
    if checks.is_view_op(op) and isinstance(first, ember.Tensor) and first.is_contiguous():
        for i, g in enumerate(got):
            assert g._storage is first._storage, f"{what}: output {i} is not a view of the input"


def check_inplace(op, dtype, device, sample) -> None:
    """``op(self, ...)`` writes the reference's result into self and returns self; when the
    result cannot go there (broadcast to a larger shape, a higher dtype category, overlapping
    memory) it raises instead."""
    target_arg = checks.target_of(sample)
    if target_arg is None:
        return
    what = _describe(op, dtype, sample)
    args = sample.ember_args(device)
    if _expect_refusal(op, args):
        return
    target = args[0]
    want = np.asarray(checks.reference(op, sample))
    result_dtype = sample.dtype or checks.result_dtype(op.inplace_of or op, dtype)
    if (
        want.shape != target_arg.values.shape
        or not checks.can_cast(result_dtype, target.dtype)
        or checks.writes_overlap(target_arg)
    ):
        with pytest.raises(RuntimeError):
            op(*args)
        return
    before = checks.gaps(target_arg, target)
    result = op(*args)
    assert result is target, f"{what}: an in-place op must return self"
    checks.assert_matches(target, want, target.dtype, op.defn.tolerance(target.dtype), what)
    checks.assert_gaps_kept(target_arg, target, before, what)


@pytest.mark.parametrize(
    "device, case", device_op_params(CASES, _case_id, _every_case, _main_dtype_on_xpu)
)
def test_op(case, device, rng):
    name, dtype_name = case
    op, dtype = OPS[name], checks.BY_NAME[dtype_name]
    check = check_inplace if checks.mutates(op) else check_functional
    for sample in samples(op, dtype, device, rng):
        try:
            check(op, dtype, device, sample)
        except Exception as exc:
            exc.add_note(f"sample: {_describe(op, dtype, sample)}")
            raise


def _first_nonempty(op, dtype, device, rng):
    for sample in samples(op, dtype, device, rng):
        arrays = [a for a in sample.args if isinstance(a, checks.Arr)]
        # 0-dim arguments (GradScaler's scale and found_inf) are never empty
        if all(a.values.size > 1 or a.values.ndim == 0 for a in arrays):
            return sample
    return None


@pytest.mark.parametrize("name,dtype_name", REJECTED)
def test_rejected_dtype_raises(name, dtype_name, device, rng):
    """A dtype outside the row's dtypes raises an error naming the op (not a crash, not numbers)."""
    op, dtype = OPS[name], checks.BY_NAME[dtype_name]
    sample = _first_nonempty(op, dtype, device, rng)
    if sample is None:
        pytest.fail(f"{name}: no sample with non-empty tensors for {dtype_name}")
    base = op.inplace_of or op
    # The name the error gives: the op's, or the PyTorch name its row declares (linalg.inv).
    name = base.info.get("display", base.name)
    # or PyTorch's own refusal by the kernel it reaches ('"cross" not implemented for 'Bool''),
    # which names the dtype instead
    kernel_refusal = rf"^\"\w+\" not implemented for '{SCALAR_NAMES[dtype]}'$"
    with pytest.raises((RuntimeError, TypeError)) as refused:
        op(*sample.ember_args(device))
    message = str(refused.value)
    assert name in message or (
        refused.type is NotImplementedError and re.match(kernel_refusal, message)
    ), message


# ---- integer edge cases the reference comparison keeps out -----------------------------------
def _integer_division_cases():
    for name, op in OPS.items():
        base = op.inplace_of or op
        if generator_name(op) != "binary_nonzero" or base.promotion is Promotion.INT_TO_FLOAT:
            continue
        for d in checks.accepted_dtypes(op):
            if d.category == ember.int64.category:
                yield name, d.name


@pytest.mark.parametrize("name,dtype_name", list(_integer_division_cases()))
def test_integer_division_by_zero_raises(name, dtype_name, device):
    op, dtype = OPS[name], checks.BY_NAME[dtype_name]
    base = (op.inplace_of or op).name
    for divisor in (ember.tensor([1, 0, 2], dtype=dtype, device=device), 0):
        x = ember.tensor([4, 5, 6], dtype=dtype, device=device)
        with pytest.raises(ZeroDivisionError, match=re.escape(base)):
            op(x, divisor)


def _signed_int_dtypes(name):
    ints = [d for d in checks.accepted_dtypes(OPS[name]) if d.category == ember.int64.category]
    return [d.name for d in ints if d.is_signed]


@pytest.mark.parametrize("dtype_name", _signed_int_dtypes("pow"))
def test_integer_negative_power(dtype_name, device):
    """As PyTorch: an integer tensor to a negative Python exponent raises; to a tensor of
    exponents, a negative one gives 1 for a base of 1, +-1 for -1 and 0 otherwise."""
    dtype = checks.BY_NAME[dtype_name]
    x = ember.tensor([2, 3, 1, -1, -1, 0], dtype=dtype, device=device)
    exponents = ember.tensor([1, -1, -3, -3, -2, -1], dtype=dtype, device=device)
    assert OPS["pow"](x, exponents).tolist() == [2, 0, 1, -1, 1, 0]
    assert (2**exponents).tolist() == [2, 0, 0, 0, 0, 0]
    with pytest.raises(RuntimeError, match="pow"):
        OPS["pow"](x, -1)


def _no_identity_reductions():
    return [name for name, op in OPS.items() if op.info.get("identity") is False]


@pytest.mark.parametrize("name", _no_identity_reductions())
def test_empty_reduction_without_identity_raises(name, device):
    x = ember.zeros(3, 0, device=device)
    with pytest.raises((IndexError, RuntimeError), match=re.escape(name)):
        OPS[name](x, 1)
