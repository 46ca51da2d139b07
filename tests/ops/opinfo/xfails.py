"""The one table of OpInfo records that do not pass yet, each with its reason.

Keys are record ids (``name`` or ``name.variant``, as the test ids show), optionally with
``@device`` for a failure on one device only. The xfails are strict: a record that starts to
pass fails the run until its row is removed, so the table only shrinks. Each reason names the
area (core, nn, linalg, special, fft...) and what fails, as the record's run reports it.
"""

from __future__ import annotations

FFT = "fft: complex transforms and stft need complex dtypes (ember has none yet)"
INT_INPLACE_CAST = (
    "special: the in-place op on an integer tensor does not raise PyTorch's cast error"
)
POLYGAMMA_F32 = "special: float32 polygamma near poles differs by 1e-2"
LCE_OPTIONS = "nn: linear_cross_entropy's LinearCrossEntropyOptions"
COMPLEX = "owned by complex dtypes (complex64/complex128, conj, real/imag...): not yet landed"
MASKED = "torch.masked (a prototype API of masked reductions): not in ember"
SPARSE = "sparse layouts: ember tensors are strided"
JITERATOR = "torch.cuda.jiterator compiles CUDA source at run time: no ember counterpart"
PRIVATE = "a private PyTorch entry point (float8 scaled matmul, fused attention kernels)"

XFAILS = {
    "_batch_norm_with_update": "nn: missing: ember.ops._batch_norm_with_update",
    "_native_batch_norm_legit": "nn: missing: ember._native_batch_norm_legit",
    "_segment_reduce.lengths": (
        "core: missing: ember._segment_reduce (max/min/mean/sum/prod per segment with initial=, "
        "unsafe=, lengths= or offsets=, along axis, and their gradients)"
    ),
    "_segment_reduce.offsets": "core: missing: ember._segment_reduce (see .lengths)",
    "_softmax_backward_data": "nn: missing: ember.ops._softmax_backward_data",
    "_unsafe_masked_index": "core: missing: ember._unsafe_masked_index",
    "_unsafe_masked_index_put_accumulate": "core: missing: its ember name",
    "_upsample_bilinear2d_aa": "nn: missing: ember.ops._upsample_bilinear2d_aa",
    "as_strided.partial_views": (
        "core: as_strided with storage_offset past the view's own elements: the converter "
        "(opinfo/convert.py) copies a sample's elements, not the larger storage it views"
    ),
    "as_strided_scatter": (
        "core: PyTorch's input gradient of as_strided_scatter is wrong (its own OpInfo marks "
        "test_fn_grad an expected failure); ember's is the true derivative"
    ),
    "cdouble": COMPLEX,
    "cfloat": COMPLEX,
    "chalf": COMPLEX,
    "cholesky_inverse": "linalg: cholesky_inverse(upper=True)'s gradient differs from PyTorch's",
    "cholesky_solve": "linalg: cholesky_solve(upper=True)'s gradient differs from PyTorch's",
    "complex": COMPLEX,
    "conj_physical": COMPLEX,
    "fft.fft": FFT,
    "fft.fft2": FFT,
    "fft.fftn": FFT,
    "fft.hfft": FFT,
    "fft.hfft2": FFT,
    "fft.hfftn": FFT,
    "fft.ifft": FFT,
    "fft.ifft2": FFT,
    "fft.ifftn": FFT,
    "fft.ihfft": FFT,
    "fft.ihfft2": FFT,
    "fft.ihfftn": FFT,
    "fft.irfft": FFT,
    "fft.irfft2": FFT,
    "fft.irfftn": FFT,
    "fft.rfft": FFT,
    "fft.rfft2": FFT,
    "fft.rfftn": FFT,
    "grid_sampler_2d": "nn: missing: ember.grid_sampler_2d",
    "grid_sampler_3d": "nn: missing: ember.grid_sampler_3d",
    "hash_tensor": "core: missing: ember.hash_tensor",
    "imag": COMPLEX,
    "isreal": COMPLEX,
    "istft": FFT,
    "jiterator_2inputs_2outputs": JITERATOR,
    "jiterator_4inputs_with_extra_args": JITERATOR,
    "jiterator_binary": JITERATOR,
    "jiterator_binary_return_by_ref": JITERATOR,
    "jiterator_unary": JITERATOR,
    "linalg.eig": "linalg: eig needs complex dtypes (ember has none yet)",
    "linalg.eigh": "linalg: eigh(UPLO='U') of a non-symmetric input reads the wrong triangle",
    "linalg.eigvals": "linalg: eigvals needs complex dtypes (ember has none yet)",
    "linalg.ldl_factor": "linalg: linalg.ldl_factor takes no out=",
    "linalg.lstsq": "linalg: lstsq's gels path marks 3 outputs as requiring grad (PyTorch: 2)",
    "linalg.matrix_power": "linalg: matrix_power(A, 0) returns a tensor that does not require grad",
    "linalg.matrix_rank": "linalg: linalg.matrix_rank takes no out=",
    "linalg.matrix_rank.hermitian": "linalg: linalg.matrix_rank takes no out=",
    "linalg.norm.subgradients_at_zero": "linalg: norm(ord=2) of a [0, n] matrix raises in amax",
    "linalg.pinv": "linalg: linalg.pinv takes no out=",
    "linalg.pinv.hermitian": "linalg: pinv(hermitian=True)'s gradient differs from PyTorch's",
    "linalg.pinv.singular": "linalg: pinv's gradient at a singular input is nan",
    "linalg.vander": "linalg: vander(N=...) refuses samples PyTorch accepts (0-d, N=1)",
    "lu": "linalg: lu(out=) writes the wrong values",
    "masked.amax": MASKED,
    "masked.amin": MASKED,
    "masked.argmax": MASKED,
    "masked.argmin": MASKED,
    "masked.cumprod": MASKED,
    "masked.cumsum": MASKED,
    "masked.log_softmax": MASKED,
    "masked.logaddexp": MASKED,
    "masked.logsumexp": MASKED,
    "masked.mean": MASKED,
    "masked.median": MASKED,
    "masked.norm": MASKED,
    "masked.normalize": MASKED,
    "masked.prod": MASKED,
    "masked.softmax": MASKED,
    "masked.softmin": MASKED,
    "masked.std": MASKED,
    "masked.sum": MASKED,
    "masked.var": MASKED,
    "matrix_exp": "linalg: float32 matrix_exp of a batch is off by up to 0.08",
    "max_pool2d_with_indices_backward": "nn: missing: aten.max_pool2d_with_indices_backward",
    "native_dropout_backward": "nn: missing: ember.ops.native_dropout_backward",
    "nn.functional.avg_pool1d": "nn: avg_pool1d refuses int64 (im2col is float-only)",
    "nn.functional.avg_pool2d": "nn: avg_pool2d takes no out=",
    "nn.functional.avg_pool3d": "nn: avg_pool3d takes no out=",
    "nn.functional.bilinear": "nn: bilinear refuses int64",
    "nn.functional.conv1d": "nn: conv1d refuses int64",
    "nn.functional.conv2d": "nn: conv2d refuses int64",
    "nn.functional.conv3d": "nn: conv3d refuses int64 (im2col is float-only)",
    "nn.functional.conv_transpose1d": "nn: conv_transpose1d refuses int64 (col2im is float-only)",
    "nn.functional.conv_transpose2d": "nn: conv_transpose2d refuses int64",
    "nn.functional.conv_transpose3d": "nn: conv_transpose3d refuses int64 (col2im is float-only)",
    "nn.functional.cosine_embedding_loss": "nn: cosine_embedding_loss refuses int64",
    "nn.functional.fractional_max_pool3d": "nn: fractional_max_pool3d of an empty batch",
    "nn.functional.interpolate.area": "nn: interpolate(mode='area') of 5-D input",
    "nn.functional.linear": "nn: linear refuses int64",
    "nn.functional.linear_cross_entropy.chunked": LCE_OPTIONS,
    "nn.functional.linear_cross_entropy.chunked_none": LCE_OPTIONS,
    "nn.functional.local_response_norm": "nn: local_response_norm refuses int64",
    "nn.functional.max_pool2d": "nn: max_pool2d refuses int64",
    "nn.functional.max_pool3d": "nn: max_pool3d refuses int64",
    "nn.functional.multi_head_attention_forward": "nn: values differ with attn_mask",
    "nn.functional.silu.complex": COMPLEX,
    "nn.functional.triplet_margin_with_distance_loss": "nn: a Module as distance_function",
    "nn.functional.unfold": "nn: unfold refuses bool (im2col is float-only)",
    "polar": COMPLEX,
    "polygamma.polygamma_n_0": POLYGAMMA_F32,
    "polygamma.polygamma_n_1": POLYGAMMA_F32,
    "polygamma.polygamma_n_2": POLYGAMMA_F32,
    "polygamma.polygamma_n_3": POLYGAMMA_F32,
    "polygamma.polygamma_n_4": POLYGAMMA_F32,
    "sgn": COMPLEX,
    "signal.windows.bartlett": FFT,
    "signal.windows.blackman": FFT,
    "signal.windows.cosine": FFT,
    "signal.windows.exponential": FFT,
    "signal.windows.gaussian": FFT,
    "signal.windows.general_cosine": FFT,
    "signal.windows.general_hamming": FFT,
    "signal.windows.hamming": FFT,
    "signal.windows.hann": FFT,
    "signal.windows.kaiser": FFT,
    "signal.windows.nuttall": FFT,
    "slice": (
        "core: aten.slice is called with keywords (dim=, start=); ember.ops.<op> are Op objects "
        "called positionally (the hot path): keyword binding there is not done yet"
    ),
    "sparse.mm.reduce": SPARSE,
    "sparse.sampled_addmm": SPARSE,
    "special.polygamma.special_polygamma_n_0": POLYGAMMA_F32,
    "stft": FFT,
    "to_sparse": SPARSE,
    "torch._scaled_mm": PRIVATE,
    "torch._scaled_mm_v2": PRIVATE,
    "torch.ops.aten._safe_softmax.default": PRIVATE,
    "view_as_complex": COMPLEX,
    "view_as_real": COMPLEX,
}


def reason(record: str, device: str) -> str | None:
    """Why ``record`` is expected to fail on ``device``, or None when it must pass."""
    return XFAILS.get(f"{record}@{device}") or XFAILS.get(record)
