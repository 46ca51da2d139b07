"""ember.optim: optimizers and learning-rate schedulers with ``torch.optim``'s API.

Every update runs under ``no_grad`` with in-place ember ops, so it works on any device whose
backend has the elementwise kernels, and follows PyTorch's formulas step for step.
"""

from __future__ import annotations

from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .lbfgs import LBFGS
from .optimizer import Optimizer, required
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = [
    "LBFGS",
    "SGD",
    "Adagrad",
    "Adam",
    "AdamW",
    "Optimizer",
    "RMSprop",
    "lr_scheduler",
    "required",
]
