"""Tensor factories with PyTorch's signatures: ``tensor``, ``zeros``, ``randn``, ``from_numpy``."""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from . import _dtype as dt
from . import _layout, _memory_format
from ._device import CPU
from ._pinned import pin_result
from ._tensor import Tensor, is_contiguous, make
from .dispatcher import out as _out_arg
from .dispatcher.kinds._limits import MAX_DIMS, check_scalar_fits
from .dispatcher.memory import backend_for, normalize_device
from .dispatcher.optable import OPS


def _size_args(size, op: str) -> tuple:
    """``zeros(2, 3)``, ``zeros((2, 3))``, ``zeros([2, 3])`` and ``zeros(Size)`` all mean (2, 3).
    The runner checks the sizes (check_shape); see ``_as_factory`` for the name its errors use."""
    if len(size) == 1 and not isinstance(size[0], numbers.Integral):
        size = size[0]
        if isinstance(size, Tensor):
            size = size.tolist()
    try:
        return tuple(_dim(s) for s in size)
    except (AttributeError, TypeError):
        raise TypeError(f"{op}(): size must be a sequence of ints, got {size!r}") from None


def _dim(s) -> int:
    # int subclasses stay as they are: a trace records the sizes it reads (ember.jit.symbolic)
    if isinstance(s, int) and s.__class__ is not bool:
        return s
    return int(s.__index__())


def _as_factory(exc: RuntimeError, runner: str, op: str) -> RuntimeError:
    """The runner's error for ``zeros(2**62)`` says "full(): ..."; the user called zeros()."""
    text = str(exc)
    if op == runner or not text.startswith(f"{runner}(): "):
        return exc
    return RuntimeError(f"{op}(): {text[len(runner) + 4 :]}")


def _finish(t: Tensor, requires_grad: bool, pin_memory: bool = False, op: str = "") -> Tensor:
    if pin_memory:
        t = pin_result(t, pin_memory, op)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _no_layout(op: str, layout, memory_format=None) -> None:
    """torch's ``layout=``/``memory_format=``: ember has strided, contiguous tensors only, so a
    sparse layout, or a memory format other than the contiguous ones, is refused rather than
    ignored."""
    _layout.check(op, layout)
    _memory_format.check(op, memory_format)


_NOT_WRITABLE = (
    "The given NumPy array is not writable: the tensor shares its memory and is read-only, so "
    "in-place writes to it raise (PyTorch would write anyway, with undefined behavior). You may "
    "want to copy the array to protect its data or make it writable before converting it to a "
    "tensor."
)


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with a numpy array (writes show on both sides).

    Negative strides are kept (ember's strides are signed), unlike in PyTorch. A non-writable
    array gives a read-only tensor (with a warning, as PyTorch's): in-place ops on it raise.
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray (got {type(array).__name__})")
    if not array.dtype.isnative:  # before the dtype lookup, which would call '>f8' unsupported
        raise ValueError(
            f"from_numpy(): byte-swapped (non-native byte order) arrays are not supported; "
            f"convert with array.astype(array.dtype.newbyteorder('=')) ({array.dtype.str})"
        )
    dtype = dt.from_numpy_dtype(array.dtype)
    itemsize = array.itemsize
    if any(s % itemsize for s in array.strides):
        raise ValueError(
            f"from_numpy(): strides {array.strides} are not a multiple of the element size "
            f"{itemsize}"
        )
    strides = tuple(s // itemsize for s in array.strides)
    address = array.__array_interface__["data"][0]
    if array.size:
        low = sum((n - 1) * s for n, s in zip(array.shape, strides) if s < 0)
        high = sum((n - 1) * s for n, s in zip(array.shape, strides) if s > 0)
    else:
        low = high = 0
    base = address + low * itemsize
    nbytes = (high - low + 1) * itemsize if array.size else 0
    runtime = backend_for("cpu").runtime
    from ._storage import ReadOnlyStorage, new_storage

    if array.flags.writeable:
        storage = new_storage(CPU, nbytes, base, 0, base, array, runtime)
    else:
        warnings.warn(_NOT_WRITABLE, UserWarning, stacklevel=2)
        storage = new_storage(CPU, nbytes, base, 0, base, array, runtime, ReadOnlyStorage)
    shape = tuple(array.shape)
    return make(storage, shape, strides, -low, dtype, is_contiguous(shape, strides))


def _depth(data) -> int:
    depth = 0
    while isinstance(data, (list, tuple)) and data:
        data, depth = data[0], depth + 1
    return depth


_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1


def _may_hold_huge_ints(array) -> bool:
    """Whether numpy may have met Python ints outside int64 in the data it made ``array`` of:
    it makes them uint64, float64 (beside other ints: losing their low bits) or object."""
    if array.dtype == object or array.dtype.kind == "u":
        return True
    return array.dtype.kind == "f" and array.size > 0 and float(np.abs(array).max()) >= 2.0**63


def _huge_ints(data) -> list:
    """The Python ints in nested ``data`` outside int64's range."""
    return [v for v in _leaves(data) if type(v) is int and not _INT64_MIN <= v <= _INT64_MAX]


def _with_huge_ints(data, array, dtype):
    """``array`` rebuilt where ``data`` holds Python ints beyond int64, as PyTorch reads them:
    exactly into float and complex dtypes and into uint64 (an unsigned read: OverflowError for
    a negative or a too large one), else its int64 read fails (ValueError)."""
    huge = _huge_ints(data)
    if not huge:
        return array
    if dtype is not None and dtype.category in (dt.FLOATING, dt.COMPLEX):
        return np.array(data, dtype=np.complex128 if dtype.category == dt.COMPLEX else np.float64)
    if dtype is dt.uint64:
        if any(value > _UINT64_MAX for value in huge):
            raise OverflowError("int too big to convert")
        if any(value < 0 for value in _leaves(data)):
            raise OverflowError("can't convert negative int to unsigned")
        return np.array(data, dtype=np.uint64)
    if dtype is None and any(isinstance(v, (float, complex)) for v in _leaves(data)):
        return array  # a float among them: the list is float data, as PyTorch infers it
    raise ValueError("Overflow when unpacking long long")


def _leaves(data):
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        else:
            yield item


def _infer_array(data, dtype):
    """A numpy array for ``data`` with PyTorch's dtype inference for Python values."""
    if isinstance(data, Tensor):
        return data.detach().cpu().numpy(), data.dtype if dtype is None else dtype
    if isinstance(data, (np.ndarray, np.generic)):  # numpy scalars keep their dtype too
        array = np.asarray(data)
        inferred = dt.from_numpy_dtype(array.dtype) if array.dtype != object else None
    else:
        try:
            array = np.array(data)
        except ValueError as exc:
            if "maximum number of dimension" not in str(exc):
                raise
            raise RuntimeError(
                f"tensor(): ember supports at most {MAX_DIMS} dims, got {_depth(data)}"
            ) from None
        if _may_hold_huge_ints(array):
            array = _with_huge_ints(data, array, dtype)
        if array.dtype == object:
            raise TypeError(f"tensor(): can't infer a dtype for {type(data).__name__} data")
        if array.dtype.kind == "f":
            inferred = dt.DEFAULTS.float
        elif array.dtype.kind in "iu":
            inferred = dt.int64
        elif array.dtype.kind == "b":
            inferred = dt.bool_
        elif array.dtype.kind == "c":
            inferred = dt.default_complex()
        elif array.dtype.kind == "U" or array.dtype.kind == "S":
            raise TypeError("tensor(): strings are not supported")
        else:
            inferred = dt.from_numpy_dtype(array.dtype)
    target = dtype or inferred
    python_data = not isinstance(data, (np.ndarray, np.generic))  # numpy data wraps, as in torch
    if python_data and target.category == dt.INTEGRAL and array.size and array.dtype.kind in "iuf":
        low, high = array.min().item(), array.max().item()
        if target is dt.uint64 and low < 0:  # read as unsigned, where the others wrap
            raise OverflowError("can't convert negative int to unsigned")
        for value in (low, high):  # numpy would wrap
            check_scalar_fits("tensor", value, target, target.name)
    with np.errstate(over="ignore"):  # 1e300 as float32 is inf, silently, as in torch
        return np.asarray(array, dtype=target.np), target


def tensor(
    data, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False
) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, numpy arrays, tensors).

    Args:
        data: the values; Python floats become the default dtype, ints int64, bools bool.
        dtype: the element type (inferred when None).
        device: where to put it (the default device when None).
        requires_grad: track operations on it for autograd.

    Example:
        >>> ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    """
    dtype = _dtype_arg(dtype)
    array, target = _infer_array(data, dtype)
    out = from_numpy(np.array(array, dtype=target.np, copy=True, order="C"))
    device = normalize_device(device)
    if device is not CPU:
        # the host copy is this factory's product too: a joint trace, which lists what the
        # factories make (compiler/joint.py), then knows the CPU tensor its `_to_copy` reads
        # (masked_fill's fill value on xpu and CUDA) and may bake it in, as on the CPU
        out = OPS["_to_copy"](_finish(out, False), None, device)
    return _finish(out, requires_grad, pin_memory, "tensor")


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but shares memory with a numpy array or tensor when it can."""
    dtype = _dtype_arg(dtype)
    device = normalize_device(device) if device is not None else None
    if isinstance(data, Tensor):
        if (dtype is None or data.dtype is dtype) and (device is None or data.device is device):
            return data
        return data.to(device=device or data.device, dtype=dtype or data.dtype)
    same_dtype = dtype is None or (isinstance(data, np.ndarray) and data.dtype == dtype.np)
    if isinstance(data, np.ndarray) and (device is None or device is CPU) and same_dtype:
        try:
            return from_numpy(data)
        except (TypeError, ValueError):
            pass
    return tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad: bool = False) -> Tensor:
    out = tensor(obj, dtype=dtype, device=device) if copy else as_tensor(obj, dtype, device)
    return _finish(out, requires_grad)


def from_dlpack(ext_tensor, *, device=None, copy=None) -> Tensor:
    """A tensor sharing memory with any DLPack exporter on the CPU (numpy arrays, for one).

    Args:
        ext_tensor: the object exporting ``__dlpack__``.
        device: where the result lives (a copy when not the CPU).
        copy: True always copies, False never does (refusing what needs a copy), None copies
            only when needed.
    """
    made = from_numpy(np.from_dlpack(ext_tensor, copy=copy))
    if device is None or normalize_device(device) == made.device:
        return made
    if copy is False:
        raise BufferError(f"from_dlpack(): moving to {device} needs a copy, but copy=False")
    return made.to(device)


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0, requires_grad=False) -> Tensor:
    """A 1-D CPU tensor over an object that implements the buffer protocol, sharing its memory
    (``torch.frombuffer``; a read-only buffer gives a read-only tensor, with a warning)."""
    try:
        length = memoryview(buffer).nbytes
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    itemsize = dtype.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(
            f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
            f"({length} bytes) minus 1"
        )
    if count < 0 and (length - offset) % itemsize:
        raise ValueError(
            f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
            f"multiple of element size ({itemsize})"
        )
    if count > 0 and count * itemsize > length - offset:
        raise ValueError(
            f"requested buffer length ({count} * {itemsize} bytes) after offset ({offset} bytes) "
            f"must not be greater than actual buffer length ({length} bytes)"
        )
    array = np.frombuffer(buffer, dtype=dtype.np, count=count, offset=offset)
    return _finish(from_numpy(array), requires_grad)


def _dtype_arg(dtype):
    if dtype is None or isinstance(dtype, dt.dtype):
        return dtype
    if isinstance(dtype, str) and dtype in dt.ALIASES:
        return dt.ALIASES[dtype]
    try:
        return dt.from_numpy_dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be an ember.dtype, got {dtype!r}") from None


def _into(name: str, op_name: str, out, dtype, device, make, requires_grad: bool) -> Tensor:
    """A factory called with ``out=``: made in out's dtype and on out's device (unless given;
    a dtype that differs from out's is refused), then written into ``out``."""

    def compute(dtype):
        return make(dtype, out.device if device is None else device)

    written = _out_arg.call(name, OPS[op_name], out, (), compute, _dtype_arg(dtype))
    return _finish(written, requires_grad)


def empty(
    *size,
    out=None,
    dtype=None,
    device=None,
    requires_grad=False,
    layout=None,
    pin_memory=False,
    memory_format=None,
) -> Tensor:
    """An uninitialised tensor of the given size."""
    _no_layout("empty", layout, memory_format)
    if out is not None:
        make = lambda d, dev: empty(*size, dtype=d, device=dev)  # noqa: E731
        return _into("empty", "empty", out, dtype, device, make, requires_grad)
    dtype = _dtype_arg(dtype)
    out = OPS["empty"](_size_args(size, "empty"), dtype, device)
    return _finish(out, requires_grad, pin_memory, "empty")


def full(
    size,
    fill_value,
    *,
    out=None,
    dtype=None,
    device=None,
    requires_grad=False,
    layout=None,
    pin_memory=False,
) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from the value)."""
    _no_layout("full", layout)
    if out is not None:
        make = lambda d, dev: full(size, fill_value, dtype=d, device=dev)  # noqa: E731
        return _into("full", "full", out, dtype, device, make, requires_grad)
    dtype = _dtype_arg(dtype)
    try:
        out = OPS["full"](_size_args((size,), "full"), fill_value, dtype, device)
    except RuntimeError as exc:  # fill_'s refusal of the value is full's
        raise _as_factory(exc, "fill_", "full") from exc.__cause__
    return _finish(out, requires_grad, pin_memory, "full")


def _constant(op: str, value, size, dtype, device, requires_grad, layout, pin_memory) -> Tensor:
    _no_layout(op, layout)
    dtype = _dtype_arg(dtype) or dt.DEFAULTS.float
    try:
        out = OPS["full"](_size_args(size, op), value, dtype, device)
    except RuntimeError as exc:
        raise _as_factory(exc, "full", op) from exc.__cause__
    return _finish(out, requires_grad, pin_memory, op)


def zeros(
    *size, out=None, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False
) -> Tensor:
    """A tensor of zeros (default dtype unless given)."""
    if out is not None:
        _no_layout("zeros", layout)
        make = lambda d, dev: zeros(*size, dtype=d, device=dev)  # noqa: E731
        return _into("zeros", "full", out, dtype, device, make, requires_grad)
    return _constant("zeros", 0, size, dtype, device, requires_grad, layout, pin_memory)


def ones(
    *size, out=None, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False
) -> Tensor:
    """A tensor of ones (default dtype unless given)."""
    if out is not None:
        _no_layout("ones", layout)
        make = lambda d, dev: ones(*size, dtype=d, device=dev)  # noqa: E731
        return _into("ones", "full", out, dtype, device, make, requires_grad)
    return _constant("ones", 1, size, dtype, device, requires_grad, layout, pin_memory)


def _like(fn, input, dtype, layout, device, requires_grad, memory_format, pin_memory, *args):
    _no_layout(fn.__name__ + "_like", layout, memory_format)
    return fn(
        input.shape,
        *args,
        dtype=_dtype_arg(dtype) or input.dtype,
        device=input.device if device is None else device,
        requires_grad=requires_grad,
        pin_memory=pin_memory,
    )


def _like_of(fn):
    """``<fn>_like``: ``fn`` in ``input``'s shape, and in its dtype and on its device unless
    given (PyTorch's signature of the ``*_like`` factories)."""

    def like(
        input,
        *,
        dtype=None,
        layout=None,
        device=None,
        requires_grad=False,
        memory_format=None,
        pin_memory=False,
    ) -> Tensor:
        return _like(fn, input, dtype, layout, device, requires_grad, memory_format, pin_memory)

    like.__name__ = like.__qualname__ = f"{fn.__name__}_like"
    return like


empty_like = _like_of(empty)


zeros_like = _like_of(zeros)


ones_like = _like_of(ones)


def full_like(
    input,
    fill_value,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    memory_format=None,
    pin_memory=False,
):
    return _like(
        full, input, dtype, layout, device, requires_grad, memory_format, pin_memory, fill_value
    )


def arange(
    start,
    end=None,
    step=1,
    *,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """Values from ``start`` up to (excluding) ``end`` every ``step``; ``arange(n)`` is 0..n-1."""
    _no_layout("arange", layout)
    if out is not None:
        make = lambda d, dev: arange(start, end, step, dtype=d, device=dev)  # noqa: E731
        return _into("arange", "arange", out, dtype, device, make, requires_grad)
    out = OPS["arange"](start, end, step, _dtype_arg(dtype), device)
    return _finish(out, requires_grad, pin_memory, "arange")


def linspace(
    start,
    end,
    steps,
    *,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    _no_layout("linspace", layout)
    if out is not None:
        make = lambda d, dev: linspace(start, end, steps, dtype=d, device=dev)  # noqa: E731
        return _into("linspace", "linspace", out, dtype, device, make, requires_grad)
    out = OPS["linspace"](start, end, steps, _dtype_arg(dtype), device)
    return _finish(out, requires_grad, pin_memory, "linspace")


def eye(
    n,
    m=None,
    *,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """A 2-D tensor with ones on the diagonal."""
    _no_layout("eye", layout)
    if out is not None:
        make = lambda d, dev: eye(n, m, dtype=d, device=dev)  # noqa: E731
        return _into("eye", "eye", out, dtype, device, make, requires_grad)
    out = OPS["eye"](n, m, _dtype_arg(dtype), device)
    return _finish(out, requires_grad, pin_memory, "eye")


# Inside ember.func.vmap, what a random factory fills: the autograd package sets this to a
# function returning a tensor batched at the levels that ask for different randomness (each
# sample draws its own numbers), or None for an ordinary new tensor.
RANDOM_TARGET = None


def _sampled(op: str, fill: str, size, dtype, device, *params) -> Tensor:
    """A new tensor of ``size`` filled in place by the random op ``fill``."""
    dtype = _dtype_arg(dtype)
    out = None
    try:
        shape = _size_args(size, op)
        if RANDOM_TARGET is not None:
            out = RANDOM_TARGET(shape, dtype, device)
        if out is None:
            out = OPS["empty"](shape, dtype, device)
    except RuntimeError as exc:
        raise _as_factory(exc, "empty", op) from exc.__cause__
    return OPS[fill](out, *params)


def _sampler(name: str, fill: str, doc: str):
    """``rand``/``randn``: a new tensor of ``size`` filled by the random op ``fill`` over its
    standard range (PyTorch's signature)."""

    def sample(
        *size,
        generator=None,
        out=None,
        dtype=None,
        layout=None,
        device=None,
        requires_grad=False,
        pin_memory=False,
    ) -> Tensor:
        _no_layout(name, layout)
        if out is not None:
            make = lambda d, dev: sample(*size, generator=generator, dtype=d, device=dev)  # noqa: E731
            return _into(name, "empty", out, dtype, device, make, requires_grad)
        out = _sampled(name, fill, size, dtype, device, 0.0, 1.0, generator)
        return _finish(out, requires_grad, pin_memory, name)

    sample.__name__ = sample.__qualname__ = name
    sample.__doc__ = doc
    return sample


rand = _sampler("rand", "uniform_", "Uniform samples in [0, 1).")
randn = _sampler("randn", "normal_", "Standard normal samples.")


def randint(
    *args,
    size=None,
    generator=None,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
):
    """Integers uniform in [low, high): ``randint(high, size)`` or ``randint(low, high, size)``."""
    _no_layout("randint", layout)
    if out is not None:
        make = lambda d, dev: randint(  # noqa: E731
            *args, size=size, generator=generator, dtype=d, device=dev
        )
        return _into("randint", "empty", out, dtype, device, make, requires_grad)
    if size is not None:
        args = (*args, size)
    if len(args) == 2:
        low, (high, size) = 0, args
    elif len(args) == 3:
        low, high, size = args
    else:
        raise TypeError("randint() expects (high, size) or (low, high, size)")
    dtype = _dtype_arg(dtype) or dt.int64
    out = _sampled("randint", "random_", (size,), dtype, device, int(low), int(high), generator)
    return _finish(out, requires_grad, pin_memory, "randint")


def randperm(
    n,
    *,
    generator=None,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """A random permutation of 0..n-1."""
    _no_layout("randperm", layout)
    if out is not None:
        make = lambda d, dev: randperm(n, generator=generator, dtype=d, device=dev)  # noqa: E731
        return _into("randperm", "randperm", out, dtype, device, make, requires_grad)
    out = OPS["randperm"](n, generator, _dtype_arg(dtype), normalize_device(device))
    return _finish(out, requires_grad, pin_memory, "randperm")


rand_like = _like_of(rand)


randn_like = _like_of(randn)


def randint_like(
    input,
    low=0,
    high=None,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    memory_format=None,
    pin_memory=False,
):
    if high is None:
        low, high = 0, low
    _no_layout("randint_like", layout, memory_format)
    return randint(
        low,
        high,
        input.shape,
        dtype=_dtype_arg(dtype) or input.dtype,
        device=input.device if device is None else device,
        requires_grad=requires_grad,
        pin_memory=pin_memory,
    )


def normal(
    mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None
):
    """Normal samples: ``normal(mean, std, size)`` with floats, or elementwise tensor mean/std."""
    _no_layout("normal", layout)
    if out is not None:
        make = lambda d, dev: normal(  # noqa: E731
            mean, std, size, generator=generator, dtype=d, device=dev
        )
        return _into("normal", "empty", out, dtype, device, make, False)
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        ref = mean if isinstance(mean, Tensor) else std
        noise = randn(ref.shape, generator=generator, dtype=ref.dtype, device=ref.device)
        return noise * std + mean
    return _sampled("normal", "normal_", (size,), dtype, device, float(mean), float(std), generator)


def is_tensor(obj, /) -> bool:
    return isinstance(obj, Tensor)


__all__ = [
    "arange",
    "as_tensor",
    "asarray",
    "empty",
    "empty_like",
    "eye",
    "from_dlpack",
    "from_numpy",
    "frombuffer",
    "full",
    "full_like",
    "is_tensor",
    "linspace",
    "normal",
    "ones",
    "ones_like",
    "rand",
    "rand_like",
    "randint",
    "randint_like",
    "randn",
    "randn_like",
    "randperm",
    "tensor",
    "zeros",
    "zeros_like",
]
