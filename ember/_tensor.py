"""The Tensor: storage + shape + strides + offset + dtype, plus autograd's per-tensor state.

Methods that are ops (``add``, ``sum``, ``view``...) are bound from the op table by ``ember._bind``;
this module holds what is not an op: metadata, conversion, and the constructors the dispatcher uses.
"""

from __future__ import annotations

import math

import numpy as np

from . import _dtype as dt
from . import _layout, _memory_format
from ._device import CPU
from ._device import device as Device
from ._size import Size

# shape -> (row-major strides in elements, element count): empty() reads both with one lookup
# (computing math.prod(shape) on every op's output cost about 600 instructions, callgrind).
_LAYOUTS: dict = {}


def contiguous_layout(shape: tuple) -> tuple:
    """``(strides, numel)`` of a contiguous tensor of ``shape``; memoised, shapes repeat a lot."""
    found = _LAYOUTS.get(shape)
    if found is None:
        strides, acc = [], 1
        for size in reversed(shape):
            strides.append(acc)
            acc *= max(size, 1)
        found = (tuple(reversed(strides)), math.prod(shape))
        if len(_LAYOUTS) > 4096:
            _LAYOUTS.clear()
        _LAYOUTS[shape] = found
    return found


def contiguous_strides(shape: tuple) -> tuple:
    """Row-major strides (in elements) of ``shape``; memoised, shapes repeat a lot."""
    return (_LAYOUTS.get(shape) or contiguous_layout(shape))[0]


def is_contiguous(shape: tuple, stride: tuple) -> bool:
    expected = 1
    for size, step in zip(reversed(shape), reversed(stride)):
        if size == 1:
            continue
        if step != expected:
            return size == 0 or any(s == 0 for s in shape)
        expected *= size
    return True


class Tensor:
    """A multi-dimensional array on a device, with autograd support, like ``torch.Tensor``.

    Create tensors with the factories (``ember.tensor``, ``ember.zeros``, ``ember.randn``...);
    ``Tensor(data)`` also works and behaves like ``ember.tensor(data)``.
    """

    __slots__ = (
        "__dict__",
        "__weakref__",
        "_base",
        "_contig",
        "_dtype",
        "_grad",
        "_grad_fn",
        # A leaf's (AccumulateGrad, 0) edge, made by its first recorded call
        # (autograd/node.py leaf_edge) and unset until then: a slot, which recording reads
        # several times cheaper than the __dict__ it lived in.
        "_leaf_edge",
        "_offset",
        "_requires_grad",
        "_shape",
        "_storage",
        "_stride",
    )

    # The lazy math bits (dispatcher/mathbits.py): class defaults, set per tensor in __dict__ by
    # the few views that carry them, so that make() and empty() stay as lean as they are.
    _conj_bit = False
    _neg_bit = False
    # Autograd's output index of a multi-output node's output (autograd/layer.py): a class
    # default too, so that reading it on every recorded output does not create a __dict__.
    _output_nr = 0

    # numpy defers binary operators to ours (np.float64(2) * t is a Tensor, as in PyTorch).
    __array_priority__ = 1000

    def __new__(cls, *args, **kwargs):
        if not args and not kwargs:
            return _empty_default(cls)
        from ._factories import tensor as make_tensor

        made = make_tensor(*args, **kwargs)
        if cls is Tensor:
            return made
        return made.as_subclass(cls)

    def __init__(self, *args, **kwargs):
        pass

    # ---- metadata ----------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._shape)

    def size(self, dim: int | None = None):
        if dim is None:
            return Size(self._shape)
        return self._shape[_wrap_dim(dim, len(self._shape), "size")]

    def stride(self, dim: int | None = None):
        if dim is None:
            return self._stride
        return self._stride[_wrap_dim(dim, len(self._shape), "stride")]

    @property
    def dtype(self) -> dt.dtype:
        return self._dtype

    @property
    def device(self) -> Device:
        return self._storage.device

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    def ndimension(self) -> int:
        return len(self._shape)

    def numel(self) -> int:
        return math.prod(self._shape)

    nelement = numel

    def element_size(self) -> int:
        return self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        return math.prod(self._shape) * self._dtype.itemsize

    def is_contiguous(self, memory_format=None) -> bool:
        if memory_format is None or memory_format.__class__ is not _memory_format.memory_format:
            return self._contig
        if memory_format in _memory_format.CHANNELS_LAST:
            return _memory_format.is_contiguous_as(self._shape, self.stride(), memory_format)
        return self._contig  # contiguous_format, preserve_format: PyTorch's default rule

    def storage_offset(self) -> int:
        return self._offset

    def data_ptr(self) -> int:
        return self._storage.data_ptr() + self._offset * self._dtype.itemsize

    def untyped_storage(self):
        return self._storage

    def storage(self):
        """The deprecated typed view of the storage (PyTorch warns once, so does ember)."""
        from .storage import TypedStorage, _warn_typed_storage_removal

        _warn_typed_storage_removal()
        return TypedStorage(wrap_storage=self._storage, dtype=self._dtype, _internal=True)

    def share_memory_(self) -> Tensor:
        """Move the storage to shared memory (CPU; a no-op for device tensors), so processes
        forked afterwards see and make the same writes. Views of it follow."""
        self._storage.share_memory_()
        return self

    def is_shared(self) -> bool:
        return self._storage.is_shared()

    @property
    def is_cuda(self) -> bool:
        return self._storage.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self._storage.device.type == "cpu"

    @property
    def is_meta(self) -> bool:
        return self._storage.device.type == "meta"

    @property
    def layout(self) -> _layout.layout:
        return _layout.strided  # every ember tensor is dense and strided

    @property
    def is_sparse(self) -> bool:
        return False

    @property
    def is_sparse_csr(self) -> bool:
        return False

    def is_floating_point(self) -> bool:
        return self._dtype.category == dt.FLOATING

    def is_complex(self) -> bool:
        return self._dtype.category == dt.COMPLEX

    def get_device(self) -> int:
        index = self._storage.device.index
        return -1 if index is None else index

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __hash__(self) -> int:
        return id(self)

    # ---- autograd state (the engine lives in ember.autograd) -----------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self._grad_fn is not None:
            if value:
                return
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        if value and self._dtype.category < dt.FLOATING:
            raise RuntimeError(
                "only Tensors of floating point dtype can require gradients "
                f"(got {self._dtype.name})"
            )
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        self.requires_grad = requires_grad
        return self

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None, got {type(value).__name__}"
                )
            if value._shape != self._shape:
                raise RuntimeError(
                    f"assigned grad has data of a different size: {list(value._shape)} vs "
                    f"{list(self._shape)}"
                )
        self._grad = value

    @property
    def grad_fn(self):
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._grad_fn is None

    @property
    def data(self) -> Tensor:
        """This tensor's values without autograd history (shares storage)."""
        out = make(
            self._storage, self._shape, self._stride, self._offset, self._dtype, self._contig
        )
        if self._conj_bit or self._neg_bit:
            _set_bits(out, self._conj_bit, self._neg_bit)
        return out

    @data.setter
    def data(self, other: Tensor) -> None:
        self._storage, self._shape, self._stride = other._storage, other._shape, other._stride
        self._offset, self._dtype, self._contig = other._offset, other._dtype, other._contig

    # ---- conversion --------------------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """A numpy array sharing this tensor's memory (CPU only; ``force=True`` copies others)."""
        if self._requires_grad and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. "
                "Use tensor.detach().numpy() instead."
            )
        if self._storage.device is not CPU:
            if not force:
                raise TypeError(
                    f"can't convert {self._storage.device} tensor to numpy. Use Tensor.cpu() to "
                    "copy the tensor to host memory first."
                )
            return self.detach().cpu().numpy()
        for bit, name in (("_conj_bit", "conjugate"), ("_neg_bit", "negative")):
            if getattr(self, bit):
                fix = "resolve_conj" if bit == "_conj_bit" else "resolve_neg"
                raise RuntimeError(
                    f"Can't call numpy() on Tensor that has {name} bit set. Use "
                    f"tensor.{fix}().numpy() instead."
                )
        return host_array(self)

    def _resolved(self) -> Tensor:
        """This tensor's values without the lazy math bits, to read them from the host."""
        return _resolve(self.detach()) if self._conj_bit or self._neg_bit else self

    def __array__(self, dtype=None, copy=None):
        array = self._resolved().numpy(force=True)
        if dtype is not None:
            array = array.astype(dtype, copy=False)
        return array

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if math.prod(self._shape) != 1:
            raise RuntimeError(
                f"a Tensor with {math.prod(self._shape)} elements cannot be converted to Scalar"
            )
        if self._storage.device.type == "meta":
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return self._resolved().detach().cpu().numpy().reshape(()).item()

    def tolist(self):
        return self._resolved().detach().cpu().numpy().tolist()

    def __bool__(self) -> bool:
        if math.prod(self._shape) != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with {math.prod(self._shape)} elements is ambiguous"
            )
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._dtype.category > dt.INTEGRAL or math.prod(self._shape) != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._shape[0]))

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if self._storage.device is not CPU:
            raise BufferError(
                f"__dlpack__: only CPU tensors can be exported, this one is on {self.device}"
            )
        kwargs = {} if max_version is None else {"max_version": max_version}
        return self.detach().numpy().__dlpack__(**kwargs)

    def __dlpack_device__(self):
        if self._storage.device is not CPU:
            raise BufferError(f"__dlpack_device__: unsupported device {self.device}")
        return (1, 0)  # kDLCPU

    def __reduce_ex__(self, protocol):
        from ._serialization import reduce_tensor

        # As torch.save, a conjugate or negative view is saved resolved.
        return reduce_tensor(self._resolved() if self._conj_bit or self._neg_bit else self)

    def __repr__(self) -> str:
        from ._repr import tensor_repr

        return tensor_repr(self._resolved())

    def __format__(self, spec: str) -> str:
        if not self._shape and spec:
            return format(self.item(), spec)
        return repr(self)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        from ._serialization import deepcopy_tensor

        return deepcopy_tensor(self, memo)

    def as_subclass(self, cls):
        """The same data and metadata as an instance of ``cls`` (a Tensor subclass)."""
        out = object.__new__(cls)
        for slot in Tensor.__slots__:
            if slot in ("__dict__", "__weakref__", "_leaf_edge"):  # the edge is self's own
                continue
            setattr(out, slot, getattr(self, slot))
        if self._conj_bit or self._neg_bit:
            _set_bits(out, self._conj_bit, self._neg_bit)
        return out


def _empty_default(cls):
    from ._dtype import DEFAULTS

    made = empty((0,), DEFAULTS.float, CPU)
    return made if cls is Tensor else made.as_subclass(cls)


def _wrap_dim(dim: int, ndim: int, op: str) -> int:
    if not isinstance(dim, int):
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    bound = max(ndim, 1)
    if not -bound <= dim < bound:
        raise IndexError(
            f"{op}(): Dimension out of range (expected to be in range of [{-bound}, {bound - 1}], "
            f"but got {dim})"
        )
    return dim + bound if dim < 0 else dim


_new = object.__new__
_MAX_BYTES = (1 << 63) - 1


def make(storage, shape: tuple, stride: tuple, offset: int, dtype, contig: bool) -> Tensor:
    """A tensor over existing storage (the only way the core builds tensors; keep it lean)."""
    t = _new(Tensor)
    t._storage = storage
    t._shape = shape
    t._stride = stride
    t._offset = offset
    t._dtype = dtype
    t._contig = contig
    t._requires_grad = False
    t._grad = None
    t._grad_fn = None
    t._base = None
    return t


def empty(shape: tuple, dtype, device) -> Tensor:
    """An uninitialised contiguous tensor; ``device`` must already be normalised.

    Every op's output comes from here, so the device's allocation route is one attribute, small
    requests take a straight path (two runtime calls, C-level on the CPU: no allocator
    bookkeeping, no Python frame) and the tensor is built inline.
    """
    layout = _LAYOUTS.get(shape) or contiguous_layout(shape)
    nbytes = layout[1] * dtype.itemsize
    route = device._route or allocation_route(device)
    if nbytes < route[1]:
        handle = route[0](route[5], nbytes)
        # new_storage(device, nbytes, handle, 0, ptr, handle, runtime) without its frame (a
        # third of this path's own time): keep in step with it. Its inference mode check is not
        # needed: while inference_mode() is open, the route's threshold is 0
        # (dispatcher/memory.py _marking). Storage() is built by C (no __init__).
        storage = Storage()
        storage.device = device
        storage._nbytes = nbytes
        storage.handle = handle
        storage.byte_offset = 0
        storage.ptr = route[4](handle)
        storage.owner = handle
        storage.runtime = route[2]
        storage.version = 0
    else:
        if nbytes > _MAX_BYTES:  # outputs of broadcasts, repeats, cats: no factory checked them
            from .dispatcher.kinds._limits import storage_overflow

            raise storage_overflow(None, shape)
        storage = route[3](nbytes)
    t = _new(Tensor)
    t._storage = storage
    t._shape = shape
    t._stride = layout[0]
    t._offset = 0
    t._dtype = dtype
    t._contig = True
    t._requires_grad = False
    t._grad = None
    t._grad_fn = None
    t._base = None
    return t


def host_array(t: Tensor) -> np.ndarray:
    """A numpy view of a host tensor that keeps its storage alive."""
    raw = t._storage.host_bytes()
    itemsize = t._dtype.itemsize
    if 0 in t._shape:  # an empty view may start at the end of its storage: numpy refuses that
        return np.empty(t._shape, dtype=t._dtype.np)
    byte_strides = tuple(s * itemsize for s in t._stride)
    # An empty view may point at or past its storage's end (zeros(2, 0)[1]): it reads nothing,
    # so its offset is not numpy's to check.
    offset = t._offset * itemsize if 0 not in t._shape else 0
    return np.ndarray(t._shape, dtype=t._dtype.np, buffer=raw, offset=offset, strides=byte_strides)


# Last: dispatcher.memory imports ember._storage and ember._device, not this module.
from ._storage import Storage  # noqa: E402
from .dispatcher.mathbits import resolve as _resolve  # noqa: E402
from .dispatcher.mathbits import set_bits as _set_bits  # noqa: E402
from .dispatcher.memory import allocation_route  # noqa: E402
