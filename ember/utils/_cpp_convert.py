"""The Python side of an extension function: ember tensors become pointers, numbers stay numbers.

One converter per C parameter is chosen once, from cffi's view of the declaration, so a call
only checks and casts. A tensor is passed as its ``data_ptr()``: it must be contiguous (the C
function may write through the pointer, so a silent copy would lose its output), on the CPU (or
a CUDA device for extensions built with CUDA), and of a dtype with the pointer's C type.
"""

from __future__ import annotations

import functools

# C pointee type -> the ember dtypes whose elements it reads (``void`` takes every dtype).
_POINTEE_DTYPES = {
    "float": ("float32",),
    "double": ("float64",),
    "_Bool": ("bool",),
    "int8_t": ("int8",),
    "signed char": ("int8",),
    "char": ("int8", "uint8", "bool"),
    "uint8_t": ("uint8", "bool"),
    "unsigned char": ("uint8", "bool"),
    "int16_t": ("int16",),
    "short": ("int16",),
    "uint16_t": ("float16", "bfloat16"),  # the bits of 16-bit floats
    "int32_t": ("int32",),
    "int": ("int32",),
    "int64_t": ("int64",),
    "long long": ("int64",),
}


def wrap(ext: str, fn: str, decl: str, ffi, lib, doc, cuda: bool):
    """A Python function calling ``lib.<fn>`` with ember tensors for its pointer parameters."""
    from ember._tensor import Tensor

    c_function = getattr(lib, fn)
    ctype = ffi.typeof(c_function)
    devices = ("cpu", "cuda") if cuda else ("cpu",)
    converters = [
        _converter(ffi, Tensor, f"{ext}.{fn}", i, arg, devices) for i, arg in enumerate(ctype.args)
    ]
    signature = decl

    @functools.wraps(c_function)
    def call(*args):
        if len(args) != len(converters):
            raise TypeError(
                f"{ext}.{fn}() takes {len(converters)} arguments ({signature}), got {len(args)}"
            )
        return c_function(*[convert(a) for convert, a in zip(converters, args)])

    call.__name__ = call.__qualname__ = fn
    call.__doc__ = doc or f"C function ``{signature}`` of extension '{ext}'."
    call.__wrapped__ = c_function
    return call


def _converter(ffi, tensor_type, where: str, index: int, arg, devices):
    if arg.kind != "pointer":
        return functools.partial(_number, tensor_type, where, index, arg.cname)
    pointee = arg.item.cname
    if pointee == "long":
        pointee = "int64_t" if ffi.sizeof("long") == 8 else "int32_t"
    dtypes = None if pointee == "void" else _POINTEE_DTYPES.get(pointee, ())
    check = functools.partial(_tensor_pointer, where, index, arg.cname, dtypes, devices)
    cast = ffi.cast

    def convert(value):
        if isinstance(value, tensor_type):
            # the common case in private attributes (a call is ~3 us of Python otherwise)
            if (
                value._contig
                and (dtypes is None or value._dtype.name in dtypes)
                and value._storage.device.type in devices
            ):
                return cast(arg, value._storage.data_ptr() + value._offset * value._dtype.itemsize)
            return cast(arg, check(value))
        if value is None:
            return ffi.NULL
        if isinstance(value, int):  # a raw address
            return ffi.cast(arg, value)
        return value  # cffi data: cffi checks it

    return convert


def _tensor_pointer(where, index, cname, dtypes, devices, tensor) -> int:
    """The address of ``tensor``'s first element, after the checks that make it safe to pass."""
    name = f"{where}: argument {index} ({cname})"
    if tensor.device.type not in devices:
        raise ValueError(f"{name} takes a tensor on {' or '.join(devices)}, got {tensor.device}")
    if dtypes is not None and tensor.dtype.name not in dtypes:
        wanted = " or ".join(f"ember.{d}" for d in dtypes) or "no ember dtype"
        raise TypeError(f"{name} takes {wanted}, got {tensor.dtype}")
    if not tensor.is_contiguous():
        raise ValueError(
            f"{name} takes a contiguous tensor, got shape {list(tensor.shape)} with strides "
            f"{list(tensor.stride())}; call .contiguous() first (and copy results back)"
        )
    return tensor.data_ptr()


def _number(tensor_type, where, index, cname, value):
    if isinstance(value, tensor_type):
        raise TypeError(
            f"{where}: argument {index} ({cname}) takes a number, got a Tensor; pass .item() or "
            ".numel()"
        )
    return value
