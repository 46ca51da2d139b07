"""PyTorch's top-level entry points of nn ops that are overloads of, or integer-coded aliases
for, existing functions (issue 13): ``torch._native_batch_norm_legit`` (with or without running
statistics) over native_batch_norm, ``torch.grid_sampler_2d``/``grid_sampler_3d`` (modes as
integers, as the aten ops take them) over ``nn.functional.grid_sample``; and the rest of aten's
nn functions PyTorch exports at top level (``torch.conv2d``, ``torch.dropout(x, p, train)``,
``torch.embedding(weight, indices)``, ``torch.batch_norm`` in aten's argument order, losses
with aten's integer ``reduction``, the RNN cells) over ``nn.functional``. ``FUNCTIONS`` says
where each goes; ember/__init__.py binds them."""

from __future__ import annotations

import importlib
import sys

# aten's integer codes (GridSampler.h): interpolation and padding modes
_INTERPOLATION = ("bilinear", "nearest", "bicubic")
_PADDING = ("zeros", "border", "reflection")


def _ember():
    return sys.modules["ember"]


def _native_batch_norm_legit(input, weight, bias, *args, out=None):
    """Batch norm returning (output, save_mean, save_invstd), as native_batch_norm; the
    ``no_stats`` overload leaves out running_mean and running_var."""
    if len(args) == 5:
        running_mean, running_var, training, momentum, eps = args
    elif len(args) == 3:
        running_mean = running_var = None
        training, momentum, eps = args
    else:
        raise TypeError(
            f"_native_batch_norm_legit() takes 6 or 8 positional arguments but "
            f"{3 + len(args)} were given"
        )
    ember = _ember()
    return ember.native_batch_norm(
        input, weight, bias, running_mean, running_var, training, momentum, eps, out=out
    )


def _mode(name: str, value: int, modes: tuple, dims: int) -> str:
    if (
        not isinstance(value, int)
        or not 0 <= value < len(modes)
        or (dims == 3 and modes[value] == "bicubic")
    ):
        raise RuntimeError(f"grid_sampler_{dims}d(): unsupported {name} {value}")
    return modes[value]


def _grid_sampler(dims: int):
    def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
        mode = _mode("interpolation_mode", interpolation_mode, _INTERPOLATION, dims)
        padding = _mode("padding_mode", padding_mode, _PADDING, dims)
        if input.ndim != dims + 2:
            raise RuntimeError(
                f"grid_sampler(): expected {dims + 2}D input and grid with same number of "
                f"dimensions, but got input with sizes {list(input.shape)} and grid with sizes "
                f"{list(grid.shape)}"
            )
        functional = _ember().nn.functional
        return functional.grid_sample(input, grid, mode, padding, bool(align_corners))

    grid_sampler.__name__ = grid_sampler.__qualname__ = f"grid_sampler_{dims}d"
    grid_sampler.__doc__ = (
        f"``nn.functional.grid_sample`` of a {dims + 2}-D input with aten's integer modes: "
        f"interpolation {dict(enumerate(_INTERPOLATION[: 5 - dims]))}, padding "
        f"{dict(enumerate(_PADDING))}."
    )
    return grid_sampler


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """``torch.grid_sampler``: grid_sampler_2d or _3d by the input's rank."""
    dims = 3 if input.ndim == 5 else 2
    return FUNCTIONS[f"grid_sampler_{dims}d"](
        input, grid, interpolation_mode, padding_mode, align_corners
    )


def _functional():
    return _ember().nn.functional


# ---- aten's signatures over nn.functional (issue 15's surface: torch.conv2d, torch.dropout...)
_REDUCTIONS = ("none", "mean", "sum")  # aten's Reduction enum


def _reduction(value) -> str:
    if isinstance(value, str):
        return value
    if not isinstance(value, int) or not 0 <= value < len(_REDUCTIONS):
        raise RuntimeError(f"{value} is not a valid value for reduction")
    return _REDUCTIONS[value]


def _same_as_functional(name: str):
    """A top-level name whose aten signature is ``nn.functional``'s."""

    def call(*args, **kwargs):
        return getattr(_functional(), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``torch.{name}``: ``nn.functional.{name}`` (the same arguments)."
    return call


def _loss(name: str, tensors: int, positional: tuple):
    """A loss whose aten form takes ``tensors`` tensors, then ``positional`` (aten's order),
    ``reduction`` among them as aten's enum (0 none, 1 mean, 2 sum). Left out it is 0: the
    schema says Mean, but PyTorch's Python binding of these top-level names gives none
    (``torch.kl_div(a, b)`` is elementwise), and scripts get PyTorch's numbers."""

    def call(*args, **kwargs):
        named = dict(zip(positional, args[tensors:]))
        named.update(kwargs)
        named["reduction"] = _reduction(named.get("reduction", 0))
        return getattr(_functional(), name)(*args[:tensors], **named)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``torch.{name}``: ``nn.functional.{name}`` with aten's integer reduction."
    return call


def _train_flag(name: str):
    """aten's ``(input, p, train)`` form of ``nn.functional.<name>``."""

    def call(input, p, train):
        return getattr(_functional(), name)(input, p, train)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``torch.{name}(input, p, train)``: ``nn.functional.{name}``."
    return call


def _dropouts():
    """nn/functional/dropout.py, the module (its helpers make the masks here too); the package
    attribute of that name is the function."""
    return importlib.import_module("ember.nn.functional.dropout")


def feature_dropout(input, p, train):
    """Whole channels (dim 1 of each sample) zeroed together, the rest scaled by 1/(1-p): the
    per-channel path of ``dropout1d/2d/3d`` for any rank."""
    return _dropouts()._dropout(input, p, train, False, per_channel=True)


def native_dropout(input, p, train):
    """``(output, mask)``, the mask a bool tensor of the kept elements; ``train=None`` trains,
    as aten's."""
    ember = _ember()
    if train is False:
        return input.clone(), ember.ones_like(input, dtype=ember.bool)
    keep = _dropouts()._keep_mask(input, p, per_channel=False)
    return input * keep * (0.0 if p == 1 else 1 / (1 - p)), keep.to(ember.bool)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """aten's order (weight first) and ``padding_idx=-1`` for none."""
    return _functional().embedding(
        indices, weight, None if padding_idx == -1 else padding_idx,
        scale_grad_by_freq=scale_grad_by_freq, sparse=sparse,
    )  # fmt: skip


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):  # fmt: skip
    return _functional().batch_norm(
        input, running_mean, running_var, weight, bias, training, momentum, eps
    )


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    return _functional().group_norm(input, num_groups, weight, bias, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):  # fmt: skip
    return _functional().instance_norm(
        input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
    )


def adaptive_max_pool1d(input, output_size):
    """``(values, indices)``, as aten's."""
    return _functional().adaptive_max_pool1d(input, output_size, return_indices=True)


def _pool(name: str, with_indices: bool = False):
    """aten's max pool signature (``stride=[]``: the kernel size); ``with_indices``: the
    ``(values, indices)`` form."""
    function = name.removesuffix("_with_indices")

    def call(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        return getattr(_functional(), function)(
            input, kernel_size, stride or None, padding, dilation, ceil_mode,
            return_indices=with_indices,
        )  # fmt: skip

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``torch.{name}``: aten's signature (``stride=[]``: the kernel size)."
    return call


def affine_grid_generator(theta, size, align_corners):
    return _functional().affine_grid(theta, list(size), align_corners)


def _gates(input, hx, w_ih, w_hh, b_ih, b_hh):
    linear = _functional().linear
    return linear(input, w_ih, b_ih) + linear(hx, w_hh, b_hh)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _gates(input, hx, w_ih, w_hh, b_ih, b_hh).tanh()


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _gates(input, hx, w_ih, w_hh, b_ih, b_hh).relu()


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """``(h, c)`` of one LSTM step; ``hx`` is ``(h, c)``; gates in PyTorch's order i, f, g, o."""
    h, c = hx
    i, f, g, o = _gates(input, h, w_ih, w_hh, b_ih, b_hh).chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step, gates in PyTorch's order r, z, n."""
    linear = _functional().linear
    i_r, i_z, i_n = linear(input, w_ih, b_ih).chunk(3, 1)
    h_r, h_z, h_n = linear(hx, w_hh, b_hh).chunk(3, 1)
    r = (i_r + h_r).sigmoid()
    z = (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return (1 - z) * n + z * hx


# top-level names whose aten signature is nn.functional's
SAME_AS_FUNCTIONAL = (
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "avg_pool1d", "adaptive_avg_pool1d", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
    "cosine_similarity", "pairwise_distance", "pdist", "prelu", "selu", "celu", "threshold",
    "hardshrink", "rms_norm", "bilinear", "rrelu", "selu_", "celu_", "rrelu_", "threshold_",
)  # fmt: skip
FUNCTIONS = {
    "_native_batch_norm_legit": _native_batch_norm_legit,
    "grid_sampler_2d": _grid_sampler(2),
    "grid_sampler_3d": _grid_sampler(3),
    "grid_sampler": grid_sampler,
    **{name: _same_as_functional(name) for name in SAME_AS_FUNCTIONAL},
    **{name: _pool(name) for name in ("max_pool1d", "max_pool2d", "max_pool3d")},
    "kl_div": _loss("kl_div", 2, ("reduction",)),
    "binary_cross_entropy_with_logits": _loss(
        "binary_cross_entropy_with_logits", 2, ("weight", "pos_weight", "reduction")
    ),
    "cosine_embedding_loss": _loss("cosine_embedding_loss", 3, ("margin", "reduction")),
    "hinge_embedding_loss": _loss("hinge_embedding_loss", 2, ("margin", "reduction")),
    "margin_ranking_loss": _loss("margin_ranking_loss", 3, ("margin", "reduction")),
    "poisson_nll_loss": _loss("poisson_nll_loss", 2, ("log_input", "full", "eps", "reduction")),
    "triplet_margin_loss": _loss(
        "triplet_margin_loss", 3, ("margin", "p", "eps", "swap", "reduction")
    ),
    "ctc_loss": _loss(
        "ctc_loss", 2, ("input_lengths", "target_lengths", "blank", "reduction", "zero_infinity")
    ),
    **{name: _train_flag(name) for name in ("dropout", "alpha_dropout", "feature_alpha_dropout")},
    "feature_dropout": feature_dropout,
    "native_dropout": native_dropout,
    "embedding": embedding,
    "batch_norm": batch_norm,
    "group_norm": group_norm,
    "instance_norm": instance_norm,
    "adaptive_max_pool1d": adaptive_max_pool1d,
    "max_pool1d_with_indices": _pool("max_pool1d_with_indices", with_indices=True),
    "affine_grid_generator": affine_grid_generator,
    "rnn_tanh_cell": rnn_tanh_cell,
    "rnn_relu_cell": rnn_relu_cell,
    "lstm_cell": lstm_cell,
    "gru_cell": gru_cell,
}
METHODS: dict = {}
