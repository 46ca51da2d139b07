"""The recurrent rows (``lstm``, ``gru``, ``rnn_tanh``, ``rnn_relu``) as ONNX ``LSTM``/``GRU``/
``RNN`` nodes, one per layer, as PyTorch's ``_generic_rnn`` (symbolic_opset9.py) writes them.

ONNX packs a layer's weights per direction: ``W`` (directions, gates * hidden, input), ``R``
(directions, gates * hidden, hidden), ``B`` (directions, 2 * gates * hidden: W's biases then
R's), and orders the gates differently: LSTM's are i, o, f, c where PyTorch's are i, f, g, o, and
GRU's z, r, h where PyTorch's are r, z, n (``linear_before_reset=1`` is PyTorch's GRU, whose reset
gate multiplies ``W_hn h + b_hn``). The time loop runs inside the node, so the sequence length
stays dynamic; ``batch_first`` transposes around the layers. A packed batch (jit/packed.py's
prims) gives the node ``sequence_lens``: the padded batch stands for the packed rows.
"""

from __future__ import annotations

from ember import _dtype as dt
from ember._tensor import Tensor

from ..builder import V

# Blocks of ``hidden`` rows, in ONNX's gate order, taken from PyTorch's (None: one gate)
_GATE_BLOCKS = {"LSTM": ((0, 1), (3, 4), (1, 3)), "GRU": ((1, 2), (0, 1), (2, 3))}
_ACTIVATION = {"RNN_TANH": "Tanh", "RNN_RELU": "Relu"}


def _values(g, items) -> list[V]:
    """The layer's tensors as ONNX values: frozen weights arrive as ember tensors (the freezing
    passes fold the parameter list into one constant) and become initializers."""
    hint = f"{g.scope}.weight" if g.scope else "weight"
    return [g.const_tensor(t, hint) if isinstance(t, Tensor) else t for t in items]


def _slice(g, x: V, start: int, end: int) -> V:
    """Rows ``start:end`` of dim 0."""
    axes = g.const([0], dt.int64)
    return g.op("Slice", x, g.const([start], dt.int64), g.const([end], dt.int64), axes)


def _reordered(g, w: V, mode: str, hidden: int) -> V:
    blocks = _GATE_BLOCKS.get(mode)
    if blocks is None:
        return w
    pieces = [_slice(g, w, start * hidden, end * hidden) for start, end in blocks]
    return g.op("Concat", *pieces, axis=0)


def _packed(g, units: list, mode: str, hidden: int, has_biases: bool) -> tuple:
    """(W, R, B or None) of one layer from its directions' (w_ih, w_hh[, b_ih, b_hh])."""

    def stacked(tensors):
        return g.op("Concat", *(g.unsqueeze(t, 0) for t in tensors), axis=0)

    weights = [[_reordered(g, w, mode, hidden) for w in unit] for unit in units]
    w = stacked([unit[0] for unit in weights])
    r = stacked([unit[1] for unit in weights])
    if not has_biases:
        return w, r, None
    b = stacked([g.op("Concat", unit[2], unit[3], axis=0) for unit in weights])
    return w, r, b


def _recurrent(mode: str):
    lstm = mode == "LSTM"
    op_type = "LSTM" if lstm else "GRU" if mode == "GRU" else "RNN"

    def rule(g, input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
             batch_first, *, sequence_lens=None):  # fmt: skip
        directions = 2 if bidirectional else 1
        per_unit = 4 if has_biases else 2
        if len(params) != num_layers * directions * per_unit:
            raise g.unsupported("LSTMs with projections (ONNX's LSTM has no projection)")
        if dropout and train:
            raise g.unsupported("dropout in training mode (export in eval mode)")
        params = _values(g, params)
        hidden = params[1].sizes[1]
        attrs = {"hidden_size": hidden}
        if bidirectional:
            attrs["direction"] = "bidirectional"
        if mode in _ACTIVATION:
            attrs["activations"] = [_ACTIVATION[mode]] * directions
        if mode == "GRU":
            attrs["linear_before_reset"] = 1
        if hx is None:  # a packed batch with no initial state: ONNX's default, zeros
            states = [None, None] if lstm else [None]
        else:
            states = _values(g, list(hx) if lstm else [hx])
        x = g.op("Transpose", input, perm=[1, 0, 2]) if batch_first else input
        finals: list = [[] for _ in states]
        for layer in range(num_layers):
            first = layer * directions * per_unit
            units = [
                params[first + d * per_unit : first + (d + 1) * per_unit] for d in range(directions)
            ]
            w, r, b = _packed(g, units, mode, hidden, has_biases)
            initial = [
                None if s is None else _slice(g, s, layer * directions, (layer + 1) * directions)
                for s in states
            ]
            y, *state_out = g.op(
                op_type, x, w, r, b, sequence_lens, *initial, outputs=1 + len(states), **attrs
            )
            for found, out in zip(finals, state_out):
                found.append(out)
            if bidirectional:  # (T, 2, B, H) -> (T, B, 2 H)
                y = g.op("Transpose", y, perm=[0, 2, 1, 3])
                x = g.op("Reshape", y, g.const([0, 0, -1], dt.int64))
            else:
                x = g.op("Squeeze", y, g.const([1], dt.int64))
        output = g.op("Transpose", x, perm=[1, 0, 2]) if batch_first else x
        ends = [f[0] if len(f) == 1 else g.op("Concat", *f, axis=0) for f in finals]
        return (output, *ends)

    return rule


TABLE = {name: _recurrent(mode) for mode, name in (
    ("LSTM", "lstm"), ("GRU", "gru"), ("RNN_TANH", "rnn_tanh"), ("RNN_RELU", "rnn_relu")
)}  # fmt: skip


# ---- packed batches (jit/packed.py) ------------------------------------------------------------
# ONNX has no packed rows: the padded time-major batch stands for them and the lengths (int32,
# ONNX's sequence_lens) for the batch sizes, from pack_padded_sequence to pad_packed_sequence.
_OPS = {"LSTM": "lstm", "GRU": "gru", "RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu"}


def pack_padded(g, x, lengths, batch_first):
    rows = g.op("Transpose", x, perm=[1, 0, 2]) if batch_first else x
    return rows, g.cast(lengths, dt.int32)


def packed_rnn(g, mode, rows, lengths, hx, params, has_biases, layers, dropout, train, both):
    """The layer's ONNX nodes with ``sequence_lens``: each sequence stops at its length (its
    final state is that step's) and its outputs past it are zeros."""
    rule = TABLE[_OPS[mode]]
    args = (rows, hx, params, has_biases, layers, dropout, train, both, False)
    return rule(g, *args, sequence_lens=lengths)


def pad_packed(g, rows, lengths, batch_first, padding_value):
    """The padded batch cut to the longest sequence (as pad_packed_sequence returns it)."""
    if padding_value != 0.0:
        raise g.unsupported("a padding value other than 0 (ONNX's recurrent nodes pad with 0)")
    longest = g.cast(g.op("ReduceMax", lengths, keepdims=1), dt.int64)
    axes = g.const([0], dt.int64)
    padded = g.op("Slice", rows, g.const([0], dt.int64), longest, axes)
    padded = g.op("Transpose", padded, perm=[1, 0, 2]) if batch_first else padded
    return padded, g.cast(lengths, dt.int64)


PACKED = {"prim::PackPadded": pack_padded, "prim::PackedRNN": packed_rnn}
PACKED["prim::PadPacked"] = pad_packed
