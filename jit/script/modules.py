"""ember.nn's own layers in scripted code: each layer class has a lowering to op-table nodes.

PyTorch compiles its layers' ``forward`` from source; ember's layers are written for eager
speed and checks (shape messages, cached helpers), not in the TorchScript subset, so a
scripted module's call of one of them becomes the nodes of this table, reading the layer's
parameters with ``prim::GetAttr`` and its hyperparameters as constants. User modules are
compiled from source; a user subclass that overrides ``forward`` is compiled too.
"""

from __future__ import annotations

import ember.nn as nn
import ember.nn.functional as F

from .. import types as T
from . import attention, batchnorm, pooling, recurrent
from . import builtins as lib


def _attr(em, ref, name):
    return em.module_attribute(ref, name, em.current)


def _one(args, kwargs, what):
    if len(args) != 1 or kwargs:
        raise lib.BindError(f"{what}.forward() expected one input")
    return args[0]


def _linear(em, ref, args, kwargs):
    x = _one(args, kwargs, "Linear")
    return em.call_op("linear", [x, _attr(em, ref, "weight"), _attr(em, ref, "bias")], {})


def _conv(n):
    def lower(em, ref, args, kwargs):
        m = ref.module
        x = _one(args, kwargs, f"Conv{n}d")
        if m.padding_mode != "zeros":
            raise lib.BindError(
                f"Conv{n}d with padding_mode='{m.padding_mode}' isn't supported by ember.jit.script"
            )
        padding = m.padding
        if isinstance(padding, str):
            if padding == "valid":
                padding = (0,) * n
            elif all(d * (k - 1) % 2 == 0 for d, k in zip(m.dilation, m.kernel_size)):
                padding = tuple(d * (k - 1) // 2 for d, k in zip(m.dilation, m.kernel_size))
            else:
                raise lib.BindError(
                    f"Conv{n}d padding='same' with an even kernel isn't supported by "
                    "ember.jit.script"
                )
        consts = [em.constant(list(v)) for v in (m.stride, padding, m.dilation)]
        inputs = [
            x,
            _attr(em, ref, "weight"),
            _attr(em, ref, "bias"),
            *consts,
            em.constant(m.groups),
        ]
        return em.call_op(f"conv{n}d", inputs, {})

    return lower


def _unary(op_name, *attrs):
    def lower(em, ref, args, kwargs):
        x = _one(args, kwargs, op_name)
        extra = [em.constant(getattr(ref.module, a)) for a in attrs]
        return em.call_op(op_name, [x, *extra], {})

    return lower


def _identity(em, ref, args, kwargs):
    return _one(args, kwargs, type(ref.module).__name__)


def _dropout(em, ref, args, kwargs):
    x = _one(args, kwargs, "Dropout")
    return lib.module_dropout(em, ref, x, float(ref.module.p))


def _max_pool2d(em, ref, args, kwargs):
    x = _one(args, kwargs, "MaxPool2d")
    m = ref.module
    values = [m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode, m.return_indices]
    return lib.special(F.max_pool2d)(
        em, [x, *(em.constant(_plain(v)) for v in values)], {}, F.max_pool2d
    )


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


def _flatten(em, ref, args, kwargs):
    x = _one(args, kwargs, "Flatten")
    m = ref.module
    return em.call_op("flatten", [x, em.constant(m.start_dim), em.constant(m.end_dim)], {})


def _layer_norm(em, ref, args, kwargs):
    x = _one(args, kwargs, "LayerNorm")
    m = ref.module
    inputs = [
        x,
        em.constant(list(m.normalized_shape)),
        _attr(em, ref, "weight"),
        _attr(em, ref, "bias"),
    ]
    return em.call_op("layer_norm", [*inputs, em.constant(float(m.eps))], {})


def embedding_nodes(em, indices, weight):
    """``weight[indices]``: rows picked by index_select, viewed as ``indices.shape + [dim]``."""
    flat = em.call_op("reshape", [indices, em.constant([-1])], {})
    rows = em.call_op("index_select", [weight, em.constant(0), flat], {})
    shape = em.prim("prim::shape", [indices], T.ListType(T.IntType))
    full = em.prim("prim::add", [shape, em.constant([-1])], T.ListType(T.IntType))
    return em.call_op("reshape", [rows, full], {})


def _embedding(em, ref, args, kwargs):
    m = ref.module
    if m.max_norm is not None:
        raise lib.BindError("Embedding with max_norm isn't supported by ember.jit.script")
    return embedding_nodes(em, _one(args, kwargs, "Embedding"), _attr(em, ref, "weight"))


def _sequential(em, ref, args, kwargs):
    from .sugar import ModuleRef

    value = _one(args, kwargs, "Sequential")
    for name, child in ref.module._modules.items():
        value = em.unit.call_module(
            em, ModuleRef(child, ref.qualified(name)), [value], {}, em.current
        )
    return value


LOWERINGS = {
    nn.Linear: _linear,
    nn.Conv1d: _conv(1),
    nn.Conv2d: _conv(2),
    nn.ReLU: _unary("relu"),
    nn.Tanh: _unary("tanh"),
    nn.Sigmoid: _unary("sigmoid"),
    nn.SiLU: _unary("silu"),
    nn.GELU: _unary("gelu", "approximate"),
    nn.LeakyReLU: _unary("leaky_relu", "negative_slope"),
    nn.Softmax: _unary("softmax", "dim"),
    nn.LogSoftmax: _unary("log_softmax", "dim"),
    nn.Identity: _identity,
    nn.Dropout: _dropout,
    nn.MaxPool2d: _max_pool2d,
    nn.Flatten: _flatten,
    nn.LayerNorm: _layer_norm,
    nn.Sequential: _sequential,
    nn.BatchNorm1d: batchnorm.lower,
    nn.BatchNorm2d: batchnorm.lower,
    nn.BatchNorm3d: batchnorm.lower,
    nn.Embedding: _embedding,
    nn.AdaptiveAvgPool2d: pooling.lower,
    nn.MultiheadAttention: attention.lower,
    nn.RNN: recurrent.lower,
    nn.LSTM: recurrent.lower,
    nn.GRU: recurrent.lower,
}


def lowering(module):
    """The lowering of an ember layer (or of a subclass that keeps its forward), else None."""
    for cls in type(module).__mro__:
        lower = LOWERINGS.get(cls)
        if lower is not None:
            return lower if type(module).forward is cls.forward else None
    return None
