"""While tracing: ``pack_padded_sequence``, ``RNNBase``'s packed forward and
``pad_packed_sequence`` recorded as one node each (see jit/packed.py). Each runs the eager code
with recording suspended, then records its node over the padded batch and lengths values."""

from __future__ import annotations

import sys

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
        if not (state.recording() and enforce_sorted and isinstance(lengths, Tensor)):
            return packed._PACK(input, lengths, batch_first, enforce_sorted)
        result = _eager(state, packed._PACK, input, lengths, batch_first)
        inputs = [input, lengths, bool(batch_first)]
        _record(state, packed.PACK, inputs, [result.data, result.batch_sizes])
        return result

    def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
        plain = sequence.unsorted_indices is None and total_length is None
        if not (state.recording() and plain and _packed_here(state, sequence)):
            return packed._PAD(sequence, batch_first, padding_value, total_length)
        result = _eager(state, packed._PAD, sequence, batch_first, padding_value)
        inputs = [sequence.data, sequence.batch_sizes, bool(batch_first), float(padding_value)]
        _record(state, packed.PAD, inputs, list(result))
        return result

    original_forward = RNNBase._forward_packed

    def forward_packed(module, sequence, hx):
        plain = sequence.sorted_indices is None and not module.proj_size
        if not (state.recording() and plain and _packed_here(state, sequence)):
            return original_forward(module, sequence, hx)
        output, final = _eager(state, original_forward, module, sequence, hx)
        inputs = [module.mode, sequence.data, sequence.batch_sizes, hx, module._flat_weights()]
        inputs += [module.bias, module.num_layers, float(module.dropout), module.training]
        inputs += [module.bidirectional]
        _record(state, packed.RUN, inputs, [output.data, *_leaves(final)])
        return output, final

    patched = [(RNNBase, "_forward_packed", forward_packed, original_forward)]
    for fn in (pack_padded_sequence, pad_packed_sequence):
        original = getattr(_rnn, fn.__name__)
        patched += [(m, fn.__name__, fn, original) for m in _holders(fn.__name__, original)]
    return patched


def _leaves(final) -> list:
    return list(final) if isinstance(final, tuple) else [final]


def _holders(name: str, fn) -> list:
    """The loaded modules that hold ``fn`` under ``name`` (``from ... import`` copies it)."""
    return [m for m in list(sys.modules.values()) if getattr(m, "__dict__", {}).get(name) is fn]
