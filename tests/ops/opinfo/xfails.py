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
    "torch._scaled_mm": PRIVATE,
    "torch._scaled_mm_v2": PRIVATE,
}


def reason(record: str, device: str) -> str | None:
    """Why ``record`` is expected to fail on ``device``, or None when it must pass."""
    on_device = f"{record}@{device}"
    return XFAILS[on_device] if on_device in XFAILS else XFAILS.get(record)


# The records' complex128 runs (test_opinfo_complex): record id (optionally ``@device``) -> why
# it fails (failing samples of all, then the first failure's kind). Found when complex128 joined
# the suite (2026-11-27): strict, so the table only shrinks as complex kernels land.
COMPLEX_XFAILS = {
    "angle@xpu": "20/20 samples: angle calls isnan, which refuses complex128 off the CPU",
    "angle@ref": "20/20 samples: angle calls isnan, which refuses complex128 off the CPU",
    "abs": "1/1 samples: in-place: PyTorch raised RuntimeError: In-place abs is not supported f",
    "acos": "3/3 samples: acos refuses complex128",
    "acosh": "3/3 samples: acosh refuses complex128",
    "uniform": "3/3 samples: uniform_ refuses complex128",
    "addcmul": "12/12 samples: addcmul refuses complex128",
    "addcdiv": "12/12 samples: addcdiv refuses complex128",
    "asin": "1/1 samples: asin refuses complex128",
    "asinh": "1/1 samples: asinh refuses complex128",
    "atan": "1/1 samples: atan refuses complex128",
    "atanh": "1/1 samples: atanh refuses complex128",
    "combinations": "18/18 samples: no complex128 kernel: index_select",
    "positive": "1/1 samples: positive refuses complex128",
    "corrcoef": "4/4 samples: wrong result dtype: float32 where PyTorch gives complex128",
    "cov": "40/40 samples: wrong result dtype: float32 where PyTorch gives complex128",
    "log1p": "1/1 samples: log1p refuses complex128",
    "gradient": "8/8 samples: wrong result dtype: float32 where PyTorch gives complex128",
    "linspace": "21/62 samples: no complex128 kernel: linspace",
    "linspace.tensor_overload": "61/182 samples: no complex128 kernel: linspace",
    "logspace": "105/401 samples: wrong values",
    "logspace.tensor_overload": "315/1201 samples: wrong values",
    "log10": "3/3 samples: log10 refuses complex128",
    "log2": "3/3 samples: log2 refuses complex128",
    "ldexp": "8/9 samples: wrong values",
    "logaddexp": "9/9 samples: logaddexp refuses complex128",
    "logical_not": "3/3 samples: logical_not refuses complex128",
    "masked_scatter": "4/4 samples: no complex128 kernel: index_select",
    "masked_select": "7/7 samples: no complex128 kernel: take",
    "var_mean": "17/17 samples: var refuses complex128",
    "var_mean.unbiased": "4/4 samples: var refuses complex128",
    "std_mean": "17/17 samples: std refuses complex128",
    "std_mean.unbiased": "4/4 samples: std refuses complex128",
    "logical_and": "9/9 samples: logical_and refuses complex128",
    "logical_or": "9/9 samples: logical_or refuses complex128",
    "logical_xor": "9/9 samples: logical_xor refuses complex128",
    "nn.functional.conv_transpose1d": "10/10 samples: col2im refuses complex128",
    "nn.functional.conv_transpose2d": "12/12 samples: conv_transpose2d refuses complex128",
    "nn.functional.conv_transpose3d": "10/10 samples: col2im refuses complex128",
    "nn.functional.conv1d": "10/10 samples: conv1d refuses complex128",
    "nn.functional.conv2d": "30/30 samples: conv2d refuses complex128",
    "nn.functional.conv3d": "20/20 samples: im2col refuses complex128",
    "nn.functional.pad.reflect": "12/12 samples: no complex128 kernel: index_select",
    "nn.functional.pad.replicate": "12/12 samples: no complex128 kernel: index_select",
    "nn.functional.pad.replicate_negative": "6/6 samples: no complex128 kernel: index_select",
    "nn.functional.pad.circular": "8/8 samples: no complex128 kernel: index_select",
    "nn.functional.unfold": "163/163 samples: unfold refuses complex128",
    "nn.functional.softsign": "3/3 samples: softsign refuses complex128",
    "dist": "50/50 samples: dist refuses complex128",
    "float_power": "9/9 samples: wrong result dtype: float64 where PyTorch gives complex128",
    "sinc": "3/3 samples: sinc refuses complex128",
    "exp2": "3/3 samples: exp2 refuses complex128",
    "expm1": "1/1 samples: expm1 refuses complex128",
    "lerp": "22/22 samples: lerp refuses complex128",
    "isfinite": "3/3 samples: isfinite refuses complex128",
    "isinf": "1/1 samples: isinf refuses complex128",
    "isnan": "1/1 samples: isnan refuses complex128",
    "gather": "5/7 samples: no complex128 kernel: gather",
    "index_copy": "2/3 samples: no complex128 kernel: put_",
    "index_select": "3/3 samples: no complex128 kernel: index_select",
    "index_add": "9/9 samples: no complex128 kernel: index_add",
    "_unsafe_masked_index": "6/6 samples: no complex128 kernel: index_select",
    "_unsafe_masked_index_put_accumulate": "6/6 samples: no complex128 kernel: put_",
    "__getitem__": "14/16 samples: no complex128 kernel: index_select",
    "index_put": "4/4 samples: no complex128 kernel: put_",
    "put": "28/28 samples: no complex128 kernel: put_",
    "take": "10/10 samples: no complex128 kernel: take",
    "scatter": "18/18 samples: no complex128 kernel: scatter",
    "scatter_add": "7/7 samples: no complex128 kernel: scatter_add",
    "renorm": "4/4 samples: renorm refuses complex128",
    "take_along_dim": "5/5 samples: no complex128 kernel: gather",
    "zero_": "3/3 samples: zero_ refuses complex128",
    "logsumexp": "15/15 samples: wrong result dtype: float32 where PyTorch gives complex128",
    "logcumsumexp": "6/6 samples: logcumsumexp refuses complex128",
    "nn.functional.l1_loss": "7/8 samples: l1_loss refuses complex128",
    "nonzero": "10/24 samples: no complex128 kernel: nonzero",
    "argwhere": "4/6 samples: no complex128 kernel: nonzero",
    "all": "20/20 samples: all refuses complex128",
    "any": "20/20 samples: any refuses complex128",
    "std": "17/17 samples: std refuses complex128",
    "std.unbiased": "4/4 samples: std refuses complex128",
    "var": "17/17 samples: var refuses complex128",
    "var.unbiased": "4/4 samples: var refuses complex128",
    "repeat_interleave": "5/5 samples: no complex128 kernel: index_select",
    "masked.var": "58/58 samples: wrong result dtype: float32 where PyTorch gives complex128",
    "masked.std": "58/58 samples: wrong result dtype: float32 where PyTorch gives complex128",
    "masked.logsumexp": "75/75 samples: wrong values",
}


def complex_reason(record: str, device: str) -> str | None:
    """Why ``record`` is expected to fail in complex128 on ``device``, or None."""
    on_device = f"{record}@{device}"
    if on_device in COMPLEX_XFAILS:
        return COMPLEX_XFAILS[on_device]
    return COMPLEX_XFAILS.get(record) or reason(record, device)
