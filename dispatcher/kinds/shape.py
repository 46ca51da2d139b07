"""``cat``: implemented by the core for every device as copies into slices of one output."""

from __future__ import annotations

from ember._tensor import Tensor, empty

from ..promotion import result_type
from ._common import OPS, check_tensor_lists, common_device, wrap_dim
from .view import narrow


def cat(op, tensors, dim=0):
    check_tensor_lists(op, (tensors,))
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"cat(): expected a sequence of Tensors, but element {i} is {type(t).__name__}"
            )
    # PyTorch skips 1-D empty tensors (legacy), so cat([x, ember.tensor([])]) works.
    shaped = [t for t in tensors if t._shape != (0,)] or tensors[:1]
    ref = shaped[0]
    if not ref._shape:
        raise RuntimeError("cat(): zero-dimensional tensor cannot be concatenated")
    d = wrap_dim(dim, len(ref._shape), "cat")
    for i, t in enumerate(shaped):
        if len(t._shape) != len(ref._shape):
            raise RuntimeError(
                f"cat(): Tensors must have same number of dimensions: got {len(ref._shape)} and "
                f"{len(t._shape)}"
            )
        for k, (a, b) in enumerate(zip(t._shape, ref._shape)):
            if k != d and a != b:
                raise RuntimeError(
                    f"cat(): Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{b} but got size {a} for tensor number {i} in the list."
                )
    dtype = result_type(tensors, Tensor)
    dev = common_device("cat", tensors)
    total = sum(t._shape[d] for t in shaped)
    out = empty(ref._shape[:d] + (total,) + ref._shape[d + 1 :], dtype, dev)
    start = 0
    copy_ = OPS["copy_"]
    for t in shaped:
        length = t._shape[d]
        if length:
            copy_.backend((narrow(op, out, d, start, length), t))
        start += length
    return out
