"""RNN, LSTM, GRU and their cells, with PyTorch's parameter names, shapes and gate order."""

from __future__ import annotations

import math

import ember

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _rnn_step(x, h, w_ih, w_hh, b_ih, b_hh, nonlinearity):
    gates = F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)
    return ember.tanh(gates) if nonlinearity == "tanh" else ember.relu(gates)


def _lstm_step(x, state, w_ih, w_hh, b_ih, b_hh):
    h, c = state
    gates = F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, -1)
    c = ember.sigmoid(f) * c + ember.sigmoid(i) * ember.tanh(g)
    return ember.sigmoid(o) * ember.tanh(c), c


def _gru_step(x, h, w_ih, w_hh, b_ih, b_hh):
    gi = F.linear(x, w_ih, b_ih)
    gh = F.linear(h, w_hh, b_hh)
    ir, iz, in_ = gi.chunk(3, -1)
    hr, hz, hn = gh.chunk(3, -1)
    r = ember.sigmoid(ir + hr)
    z = ember.sigmoid(iz + hz)
    n = ember.tanh(in_ + r * hn)
    return (1 - z) * n + z * h


class RNNBase(Module):
    """Shared machinery: stacked, optionally bidirectional recurrences over time."""

    def __init__(
        self,
        mode,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        proj_size=0,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if proj_size:
            raise NotImplementedError("proj_size is not supported yet")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        gates = GATES[mode] * hidden_size
        directions = 2 if bidirectional else 1
        factory = {"device": device, "dtype": dtype}
        for layer in range(num_layers):
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                width = input_size if layer == 0 else hidden_size * directions
                setattr(self, f"weight_ih{suffix}", Parameter(ember.empty(gates, width, **factory)))
                setattr(
                    self,
                    f"weight_hh{suffix}",
                    Parameter(ember.empty(gates, hidden_size, **factory)),
                )
                if bias:
                    setattr(self, f"bias_ih{suffix}", Parameter(ember.empty(gates, **factory)))
                    setattr(self, f"bias_hh{suffix}", Parameter(ember.empty(gates, **factory)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def _weights(self, layer, direction):
        suffix = f"_l{layer}" + ("_reverse" if direction else "")
        get = self._parameters.get
        return (
            get(f"weight_ih{suffix}"),
            get(f"weight_hh{suffix}"),
            get(f"bias_ih{suffix}"),
            get(f"bias_hh{suffix}"),
        )

    def _step(self, x, state, weights):
        if self.mode == "LSTM":
            return _lstm_step(x, state, *weights)
        if self.mode == "GRU":
            return _gru_step(x, state, *weights)
        return _rnn_step(x, state, *weights, "tanh" if self.mode == "RNN_TANH" else "relu")

    def forward(self, input, hx=None):
        batched = input.ndim == 3
        if input.ndim not in (2, 3):
            raise ValueError(
                f"{type(self).__name__}: expected 2-D or 3-D input, got {list(input.shape)}"
            )
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"{type(self).__name__}: input.size(-1) must be equal to input_size. Expected "
                f"{self.input_size}, got {input.shape[-1]}"
            )
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        steps, batch = x.shape[0], x.shape[1]
        directions = 2 if self.bidirectional else 1
        h0, c0 = self._initial_state(hx, batch, directions, x, batched)
        finals_h, finals_c = [], []
        layer_input = x
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                index = layer * directions + direction
                state = (h0[index], c0[index]) if self.mode == "LSTM" else h0[index]
                order = range(steps - 1, -1, -1) if direction else range(steps)
                seq = [None] * steps
                weights = self._weights(layer, direction)
                for t in order:
                    state = self._step(layer_input[t], state, weights)
                    seq[t] = state[0] if self.mode == "LSTM" else state
                outputs.append(
                    ember.stack(seq) if steps else layer_input.new_zeros(0, batch, self.hidden_size)
                )
                finals_h.append(state[0] if self.mode == "LSTM" else state)
                if self.mode == "LSTM":
                    finals_c.append(state[1])
            layer_input = outputs[0] if directions == 1 else ember.cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        output = layer_input
        if batched and self.batch_first:
            output = output.transpose(0, 1)
        h_n = ember.stack(finals_h)
        if not batched:
            output, h_n = output.squeeze(1), h_n.squeeze(1)
        if self.mode == "LSTM":
            c_n = ember.stack(finals_c)
            return output, (h_n, c_n if batched else c_n.squeeze(1))
        return output, h_n

    def _initial_state(self, hx, batch, directions, x, batched):
        shape = (self.num_layers * directions, batch, self.hidden_size)
        zeros = ember.zeros(shape, dtype=x.dtype, device=x.device)
        if hx is None:
            return zeros, zeros
        if self.mode == "LSTM":
            h, c = hx
            return (h, c) if batched else (h.unsqueeze(1), c.unsqueeze(1))
        return (hx if batched else hx.unsqueeze(1)), zeros

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if not self.bias:
            text += ", bias=False"
        if self.batch_first:
            text += ", batch_first=True"
        if self.dropout:
            text += f", dropout={self.dropout}"
        if self.bidirectional:
            text += ", bidirectional=True"
        return text


class RNN(RNNBase):
    """Elman RNN with tanh or relu: ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``."""

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        nonlinearity="tanh",
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        device=None,
        dtype=None,
    ):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        self.nonlinearity = nonlinearity
        super().__init__(
            "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            device=device,
            dtype=dtype,
        )


class LSTM(RNNBase):
    """Long short-term memory; gates in PyTorch's order (input, forget, cell, output)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Gated recurrent unit; gates in PyTorch's order (reset, update, new)."""

    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, gates, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        factory = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(ember.empty(gates * hidden_size, input_size, **factory))
        self.weight_hh = Parameter(ember.empty(gates * hidden_size, hidden_size, **factory))
        if bias:
            self.bias_ih = Parameter(ember.empty(gates * hidden_size, **factory))
            self.bias_hh = Parameter(ember.empty(gates * hidden_size, **factory))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def _zeros(self, input):
        shape = (input.shape[0], self.hidden_size) if input.ndim == 2 else (self.hidden_size,)
        return ember.zeros(shape, dtype=input.dtype, device=input.device)

    def _weights(self):
        return self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            text += f", nonlinearity={self.nonlinearity}"
        return text


class RNNCell(RNNCellBase):
    def __init__(
        self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None
    ):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        hx = self._zeros(input) if hx is None else hx
        return _rnn_step(input, hx, *self._weights(), self.nonlinearity)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        if hx is None:
            zeros = self._zeros(input)
            hx = (zeros, zeros)
        return _lstm_step(input, hx, *self._weights())


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        hx = self._zeros(input) if hx is None else hx
        return _gru_step(input, hx, *self._weights())
