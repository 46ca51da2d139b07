"""ember's RNN, LSTM and GRU layers in scripted code.

One time loop per layer, written below in the TorchScript subset and compiled by this compiler
(each becomes a ``prim::Loop`` over the sequence); the lowering unrolls the layers in Python,
reading each layer's weights (``weight_ih_l0``...) with ``prim::GetAttr``. The gate formulas are
PyTorch's (``torch.nn.LSTM``/``GRU``/``RNN`` documentation).
"""

from __future__ import annotations

# ruff: noqa: UP006, UP045 - List/Optional: the TorchScript spelling of the sources below
from typing import List, Optional  # noqa: UP035

import ember
import ember.nn.functional as F
from ember import Tensor

from .. import types as T
from . import builtins as lib


def lstm_layer(
    x,
    h,
    c,
    w_ih,
    w_hh,
    b_ih: Optional[Tensor],
    b_hh: Optional[Tensor],
):
    outputs: List[Tensor] = []
    for t in range(x.size(0)):
        gates = F.linear(x[t], w_ih, b_ih) + F.linear(h, w_hh, b_hh)
        i, f, g, o = gates.chunk(4, 1)
        c = ember.sigmoid(f) * c + ember.sigmoid(i) * ember.tanh(g)
        h = ember.sigmoid(o) * ember.tanh(c)
        outputs.append(h)
    return ember.stack(outputs), h, c


def gru_layer(x, h, w_ih, w_hh, b_ih: Optional[Tensor], b_hh: Optional[Tensor]):
    outputs: List[Tensor] = []
    for t in range(x.size(0)):
        i_r, i_z, i_n = F.linear(x[t], w_ih, b_ih).chunk(3, 1)
        h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, 1)
        r = ember.sigmoid(i_r + h_r)
        z = ember.sigmoid(i_z + h_z)
        n = ember.tanh(i_n + r * h_n)
        h = (1 - z) * n + z * h
        outputs.append(h)
    return ember.stack(outputs), h


def rnn_layer(x, h, w_ih, w_hh, b_ih: Optional[Tensor], b_hh: Optional[Tensor], relu: bool = False):
    outputs: List[Tensor] = []
    for t in range(x.size(0)):
        pre = F.linear(x[t], w_ih, b_ih) + F.linear(h, w_hh, b_hh)
        h = ember.relu(pre) if relu else ember.tanh(pre)
        outputs.append(h)
    return ember.stack(outputs), h


def zero_state(x, layers: int, hidden: int):
    return ember.zeros(layers, x.size(1), hidden, dtype=x.dtype, device=x.device)


LAYERS = {"LSTM": lstm_layer, "GRU": gru_layer, "RNN_TANH": rnn_layer, "RNN_RELU": rnn_layer}


def lower(em, ref, args, kwargs):
    """``output, h_n`` (``output, (h_n, c_n)`` for LSTM) of a batched (3-d) input."""
    m = ref.module
    if m.bidirectional or getattr(m, "proj_size", 0):
        raise lib.BindError(
            f"{m.mode} with bidirectional=True or proj_size isn't supported by ember.jit.script"
        )
    if len(args) + len(kwargs) > 2 or set(kwargs) - {"hx"}:
        raise lib.BindError(f"{m.mode}.forward() takes (input, hx=None)")
    x = args[0]
    hx = args[1] if len(args) > 1 else kwargs.get("hx", em.constant(None))
    lstm = m.mode == "LSTM"
    if m.batch_first:
        x = em.call_op("transpose", [x, em.constant(0), em.constant(1)], {})
    states = _initial(em, ref, x, hx, 2 if lstm else 1)
    finals: list = [[] for _ in states]
    for layer in range(m.num_layers):
        weights = [_weight(em, ref, f"{kind}_l{layer}") for kind in _WEIGHTS]
        first = [em.call_op("select", [s, em.constant(0), em.constant(layer)], {}) for s in states]
        fn = LAYERS[m.mode]
        extra = {"relu": em.constant(True)} if m.mode == "RNN_RELU" else {}
        result = em.unit.call_function(em, fn, [x, *first, *weights], extra, em.current)
        x, *last = em.unpack(result, 1 + len(states), em.current)
        for kept, value in zip(finals, last):
            kept.append(value)
        if layer < m.num_layers - 1:
            x = lib.module_dropout(em, ref, x, float(m.dropout))
    if m.batch_first:
        x = em.call_op("transpose", [x, em.constant(0), em.constant(1)], {})
    stacked = [em.call_op("stack", [em.list_value(k, T.Tensor)], {}) for k in finals]
    hidden = em.tuple_value(stacked) if lstm else stacked[0]
    return em.tuple_value([x, hidden])


_WEIGHTS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


def _weight(em, ref, name: str):
    module = ref.module
    if name not in module._parameters:
        return em.constant(None)  # bias=False
    return em.module_attribute(ref, name, em.current)


def _initial(em, ref, x, hx, count: int) -> list:
    m = ref.module
    kind = hx.type() if not isinstance(hx, lib.Sugar) else None
    if kind == T.NoneType:
        layers, hidden = em.constant(m.num_layers), em.constant(m.hidden_size)
        zero = em.unit.call_function(em, zero_state, [x, layers, hidden], {}, em.current)
        return [zero] * count
    if isinstance(kind, T.OptionalType):
        raise lib.BindError(
            f"{m.mode}: an Optional hidden state isn't supported by ember.jit.script: pass a "
            "state or None"
        )
    return em.unpack(hx, count, em.current) if count > 1 else [hx]
