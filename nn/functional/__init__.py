"""ember.nn.functional: the functional forms of layers, activations and losses."""

from ._arguments import names_bad_tensors as _names_bad_tensors
from .activation import (
    celu,
    elu,
    gelu,
    glu,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    log_softmax,
    logsigmoid,
    mish,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    softsign,
    tanh,
    threshold,
)
from .attention import scaled_dot_product_attention
from .conv import (
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    fold,
    unfold,
)
from .linear import bilinear, dropout, embedding, embedding_bag, linear, one_hot
from .loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cosine_similarity,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    pairwise_distance,
    smooth_l1_loss,
)
from .normalization import batch_norm, group_norm, instance_norm, layer_norm, normalize, rms_norm
from .pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)
from .vision import interpolate, pad

# Every public functional names a non-tensor given for a tensor as PyTorch does.
for _name, _value in list(globals().items()):
    if callable(_value) and not _name.startswith("_") and _value.__module__.startswith(__name__):
        globals()[_name] = _names_bad_tensors(_value)
del _name, _value
