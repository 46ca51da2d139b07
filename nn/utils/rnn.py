"""Variable-length sequences for the recurrent layers: PackedSequence (the time steps of a
batch sorted by length, concatenated, with the batch size at each step) and the functions
that pack, pad and unpad them, as PyTorch's. Packing and padding are one gather / index_add
each, so gradients flow through them."""

from __future__ import annotations

import functools
import itertools
from collections import namedtuple

import ember

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpad_sequence",
    "pack_sequence",
    "unpack_sequence",
]

_PackedSequence = namedtuple(
    "PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"]
)


class PackedSequence(_PackedSequence):
    """A packed batch of sequences: ``data`` (sum of lengths, *), ``batch_sizes`` (how many
    sequences are still running at each step, an int64 CPU tensor), and the permutations from
    and back to the caller's batch order (None when the batch came sorted)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never "
                "be created manually. They should be instantiated by functions like "
                "pack_sequence and pack_padded_sequences in nn.utils.rnn."
            )
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """The data converted (device, dtype); the indices follow the data's device."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self

        def move(t):
            return None if t is None else t.to(data.device)

        return type(self)(
            data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices)
        )

    def cuda(self, device=None):
        return self.to(device if device is not None else "cuda")

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self.to(dtype=ember.float64)

    def float(self):
        return self.to(dtype=ember.float32)

    def half(self):
        return self.to(dtype=ember.float16)

    def long(self):
        return self.to(dtype=ember.int64)

    def int(self):
        return self.to(dtype=ember.int32)

    @property
    def is_cuda(self) -> bool:
        return self.data.device.type == "cuda"

    def is_pinned(self) -> bool:
        return self.data.is_pinned()


def invert_permutation(permutation):
    """The permutation that undoes ``permutation`` (None stays None)."""
    if permutation is None:
        return None
    positions = ember.arange(permutation.numel(), device=permutation.device)
    return ember.empty_like(permutation).scatter(0, permutation, positions)


def _lengths_list(lengths) -> list:
    if isinstance(lengths, ember.Tensor):
        if lengths.ndim != 1 or lengths.device.type != "cpu":
            raise RuntimeError(
                "'lengths' argument should be a 1D CPU int64 tensor, but got "
                f"{lengths.ndim}D {lengths.device} {lengths.dtype.name} tensor"
            )
        return [int(n) for n in lengths.tolist()]
    return [int(n) for n in lengths]


@functools.lru_cache(maxsize=128)
def _packing(lengths: tuple, device: str):
    """For lengths sorted in decreasing order: the batch size at each step and the flat
    (step * batch + sequence) positions of the packed rows in a (T, B) layout."""
    steps, batch = (lengths[0] if lengths else 0), len(lengths)
    sizes = [sum(1 for n in lengths if n > t) for t in range(steps)]
    rows = [t * batch + b for t in range(steps) for b in range(sizes[t])]
    return (
        ember.tensor(sizes, dtype=ember.int64),
        ember.tensor(rows, dtype=ember.int64, device=device),
    )


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded (T, B, *) batch (or (B, T, *) with ``batch_first``) of sequences of the
    given ``lengths``; unless ``enforce_sorted`` they are sorted by length (stably) first."""
    lengths = _lengths_list(lengths)
    if enforce_sorted:
        if any(a < b for a, b in itertools.pairwise(lengths)):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability."
            )
        sorted_indices = None
    else:
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        sorted_indices = ember.tensor(order, dtype=ember.int64, device=input.device)
        lengths = [lengths[i] for i in order]
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if any(n <= 0 for n in lengths):
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' "
            "that is <= 0"
        )
    if batch_first:
        input = input.transpose(0, 1)
    if lengths[0] > input.shape[0]:
        raise RuntimeError(
            f"Expected sequence length to be at most {input.shape[0]}, but got {lengths[0]} "
            "in 'lengths'"
        )
    batch_sizes, rows = _packing(tuple(lengths), str(input.device))
    flat = input[: lengths[0]].reshape(lengths[0] * input.shape[1], *input.shape[2:])
    return PackedSequence(flat.index_select(0, rows), batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The padded (T, B, *) batch (or (B, T, *)) of a PackedSequence, in the caller's batch
    order, and the lengths (int64 CPU tensor)."""
    data, batch_sizes = sequence.data, sequence.batch_sizes
    sizes = [int(n) for n in batch_sizes.tolist()]
    batch, steps = (sizes[0] if sizes else 0), len(sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{steps}"
            )
        steps = total_length
    lengths = [sum(1 for n in sizes if n > b) for b in range(batch)]
    _, rows = _packing(tuple(lengths), str(data.device))
    padded = ember.full(
        (steps * batch, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device
    )
    padded = padded.index_add(0, rows, data - padding_value).view(steps, batch, *data.shape[1:])
    lengths = ember.tensor(lengths, dtype=ember.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices.cpu()]
    return (padded.transpose(0, 1) if batch_first else padded), lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of shapes (L_i, *) into (L_max, B, *) (or (B, L_max, *)), padded with
    ``padding_value`` on the ``padding_side``."""
    if padding_side not in ("left", "right"):
        raise ValueError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    if isinstance(sequences, ember.Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    longest = max((s.shape[0] for s in sequences), default=0)
    padded = []
    for s in sequences:
        extra = longest - s.shape[0]
        pads = [0, 0] * (s.ndim - 1) + ([0, extra] if padding_side == "right" else [extra, 0])
        padded.append(ember.ops.constant_pad_nd(s, tuple(pads), padding_value) if extra else s)
    return ember.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of unpadded sequences in a padded batch."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:n] for seq, n in zip(padded_sequences, _lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of (L_i, *) sequences."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences in a PackedSequence, in the caller's order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
