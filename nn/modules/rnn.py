"""RNN, LSTM, GRU and their cells, with PyTorch's parameter names, shapes, gate order and checks.

The layers call the op-table rows ``lstm``/``gru``/``rnn_tanh``/``rnn_relu`` (aten's), whose
computation is ``nn.functional.recurrent``; a trace records one node per layer call.
"""

from __future__ import annotations

import math

import ember

from .. import functional as F
from .. import init
from ..functional.recurrent import run_layers, step
from ..parameter import Parameter
from ..utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence
from .module import Module

GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
OPS = {"RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu", "LSTM": "lstm", "GRU": "gru"}


def _check_input(input, batched_rank: int, input_size: int) -> bool:
    """PyTorch's checks of a recurrent input (batched rank or one less, feature size); returns
    whether it is batched."""
    if input.ndim not in (batched_rank - 1, batched_rank):
        raise ValueError(
            f"Expected input to be {batched_rank - 1}D or {batched_rank}D, got {input.ndim}D "
            f"instead (shape {list(input.shape)})"
        )
    if input.shape[-1] != input_size:
        raise RuntimeError(
            f"input.size(-1) must be equal to input_size. Expected {input_size}, got "
            f"{input.shape[-1]}"
        )
    return input.ndim == batched_rank


def _reset_uniform(module) -> None:
    """Every parameter uniform in +-1/sqrt(hidden_size), PyTorch's recurrent initialisation."""
    bound = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0
    for weight in module.parameters():
        init.uniform_(weight, -bound, bound)


def _check_state(name, state, expected) -> None:
    if tuple(state.shape) != expected:
        raise RuntimeError(f"Expected {name} size {expected}, got {list(state.shape)}")


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
        if proj_size < 0:
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections"
            )
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if proj_size >= hidden_size > 0:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an "
                "element being zeroed"
            )
        if hidden_size <= 0 or num_layers <= 0:
            raise ValueError("hidden_size and num_layers must be greater than zero")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        gates = GATES[mode] * hidden_size
        directions = 2 if bidirectional else 1
        real = self._real_hidden_size
        factory = {"device": device, "dtype": dtype}
        for layer in range(num_layers):
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                width = input_size if layer == 0 else real * directions
                shapes = {"weight_ih": (gates, width), "weight_hh": (gates, real)}
                if bias:
                    shapes.update(bias_ih=(gates,), bias_hh=(gates,))
                if proj_size:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                for name, shape in shapes.items():
                    setattr(self, name + suffix, Parameter(ember.empty(shape, **factory)))
        self.reset_parameters()

    @property
    def _real_hidden_size(self) -> int:
        """The size of h: the projection's when LSTM has ``proj_size``, else ``hidden_size``."""
        return self.proj_size or self.hidden_size

    def reset_parameters(self) -> None:
        _reset_uniform(self)

    def _weights(self, layer, direction):
        suffix = f"_l{layer}" + ("_reverse" if direction else "")
        get = self._parameters.get
        return (
            get(f"weight_ih{suffix}"),
            get(f"weight_hh{suffix}"),
            get(f"bias_ih{suffix}"),
            get(f"bias_hh{suffix}"),
            get(f"weight_hr{suffix}"),
        )

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        batched = _check_input(input, 3, self.input_size)
        x = input if batched else input.unsqueeze(0 if self.batch_first else 1)
        batch = x.shape[0 if self.batch_first else 1]
        h0, c0 = self._initial_state(hx, x, batch, batched)
        op = getattr(ember.ops, OPS[self.mode])
        result = op(
            x,
            (h0, c0) if self.mode == "LSTM" else h0,
            self._flat_weights(),
            self.bias,
            self.num_layers,
            self.dropout,
            self.training,
            self.bidirectional,
            self.batch_first,
        )
        output, h_n = result[0], result[1]
        c_n = result[2] if self.mode == "LSTM" else None
        if not batched:
            output, h_n = output.squeeze(0 if self.batch_first else 1), h_n.squeeze(1)
            c_n = None if c_n is None else c_n.squeeze(1)
        return (output, (h_n, c_n)) if self.mode == "LSTM" else (output, h_n)

    def _flat_weights(self) -> list:
        """The parameters in aten's order: per layer and direction w_ih, w_hh, b_ih, b_hh,
        w_hr (those the layer has)."""
        directions = 2 if self.bidirectional else 1
        return [
            w
            for layer in range(self.num_layers)
            for direction in range(directions)
            for w in self._weights(layer, direction)
            if w is not None
        ]

    def _forward_packed(self, packed, hx):
        """A PackedSequence through the layers: padded, run with each sequence's own steps,
        packed again; the initial and final states in the caller's batch order."""
        _check_input(packed.data, 2, self.input_size)
        # padded in the packed (sorted) batch order, where lengths decrease
        padded, lengths = pad_packed_sequence(PackedSequence(packed.data, packed.batch_sizes))
        if hx is not None and packed.sorted_indices is not None:
            order = packed.sorted_indices
            hx = (
                tuple(h.index_select(1, order) for h in hx)
                if self.mode == "LSTM"
                else (hx.index_select(1, order))
            )
        steps = ember.arange(padded.shape[0], device=padded.device).view(-1, 1, 1)
        active = steps < lengths.to(padded.device).view(1, -1, 1)
        output, h_n, c_n = self._layers(
            padded, self._initial_state(hx, padded, padded.shape[1], True), active
        )
        data = pack_padded_sequence(output, lengths).data
        output = PackedSequence(
            data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices
        )
        if packed.unsorted_indices is not None:
            h_n = h_n.index_select(1, packed.unsorted_indices)
            c_n = None if c_n is None else c_n.index_select(1, packed.unsorted_indices)
        return (output, (h_n, c_n)) if self.mode == "LSTM" else (output, h_n)

    def _layers(self, x, initial, active):
        """Every layer and direction over time-major ``x``: (output, h_n, c_n or None)."""
        directions = 2 if self.bidirectional else 1
        weights = [
            self._weights(layer, direction)
            for layer in range(self.num_layers)
            for direction in range(directions)
        ]
        h0, c0 = initial
        return run_layers(
            self.mode, x, h0, c0, weights, self.num_layers, self.bidirectional, self.dropout,
            self.training, active,
        )  # fmt: skip

    def _initial_state(self, hx, x, batch, batched):
        """``(h0, c0)`` as (layers * directions, batch, hidden); zeros when ``hx`` is None."""
        directions = 2 if self.bidirectional else 1
        lead = (self.num_layers * directions, batch)
        sizes = (lead + (self._real_hidden_size,), lead + (self.hidden_size,))
        if hx is None:
            h0, c0 = (ember.zeros(size, dtype=x.dtype, device=x.device) for size in sizes)
            return h0, c0
        states = hx if self.mode == "LSTM" else (hx,)
        names = ("hidden[0]", "hidden[1]") if self.mode == "LSTM" else ("hidden",)
        checked = []
        for name, state, expected in zip(names, states, sizes):
            if state.ndim != (3 if batched else 2):
                kind = "batched 3-D" if batched else "unbatched 2-D"
                raise RuntimeError(
                    f"For {kind} input, hx{name[6:]} should also be {3 if batched else 2}-D but "
                    f"got {state.ndim}-D tensor"
                )
            state = state if batched else state.unsqueeze(1)
            _check_state(name, state, expected)
            checked.append(state)
        return (checked[0], checked[1]) if self.mode == "LSTM" else (checked[0], None)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            text += f", proj_size={self.proj_size}"
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
    _mode = "RNN_TANH"

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        factory = {"device": device, "dtype": dtype}
        rows = num_chunks * hidden_size  # one block of rows per gate
        self.weight_ih = Parameter(ember.empty(rows, input_size, **factory))
        self.weight_hh = Parameter(ember.empty(rows, hidden_size, **factory))
        if bias:
            self.bias_ih = Parameter(ember.empty(rows, **factory))
            self.bias_hh = Parameter(ember.empty(rows, **factory))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_uniform(self)

    def forward(self, input, hx=None):
        batched = _check_input(input, 2, self.input_size)
        x = input if batched else input.unsqueeze(0)
        expected = (x.shape[0], self.hidden_size)
        if hx is None:
            zeros = ember.zeros(expected, dtype=x.dtype, device=x.device)
            hx = (zeros, zeros) if self._mode == "LSTM" else zeros
        else:
            states = hx if self._mode == "LSTM" else (hx,)
            states = [s if batched else s.unsqueeze(0) for s in states]
            for i, state in enumerate(states):
                _check_state(f"hidden[{i}]" if self._mode == "LSTM" else "hidden", state, expected)
            hx = tuple(states) if self._mode == "LSTM" else states[0]
        gi = F.linear(x, self.weight_ih, self.bias_ih)
        out = step(self._mode)(gi, hx, self.weight_hh, self.bias_hh)
        if batched:
            return out
        return tuple(o.squeeze(0) for o in out) if self._mode == "LSTM" else out.squeeze(0)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            text += f", nonlinearity={self.nonlinearity}"
        return text


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""

    def __init__(
        self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None
    ):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity
        self._mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"


class LSTMCell(RNNCellBase):
    """One LSTM step; ``hx`` is ``(h, c)``."""

    _mode = "LSTM"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)


class GRUCell(RNNCellBase):
    """One GRU step."""

    _mode = "GRU"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)
