"""Public functions and in-place methods of PyTorch's core surface that are not one op call:
overloads (``median(x)`` / ``median(x, dim)``), Python results (``allclose``, ``equal``), and
the in-place forms of composite ops (``x.clamp_min_(0)``: the op, then a checked copy into x).
``FUNCTIONS`` and ``METHODS`` say where each goes; ember/__init__.py binds them."""

from __future__ import annotations

import sys

from . import _dtype as dt
from . import _inplace_view, _lowrank, _unique
from ._tensor import Tensor
from .dispatcher import out as _out_arg
from .dispatcher.optable import OPS
from .dispatcher.optable.surface_positions import check_unravel_indices
from .dispatcher.promotion import can_cast


def _ember():
    return sys.modules["ember"]


def _into(name: str, op_name: str, out, inputs: tuple, compute):
    return _out_arg.call(name, OPS[op_name], out, inputs, compute)


# ---- in-place forms of composites ----------------------------------------------------------
def write_back(name: str, self: Tensor, result: Tensor) -> Tensor:
    """``self.copy_(result)`` after PyTorch's in-place checks: the result keeps self's shape
    and is castable to its dtype (recorded by autograd as the in-place copy it is)."""
    if tuple(result.shape) != tuple(self.shape):
        raise RuntimeError(
            f"{name}(): output with shape {list(self.shape)} doesn't match the broadcast shape "
            f"{list(result.shape)}"
        )
    if not can_cast(result.dtype, self.dtype):
        raise RuntimeError(
            f"{name}(): result type {dt.SCALAR_NAMES[result.dtype]} can't be cast to the "
            f"desired output type {dt.SCALAR_NAMES[self.dtype]}"
        )
    return self.copy_(result)


def inplace(name: str):
    """``Tensor.<name>_``: ``ember.<name>(self, ...)`` written back into self."""

    def method(self, *args, **kwargs):
        result = getattr(_ember(), name)(self, *args, **kwargs)
        return write_back(f"{name}_", self, result)

    method.__name__ = method.__qualname__ = f"{name}_"
    return method


def _inplace_keep_dtype(name: str):
    """cumsum_/cumprod_: computed in self's dtype (PyTorch passes it as ``dtype``)."""

    def method(self, dim, *, dtype=None):
        result = getattr(_ember(), name)(self, dim, dtype=dtype or self.dtype)
        return write_back(f"{name}_", self, result)

    method.__name__ = method.__qualname__ = f"{name}_"
    return method


def float_power_(self, exponent):
    exponent_complex = (
        exponent.dtype.is_complex if hasattr(exponent, "dtype") else isinstance(exponent, complex)
    )
    want = dt.complex128 if self.dtype.is_complex or exponent_complex else dt.float64
    if self.dtype is not want:
        raise RuntimeError(
            f"the base given to float_power_ has dtype {dt.SCALAR_NAMES[self.dtype]} but the "
            f"operation's result requires dtype {dt.SCALAR_NAMES[want]}"
        )
    return write_back("float_power_", self, _ember().float_power(self, exponent))


INPLACE_NAMES = (
    "clamp_min",
    "clamp_max",
    "heaviside",
    "gcd",
    "lcm",
    "ldexp",
    "deg2rad",
    "rad2deg",
    "addmv",
    "addr",
    "addbmm",
    "addmm",
    "baddbmm",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
    "logical_not",
    "tril",
    "triu",
    "true_divide",
    "logaddexp2",
    "scatter_reduce",
)


def _is_int(value) -> bool:
    return not isinstance(value, (bool, float)) and hasattr(value, "__index__")


# name -> (split or chunk, its size argument, what PyTorch's parser takes there)
SPLIT_ALIAS_ARGUMENTS = {
    "split_with_sizes": ("split", "split_sizes", "tuple of ints"),
    "unsafe_split": ("split", "split_size", "int"),
    "unsafe_chunk": ("chunk", "chunks", "int"),
}


def _split_alias(name: str, position: int):
    """split_with_sizes, unsafe_split, unsafe_chunk: PyTorch's other names of split/chunk (the
    unsafe ones' nodes under PyTorch's names for them, UnsafeSplitBackward0...), each taking
    only its own kind of size, as PyTorch's parser does (split takes either kind): the size
    argument is at ``position`` (2 for the function, 1 for the method) in its TypeError."""
    op_name, argument, kind = SPLIT_ALIAS_ARGUMENTS[name]

    def function(input, *args, **kwargs):
        value = args[0] if args else kwargs.get(argument)
        if value is not None:
            sizes = isinstance(value, (list, tuple)) and all(_is_int(v) for v in value)
            if not (sizes if kind == "tuple of ints" else _is_int(value)):
                raise TypeError(
                    f"{name}(): argument '{argument}' (position {position}) must be {kind}, "
                    f"not {type(value).__name__}"
                )
        out = getattr(_ember(), op_name)(input, *args, **kwargs)
        if name.startswith("unsafe"):
            from .autograd.graph_names import unsafe_split

            unsafe_split(out)
        return out

    function.__name__ = function.__qualname__ = name
    return function


def _split_aliases(position: int) -> dict:
    return {name: _split_alias(name, position) for name in SPLIT_ALIAS_ARGUMENTS}


# ---- overloads ----------------------------------------------------------------------------
def _median_of(op_name: str):
    """median/nanmedian: ``(x)`` is the lower median of all elements; ``(x, dim, keepdim)``
    gives ``(values, indices)``."""

    def method(input, dim=None, keepdim=False):
        if dim is None:
            flat = input.reshape(-1)
            if flat.numel() == 0:
                return OPS["full"]((), float("nan"), input.dtype, input.device)
            return OPS[op_name](flat, 0, False).values.reshape(())
        return OPS[op_name](input, dim, keepdim)

    def function(input, dim=None, keepdim=False, *, out=None):
        if out is not None:
            compute = lambda: method(input, dim, keepdim)  # noqa: E731
            return _into(op_name, op_name, out, (input,), compute)
        return method(input, dim, keepdim)

    function.__name__ = method.__name__ = op_name
    return function, method


median, _median = _median_of("median")
nanmedian, _nanmedian = _median_of("nanmedian")


def _atleast(op_name: str):
    """atleast_Nd(x) -> a tensor; atleast_Nd(x, y, ...) or ([x, y]) -> a tuple of them."""

    def function(*tensors):
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            tensors = tuple(tensors[0])
        elif len(tensors) == 1:
            return OPS[op_name](tensors[0])
        return tuple(OPS[op_name](t) for t in tensors)

    function.__name__ = op_name
    return function


def _tensor_list(tensors) -> list:
    """``f(a, b, c)`` or ``f([a, b, c])``: the tensors either way."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return list(tensors[0])
    return list(tensors)


def meshgrid(*tensors, indexing=None):
    return OPS["meshgrid"](_tensor_list(tensors), indexing)


def cartesian_prod(*tensors):
    return OPS["cartesian_prod"](_tensor_list(tensors))


def block_diag(*tensors):
    return OPS["block_diag"](_tensor_list(tensors))


def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """PyTorch's (hist, bin_edges) pair over the op's flat [hist, *edges]."""
    from .dispatcher.optable.surface_histogram import histogramdd_result

    hist, *edges = OPS["histogramdd"](input, bins, range, weight, density)
    return histogramdd_result(hist, tuple(edges))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    return bool(OPS["isclose"](input, other, rtol, atol, equal_nan).all())


def equal(input, other) -> bool:
    """Same shape and same values (after promotion), as ``torch.equal``."""
    if not isinstance(other, Tensor):
        raise TypeError(f"equal(): argument 'other' must be Tensor, not {type(other).__name__}")
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool(OPS["eq"](input, other).all())


def unravel_index(indices: Tensor, shape) -> tuple:
    """Flat indices into a tensor of ``shape`` as one coordinate tensor per dim.

    Example:
        >>> ember.unravel_index(ember.tensor([4, 1]), (3, 2))
        (tensor([2, 0]), tensor([0, 1]))
    """
    check_unravel_indices(indices)  # PyTorch's TypeError, before the row's dtype check
    return OPS["unravel_index"](indices, shape)


def zero_(input: Tensor) -> Tensor:
    """``torch.zero_(x)``: the method as a function."""
    return input.zero_()


def resize_as_(input: Tensor, the_template: Tensor, *, memory_format=None) -> Tensor:
    """``torch.resize_as_(x, y)``: the method as a function."""
    return input.resize_as_(the_template, memory_format=memory_format)


def _rdiv(self: Tensor, other) -> Tensor:
    """``other / self``, under Python 2's name, which PyTorch keeps."""
    return self.__rtruediv__(other)


def typename(obj, /) -> str:
    """``torch.typename``: a tensor's legacy type string (``ember.FloatTensor``), else the
    object's (or its class's) module-qualified name, builtins bare (``float``)."""
    if isinstance(obj, Tensor):
        return obj.type()
    if is_storage(obj):  # a tensor's storage is ember's own class, UntypedStorage to PyTorch
        from .storage import TypedStorage

        kind = type(obj).__name__ if isinstance(obj, TypedStorage) else "UntypedStorage"
        return f"ember.storage.{kind}"
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        name = obj.__qualname__
    elif hasattr(obj, "__name__"):
        name = obj.__name__
    else:
        module = type(obj).__module__ or ""
        name = type(obj).__qualname__
    return name if module in ("", "builtins") else f"{module}.{name}"


def is_storage(obj, /) -> bool:
    """``torch.is_storage``: whether ``obj`` is a storage (untyped or typed)."""
    from .storage import TypedStorage, UntypedStorage

    return isinstance(obj, (UntypedStorage, TypedStorage))


FUNCTIONS = {
    **_split_aliases(2),
    "typename": typename,
    "is_storage": is_storage,
    **_unique.FUNCTIONS,
    **_lowrank.FUNCTIONS,
    "meshgrid": meshgrid,
    "cartesian_prod": cartesian_prod,
    "block_diag": block_diag,
    "histogramdd": histogramdd,
    **{f"atleast_{n}d": _atleast(f"atleast_{n}d") for n in (1, 2, 3)},
    "median": median,
    "nanmedian": nanmedian,
    "allclose": allclose,
    "equal": equal,
    "zero_": zero_,
    "unravel_index": unravel_index,
    "resize_as_": resize_as_,
}

METHODS = {
    "__rdiv__": _rdiv,
    **_split_aliases(1),
    **_inplace_view.METHODS,
    **_unique.METHODS,
    "median": _median,
    "nanmedian": _nanmedian,
    "allclose": allclose,
    "equal": equal,
    "float_power_": float_power_,
    "cumsum_": _inplace_keep_dtype("cumsum"),
    "cumprod_": _inplace_keep_dtype("cumprod"),
    **{f"{name}_": inplace(name) for name in INPLACE_NAMES},
}
