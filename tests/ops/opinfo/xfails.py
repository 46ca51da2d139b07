"""The one table of OpInfo records that do not pass yet, each with its reason.

Keys are record ids (``name`` or ``name.variant``, as the test ids show), optionally with
``@device`` for a failure on one device only; a ``name@device`` row of None says the record
passes on that device although its plain row fails elsewhere. The xfails are strict: a record
that starts to pass fails the run until its row is removed, so the table only shrinks. Each
reason names the area (core, nn, linalg, special, fft...) and what fails, as the record's run
reports it.
"""

from __future__ import annotations

SPARSE = "sparse layouts: ember tensors are strided"
JITERATOR = "torch.cuda.jiterator compiles CUDA source at run time: no ember counterpart"
PRIVATE = "a private PyTorch entry point (float8 scaled matmul, fused attention kernels)"

XFAILS = {
    "as_strided_scatter": (
        "core: PyTorch's input gradient of as_strided_scatter is wrong (its own OpInfo marks "
        "test_fn_grad an expected failure); ember's is the true derivative"
    ),
    "chalf": (
        "complex: ember has no complex32 (ComplexHalf) dtype: numpy, the complex CPU kernels' "
        "arithmetic, has no half-precision complex type to store or compute it"
    ),
    "jiterator_2inputs_2outputs": JITERATOR,
    "jiterator_4inputs_with_extra_args": JITERATOR,
    "jiterator_binary": JITERATOR,
    "jiterator_binary_return_by_ref": JITERATOR,
    "jiterator_unary": JITERATOR,
    "sparse.mm.reduce": SPARSE,
    "sparse.sampled_addmm": SPARSE,
    "to_sparse": SPARSE,
    "torch._scaled_mm_v2": PRIVATE,
}


def _saturates_e4m3fn() -> bool:
    """Whether the installed PyTorch casts a finite float beyond float8_e4m3fn's range to its
    largest value (2.13, the version the tests pin) rather than to NaN (2.11 and before)."""
    import torch

    return torch.tensor(1e6).to(torch.float8_e4m3fn).float().item() == 448.0


# Records whose oracle changed between PyTorch versions: record id -> (whether the installed
# PyTorch computes what 2.13 does, why the record fails against one that does not). They must
# pass against 2.13; against another version they are strict xfails too.
ORACLE_CHANGES = {
    "torch._scaled_mm": (
        _saturates_e4m3fn,
        "oracle: this PyTorch casts floats beyond float8_e4m3fn's range to NaN, 2.13 (and ember) "
        "to +-448; the record's e4m3fn outputs overflow in most elements (scales of "
        "max/amax on both operands), so the samples compare only that cast (seen with 2.11 on "
        "the device image, 2026-11-27)",
    ),
}


def reason(record: str, device: str) -> str | None:
    """Why ``record`` is expected to fail on ``device``, or None when it must pass."""
    change = ORACLE_CHANGES.get(record)
    if change is not None and not change[0]():
        return change[1]
    on_device = f"{record}@{device}"
    return XFAILS[on_device] if on_device in XFAILS else XFAILS.get(record)


# The records' complex128 runs (test_opinfo_complex): record id (optionally ``@device``) -> why
# it fails (failing samples of all, then the first failure's kind). Found when complex128 joined
# the suite (2026-11-27): strict, so the table only shrinks as complex kernels land.
COMPLEX_XFAILS: dict[str, str] = {}


# Records whose real-dtype xfail is about float64 gradients, which the complex128 runs do not
# compare: they must pass there.
COMPLEX_PASSES = frozenset({"as_strided_scatter"})


def complex_reason(record: str, device: str) -> str | None:
    """Why ``record`` is expected to fail in complex128 on ``device``, or None."""
    on_device = f"{record}@{device}"
    if on_device in COMPLEX_XFAILS:
        return COMPLEX_XFAILS[on_device]
    if record in COMPLEX_PASSES:
        return None
    return COMPLEX_XFAILS.get(record) or reason(record, device)
