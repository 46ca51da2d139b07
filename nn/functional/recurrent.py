"""The recurrent layers' computation: the ``lstm``/``gru``/``rnn_tanh``/``rnn_relu`` rows'
decompositions (aten's ``.input`` overloads) and the per-layer loop ``nn.RNN``/``LSTM``/``GRU``
share with their packed-sequence path.

The layers call the rows, so a trace records one node per layer call (as PyTorch's records
``aten::lstm``): its sequence length is not baked into the graph, and the ONNX exporter maps it
to one recurrent node. The input-to-hidden products of a whole sequence are one matmul per layer
and direction; only the hidden-to-hidden product and the gates run per time step.
"""

from __future__ import annotations

import ember

from .dropout import dropout as _dropout
from .linear import linear


# One time step from the input's gate pre-activations ``gi`` (x W_ih^T + b_ih) and the state.
def _rnn_step(gi, h, w_hh, b_hh, relu=False):
    gates = linear(h, w_hh, b_hh) + gi
    return ember.relu(gates) if relu else ember.tanh(gates)


# The gates split as PyTorch's cells split them (unsafe_chunk over the last dim as a
# non-negative dim: UnsafeSplitBackward0 with its _saved_dim).
def _gates(gates, n):
    return gates.unsafe_chunk(n, gates.ndim - 1)


def _lstm_step(gi, state, w_hh, b_hh):
    h, c = state
    i, f, g, o = _gates(linear(h, w_hh, b_hh) + gi, 4)
    c = ember.sigmoid(f) * c + ember.sigmoid(i) * ember.tanh(g)
    return ember.sigmoid(o) * ember.tanh(c), c


def _gru_step(gi, h, w_hh, b_hh):
    ir, iz, in_ = _gates(gi, 3)
    hr, hz, hn = _gates(linear(h, w_hh, b_hh), 3)
    r = ember.sigmoid(hr + ir)
    z = ember.sigmoid(hz + iz)
    n = ember.tanh(in_ + hn * r)
    return (h - n) * z + n


def step(mode: str):
    """One time step of ``mode`` (``"LSTM"``, ``"GRU"``, ``"RNN_TANH"``, ``"RNN_RELU"``)."""
    if mode == "LSTM":
        return _lstm_step
    if mode == "GRU":
        return _gru_step
    relu = mode == "RNN_RELU"
    return lambda gi, h, w_hh, b_hh: _rnn_step(gi, h, w_hh, b_hh, relu)


def run_direction(mode, inputs, state, weights, reverse, active=None):
    """One layer and direction over time-major ``inputs``: (outputs (T, B, H), final state).
    ``weights``: (w_ih, w_hh, b_ih, b_hh, w_hr), absent ones None. ``active`` (T, B, 1) marks
    the steps of packed sequences: elsewhere the state is kept (so a reversed sequence starts
    at its own last step) and the output is 0."""
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    # every time step's input products at once, one piece per step (PyTorch's unbind)
    gates = linear(inputs, w_ih, b_ih).unbind(0)
    steps = inputs.shape[0]
    outputs = [None] * steps
    lstm = mode == "LSTM"
    one_step = step(mode)
    for t in range(steps - 1, -1, -1) if reverse else range(steps):
        new = one_step(gates[t], state, w_hh, b_hh)
        if w_hr is not None:  # LSTM with proj_size: h is projected, c is not
            new = (linear(new[0], w_hr), new[1])
        if active is not None:
            keep = active[t]
            out = (new[0] if lstm else new) * keep
            new = (
                tuple(ember.where(keep, n, o) for n, o in zip(new, state))
                if lstm
                else ember.where(keep, new, state)
            )
            outputs[t] = out
        else:
            outputs[t] = new[0] if lstm else new
        state = new
    if not steps:
        return inputs.new_zeros(0, inputs.shape[1], w_hh.shape[1]), state
    return ember.stack(outputs), state


def run_layers(mode, x, h0, c0, weights, num_layers, bidirectional, dropout, train, active):
    """Every layer and direction over time-major ``x``: (output, h_n, c_n or None).
    ``weights[layer * directions + direction]`` is that unit's ``run_direction`` weights."""
    directions = 2 if bidirectional else 1
    lstm = mode == "LSTM"
    finals_h, finals_c = [], []
    layer_input = x
    for layer in range(num_layers):
        outputs = []
        for direction in range(directions):
            index = layer * directions + direction
            state = (h0[index], c0[index]) if lstm else h0[index]
            out, state = run_direction(
                mode, layer_input, state, weights[index], direction == 1, active
            )
            outputs.append(out)
            finals_h.append(state[0] if lstm else state)
            if lstm:
                finals_c.append(state[1])
        layer_input = outputs[0] if directions == 1 else ember.cat(outputs, outputs[0].ndim - 1)
        if dropout and train and layer < num_layers - 1:
            layer_input = _dropout(layer_input, dropout, True)
    c_n = ember.stack(finals_c) if lstm else None
    return layer_input, ember.stack(finals_h), c_n


def unit_weights(params, has_biases: bool, num_layers: int, bidirectional: bool) -> list:
    """aten's flat ``params`` (per layer and direction: w_ih, w_hh[, b_ih, b_hh][, w_hr]) as one
    (w_ih, w_hh, b_ih, b_hh, w_hr) tuple per unit; a fifth or third weight is the projection."""
    units = num_layers * (2 if bidirectional else 1)
    per_unit = len(params) // units if units else 0
    bias_count = 2 if has_biases else 0
    if per_unit * units != len(params) or per_unit - bias_count not in (2, 3):
        raise RuntimeError(
            f"recurrent op: {len(params)} parameters for {units} layers and directions "
            f"(has_biases={has_biases})"
        )
    grouped = []
    for unit in range(units):
        w = list(params[unit * per_unit : (unit + 1) * per_unit])
        biases = (w[2], w[3]) if has_biases else (None, None)
        projection = w[-1] if per_unit - bias_count == 3 else None
        grouped.append((w[0], w[1], *biases, projection))
    return grouped


def _recurrent(mode: str):
    lstm = mode == "LSTM"

    def run(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
        x = input.transpose(0, 1) if batch_first else input
        h0, c0 = hx if lstm else (hx, None)
        weights = unit_weights(params, has_biases, num_layers, bidirectional)
        output, h_n, c_n = run_layers(
            mode, x, h0, c0, weights, num_layers, bidirectional, dropout, train, None
        )
        if batch_first:  # PyTorch's GRU and RNN transpose in place (TransposeBackward1)
            output = output.transpose(0, 1) if lstm else output.transpose_(0, 1)
        return (output, h_n, c_n) if lstm else (output, h_n)

    run.__name__ = run.__qualname__ = f"_{mode.lower()}"
    return run


_lstm = _recurrent("LSTM")
_gru = _recurrent("GRU")
_rnn_tanh = _recurrent("RNN_TANH")
_rnn_relu = _recurrent("RNN_RELU")
