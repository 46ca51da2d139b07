"""ember.nn.functional: the functional forms of layers, activations and losses."""

from ._arguments import names_bad_tensors as _names_bad_tensors
from ._overrides import (
    Optional,
    assert_int_or_pair,
    boolean_dispatch,
    handle_torch_function,
    has_torch_function,
    has_torch_function_unary,
    has_torch_function_variadic,
)
from .activation import (
    celu,
    celu_,
    elu,
    elu_,
    gelu,
    glu,
    gumbel_softmax,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    hardtanh_,
    leaky_relu,
    leaky_relu_,
    log_softmax,
    logsigmoid,
    mish,
    prelu,
    relu,
    relu6,
    relu_,
    rrelu,
    rrelu_,
    selu,
    selu_,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    softshrink,
    softsign,
    tanh,
    tanhshrink,
    threshold,
    threshold_,
)
from .attention import scaled_dot_product_attention
from .conv import (
    conv1d,
    conv2d,
    conv3d,
    conv_tbc,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    fold,
    unfold,
)
from .ctc import ctc_loss
from .dropout import (
    alpha_dropout,
    dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)
from .fractional import (
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
)
from .grid import affine_grid, grid_sample
from .linear import bilinear, embedding, embedding_bag, grouped_mm, linear, one_hot
from .linear_loss import linear_cross_entropy
from .loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cosine_similarity,
    cross_entropy,
    gaussian_nll_loss,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    pairwise_distance,
    pdist,
    poisson_nll_loss,
    smooth_l1_loss,
)
from .margin import (
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from .mha import multi_head_attention_forward
from .normalization import (
    batch_norm,
    group_norm,
    instance_norm,
    layer_norm,
    local_response_norm,
    normalize,
    rms_norm,
)
from .pool_nd import (
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    avg_pool3d,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_pool1d_with_indices,
    max_pool2d_with_indices,
    max_pool3d,
    max_pool3d_with_indices,
)
from .pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)
from .scaled import ScalingType, SwizzleType, scaled_grouped_mm, scaled_mm
from .shuffle import channel_shuffle, native_channel_shuffle, pixel_shuffle, pixel_unshuffle
from .unpool import max_unpool1d, max_unpool2d, max_unpool3d
from .vision import interpolate, pad, upsample, upsample_bilinear, upsample_nearest

# Every public functional names a non-tensor given for a tensor as PyTorch does (the
# __torch_function__ helpers and classes are no functionals).
for _name, _value in list(globals().items()):
    _module = getattr(_value, "__module__", "") or ""
    if (
        callable(_value)
        and not isinstance(_value, type)  # the recipe enums (ScalingType...) stay classes
        and not _name.startswith("_")
        and _module.startswith(__name__)
        and not _module.endswith("._overrides")
    ):
        globals()[_name] = _names_bad_tensors(_value)
del _name, _value, _module
