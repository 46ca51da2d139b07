"""Public functions whose PyTorch signatures are overloaded (``max(x)`` / ``max(x, dim)`` /
``max(x, other)``), or take arguments the ops do not (``alpha``, ``rounding_mode``, ``decimals``).
Each one sorts out its arguments and calls ops; ``FUNCTIONS`` and ``METHODS`` say where they go.
Those whose PyTorch function takes ``out=`` hand it, with the op whose out rule applies, to
``dispatcher/out.py``."""

from __future__ import annotations

import numbers
import os
import types

from . import _dtype as dt
from . import _indexing, _legacy_types, _memory_format, _pinned, _resize, _special, _stft, _windows
from ._device import device as Device
from ._tensor import Tensor
from .autograd.graph_names import present, rename, written_back
from .dispatcher import out as _out_arg
from .dispatcher.kinds._common import broadcast_shapes as _broadcast_shapes
from .dispatcher.layers import STACK as _STACK
from .dispatcher.optable import OPS
from .dispatcher.overlap import check_partial
from .dispatcher.promotion import can_cast, promote_types
from .dispatcher.promotion import result_type as _result_type


def _into(name: str, op_name: str, out, inputs: tuple, compute):
    """An out= call of the function ``name``, by the out rule of the op ``op_name``."""
    return _out_arg.call(name, OPS[op_name], out, inputs, compute)


def _method(fn, name: str):
    """A copy of ``fn`` named as the Tensor method ``name``. Methods are the functions' bodies
    without out=, which PyTorch's methods refuse ("unexpected keyword argument 'out'")."""
    method = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    method.__kwdefaults__ = fn.__kwdefaults__
    method.__qualname__ = f"Tensor.{name}"
    return method


def _scaled(name: str, input, other, alpha):
    """``other`` times ``alpha``, with PyTorch's checks of alpha (a number; a float only for a
    floating result, a bool only for a bool one)."""
    if alpha.__class__ is int and alpha == 1:
        return other
    if not isinstance(alpha, numbers.Number):
        raise TypeError(f"{name}(): argument 'alpha' must be Number, not {type(alpha).__name__}")
    result = _result_type((input, other), Tensor)
    if isinstance(alpha, bool) and result is not dt.bool_:
        raise RuntimeError(f"{name}(): Boolean alpha only supported for Boolean results.")
    if isinstance(alpha, float) and result.category < dt.FLOATING:
        raise RuntimeError(
            f"{name}(): For integral input tensors, argument alpha must not be a floating point "
            f"number. (alpha {alpha}, result dtype {result.name})"
        )
    return other * alpha


def _with_alpha(name: str, input, other, alpha):
    out = OPS[name](input, _scaled(name, input, other, alpha))
    if alpha.__class__ is int and alpha == 1:
        return out
    # PyTorch's one node over both inputs, keeping alpha (ember's scales ``other`` first)
    return present(out, f"{name.capitalize()}Backward0", input, other, saved={"alpha": alpha})


def _add(input, other, *, alpha=1):
    return _with_alpha("add", input, other, alpha)


def _sub(input, other, *, alpha=1):
    return _with_alpha("sub", input, other, alpha)


def add(input, other, *, alpha=1, out=None):
    if out is not None:
        return _into("add", "add", out, (input, other), lambda: _add(input, other, alpha=alpha))
    return _with_alpha("add", input, other, alpha)


def sub(input, other, *, alpha=1, out=None):
    if out is not None:
        return _into("sub", "sub", out, (input, other), lambda: _sub(input, other, alpha=alpha))
    return _with_alpha("sub", input, other, alpha)


def rsub(input, other, *, alpha=1):
    return _sub(other, input, alpha=alpha)


def add_(self, other, *, alpha=1):
    return OPS["add_"](self, _scaled("add_", self, other, alpha))


def sub_(self, other, *, alpha=1):
    return OPS["sub_"](self, _scaled("sub_", self, other, alpha))


_ROUNDING = {None: "div", "trunc": "div_trunc", "floor": "floor_divide"}


def _rounding_op(rounding_mode, inplace=False):
    try:
        name = _ROUNDING[rounding_mode]
    except KeyError:
        raise RuntimeError(
            f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
            f"'{rounding_mode}'"
        ) from None
    return OPS[f"{name}_" if inplace else name]


def _div(input, other, *, rounding_mode=None):
    return _rounding_op(rounding_mode)(input, other)


def div(input, other, *, rounding_mode=None, out=None):
    if out is not None:
        compute = lambda: _div(input, other, rounding_mode=rounding_mode)  # noqa: E731
        return _into("div", "div", out, (input, other), compute)
    return _rounding_op(rounding_mode)(input, other)


def div_(self, other, *, rounding_mode=None):
    return _rounding_op(rounding_mode, inplace=True)(self, other)


def _true_divide(input, other):
    return OPS["div"](input, other)


def true_divide(input, other, *, out=None):
    if out is not None:
        return _into("true_divide", "div", out, (input, other), lambda: OPS["div"](input, other))
    return OPS["div"](input, other)


def _extreme(reduce_all, along_dim, elementwise):
    """The function and the method ``max``/``min``, over their three PyTorch overloads."""

    def method(input, dim=None, keepdim=False):
        if isinstance(dim, Tensor):
            return OPS[elementwise](input, dim)
        if dim is None:
            if input.numel() == 0:
                raise RuntimeError(
                    f"{along_dim}(): Expected reduction dim to be specified for "
                    "input.numel() == 0. Specify the reduction dim with the 'dim' argument."
                )
            return rename(OPS[reduce_all](input), f"{along_dim.capitalize()}Backward1")
        return OPS[along_dim](input, dim, keepdim)

    def extreme(input, dim=None, keepdim=False, *, out=None):
        if out is not None:
            rule = elementwise if isinstance(dim, Tensor) else reduce_all if dim is None else None
            compute = lambda: method(input, dim, keepdim)  # noqa: E731
            return _into(along_dim, rule or along_dim, out, (input, dim), compute)
        return method(input, dim, keepdim)

    extreme.__name__ = along_dim
    extreme.__doc__ = (
        f"{along_dim}(input) over all elements; {along_dim}(input, dim, keepdim=False) -> "
        f"(values, indices); {along_dim}(input, other) elementwise ({elementwise})."
    )
    return extreme, _method(method, along_dim)


max, _max = _extreme("amax", "max", "maximum")
min, _min = _extreme("amin", "min", "minimum")


def _correction(dim, unbiased, correction):
    """The row's correction; None for a call that gives no dim, unbiased or correction, as
    PyTorch's own binding passes it on (its node's ``_saved_correction`` is None then)."""
    if correction is not None:
        return correction
    if unbiased is None and dim is None:
        return None
    return 0 if unbiased is False else 1


def _unbiased_overload(dim, unbiased):
    """PyTorch's ``var(input, bool unbiased)`` overload (also std, var_mean, std_mean): a bool
    second argument is ``unbiased``, not a dim."""
    return (None, dim) if isinstance(dim, bool) else (dim, unbiased)


def _spread(name):
    """The function and the method ``var``/``std`` (``unbiased`` positional, as in PyTorch)."""

    def method(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
        dim, unbiased = _unbiased_overload(dim, unbiased)
        return OPS[name](input, dim, _correction(dim, unbiased, correction), keepdim)

    def spread(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
        if out is not None:
            compute = lambda: method(input, dim, unbiased, keepdim, correction=correction)  # noqa: E731
            return _into(name, name, out, (input,), compute)
        return method(input, dim, unbiased, keepdim, correction=correction)

    spread.__name__ = name
    return spread, _method(method, name)


var, _var = _spread("var")
std, _std = _spread("std")


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    dim, unbiased = _unbiased_overload(dim, unbiased)
    return _var(input, dim, unbiased, keepdim, correction=correction), OPS["mean"](
        input, dim, keepdim
    )


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    dim, unbiased = _unbiased_overload(dim, unbiased)
    return _std(input, dim, unbiased, keepdim, correction=correction), OPS["mean"](
        input, dim, keepdim
    )


def _decimal_scale(input, decimals: int) -> float:
    """10 ** |decimals| for round(decimals=), which PyTorch defines for floating dtypes only."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(
            f"round(decimals={decimals}): not implemented for {input.dtype.name} "
            "(floating dtypes only, as in PyTorch)"
        )
    return 10.0 ** abs(decimals)


def _round(input, *, decimals=0):
    if decimals == 0:
        return OPS["round"](input)
    # PyTorch's round_decimals: multiply by 10**d for d > 0, divide by 10**-d for d < 0
    scale = _decimal_scale(input, decimals)
    if decimals > 0:
        return OPS["round"](input * scale) / scale
    return OPS["round"](input / scale) * scale


def round_(self, *, decimals=0):
    if decimals == 0:
        return OPS["round_"](self)
    scale = _decimal_scale(self, decimals)
    if decimals > 0:
        return self.mul_(scale).round_().div_(scale)
    return self.div_(scale).round_().mul_(scale)


def round(input, *, decimals=0, out=None):
    if out is not None:
        return _into("round", "round", out, (input,), lambda: _round(input, decimals=decimals))
    return _round(input, decimals=decimals)


def where(condition, input=None, other=None, *, out=None):
    if input is None and other is None:
        if out is not None:
            raise TypeError("where(condition) takes no out= argument (only where(c, x, y) does)")
        return nonzero(condition, as_tuple=True)
    if out is not None:
        compute = lambda: OPS["where"](condition, input, other)  # noqa: E731
        return _into("where", "where", out, (condition, input, other), compute)
    return OPS["where"](condition, input, other)


def _nonzero(input, *, as_tuple=False):
    found = OPS["nonzero"](input)
    if not as_tuple:
        return found
    if input.ndim == 0:  # PyTorch answers as for the 1-element vector
        return (OPS["nonzero"](input.reshape(1)).reshape(-1),)
    return tuple(found[:, i] for i in range(input.ndim))


def nonzero(input, *, out=None, as_tuple=False):
    if out is not None:
        if as_tuple:
            raise TypeError("nonzero(as_tuple=True) takes no out= argument")
        return _into("nonzero", "nonzero", out, (input,), lambda: OPS["nonzero"](input))
    return _nonzero(input, as_tuple=as_tuple)


def flatten(input, start_dim=0, end_dim=-1):
    """PyTorch's: ``input`` itself when no dims merge (``start_dim`` and ``end_dim`` name one
    dim of a tensor of one dim or more); otherwise the flatten op (a view, or a copy)."""
    n = input.ndim if isinstance(input, Tensor) else 0
    if n and -n <= start_dim < n and -n <= end_dim < n and start_dim % n == end_dim % n:
        return input
    return OPS["flatten"](input, start_dim, end_dim)


def argwhere(input):
    return OPS["nonzero"](input)


_EINSUM_ARGS = (
    "einsum(): must specify the equation string and at least one operand, or at least one "
    "operand and its subscripts list"
)


def einsum(*args):
    """``einsum(equation, *operands)`` (operands may be one list), or PyTorch's sublist form
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])``: each operand followed by its subscripts (ints in
    [0, 52) or ``...``), then optionally the output's.

    Example:
        >>> ember.einsum("ij,jk->ik", ember.ones(2, 3), ember.ones(3, 4)).shape
        ember.Size([2, 4])
    """
    if len(args) < 2:
        raise ValueError(_EINSUM_ARGS)
    if isinstance(args[0], Tensor):
        equation = ",".join(_sublist(s) for s in args[1::2])
        if len(args) % 2:
            equation += "->" + _sublist(args[-1])
        operands = args[:-1:2] if len(args) % 2 else args[::2]
    else:
        equation, operands = args[0], args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return OPS["einsum"](equation, list(operands))


def _sublist(subscripts) -> str:
    """The equation letters of one subscript list, as PyTorch's: 0-25 are A-Z, 26-51 a-z."""
    letters = []
    for n in subscripts:
        if n is Ellipsis:
            letters.append("...")
        elif 0 <= n < 26:
            letters.append(chr(ord("A") + n))
        elif 26 <= n < 52:
            letters.append(chr(ord("a") + n - 26))
        else:
            raise ValueError(
                "einsum(): subscript in subscript list is not within the valid range [0, 52)"
            )
    return "".join(letters)


def broadcast_shapes(*shapes):
    from ._size import Size

    return Size(
        _broadcast_shapes(
            "broadcast_shapes", *(tuple(s) if not isinstance(s, int) else (s,) for s in shapes)
        )
    )


def broadcast_tensors(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    shape = _broadcast_shapes("broadcast_tensors", *(t.shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)


def broadcast_to(input, size):
    return OPS["expand"](input, size)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """Unique elements (sorted), optionally with inverse indices and counts."""
    if dim is not None:
        raise NotImplementedError("unique(dim=...) is not supported yet; flatten first")
    values, inverse, counts = OPS["_unique2"](input, sorted, return_inverse, return_counts)
    extras = [inverse] if return_inverse else []
    extras += [counts] if return_counts else []
    return (values, *extras) if extras else values


def numel(input) -> int:
    return input.numel()


def is_floating_point(input) -> bool:
    return input.is_floating_point()


def is_nonzero(input) -> bool:
    return input.is_nonzero()  # ember/_tensor_surface.py: torch's errors for 0 and 2+ elements


def _cpu_runtime():
    from .dispatcher.memory import backend_for

    return backend_for("cpu").runtime


def set_num_threads(n: int) -> None:
    """Threads used by CPU kernels (OpenMP) and, following them, OpenBLAS."""
    if int(n) < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {n}")
    _cpu_runtime().set_num_threads(int(n))


def get_num_threads() -> int:
    return _cpu_runtime().num_threads()


# ember runs no inter-op work in parallel (``jit.fork`` runs its function at once, as PyTorch's
# does outside TorchScript), so the inter-op pool is a number kept with PyTorch's rules: set at
# most once; by default the CPU count.
_INTEROP: dict = {"threads": None, "fixed": False}


def set_num_interop_threads(n: int) -> None:
    if int(n) < 1:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    if _INTEROP["fixed"]:
        raise RuntimeError(
            "Error: cannot set number of interop threads after parallel work has started or "
            "set_num_interop_threads called"
        )
    _INTEROP.update(threads=int(n), fixed=True)


def get_num_interop_threads() -> int:
    return _INTEROP["threads"] or os.cpu_count() or 1


def result_type(tensor1, tensor2):
    return _result_type((tensor1, tensor2), Tensor)


# ---- Tensor-only methods ---------------------------------------------------------------
def _to_args(self, args, kwargs):
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    flags = [a for a in args if isinstance(a, bool)]  # PyTorch's positional non_blocking, copy
    if len(flags) > 2:
        raise TypeError(f"to() received an invalid argument {flags[2]!r}")
    args = [a for a in args if not isinstance(a, bool)]
    if flags:
        kwargs.setdefault("non_blocking", flags[0])
    if len(flags) > 1:
        kwargs.setdefault("copy", flags[1])
    for arg in args:
        if isinstance(arg, dt.dtype):
            dtype = arg
        elif isinstance(arg, Tensor):
            dtype, device = arg.dtype, arg.device
        elif isinstance(arg, (str, Device)):
            device = arg
        elif arg is not None:
            raise TypeError(f"to() received an invalid argument {arg!r}")
    non_blocking = bool(kwargs.pop("non_blocking", False))
    memory_format = kwargs.pop("memory_format", None)
    _memory_format.check_hint("to", memory_format)
    copy = kwargs.pop("copy", False)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    return dtype, device, copy, non_blocking, memory_format


def to(self, *args, **kwargs):
    """Tensor.to(dtype) / to(device) / to(device, dtype) / to(other): converted, or self;
    ``memory_format=`` lays the result out in that format (itself when already in it)."""
    from .dispatcher.memory import normalize_device

    dtype, device, copy, non_blocking, memory_format = _to_args(self, args, kwargs)
    device = normalize_device(device) if device is not None else self.device
    dtype = dtype or self.dtype
    if not copy and dtype is self.dtype and device is self.device:
        return _memory_format.to_format(self, memory_format)
    return _memory_format.to_format(
        OPS["_to_copy"](self, dtype, device, non_blocking), memory_format
    )


def contiguous(self, memory_format=None):
    """``Tensor.contiguous(memory_format=...)``: itself when already contiguous in that format,
    else a copy in it (channels-last strides as PyTorch's)."""
    if memory_format is not None:
        _memory_format.check_hint("contiguous", memory_format)
        if memory_format is _memory_format.preserve_format:
            raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
        if memory_format is not _memory_format.contiguous_format:
            return _memory_format.contiguous_in(self, memory_format)
    return OPS["contiguous"](self)


def clone(input, *, memory_format=None):
    """``clone(memory_format=...)``: a copy, in that format for the channels-last ones (a
    preserved layout is row-major here: same values)."""
    if memory_format is not None:
        _memory_format.check_hint("clone", memory_format)
        if memory_format in _memory_format.CHANNELS_LAST:
            order, inverse = _memory_format.orders(memory_format, input.ndim)
            return OPS["clone"](input.permute(order)).permute(inverse)
    return OPS["clone"](input)


def _caster(dtype):
    def cast(self, memory_format=None):
        _memory_format.check_hint(dtype.name, memory_format)
        return to(self, dtype, memory_format=memory_format)

    cast.__name__ = dtype.name
    return cast


def cpu(self):
    return to(self, "cpu")


def _device_method(device_type):
    def move(self, device=None, non_blocking=False):
        if isinstance(device, int):
            device = Device(device_type, device)
        return to(self, device or device_type, non_blocking=non_blocking)

    move.__name__ = device_type
    return move


def type_(self, dtype=None, non_blocking=False):
    """``x.type()`` is ``'ember.FloatTensor'`` (``'ember.cuda.FloatTensor'``...); ``x.type(dtype)``
    converts."""
    if dtype is None:
        device = self.device.type
        where = "" if device == "cpu" else f"{device}."
        return f"ember.{where}{dt.SCALAR_NAMES[self.dtype]}Tensor"  # PyTorch's legacy names
    legacy = _legacy_types.resolve(dtype)  # ember.FloatTensor, "torch.cuda.LongTensor"
    if legacy is not None:
        return to(self, legacy.device_type, legacy.dtype, non_blocking=non_blocking)
    return to(self, dtype)


def type_as(self, other):
    return to(self, other.dtype)


def view_as(self, other):
    return OPS["view"](self, other.shape)


_VIEW = OPS["view"]


def reshape_as(self, other):
    return OPS["reshape"](self, other.shape)


def expand_as(self, other):
    return OPS["expand"](self, other.shape)


def view(self, *shape, size=None):
    if shape and shape[0].__class__ is int and self.__class__ is Tensor:
        # x.view(b, t, c), the common call: as the generated methods of one-tensor ops do
        # (ember/_bind.py), straight to the runner or autograd's recorder when they alone act
        op, layers = _VIEW, _STACK.layers
        if not self._requires_grad and layers is _STACK.grad_only_layers:
            return op.runner(op, self, shape)
        if layers is _STACK.direct_layers and op.recorder is not None:
            return op.recorder(self, shape)
    if size is not None:  # x.view(size=(2, 3)), PyTorch's keyword
        if shape:
            raise TypeError("view() got multiple values for argument 'size'")
        shape = (size,)
    if len(shape) == 1 and isinstance(shape[0], dt.dtype):
        return _view_dtype(self, shape[0])
    if len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
        shape = shape[0]
    return OPS["view"](self, shape)


def _view_dtype(self, dtype):
    if dtype.itemsize != self.dtype.itemsize:
        raise RuntimeError("view(dtype): only dtypes of the same size are supported")
    from ._tensor import make

    return make(self._storage, self._shape, self._stride, self._offset, dtype, self._contig)


def tensor_where(self, condition, other):
    return OPS["where"](condition, self, other)


def masked_fill_(self, mask, value):
    check_partial("masked_fill_", self, mask, "mask")  # PyTorch's check of the mask
    filled = OPS["masked_fill"](self, mask, value)
    return written_back(self.copy_(filled), filled)


def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    from ._factories import tensor

    return tensor(
        data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad
    )


def _new(factory_name):
    def new(
        self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False
    ):
        from . import _factories

        _factories._no_layout(f"new_{factory_name}", layout)
        return getattr(_factories, factory_name)(
            *size,
            dtype=dtype or self.dtype,
            device=device or self.device,
            requires_grad=requires_grad,
            pin_memory=pin_memory,
        )

    new.__name__ = f"new_{factory_name}"
    return new


def new_full(
    self,
    size,
    fill_value,
    *,
    dtype=None,
    device=None,
    requires_grad=False,
    layout=None,
    pin_memory=False,
):
    from ._factories import _no_layout, full

    _no_layout("new_full", layout)
    return full(
        size,
        fill_value,
        dtype=dtype or self.dtype,
        device=device or self.device,
        requires_grad=requires_grad,
        pin_memory=pin_memory,
    )


def _property(fn):
    return property(fn)


def _t_all(self):
    return OPS["permute"](self, tuple(range(self.ndim - 1, -1, -1)))


def _mt(self):
    if self.ndim < 2:
        raise RuntimeError(
            "tensor.mT is only supported on matrices or batches of matrices. "
            f"Got {self.ndim}-D tensor."
        )
    return OPS["transpose"](self, -2, -1)


def _h(self):
    """The conjugate transpose of a matrix (or a 0-d tensor's conjugate), as PyTorch's ``.H``."""
    if self.ndim not in (0, 2):
        advice = " For batches of matrices, consider using tensor.mH" if self.ndim > 2 else ""
        raise RuntimeError(
            "tensor.H is only supported on matrices (2-D tensors). Got "
            f"{self.ndim}-D tensor.{advice}"
        )
    return _t_all(self).conj()


def _mh(self):
    if self.ndim < 2:
        raise RuntimeError(
            "tensor.mH is only supported on matrices or batches of matrices. "
            f"Got {self.ndim}-D tensor."
        )
    return OPS["transpose"](self, -2, -1).conj()


FUNCTIONS = {
    **_special.FUNCTIONS,
    **_windows.FUNCTIONS,
    **_stft.FUNCTIONS,
    "add": add,
    "sub": sub,
    "subtract": sub,
    "rsub": rsub,
    "div": div,
    "divide": div,
    "true_divide": true_divide,
    "max": max,
    "min": min,
    "var": var,
    "std": std,
    "var_mean": var_mean,
    "std_mean": std_mean,
    "round": round,
    "where": where,
    "nonzero": nonzero,
    "argwhere": argwhere,
    "flatten": flatten,
    "einsum": einsum,
    "broadcast_shapes": broadcast_shapes,
    "broadcast_tensors": broadcast_tensors,
    "broadcast_to": broadcast_to,
    "unique": unique,
    "numel": numel,
    "is_floating_point": is_floating_point,
    "is_nonzero": is_nonzero,
    "result_type": result_type,
    "promote_types": promote_types,
    "can_cast": can_cast,
    "index_put": _indexing.index_put,
    "clone": clone,
    "set_num_threads": set_num_threads,
    "set_num_interop_threads": set_num_interop_threads,
    "get_num_interop_threads": get_num_interop_threads,
    "get_num_threads": get_num_threads,
}

METHODS = {
    **_special.METHODS,
    **_stft.METHODS,
    "add": _method(_add, "add"),
    "sub": _method(_sub, "sub"),
    "subtract": _method(_sub, "subtract"),
    "add_": add_,
    "sub_": sub_,
    "div": _method(_div, "div"),
    "divide": _method(_div, "divide"),
    "div_": div_,
    "true_divide": _method(_true_divide, "true_divide"),
    "max": _max,
    "min": _min,
    "var": _var,
    "std": _std,
    "round": _method(_round, "round"),
    "round_": round_,
    "nonzero": _method(_nonzero, "nonzero"),
    "argwhere": argwhere,
    "flatten": flatten,
    "unique": unique,
    "to": to,
    "contiguous": contiguous,
    "clone": clone,
    "cpu": cpu,
    "pin_memory": _pinned.pin_memory,
    "is_pinned": _pinned.is_pinned,
    "cuda": _device_method("cuda"),
    "xpu": _device_method("xpu"),
    "type": type_,
    "type_as": type_as,
    "view": view,
    "view_as": view_as,
    "reshape_as": reshape_as,
    "expand_as": expand_as,
    "where": tensor_where,
    "masked_fill_": masked_fill_,
    "index_put_": _indexing.index_put_,
    "index_put": _indexing.index_put,
    "resize_": _resize.resize_,
    "resize_as_": _resize.resize_as_,
    "new_tensor": new_tensor,
    "new_zeros": _new("zeros"),
    "new_ones": _new("ones"),
    "new_empty": _new("empty"),
    "new_full": new_full,
    "broadcast_to": broadcast_to,
    "float": _caster(dt.float32),
    "double": _caster(dt.float64),
    "half": _caster(dt.float16),
    "bfloat16": _caster(dt.bfloat16),
    "int": _caster(dt.int32),
    "long": _caster(dt.int64),
    "short": _caster(dt.int16),
    "char": _caster(dt.int8),
    "byte": _caster(dt.uint8),
    "bool": _caster(dt.bool_),
    "T": _property(_t_all),
    "mT": _property(_mt),
    "H": _property(_h),
    "mH": _property(_mh),
}

# Aliases PyTorch also has.
ALIASES = {
    "segment_reduce": "_segment_reduce",
    "clip": "clamp",
    "clip_": "clamp_",
    "absolute": "abs",
    "negative": "neg",
    "arccos": "acos",
    "arcsin": "asin",
    "arctan": "atan",
    "arctan2": "atan2",
    "arccosh": "acosh",
    "arcsinh": "asinh",
    "arctanh": "atanh",
    "greater": "gt",
    "greater_equal": "ge",
    "less": "lt",
    "less_equal": "le",
    "not_equal": "ne",
    "concat": "cat",
    "concatenate": "cat",
    "fix": "trunc",
    "multiply": "mul",
    "moveaxis": "movedim",
    "special_expit": "sigmoid",
}
