"""ember.autograd: tape-based reverse-mode differentiation as a dispatch layer, and the
transforms built on it.

The layer (autograd/layer.py) records a Node per differentiable call on tensors that require
grad; formulas (autograd/formulas.py) are ember ops, so they run on every device and can be
differentiated again; the engine (autograd/engine.py) runs nodes in reverse order. Forward mode
(forward_ad.py, JVP rules in jvp_rules.py) and vmap (vmap.py, batching rules in
batch_rules*.py) are layers too; ember.func (transforms.py, jacobians.py, module_state.py) and
ember.utils.checkpoint (checkpoint.py) are built from them. graph.py is the graph's public face
(saved-tensor hooks), graph_names.py how nodes present themselves as PyTorch's.
"""

from __future__ import annotations

from ember import _factories
from ember.dispatcher.layers import STACK
from ember.dispatcher.optable import OPS

from . import batch_random, forward_ad, functional, graph, profiler, tensor_api
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
from .layer import LAYER, install_recorders
from .node import Node
from .variable import Variable


def _install() -> None:
    unknown = sorted(set(FORMULAS) - set(OPS))
    if unknown:
        raise RuntimeError(f"autograd formulas for ops that are not in the table: {unknown}")
    for name, formula in FORMULAS.items():
        formula.bind(OPS[name])
        OPS[name].formula = formula
    install_recorders(OPS.values())
    STACK.install(LAYER)
    tensor_api.install()
    _factories.RANDOM_TARGET = batch_random.factory_target


_install()

__all__ = [
    "Function",
    "FunctionCtx",
    "GradcheckError",
    "Node",
    "Variable",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "forward_ad",
    "functional",
    "grad",
    "graph",
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
