"""The recurrent layers as rows: aten's ``lstm``, ``gru``, ``rnn_tanh`` and ``rnn_relu``
(their ``.input`` overloads: a padded input, the initial state, the flat parameters).

They are rows so that a layer call is one node of a trace, as ``aten::lstm`` is in PyTorch's:
the time loop is inside the op, so the graph replays at other sequence lengths and the ONNX
exporter writes one ``LSTM``/``GRU``/``RNN`` node (``jit/onnx/symbolic/recurrent.py``). Each is
a composite (``nn.functional.recurrent``): autograd, vmap and forward AD come from its parts.
"""

from __future__ import annotations

import numpy as np

from ember import _dtype as dt

from ..kinds import functional as run
from ..opdef import DTYPES_FLOAT, Kind, OpDef


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _np_step(mode, x, state, w_hh, b_hh):
    """One time step; ``x`` already holds x W_ih^T + b_ih."""
    h = state[0] if mode == "LSTM" else state
    hidden = h @ w_hh.T + (0 if b_hh is None else b_hh)
    if mode == "LSTM":
        i, f, g, o = np.split(x + hidden, 4, -1)
        c = _sigmoid(f) * state[1] + _sigmoid(i) * np.tanh(g)
        return _sigmoid(o) * np.tanh(c), c
    if mode == "GRU":
        ir, iz, in_ = np.split(x, 3, -1)
        hr, hz, hn = np.split(hidden, 3, -1)
        r, z = _sigmoid(ir + hr), _sigmoid(iz + hz)
        n = np.tanh(in_ + r * hn)
        return (1 - z) * n + z * h
    pre = x + hidden
    return np.maximum(pre, 0) if mode == "RNN_RELU" else np.tanh(pre)


def _np_direction(mode, x, state, weights, reverse):
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    gates = x @ w_ih.T + (0 if b_ih is None else b_ih)
    outputs = [None] * len(x)
    for t in reversed(range(len(x))) if reverse else range(len(x)):
        state = _np_step(mode, gates[t], state, w_hh, b_hh)
        if w_hr is not None:
            state = (state[0] @ w_hr.T, state[1])
        outputs[t] = state[0] if mode == "LSTM" else state
    return np.stack(outputs), state


def _np_recurrent(mode: str):
    lstm = mode == "LSTM"

    def reference(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                  batch_first):  # fmt: skip
        from ember.nn.functional.recurrent import unit_weights  # loads after the table

        dtype = input.dtype
        wide = [np.asarray(p, np.float64) for p in params]
        x = np.asarray(input, np.float64)
        x = x.swapaxes(0, 1) if batch_first else x
        h0, c0 = (np.asarray(s, np.float64) for s in (hx if lstm else (hx, hx)))
        weights = unit_weights(wide, has_biases, num_layers, bidirectional)
        directions = 2 if bidirectional else 1
        finals_h, finals_c = [], []
        for layer in range(num_layers):
            outs = []
            for direction in range(directions):
                unit = layer * directions + direction
                state = (h0[unit], c0[unit]) if lstm else h0[unit]
                out, state = _np_direction(mode, x, state, weights[unit], direction == 1)
                outs.append(out)
                finals_h.append(state[0] if lstm else state)
                if lstm:
                    finals_c.append(state[1])
            x = np.concatenate(outs, -1)
        output = x.swapaxes(0, 1) if batch_first else x
        found = (output, np.stack(finals_h)) + ((np.stack(finals_c),) if lstm else ())
        return tuple(np.ascontiguousarray(a).astype(dtype) for a in found)

    return reference


_ARGS = (
    "Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, "
    "bool bidirectional, bool batch_first"
)
# Every step feeds the next: half-precision rounding compounds over the sequence.
_TOLERANCES = {dt.float16: (1e-2, 1e-2), dt.bfloat16: (5e-2, 5e-2)}


def _row(mode: str, hx: str, returns: str) -> OpDef:
    name = mode.lower()
    return OpDef(
        f"{name}(Tensor input, {hx}, {_ARGS}) -> {returns}",
        Kind.NN,
        _np_recurrent(mode),
        dtypes=DTYPES_FLOAT,
        decomposition=run.from_nn("recurrent", f"_{name}"),
        method=False,
        out=None,
        samples="recurrent",
        tolerances=_TOLERANCES,
        notes=f"nn.{'RNN' if mode.startswith('RNN') else mode}'s computation (aten::{name}.input)",
    )


ROWS = [
    _row("LSTM", "Tensor[] hx", "(Tensor, Tensor, Tensor)"),
    _row("GRU", "Tensor hx", "(Tensor, Tensor)"),
    _row("RNN_TANH", "Tensor hx", "(Tensor, Tensor)"),
    _row("RNN_RELU", "Tensor hx", "(Tensor, Tensor)"),
]
