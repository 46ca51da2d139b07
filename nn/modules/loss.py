"""Loss modules: shells over nn.functional losses, built from one table of PyTorch's
constructor signatures."""

from __future__ import annotations

import inspect
import math

from .. import functional as F
from ..functional.loss import legacy_reduction
from ._signature import signature
from .distance import PairwiseDistance
from .linear import Linear
from .module import Module

# Tensors a loss keeps as buffers (so ``.to(device)`` moves them), as PyTorch does.
_BUFFERS = ("weight", "pos_weight")
_LEGACY = (("size_average", None), ("reduce", None), ("reduction", "mean"))


class _Loss(Module):
    """Binds the constructor arguments to the class's signature, folds the deprecated
    ``size_average``/``reduce`` into ``reduction``, and passes the options to ``_fn``."""

    _fn = None
    _signature: inspect.Signature

    def __init__(self, *args, **kwargs):
        super().__init__()
        bound = self._signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        options = dict(bound.arguments)
        del options["self"]
        size_average, reduce = options.pop("size_average", None), options.pop("reduce", None)
        self.reduction = legacy_reduction(size_average, reduce, options.pop("reduction"))
        for key, value in options.items():
            if key in _BUFFERS:
                self.register_buffer(key, value)
            else:
                object.__setattr__(self, key, value)
        self._options = tuple(options)

    def forward(self, *inputs):
        options = {name: getattr(self, name) for name in self._options}
        return type(self)._fn(*inputs, reduction=self.reduction, **options)


def _loss(name, fn, arguments, inputs=("input", "target"), keyword_only=()):
    """A ``_Loss`` subclass: constructor ``(self, *arguments, *, *keyword_only)`` and
    ``forward(self, *inputs)`` with those names and defaults."""
    init = signature(defaults=arguments, keyword_only=keyword_only)

    def forward(self, *args):
        return _Loss.forward(self, *args)

    forward.__signature__ = signature(inputs)

    def __init__(self, *args, **kwargs):  # noqa: N807 - becomes the class's __init__
        _Loss.__init__(self, *args, **kwargs)

    __init__.__signature__ = init
    return type(
        name,
        (_Loss,),
        {
            "_fn": staticmethod(fn),
            "_signature": init,
            "__init__": __init__,
            "forward": forward,
            "__doc__": f"Module form of ``nn.functional.{fn.__name__}``.",
            "__module__": __name__,
        },
    )


_WEIGHT = (("weight", None),)
_TRIPLET = ("anchor", "positive", "negative")
_CLASSES = (("weight", None), ("size_average", None), ("ignore_index", -100), ("reduce", None))

# name -> (functional form, constructor arguments in PyTorch's order, forward's input names)
LOSSES = {
    "MSELoss": (F.mse_loss, _LEGACY),
    "L1Loss": (F.l1_loss, _LEGACY),
    "SmoothL1Loss": (F.smooth_l1_loss, _LEGACY + (("beta", 1.0),)),
    "HuberLoss": (F.huber_loss, (("reduction", "mean"), ("delta", 1.0))),
    "CrossEntropyLoss": (
        F.cross_entropy,
        _CLASSES + (("reduction", "mean"), ("label_smoothing", 0.0)),
    ),
    "NLLLoss": (F.nll_loss, _CLASSES + (("reduction", "mean"),)),
    "BCELoss": (F.binary_cross_entropy, _WEIGHT + _LEGACY),
    "BCEWithLogitsLoss": (
        F.binary_cross_entropy_with_logits,
        _WEIGHT + _LEGACY + (("pos_weight", None),),
    ),
    "KLDivLoss": (F.kl_div, _LEGACY + (("log_target", False),)),
    "CosineEmbeddingLoss": (
        F.cosine_embedding_loss,
        (("margin", 0.0),) + _LEGACY,
        ("input1", "input2", "target"),
    ),
    "PoissonNLLLoss": (
        F.poisson_nll_loss,
        (("log_input", True), ("full", False), ("size_average", None), ("eps", 1e-8)) + _LEGACY[1:],
        ("log_input", "target"),
    ),
    "GaussianNLLLoss": (
        F.gaussian_nll_loss,
        (),
        ("input", "target", "var"),
        (("full", False), ("eps", 1e-6), ("reduction", "mean")),
    ),
    "SoftMarginLoss": (F.soft_margin_loss, _LEGACY),
    "MultiLabelSoftMarginLoss": (F.multilabel_soft_margin_loss, _WEIGHT + _LEGACY),
    "MultiLabelMarginLoss": (F.multilabel_margin_loss, _LEGACY),
    "MultiMarginLoss": (
        F.multi_margin_loss,
        (("p", 1), ("margin", 1.0)) + _WEIGHT + _LEGACY,
    ),
    "HingeEmbeddingLoss": (F.hinge_embedding_loss, (("margin", 1.0),) + _LEGACY),
    "MarginRankingLoss": (
        F.margin_ranking_loss,
        (("margin", 0.0),) + _LEGACY,
        ("input1", "input2", "target"),
    ),
    "TripletMarginLoss": (
        F.triplet_margin_loss,
        (("margin", 1.0), ("p", 2.0), ("eps", 1e-6), ("swap", False)) + _LEGACY,
        _TRIPLET,
    ),
    "CTCLoss": (
        F.ctc_loss,
        (("blank", 0), ("reduction", "mean"), ("zero_infinity", False)),
        ("log_probs", "targets", "input_lengths", "target_lengths"),
    ),
}

for _name, _row in LOSSES.items():
    globals()[_name] = _loss(_name, *_row)
del _name, _row


class NLLLoss2d(NLLLoss):  # noqa: F821 - made from LOSSES above
    """PyTorch's deprecated name for NLLLoss over (N, C, H, W)."""


class TripletMarginWithDistanceLoss(Module):
    """Triplet loss with any distance; a PairwiseDistance child module by default."""

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__()
        if margin <= 0:
            raise ValueError(
                f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got "
                f"{margin} instead"
            )
        if distance_function is None:
            distance_function = PairwiseDistance()
        self.distance_function = distance_function
        self.margin, self.swap, self.reduction = margin, swap, reduction

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor,
            positive,
            negative,
            distance_function=self.distance_function,
            margin=self.margin,
            swap=self.swap,
            reduction=self.reduction,
        )


class LinearCrossEntropyLoss(Module):
    """Cross entropy of a Linear layer's logits, fused so that with ``options`` the logits are
    never held whole; the Linear is the ``linear`` child (num_classes * prod(out_features)
    outputs), as in PyTorch."""

    def __init__(
        self,
        in_features,
        num_classes,
        *,
        out_features=(),
        bias=False,
        device=None,
        dtype=None,
        reduction="mean",
        weight=None,
        ignore_index=None,
        label_smoothing=0.0,
        options=None,
    ):
        super().__init__()
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(
                f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}"
            )
        if not 0 <= label_smoothing <= 1.0:
            raise RuntimeError(
                f"expected label_smoothing to be in range [0, 1], got {label_smoothing}"
            )
        self.register_buffer("weight", weight)
        self.reduction = reduction
        self.num_classes, self.out_features = num_classes, out_features
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing
        outputs = math.prod(out_features) * num_classes
        self.linear = Linear(in_features, outputs, bias=bias, device=device, dtype=dtype)
        self.options = options

    def forward(self, input, target):
        shape = (self.num_classes, *self.out_features)
        bias = self.linear.bias
        return F.linear_cross_entropy(
            input,
            self.linear.weight.reshape(*shape, self.linear.in_features),
            target,
            linear_bias=None if bias is None else bias.reshape(shape),
            weight=self.weight,
            reduction=self.reduction,
            ignore_index=self.ignore_index,
            label_smoothing=self.label_smoothing,
            options=self.options,
        )

    def extra_repr(self) -> str:
        return (
            f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
            f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
            f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
            f"label_smoothing={self.label_smoothing}, options={self.options}"
        )


__all__ = [*LOSSES, "NLLLoss2d", "TripletMarginWithDistanceLoss", "LinearCrossEntropyLoss"]
