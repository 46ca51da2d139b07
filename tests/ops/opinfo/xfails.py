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
    "_segment_reduce.lengths": (
        "core: ember._segment_reduce was drafted (batch ops6) and left: as a composite that "
        "reads lengths on the host it failed the reduction property tests, the jvp-rule check "
        "and the meta-device metadata test (float16); needs its own kind or formula"
    ),
    "_segment_reduce.offsets": "core: missing: ember._segment_reduce (see .lengths)",
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
    "linalg.eig@ref": (
        "complex on ref: abs's complex gradient (grad * z/|z|) differs from the CPU's on ref "
        "(a 3x3 complex sample: 10x off), so the gradient through abs(eigenvectors) differs; "
        "eig's own formula agrees on ref (eigenvalue seeds pass)"
    ),
    "sparse.mm.reduce": SPARSE,
    "sparse.sampled_addmm": SPARSE,
    "to_sparse": SPARSE,
    "torch._scaled_mm": PRIVATE,
    "torch._scaled_mm_v2": PRIVATE,
}


def reason(record: str, device: str) -> str | None:
    """Why ``record`` is expected to fail on ``device``, or None when it must pass."""
    on_device = f"{record}@{device}"
    return XFAILS[on_device] if on_device in XFAILS else XFAILS.get(record)
