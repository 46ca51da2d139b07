"""Loss modules: shells over nn.functional losses, built from one table."""

from __future__ import annotations

from .. import functional as F
from .module import Module


class _Loss(Module):
    _fn = None
    _options: dict = {}

    _positional: tuple = ()

    def __init__(self, *args, **kwargs):
        super().__init__()
        if len(args) > len(self._positional):
            raise TypeError(
                f"{type(self).__name__}() takes {len(self._positional)} positional argument(s); "
                "pass the others by keyword"
            )
        options = dict(self._options)
        for name, value in zip(self._positional, args):
            kwargs.setdefault(name, value)
        unknown = set(kwargs) - set(options) - {"size_average", "reduce", "reduction"}
        if unknown:
            raise TypeError(f"{type(self).__name__}() got unexpected arguments {sorted(unknown)}")
        kwargs.pop("size_average", None)
        kwargs.pop("reduce", None)
        options.update(kwargs)
        options.setdefault("reduction", "mean")
        for key, value in options.items():
            if key in ("weight", "pos_weight") and value is not None:
                self.register_buffer(key, value)
            else:
                object.__setattr__(self, key, value)
        self._option_names = list(options)

    def forward(self, input, target, *extra):
        options = {name: getattr(self, name) for name in self._option_names}
        return type(self)._fn(input, target, *extra, **options)

    def extra_repr(self) -> str:
        return ""


def _loss(name, fn, options=None, positional=(), doc=""):
    return type(
        name,
        (_Loss,),
        {
            "_fn": staticmethod(fn),
            "_options": options or {},
            "_positional": tuple(positional),
            "__doc__": doc,
            "__module__": __name__,
        },
    )


LOSSES = {
    "MSELoss": (F.mse_loss, {}, ()),
    "L1Loss": (F.l1_loss, {}, ()),
    "SmoothL1Loss": (F.smooth_l1_loss, {"beta": 1.0}, ()),
    "HuberLoss": (F.huber_loss, {"delta": 1.0}, ()),
    "CrossEntropyLoss": (
        F.cross_entropy,
        {"weight": None, "ignore_index": -100, "label_smoothing": 0.0},
        ("weight",),
    ),
    "NLLLoss": (F.nll_loss, {"weight": None, "ignore_index": -100}, ("weight",)),
    "BCELoss": (F.binary_cross_entropy, {"weight": None}, ("weight",)),
    "BCEWithLogitsLoss": (
        F.binary_cross_entropy_with_logits,
        {"weight": None, "pos_weight": None},
        ("weight",),
    ),
    "KLDivLoss": (F.kl_div, {"log_target": False}, ()),
    "CosineEmbeddingLoss": (F.cosine_embedding_loss, {"margin": 0.0}, ("margin",)),
}

for _name, (_fn, _options, _positional) in LOSSES.items():
    globals()[_name] = _loss(_name, _fn, _options, _positional, f"Module form of {_fn.__name__}.")
del _name, _fn, _options, _positional

__all__ = list(LOSSES)
