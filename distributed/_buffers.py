"""Tensors as the buffers a collective backend reads and writes.

A host backend (MPI) gets a C-contiguous numpy array: the tensor's own memory for a contiguous
CPU tensor, else a staging copy written back when the operation completes (xpu tensors go
through the host: MPI cannot address OpenCL buffers). A device backend (NCCL) gets the tensor's
device address and the current stream.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

import ember
from ember._tensor import host_array

DeviceBuffer = namedtuple("DeviceBuffer", "ptr count dtype device stream")
DeviceBuffer.__doc__ = """A span of device memory: address, element count, dtype name, device
index and the native stream handle the operation is ordered after (hookspecs.py)."""


class Staged:
    """``tensor``'s bytes as a backend wants them; ``writeback()`` after the backend wrote."""

    __slots__ = ("_copy", "buffer", "tensor")

    def __init__(self, tensor, memory: str, read_only: bool = False):
        self.tensor = tensor
        self._copy = False
        if memory == "device":
            self.buffer = _device_buffer(tensor)
        elif tensor.device.type == "cpu" and tensor.is_contiguous():
            self.buffer = host_array(tensor).reshape(-1)
        else:
            self.buffer = np.ascontiguousarray(tensor.detach().cpu().numpy()).reshape(-1)
            self._copy = not read_only

    def writeback(self) -> None:
        if self._copy:
            values = ember.from_numpy(self.buffer.reshape(self.tensor.shape))
            with ember.no_grad():
                self.tensor.copy_(values)


def _device_buffer(tensor) -> DeviceBuffer:
    if not tensor.is_contiguous():
        raise ValueError("Tensors must be contiguous")
    device = tensor.device
    stream = getattr(ember, device.type).current_stream(device).cuda_stream
    return DeviceBuffer(tensor.data_ptr(), tensor.numel(), tensor.dtype.name, device.index, stream)


def host_empty(count: int, dtype) -> np.ndarray:
    """A scratch host buffer for results assembled before they are split into tensors."""
    return np.empty(count, dtype=dtype.np)
