"""The one table of OpInfo records that do not pass yet, each with its reason.

Keys are record ids (``name`` or ``name.variant``, as the test ids show), optionally with
``@device`` for a failure on one device only. The xfails are strict: a record that starts to
pass fails the run until its row is removed, so the table only shrinks. Each reason names the
area (core, nn, linalg, special, fft...) and what fails, as the record's run reports it.
"""

from __future__ import annotations

INT_INPLACE_CAST = (
    "special: the in-place op on an integer tensor does not raise PyTorch's cast error"
)
LCE_OPTIONS = "nn: linear_cross_entropy's LinearCrossEntropyOptions"
COMPLEX = "owned by complex dtypes (complex64/complex128, conj, real/imag...): not yet landed"
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
    "complex": COMPLEX,
    "conj_physical": COMPLEX,
    "grid_sampler_2d": "nn: missing: ember.grid_sampler_2d",
    "grid_sampler_3d": "nn: missing: ember.grid_sampler_3d",
    "hash_tensor": "core: missing: ember.hash_tensor",
    "isreal": COMPLEX,
    "jiterator_2inputs_2outputs": JITERATOR,
    "jiterator_4inputs_with_extra_args": JITERATOR,
    "jiterator_binary": JITERATOR,
    "jiterator_binary_return_by_ref": JITERATOR,
    "jiterator_unary": JITERATOR,
    "linalg.eig": "linalg: eig needs complex dtypes (ember has none yet)",
    "linalg.eigvals": "linalg: eigvals needs complex dtypes (ember has none yet)",
    "matrix_exp": (
        "linalg: float32 matrix_exp of a [5, 5, 5] batch with norms ~27 (results ~1e5) differs "
        "by up to 0.08 at small entries: float32 rounding, not the algorithm (PyTorch's own error "
        "there is 0.05, ember's Pade 0.03); PyTorch's degree-18 Taylor (s = 4) written in torch "
        "ops reproduces it exactly, but in ember's OpenBLAS matmuls still differs by 0.04"
    ),
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
    "sgn": COMPLEX,
    "slice": (
        "core: aten.slice is called with keywords (dim=, start=); ember.ops.<op> are Op objects "
        "called positionally (the hot path): keyword binding there is not done yet"
    ),
    "sparse.mm.reduce": SPARSE,
    "sparse.sampled_addmm": SPARSE,
    "to_sparse": SPARSE,
    "torch._scaled_mm": PRIVATE,
    "torch._scaled_mm_v2": PRIVATE,
    "torch.ops.aten._safe_softmax.default": PRIVATE,
}


def reason(record: str, device: str) -> str | None:
    """Why ``record`` is expected to fail on ``device``, or None when it must pass."""
    return XFAILS.get(f"{record}@{device}") or XFAILS.get(record)
