"""Autocast's cast policy: which ops run in the lower precision, which in float32, which in the
widest input dtype, per device type. Data keyed by op name, read by the autocast layer
(``dispatcher/autocast.py``).

The lists are PyTorch's, under PyTorch's (aten) op names: ``AT_FORALL_LOWER_PRECISION_FP``,
``AT_FORALL_FP32``, ``AT_FORALL_FP32_SET_OPT_DTYPE``, ``AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE``
and ``AT_FORALL_PROMOTE`` in aten/src/ATen/autocast_mode.h (registered for CUDA and XPU), and the
``AutocastCPU`` registrations in aten/src/ATen/autocast_mode.cpp. ember's rows carry the same names
(``cross_entropy_loss``, ``conv2d``...), so a list entry takes effect as soon as a row of that name
exists; ``missing()`` names the entries that have none yet, which keeps the lists comparable with
PyTorch's line by line. Overloads (``pow.Tensor_Scalar``, ``conv1d.padding``) share their op's
entry: ember has one row per op.

A third-party op declares its own entry with ``ember.library.register_autocast`` (a target dtype
or a policy name), which lands in the same table.
"""

from __future__ import annotations

from enum import Enum

from ember import _dtype as dt


class Cast(Enum):
    """PyTorch's ``CastPolicy``, plus ``BANNED`` for the ops autocast refuses."""

    LOWER = "lower_precision_fp"  # floating inputs to the autocast dtype (matmul, conv...)
    FP32 = "fp32"  # floating inputs to float32 (losses, exp/log, norms...)
    FP32_SET_OPT_DTYPE = "fp32_set_opt_dtype"  # float32 through the op's own ``dtype`` argument
    FP32_APPEND_DTYPE = "fp32_append_dtype"  # norm: float32 as an appended ``dtype`` argument
    PROMOTE = "promote"  # floating inputs to the widest of them (cat, addcmul...)
    BANNED = "banned"  # unsafe to autocast: an error that names the safe alternative
    OPAQUE = "opaque"  # no cast, and autocast off inside (see _OPAQUE)


# aten/src/ATen/autocast_mode.h: the lists CUDA and XPU (and ember's plugin devices) register.
_GPU = {
    Cast.LOWER: """
        _convolution conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d
        conv_transpose3d convolution prelu addmm addmv addr matmul einsum mm mv linalg_vecdot
        linear addbmm baddbmm bmm chain_matmul linalg_multi_dot _thnn_fused_lstm_cell
        _thnn_fused_gru_cell lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell
        _scaled_dot_product_flash_attention scaled_dot_product_attention
    """,
    Cast.FP32: """
        acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow
        softplus layer_norm native_layer_norm group_norm frobenius_norm nuclear_norm
        cosine_similarity poisson_nll_loss cosine_embedding_loss nll_loss nll_loss2d
        hinge_embedding_loss kl_div l1_loss smooth_l1_loss huber_loss mse_loss
        margin_ranking_loss multilabel_margin_loss soft_margin_loss triplet_margin_loss
        multi_margin_loss binary_cross_entropy_with_logits dist pdist cdist renorm logsumexp
        upsample_nearest1d _upsample_nearest_exact1d upsample_nearest2d _upsample_nearest_exact2d
        upsample_nearest3d _upsample_nearest_exact3d upsample_linear1d upsample_bilinear2d
        _upsample_bilinear2d_aa upsample_trilinear3d upsample_bicubic2d _upsample_bicubic2d_aa
    """,
    Cast.FP32_SET_OPT_DTYPE: """
        prod softmax log_softmax cumprod cumsum linalg_vector_norm linalg_matrix_norm sum
    """,
    Cast.FP32_APPEND_DTYPE: "norm",
    Cast.PROMOTE: """
        addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler index_put tensordot
        scatter_add
    """,
    Cast.BANNED: "binary_cross_entropy",
}

# aten/src/ATen/autocast_mode.cpp: TORCH_LIBRARY_IMPL(aten, AutocastCPU, m).
_CPU = {
    Cast.LOWER: """
        conv1d conv2d conv3d bmm mm linalg_vecdot baddbmm addmm _addmm_activation addbmm linear
        _convolution matmul conv_tbc mkldnn_rnn_layer conv_transpose1d conv_transpose2d
        conv_transpose3d prelu scaled_dot_product_attention _native_multi_head_attention
    """,
    Cast.FP32: """
        avg_pool3d binary_cross_entropy grid_sampler polar prod quantile nanquantile stft cdist
        grid_sampler_2d _grid_sampler_2d_cpu_fallback grid_sampler_3d trace view_as_complex
        cholesky cholesky_inverse cholesky_solve inverse lu_solve orgqr ormqr pinverse max_pool3d
        max_unpool2d max_unpool3d adaptive_avg_pool3d reflection_pad1d reflection_pad2d
        replication_pad1d replication_pad2d replication_pad3d mse_loss cosine_embedding_loss
        nll_loss nll_loss2d hinge_embedding_loss poisson_nll_loss smooth_l1_loss
        cross_entropy_loss l1_loss huber_loss margin_ranking_loss soft_margin_loss
        triplet_margin_loss multi_margin_loss ctc_loss kl_div multilabel_margin_loss
        binary_cross_entropy_with_logits fft_fft fft_ifft fft_fft2 fft_ifft2 fft_fftn fft_ifftn
        fft_rfft fft_irfft fft_rfft2 fft_irfft2 fft_rfftn fft_irfftn fft_hfft fft_ihfft
        linalg_cond linalg_matrix_rank linalg_solve linalg_cholesky linalg_svdvals
        linalg_eigvals linalg_eigvalsh linalg_inv linalg_householder_product linalg_tensorinv
        linalg_tensorsolve fake_quantize_per_tensor_affine geqrf _lu_with_info qr svd
        triangular_solve fractional_max_pool2d fractional_max_pool3d adaptive_max_pool3d
        multilabel_margin_loss_forward linalg_qr linalg_cholesky_ex linalg_svd linalg_eig
        linalg_eigh linalg_lstsq linalg_inv_ex
    """,
    Cast.PROMOTE: "stack cat index_copy",
}

# ember's own entries, not PyTorch's: ops PyTorch computes in one kernel, unlisted on a device,
# that ember decomposes into listed ops (dot and mv into mm). Without the entry their parts would
# be cast (mm to bfloat16) where PyTorch's kernel keeps its inputs' dtype; so they run with
# autocast off, as one kernel would. _upsample_bilinear2d_aa and upsample_bicubic2d resample
# with one matmul per dim.
_OPAQUE = {"cpu": "dot mv _upsample_bilinear2d_aa upsample_bicubic2d"}

# The autocast dtype of each device type until ``set_autocast_dtype`` (PyTorch's defaults);
# other device types (plugins) get float16, like PyTorch's PrivateUse1.
DEFAULT_DTYPES = {"cpu": dt.bfloat16, "cuda": dt.float16, "xpu": dt.float16}
FALLBACK_DTYPE = dt.float16

# The dtypes autocast accepts as its target (others disable it with a warning, as PyTorch).
SUPPORTED_DTYPES = (dt.bfloat16, dt.float16)


def _table(lists: dict) -> dict:
    table: dict = {}
    for cast, names in lists.items():
        for name in names.split():
            if name in table:
                raise ValueError(f"autocast policy: '{name}' is listed twice")
            table[name] = cast
    return table


# device type -> {op name -> Cast, or a dtype (a library op's ``cast_inputs``)}. Device types
# not listed use the GPU lists.
POLICIES = {
    "cpu": _table({**_CPU, Cast.OPAQUE: _OPAQUE["cpu"]}),
    "cuda": _table(_GPU),
    "xpu": _table(_GPU),
}
GPU_LISTS = "cuda"

# Every name with an entry on some device type: the autocast layer's first, cheap test.
NAMES: set = set().union(*POLICIES.values())


def policy_table(device_type: str) -> dict:
    """``{op name: Cast or dtype}`` for ``device_type`` (plugin devices: the GPU lists)."""
    found = POLICIES.get(device_type)
    if found is None:
        found = POLICIES[device_type] = dict(POLICIES[GPU_LISTS])
    return found


def register(name: str, device_type: str, cast) -> None:
    """Give op ``name`` the policy ``cast`` (a Cast or a dtype) on ``device_type``."""
    policy_table(device_type)[name] = cast
    NAMES.add(name)


def missing(op_names) -> dict:
    """``{device type: sorted names}`` of list entries with no op among ``op_names``."""
    known = set(op_names)
    return {device: sorted(set(table) - known) for device, table in POLICIES.items()}
