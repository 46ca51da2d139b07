"""Output dtypes of every op with an autocast policy, generated from the policy table.

On cpu, PyTorch's CPU autocast is the oracle: each op runs under ``autocast("cpu", dtype)`` in
both libraries with float32, lower-precision and mixed inputs, and the result dtypes (or the
failure) must agree, for the ops of the CPU lists and for those of the GPU lists that must pass
through on CPU. On the GPU lists' devices (xpu here, emulated cuda), where no PyTorch device
runs, the oracle is PyTorch on CPU applying the policy by hand: inputs cast as the C++ wrappers
cast them (aten/src/ATen/autocast_mode.h).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.dispatcher.optable import OPS
from ember.dispatcher.optable.autocast_policy import NAMES, Cast, policy_table

from .specs import NOT_AS_TORCH_YET, SPECS, UNLISTED, Maker

torch = pytest.importorskip("torch")

LOWER = ("bfloat16", "float16")
# Input dtypes per tensor argument, cycled: all float32, all lower precision, and mixed.
COMBOS = (("float32",), ("lower",), ("float32", "lower"), ("lower", "float32"))

_NORMS = (
    "PyTorch's CPU norm kernels take a lower-precision input only with float32 parameters (both "
    "weight and bias) and refuse other mixes; ember computes any mix in float32"
)
# Ops that compute where PyTorch raises when their inputs mix dtypes, on purpose -> why.
KNOWN_DIFFERENCES = {
    "bilinear": "PyTorch's _trilinear kernel refuses mixed input dtypes; ember's bilinear "
    "decomposes into einsum and bmm, which autocast casts to one dtype",
    "layer_norm": _NORMS,
    "group_norm": _NORMS,
    "batch_norm": _NORMS,
}


def _outcome(lib, spec, dtypes, device="cpu"):
    maker = Maker(lib, dtypes, device)
    try:
        result = spec(lib, maker)
    except (RuntimeError, TypeError, ValueError) as exc:
        return f"raised {type(exc).__name__}"
    return str(result.dtype).split(".")[-1]


def _dtypes(combo, lower):
    return tuple(lower if d == "lower" else d for d in combo)


def test_every_policy_op_has_a_spec():
    """A row with an autocast entry is covered here as soon as it exists."""
    missing = sorted(n for n in NAMES if n in OPS and n not in SPECS)
    assert not missing, f"autocast policy ops without a spec in tests/amp/specs.py: {missing}"


@pytest.mark.parametrize("lower", LOWER)
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(reason="autocast dtype differs", strict=True))
        if n in NOT_AS_TORCH_YET
        else n
        for n in sorted(SPECS) + sorted(UNLISTED)
    ],
)
def test_cpu_autocast_dtypes_match_pytorch(name, lower):
    spec = SPECS.get(name) or UNLISTED[name]
    for combo in COMBOS:
        dtypes = _dtypes(combo, lower)
        with torch.autocast("cpu", dtype=getattr(torch, lower)):
            want = _outcome(torch, spec, dtypes)
        with ember.autocast("cpu", dtype=getattr(ember, lower)):
            got = _outcome(ember, spec, dtypes)
        if name in KNOWN_DIFFERENCES and len(combo) > 1:
            assert want.startswith("raised") and not got.startswith("raised"), (
                f"{name} with {dtypes}: no longer a known difference (torch {want}, ember {got})"
            )
            continue
        assert got == want, f"{name} with {dtypes} under {lower} autocast: {got}, torch {want}"


def _expected_gpu(name, spec, dtypes, lower):
    """PyTorch on CPU doing what its GPU autocast wrapper of ``name``'s policy does."""
    policy = policy_table("cuda")[name]
    eligible = ("float32", "bfloat16", "float16")
    if policy in (Cast.FP32_SET_OPT_DTYPE, Cast.FP32_APPEND_DTYPE):
        got = _outcome(torch, spec, dtypes)
        return "float32" if dtypes[0] in eligible and not got.startswith("raised") else got
    if policy is Cast.BANNED:
        return "raised RuntimeError"
    if policy is Cast.LOWER:
        to = lower
    elif policy is Cast.FP32:
        to = "float32"
    else:  # PROMOTE: float32 if any input is, else the lower precision
        created = Maker(torch, dtypes).record(spec)
        if any(d not in ("float32", lower) for d in created):
            return "raised RuntimeError"
        to = "float32" if "float32" in created else lower
    return _outcome(torch, spec, tuple(to if d in eligible else d for d in dtypes))


def _gpu_listed() -> list:
    return sorted(n for n in policy_table("cuda") if n in SPECS)


def _check_gpu_lists(device, lower, names=None):
    for name in _gpu_listed() if names is None else names:
        for combo in COMBOS:
            dtypes = _dtypes(combo, lower)
            with ember.autocast(device, dtype=getattr(ember, lower)):
                got = _outcome(ember, SPECS[name], dtypes, device)
            want = _expected_gpu(name, SPECS[name], dtypes, lower)
            assert got == want, f"{name} on {device}, {dtypes}, {lower} autocast: {got}, not {want}"


@pytest.mark.parametrize("lower", LOWER)
def test_xpu_autocast_applies_the_gpu_lists(lower):
    from ..conftest import unavailable_reason

    reason = unavailable_reason("xpu")
    if reason:
        pytest.skip(reason)
    # xpu's table is the GPU lists, entry for entry; the layer that applies it is the one the
    # emulated cuda test below runs over every op. Here the first and last op of each policy
    # run on xpu: all 79 ops built their kernels in a fresh cache (PoCL programs, and CLBlast's
    # GEMM kernels per routine and layout, 1.6 s each), 78 s of a CI run for bfloat16; these 11
    # take 48 s (2026-11-29).
    table, gpu = policy_table("xpu"), policy_table("cuda")
    assert {n: table.get(n) for n in _gpu_listed()} == {n: gpu[n] for n in _gpu_listed()}
    by_policy: dict = {}
    for name in _gpu_listed():
        by_policy.setdefault(gpu[name], []).append(name)
    ends = {n for names in by_policy.values() for n in (names[0], names[-1])}
    _check_gpu_lists("xpu", lower, sorted(ends))


def test_cuda_autocast_applies_the_gpu_lists(emulated_cuda):
    _check_gpu_lists("cuda", "float16")


def test_builtin_entries_are_policies_and_float64_is_never_cast():
    for device in ("cpu", "cuda", "xpu"):  # library ops may add dtypes (register_autocast)
        table = policy_table(device)
        assert all(isinstance(c, Cast) for name, c in table.items() if name in OPS)
    # float32 inputs and eligibility: float64 is never cast.
    x = ember.tensor(np.ones((2, 2)), dtype=ember.float64)
    with ember.autocast("cpu"):
        assert ember.mm(x, x).dtype is ember.float64
