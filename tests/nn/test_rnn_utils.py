"""nn.utils.rnn (pack/pad/unpad) and PackedSequence through RNN, GRU and LSTM, against
PyTorch: values, lengths, permutations, final states and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.utils.rnn as R

from .oracle import assert_close, check_module, check_param_grads, flatten, pair, to_ember, to_torch

torch = pytest.importorskip("torch")
TR = torch.nn.utils.rnn


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize(
    "lengths, enforce_sorted", [([5, 3, 3, 1], True), ([2, 5, 3, 5], False), ([4], True)]
)
def test_pack_pad_roundtrip(device, rng, lengths, enforce_sorted, batch_first):
    shape = (len(lengths), 5, 2) if batch_first else (5, len(lengths), 2)
    x = rng.standard_normal(shape).astype(np.float32)

    def run(module):
        def fn(x):
            packed = module.pack_padded_sequence(x, lengths, batch_first, enforce_sorted)
            padded, sizes = module.pad_packed_sequence(packed, batch_first, -1.0, total_length=6)
            return packed.data, packed.batch_sizes, padded, sizes

        return fn

    check_module(run(R), run(TR), [x], device)
    if not enforce_sorted:
        packed = R.pack_padded_sequence(to_ember(x, device), lengths, batch_first, False)
        reference = TR.pack_padded_sequence(to_torch(x), lengths, batch_first, False)
        assert packed.sorted_indices.tolist() == reference.sorted_indices.tolist()
        assert packed.unsorted_indices.tolist() == reference.unsorted_indices.tolist()


@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_unpad_pack_sequence(device, rng, padding_side):
    arrays = [rng.standard_normal((n, 3)).astype(np.float32) for n in (2, 4, 1)]
    ours = R.pad_sequence([to_ember(a, device) for a in arrays], True, 0.5, padding_side)
    theirs = TR.pad_sequence([to_torch(a) for a in arrays], True, 0.5, padding_side)
    assert_close(ours, theirs, "pad_sequence")
    if padding_side == "right":
        pieces = R.unpad_sequence(ours, ember.tensor([2, 4, 1]), batch_first=True)
        for piece, a in zip(pieces, arrays):
            np.testing.assert_array_equal(piece.cpu().numpy(), a)
    packed = R.pack_sequence([to_ember(a, device) for a in arrays], enforce_sorted=False)
    reference = TR.pack_sequence([to_torch(a) for a in arrays], enforce_sorted=False)
    assert_close(packed.data, reference.data, "pack_sequence")
    for piece, a in zip(R.unpack_sequence(packed), arrays):
        np.testing.assert_array_equal(piece.cpu().numpy(), a)


def test_rnn_utils_errors():
    x = ember.randn(5, 3, 2)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        R.pack_padded_sequence(x, [2, 5, 3])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        R.pack_padded_sequence(x, [5, 3, 0])
    packed = R.pack_padded_sequence(x, [5, 3, 2])
    with pytest.raises(ValueError, match="Expected total_length to be at least"):
        R.pad_packed_sequence(packed, total_length=4)
    assert R.invert_permutation(None) is None
    assert R.invert_permutation(ember.tensor([2, 0, 1])).tolist() == [1, 2, 0]


RECURRENT = [
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu", "batch_first": True}),
    ("GRU", {"num_layers": 2}),
    ("GRU", {"bidirectional": True, "batch_first": True}),
    ("LSTM", {}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"proj_size": 2, "bidirectional": True}),
]


@pytest.mark.parametrize("with_state", [False, True], ids=["zeros", "given-state"])
@pytest.mark.parametrize("name, kwargs", RECURRENT, ids=[f"{n}-{k}" for n, k in RECURRENT])
def test_packed_sequence_through_recurrent_layers(device, rng, name, kwargs, with_state):
    ours, theirs = pair(name, 3, 4, device=device, **kwargs)
    batch_first = kwargs.get("batch_first", False)
    lengths = [3, 5, 2]
    x = rng.standard_normal((3, 5, 3) if batch_first else (5, 3, 3)).astype(np.float32)
    layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    hidden = kwargs.get("proj_size") or 4
    states = [rng.standard_normal((layers, 3, hidden)).astype(np.float32)]
    if name == "LSTM":
        states.append(rng.standard_normal((layers, 3, 4)).astype(np.float32))

    def run(module, rnn_utils):
        def fn(x, *state):
            packed = rnn_utils.pack_padded_sequence(x, lengths, batch_first, False)
            hx = None
            if state:
                hx = tuple(state) if name == "LSTM" else state[0]
            output, final = module(packed, hx)
            padded, _ = rnn_utils.pad_packed_sequence(output, batch_first)
            return padded, final

        return fn

    inputs = [x, *states] if with_state else [x]
    check_module(run(ours, R), run(theirs, TR), inputs, device)
    check_param_grads(ours, theirs)
    assert len(flatten(run(ours, R)(to_ember(x, device)))) == (3 if name == "LSTM" else 2)
