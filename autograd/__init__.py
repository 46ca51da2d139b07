"""ember.autograd: tape-based reverse-mode differentiation as a dispatch layer.

The layer (autograd/layer.py) records a Node per differentiable call on tensors that require
grad; formulas (autograd/formulas.py) are ember ops, so they run on every device and can be
differentiated again; the engine (autograd/engine.py) runs nodes in reverse order.
"""

from __future__ import annotations

from ember import _factories
from ember.dispatcher.layers import STACK
from ember.dispatcher.optable import OPS

from . import batch_random, forward_ad, functional, tensor_api
from .anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .engine import backward, grad
from .formulas import FORMULAS
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .layer import LAYER
from .node import Node


def _install() -> None:
    unknown = sorted(set(FORMULAS) - set(OPS))
    if unknown:
        raise RuntimeError(f"autograd formulas for ops that are not in the table: {unknown}")
    for name, formula in FORMULAS.items():
        formula.bind(OPS[name])
        OPS[name].formula = formula
    STACK.install(LAYER)
    tensor_api.install()
    _factories.RANDOM_TARGET = batch_random.factory_target


_install()

__all__ = [
    "Function",
    "FunctionCtx",
    "GradcheckError",
    "Node",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "functional",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "inference_mode",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "no_grad",
    "once_differentiable",
    "set_detect_anomaly",
    "set_grad_enabled",
]
