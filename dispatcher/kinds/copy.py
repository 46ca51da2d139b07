"""Data movement: ``copy_`` (strided, casting, across devices), ``_to_copy``, flip and friends.

Within one device ``copy_`` is the backend's kernel. Across devices the bytes travel through host
memory with the runtimes' ``copy_in``/``copy_out`` on contiguous buffers; any cast or re-striding
happens on a device that has the kernel for it.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ember import _dtype as dt
from ember._device import CPU
from ember._tensor import Tensor, empty, host_array, make

from ..memory import normalize_device
from ..overlap import check_internal, check_partial
from ._common import OPS, broadcast_shapes, cast, check_writable, contiguous, expand_to
from ._limits import check_scalar_fits
from .complex import part, real_part, view_as_real
from .view import negative_stride_view


def _byte_offset(t: Tensor) -> int:
    return t._storage.byte_offset + t._offset * t._dtype.itemsize


def _bytes(host: Tensor):
    """A contiguous host tensor as the flat uint8 array the runtime contract promises (a typed
    bfloat16 array exports no buffer, so runtimes could not read it)."""
    return host_array(host).reshape(-1).view(np.uint8)


def _pinned_runtime(t: Tensor):
    """The runtime of ``t``'s device when it can copy asynchronously through pinned memory."""
    runtime = t._storage.runtime
    return runtime if getattr(runtime, "host_alloc", None) is not None else None


def _to_host(src: Tensor, non_blocking: bool = False) -> Tensor:
    """A contiguous CPU tensor with ``src``'s values (src on another device). With
    ``non_blocking`` on a device that pins, the copy lands in pinned memory and may still be
    running when this returns (synchronize before reading it), as in PyTorch."""
    src = contiguous(src)
    runtime = _pinned_runtime(src) if non_blocking else None
    if runtime is not None:
        from ember._pinned import pinned_empty

        host = pinned_empty(src._shape, src._dtype, runtime)
    else:
        host = empty(src._shape, src._dtype, CPU)
    if math.prod(src._shape):
        extra = {"non_blocking": True} if runtime is not None else {}
        src._storage.runtime.copy_out(
            _bytes(host),
            src._storage.handle,
            _byte_offset(src),
            src._storage.device.index,
            **extra,
        )
    return host


def _from_host(host: Tensor, device, non_blocking: bool = False) -> Tensor:
    """A contiguous tensor on ``device`` with the values of the contiguous CPU tensor ``host``;
    asynchronous when asked and ``host`` is pinned."""
    out = empty(host._shape, host._dtype, device)
    if math.prod(host._shape):
        runtime = out._storage.runtime
        pinned = non_blocking and _pinned_runtime(out) and runtime.is_pinned(host._storage.owner)
        extra = {"non_blocking": True} if pinned else {}
        runtime.copy_in(out._storage.handle, _byte_offset(out), _bytes(host), device.index, **extra)
    return out


def transfer(src: Tensor, device, dtype=None, non_blocking: bool = False) -> Tensor:
    """``src`` on ``device`` (contiguous), cast to ``dtype`` on whichever side is cheaper."""
    dtype = dtype or src._dtype
    if src._storage.device is device:
        return cast(src, dtype) if (src._dtype is not dtype or not src._contig) else src
    if src._storage.device is not CPU:
        host = _to_host(src, non_blocking and device is CPU and src._dtype is dtype)
        host = cast(host, dtype) if host._dtype is not dtype else host
        return host if device is CPU else _from_host(host, device)
    host = cast(src, dtype) if (src._dtype is not dtype or not src._contig) else src
    return _from_host(host, device, non_blocking and host is src)


def _broadcast_or_none(a: tuple, b: tuple):
    try:
        return broadcast_shapes("copy_", a, b)
    except RuntimeError:
        return None


def copy_(op, dst, src, non_blocking=False):
    """``dst[...] = src`` with broadcasting, casting and device transfer; bumps dst's version."""
    if not isinstance(dst, Tensor):
        raise TypeError(f"copy_(): self must be a Tensor, got {type(dst).__name__}")
    if not isinstance(src, Tensor):
        if not isinstance(src, (numbers.Number, np.generic)):  # PyTorch takes numbers only
            error = TypeError(
                f"copy_(): argument 'other' (position 1) must be Tensor, not {type(src).__name__}"
            )
            error.names_argument = True  # PyTorch's words: Op.__call__ keeps them
            raise error
        from ember._factories import tensor as make_tensor

        src = make_tensor(src, dtype=dst._dtype)
    if src._shape != dst._shape and (
        len(src._shape) > len(dst._shape)
        or _broadcast_or_none(dst._shape, src._shape) != dst._shape
    ):
        raise RuntimeError(
            f"copy_(): the source of shape {list(src._shape)} can't be broadcast to the "
            f"destination of shape {list(dst._shape)}"
        )
    check_internal("copy_", dst)
    if src._storage is dst._storage:
        check_partial("copy_", dst, src, "source")
    dev = dst._storage.device
    if src._storage.device is not dev:
        src = transfer(src, dev, dst._dtype, non_blocking)
    if src._shape != dst._shape:
        src = expand_to(src, dst._shape)
    if src._dtype.category == dt.COMPLEX and dst._dtype.category != dt.COMPLEX:
        src = real_part(src)  # PyTorch keeps the real parts (and warns)
    if dst._dtype.category == dt.COMPLEX and dev.type != "cpu":
        _copy_parts(op, dst, src)  # complex kernels are CPU only: copy the parts as reals
    elif math.prod(dst._shape):
        if dev.type not in ("cpu", "meta") and dt.LIMITED_SET & {dst._dtype, src._dtype}:
            if dst._dtype is not src._dtype:
                raise limited_off_cpu(
                    "copy_", dst._dtype if dst._dtype in dt.LIMITED else src._dtype, dev
                )
            # the same dtype moves bits only: copied as the signed integers of its width
            bits = _as_bits(dst)
            op.kernel(dev.type, bits._dtype)(bits, _as_bits(src))
        else:
            op.kernel(dev.type, dst._dtype)(dst, src)
    dst._storage.version += 1
    return dst


_BITS = {1: dt.int8, 2: dt.int16, 4: dt.int32, 8: dt.int64}


def _as_bits(t: Tensor) -> Tensor:
    """``t``'s elements read as the signed integers of their width (same storage and strides)."""
    return make(t._storage, t._shape, t._stride, t._offset, _BITS[t._dtype.itemsize], t._contig)


def limited_off_cpu(name: str, dtype, device) -> NotImplementedError:
    """Device kernels know no float8 or uint16/32/64: ``.to()`` moves them (casting on the CPU),
    in-place copies and fills into them run on the CPU only, so far."""
    return NotImplementedError(
        f"{name}: {dtype.name} tensors are copied in place and filled on the CPU only, not on "
        f"{device} (create them on the CPU and move them with .to(), docs/float8.md)"
    )


def _copy_parts(op, dst, src) -> None:
    """A copy into a complex tensor on a device without complex kernels, over the real kernels
    of its parts (the CPU fallback of copy_ itself would call copy_ again to copy back)."""
    if src._dtype.category == dt.COMPLEX:
        copy_(op, view_as_real(None, dst), view_as_real(None, src))
        return
    copy_(op, part(dst, 0), src)
    OPS["fill_"](part(dst, 1), 0)


def to_copy(op, x, dtype=None, device=None, non_blocking=False):
    """A fresh copy of ``x``, possibly in another dtype and on another device."""
    dtype = dtype or x._dtype
    device = x._storage.device if device is None else normalize_device(device)
    if device is x._storage.device:
        return cast(x, dtype)
    return transfer(x, device, dtype, non_blocking)


def flip(op, x, dims):
    from ._common import wrap_dims

    dims = wrap_dims(dims, len(x._shape), "flip")
    return contiguous(negative_stride_view(x, dims)) if dims else cast(x, x._dtype)


def fill_(op, x, value):
    if isinstance(value, Tensor):
        if value._shape:
            raise RuntimeError(
                f"fill_ only supports 0-dimension value tensor but got tensor with "
                f"{len(value._shape)} dimensions."
            )
        value = 0 if x._storage.device.type == "meta" else value.item()  # meta: nothing to fill
    else:
        check_scalar_fits("fill_", value, x._dtype)  # a tensor's value wraps, as in torch
    # Filling is idempotent: PyTorch lets elements sharing memory (expanded views) be filled.
    check_writable("fill_", x)
    if x._dtype in dt.LIMITED and x._storage.device.type not in ("cpu", "meta"):
        raise limited_off_cpu("fill_", x._dtype, x._storage.device)
    if math.prod(x._shape):
        op.kernel(x._storage.device.type, x._dtype)(x, value)
    x._storage.version += 1
    return x


def zero_(op, x):
    return OPS["fill_"](x, 0)
