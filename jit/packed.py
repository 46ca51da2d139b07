"""PackedSequence through a trace: ``pack_padded_sequence``, a recurrent layer fed the packed
batch and ``pad_packed_sequence`` each record one node (``prim::PackPadded``,
``prim::PackedRNN``, ``prim::PadPacked``) whose inputs are the padded batch and the lengths
tensor, so the lengths stay values of the graph: a replay runs other lengths, and ember.onnx
writes ONNX's recurrent node with its ``sequence_lens`` input (as PyTorch's exporter turns its
``prim::PackPadded`` / ``prim::PadPacked`` pair into that input). The functions here are what
those nodes run; jit/_patches.py records them while tracing.

Recorded: layers without projections, ``pad_packed_sequence`` without ``total_length``. An
unsorted batch (``enforce_sorted=False``) is sorted by recorded ops first (``sort``,
``index_select``, ``argsort`` for the way back: ONNX TopK and Gathers around the recurrent node)
and the nodes see the sorted batch. Anything else traces through the eager code as before (its
steps unrolled, the lengths constants).
"""

from __future__ import annotations

import ember
from ember.nn.functional.recurrent import run_layers, unit_weights
from ember.nn.utils import rnn as _rnn

PACK, RUN, PAD = "prim::PackPadded", "prim::PackedRNN", "prim::PadPacked"

# the eager functions (tracing replaces the module's names while it runs)
_PACK, _PAD = _rnn.pack_padded_sequence, _rnn.pad_packed_sequence


def pack(input, lengths, batch_first: bool):
    """``prim::PackPadded``: the packed rows and the batch sizes."""
    packed = _PACK(input, lengths, batch_first)
    return packed.data, packed.batch_sizes


def recurrent(mode, data, batch_sizes, hx, params, has_biases, layers, dropout, train, both):
    """``prim::PackedRNN``: a recurrent layer over packed rows, as ``RNNBase`` runs a packed
    batch (each sequence stops at its length); (rows, h_n[, c_n])."""
    padded, lengths = _PAD(_rnn.PackedSequence(data, batch_sizes))
    steps = ember.arange(padded.shape[0], device=padded.device).view(-1, 1, 1)
    active = steps < lengths.to(padded.device).view(1, -1, 1)
    lstm = mode == "LSTM"
    if hx is None:
        size = (layers * (2 if both else 1), padded.shape[1], params[1].shape[1])
        zeros = ember.zeros(size, dtype=padded.dtype, device=padded.device)
        hx = (zeros, zeros) if lstm else zeros
    h0, c0 = hx if lstm else (hx, None)
    weights = unit_weights(params, has_biases, layers, both)
    out, h_n, c_n = run_layers(mode, padded, h0, c0, weights, layers, both, dropout, train, active)
    rows = _PACK(out, lengths).data
    return (rows, h_n, c_n) if lstm else (rows, h_n)


def pad(data, batch_sizes, batch_first: bool, padding_value: float):
    """``prim::PadPacked``: the padded batch and the lengths."""
    return _PAD(_rnn.PackedSequence(data, batch_sizes), batch_first, padding_value)
