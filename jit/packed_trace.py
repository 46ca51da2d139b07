"""While tracing: ``pack_padded_sequence``, ``RNNBase``'s packed forward and
``pad_packed_sequence`` recorded as one node each (see jit/packed.py). Each runs the eager code
with recording suspended, then records its node over the padded batch and lengths values."""

from __future__ import annotations

import sys

import ember
from ember._tensor import Tensor
from ember.nn.modules.rnn import RNNBase
from ember.nn.utils import rnn as _rnn

from . import packed
from . import types as T


def _record(state, kind: str, inputs: list, outputs: list):
    node = state.insert(kind, [state.value_of(i) for i in inputs], num_outputs=0)
    for tensor in outputs:
        state.bind(tensor, node.addOutput(T.TensorType.of(tensor)))


def _eager(state, fn, *args):
    state.suspended += 1  # the eager steps are not the graph's
    try:
        return fn(*args)
    finally:
        state.suspended -= 1


def _packed_here(state, sequence) -> bool:
    """Whether ``sequence``'s batch sizes come from a recorded ``prim::PackPadded``."""
    value = state.env.get(id(sequence.batch_sizes))
    return value is not None and value.node().kind() == packed.PACK


def replacements(state) -> list:
    """``(owner, name, replacement, original)`` for tracing_patches."""

    def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
        if not (state.recording() and isinstance(lengths, Tensor)):
            return packed._PACK(input, lengths, batch_first, enforce_sorted)
        order = unsorted = None
        if not enforce_sorted:
            # the sort recorded as ops (ONNX TopK and Gather, as torch.onnx writes it): the
            # nodes below see a sorted batch. Stable, as the eager sort: equal lengths keep
            # their order (ONNX's TopK breaks ties by index too)
            lengths, order = ember.sort(lengths, descending=True, stable=True)
            order = order.to(input.device)
            input = input.index_select(0 if batch_first else 1, order)
            unsorted = ember.argsort(order)  # the inverse permutation
        result = _eager(state, packed._PACK, input, lengths, batch_first)
        inputs = [input, lengths, bool(batch_first)]
        _record(state, packed.PACK, inputs, [result.data, result.batch_sizes])
        return _rnn.PackedSequence(result.data, result.batch_sizes, order, unsorted)

    def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
        if not (state.recording() and total_length is None and _packed_here(state, sequence)):
            return packed._PAD(sequence, batch_first, padding_value, total_length)
        rows = _rnn.PackedSequence(sequence.data, sequence.batch_sizes)
        result = _eager(state, packed._PAD, rows, batch_first, padding_value)
        inputs = [sequence.data, sequence.batch_sizes, bool(batch_first), float(padding_value)]
        _record(state, packed.PAD, inputs, list(result))
        padded, lengths = result
        unsorted = sequence.unsorted_indices
        if unsorted is None:
            return result
        padded = padded.index_select(0 if batch_first else 1, unsorted)
        return padded, lengths.index_select(0, unsorted.to(lengths.device))

    original_forward = RNNBase._forward_packed

    def forward_packed(module, sequence, hx):
        if not (state.recording() and not module.proj_size and _packed_here(state, sequence)):
            return original_forward(module, sequence, hx)
        order, unsorted = sequence.sorted_indices, sequence.unsorted_indices
        if order is not None and hx is not None:  # the caller's batch order to the sorted one
            hx = _permuted(hx, order)
        rows = _rnn.PackedSequence(sequence.data, sequence.batch_sizes)
        output, final = _eager(state, original_forward, module, rows, hx)
        inputs = [module.mode, sequence.data, sequence.batch_sizes, hx, module._flat_weights()]
        inputs += [module.bias, module.num_layers, float(module.dropout), module.training]
        inputs += [module.bidirectional]
        _record(state, packed.RUN, inputs, [output.data, *_leaves(final)])
        if unsorted is not None:  # final states back in the caller's order
            final = _permuted(final, unsorted)
        return _rnn.PackedSequence(output.data, output.batch_sizes, order, unsorted), final

    patched = [(RNNBase, "_forward_packed", forward_packed, original_forward)]
    for fn in (pack_padded_sequence, pad_packed_sequence):
        original = getattr(_rnn, fn.__name__)
        patched += [(m, fn.__name__, fn, original) for m in _holders(fn.__name__, original)]
    return patched


def _permuted(states, order):
    """``index_select(1, order)`` of a state or an LSTM's (h, c), recorded as ops."""
    if isinstance(states, tuple):
        return tuple(h.index_select(1, order) for h in states)
    return states.index_select(1, order)


def _leaves(final) -> list:
    return list(final) if isinstance(final, tuple) else [final]


def _holders(name: str, fn) -> list:
    """The loaded modules that hold ``fn`` under ``name`` (``from ... import`` copies it)."""
    return [m for m in list(sys.modules.values()) if getattr(m, "__dict__", {}).get(name) is fn]
