"""Loss modules: shells over nn.functional losses, built from one table of PyTorch's
constructor signatures."""

from __future__ import annotations

import inspect

from .. import functional as F
from ..functional.loss import legacy_reduction
from ._signature import signature
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


def _loss(name, fn, arguments, inputs=("input", "target")):
    """A ``_Loss`` subclass: constructor ``(self, *arguments)`` and ``forward(self, *inputs)``
    with those names and defaults."""
    init = signature(defaults=arguments)

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
}

for _name, _row in LOSSES.items():
    globals()[_name] = _loss(_name, *_row)
del _name, _row

__all__ = list(LOSSES)
