"""``cat``: implemented by the core for every device as copies into slices of one output.
``stack``: one backend call for the list (``kernel(out, tensors, dim)``, the tensors
contiguous, of one shape, dtype and device) where the backend has the kernel; its decomposition
(an unsqueeze per tensor, then cat) otherwise, which also raises PyTorch's errors."""

from __future__ import annotations

from ember._tensor import Tensor, empty

from ..promotion import result_type
from ._common import OPS, check_tensor_lists, common_device, contiguous, wrap_dim
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


def stack(op, tensors, dim=0):
    check_tensor_lists(op, (tensors,))
    tensors = list(tensors)
    kernel = _stack_kernel(op, tensors)
    if kernel is None:
        return op.decomposition(tensors, dim)
    first = tensors[0]
    shape = first._shape
    d = wrap_dim(dim, len(shape) + 1, "stack")
    out = empty(shape[:d] + (len(tensors),) + shape[d:], first._dtype, first._storage.device)
    kernel(out, [contiguous(t) for t in tensors], d)
    return out


def _stack_kernel(op, tensors):
    """The backend's kernel when the list is of tensors of one shape, dtype and device."""
    if not tensors or not isinstance(tensors[0], Tensor):
        return None
    first = tensors[0]
    shape, dtype, device = first._shape, first._dtype, first._storage.device
    for t in tensors:
        if not isinstance(t, Tensor) or t._shape != shape or t._dtype is not dtype:
            return None
        if t._storage.device is not device:
            return None
    return op.kernel(device.type, dtype)


# vmap and forward AD run the decomposition, whose parts carry batch dims and tangents
stack.fused = True
