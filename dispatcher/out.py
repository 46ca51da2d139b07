"""``out=`` arguments: PyTorch's checks, then the result written into the caller's tensors.

Every public function whose op row has an out rule (``OpDef.out``, see ``opdef.Out``) takes
``out=``. The call runs as usual into fresh tensors, which are then checked against ``out`` and
copied into it (resized first when its shape differs), so kernels never see ``out`` and any
aliasing between ``out`` and the inputs that PyTorch allows gives the right numbers. An ``out``
with lazy bits (``out=z.conj()``) is written through them, so that it reads back the result. A
call without ``out=`` never reaches this module.
"""

from __future__ import annotations

import warnings

from ember import _dtype as dt
from ember._tensor import Tensor

from .mathbits import flagged, resolve, write_through
from .opdef import Kind
from .overlap import check_inputs, check_internal
from .promotion import can_cast
from .registry import _user_stacklevel

_RESIZED = (
    "An output with one or more elements was resized since it had shape {old}, which does not "
    "match the required output shape {new}. This behavior is deprecated, and in a future "
    "PyTorch release outputs will not be resized unless they have zero elements. You can "
    "explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
    "t.resize_(0)."
)


def _name(d) -> str:
    return dt.SCALAR_NAMES[d]


# The C++ type names PyTorch's "Expected out tensor to have dtype float" messages use.
_CPP_NAMES = {
    dt.bool_: "bool",
    dt.uint8: "unsigned char",
    dt.int8: "signed char",
    dt.int16: "short int",
    dt.int32: "int",
    dt.int64: "long int",
    dt.float16: "c10::Half",
    dt.bfloat16: "c10::BFloat16",
    dt.float32: "float",
    dt.float64: "double",
    dt.uint16: "unsigned short",
    dt.uint32: "unsigned int",
    dt.uint64: "unsigned long",
}


def returns_list(op) -> bool:
    """Whether the op returns a ``Tensor[]`` (unbind_copy): its out= is a list of tensors, one
    per piece, and the function returns None, as PyTorch's does."""
    returns = op.schema.returns
    return bool(returns) and returns[0][0] == "Tensor[]"  # in-place list ops return nothing


def outputs(name: str, op, out) -> tuple:
    """``out`` as a tuple of tensors, checked against the op's number of results (a list
    op's count is known after the call: ``check_count``)."""
    if returns_list(op):
        if not isinstance(out, (tuple, list)):
            raise TypeError(
                f"{name}(): argument 'out' must be tuple of Tensors, not {type(out).__name__}"
            )
        for i, item in enumerate(out):
            if not isinstance(item, Tensor):
                raise TypeError(
                    f"{name}(): expected Tensor as element {i} in argument 'out', but got "
                    f"{type(item).__name__}"
                )
        return tuple(out)
    count = op.num_outputs
    if count == 1:
        if not isinstance(out, Tensor):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
        return (out,)
    if not isinstance(out, (tuple, list)) or not all(isinstance(t, Tensor) for t in out):
        raise TypeError(
            f"{name}(): argument 'out' must be a tuple of {count} Tensors, not {type(out).__name__}"
        )
    if len(out) != count:
        raise TypeError(f"{name}(): expected a tuple of {count} out tensors but got {len(out)}")
    return tuple(out)


def _requires_grad(values) -> bool:
    """Whether a tensor among ``values`` (or in a list among them, as cat takes) requires grad."""
    for value in values:
        if value.__class__ is list or value.__class__ is tuple:
            found = _requires_grad(value)
        else:
            found = isinstance(value, Tensor) and value._requires_grad
        if found:
            return True
    return False


def check_grad(name: str, op, inputs, outs) -> None:
    """PyTorch records no graph for out= calls, so it refuses them where one would be needed."""
    from ember.autograd.grad_mode import THREAD

    if not THREAD.mode.enabled:
        return
    if _requires_grad(outs) or (op.defn.differentiable and _requires_grad(inputs)):
        raise RuntimeError(
            f"{name}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad."
        )


def dtype_for(name: str, op, given, outs):
    """The dtype a ``from_out`` op computes in: out's, or the one given when it agrees (each
    refusal in PyTorch's words: factories name the dtype argument, reductions the result)."""
    want = outs[0]._dtype
    if given is None or given is want:
        return want
    if op.kind in (Kind.FACTORY, Kind.RANDOM):
        raise RuntimeError(
            f"{name}(): dtype {_name(given)} does not match dtype of out parameter ({_name(want)})"
        )
    raise RuntimeError(
        f"{name}(): Expected out tensor to have dtype {_cpp_name(given)}, but got "
        f"{_cpp_name(want)} instead"
    )


def _cpp_name(d) -> str:
    """The C++ type PyTorch's messages name for ``d`` (the dtype's own name where none)."""
    return _CPP_NAMES.get(d, d.name)


def _check_dtype(name: str, rule: str, result: Tensor, out: Tensor, message=None) -> None:
    """The dtype rule of the op's row (opdef.Out), with PyTorch's message for each."""
    want, got = result._dtype, out._dtype
    if rule == "cast":
        if not can_cast(want, got):
            raise RuntimeError(
                f"{name}(): result type {_name(want)} can't be cast to the desired output type "
                f"{_name(got)}"
            )
    elif want is not got:
        if message is not None:
            raise RuntimeError(message.format(name=name, got=_name(got), want=_name(want)))
        if rule == "same":
            raise RuntimeError(f"{name}(): Found dtype {_name(got)} but expected {_name(want)}")
        raise RuntimeError(
            f"{name}(): Expected out tensor to have dtype {_cpp_name(want)}, but got "
            f"{_cpp_name(got)} instead"
        )


def _resize(out: Tensor, shape: tuple) -> None:
    if out._shape == shape:
        return
    if 0 not in out._shape:
        message = _RESIZED.format(old=list(out._shape), new=list(shape))
        warnings.warn(message, UserWarning, stacklevel=_user_stacklevel())
    from ember._resize import resize_

    resize_(out, shape)


def write(name: str, op, result, outs: tuple, out, rule: str = "exact"):
    """Copy the results of a call into ``outs`` (after the dtype rule ``rule``, the device and
    shape rules); returns what the function returns: ``out``, the result's named tuple over
    ``outs``, or None for a list op (as PyTorch's)."""
    from .kinds._common import OPS

    results = (result,) if isinstance(result, Tensor) else tuple(result)
    message = op.out.message if op.out is not None else None
    for res, target in zip(results, outs):
        _check_dtype(name, rule, res, target, message)
        if res._storage.device is not target._storage.device:
            raise RuntimeError(
                f"{name}(): Expected all tensors to be on the same device, but found at least two "
                f"devices, {res._storage.device} (the result) and {target._storage.device} (out)!"
            )
    copy = OPS["copy_"]
    for res, target in zip(results, outs):
        _resize(target, res._shape)
        res = resolve(res)  # the backend copies raw storage: apply the bits first
        if flagged(target):  # a lazy view (out=z.conj()) is written through its bits, so it
            target, res = write_through(target, res)  # reads back the result, as PyTorch's
        copy.backend((target, res))
    if isinstance(result, Tensor):
        return outs[0]
    if returns_list(op):
        return None
    return type(result)(*outs)


def copy_recorded(name: str, result: Tensor, out: Tensor) -> Tensor:
    """out= of a function PyTorch writes in Python as ``out.copy_(result)`` (tensordot): out's
    dtype must be the result's, out is resized, and the copy is recorded by autograd (no
    refusal of inputs that require grad)."""
    if out._dtype is not result._dtype:
        raise RuntimeError(
            f"{name}: Expected the output tensor to have dtype {_name(result._dtype)}, but got an "
            f"output tensor with dtype {_name(out._dtype)}"
        )
    _resize(out, result._shape)
    return out.copy_(result)


def _check_count(name: str, op, results, outs) -> None:
    if returns_list(op) and len(results) != len(outs):
        raise RuntimeError(
            f"{name}(): expected an out= argument of size {len(results)}, got size {len(outs)}"
        )


def _check_overlap(name: str, rule, outs: tuple, inputs) -> None:
    """Each out against what it is written from: the inputs, or the row's ``reads`` of them."""
    overlap = rule.overlap if rule is not None else None
    reads = rule.reads(*inputs) if rule is not None and rule.reads is not None else None
    for i, target in enumerate(outs):
        check_internal(name, target)
        sources = inputs if reads is None else (reads[i] if i < len(reads) else ())
        check_inputs(name, target, sources, overlap)


def call(name: str, op, out, inputs, compute, dtype=None):
    """The whole out= call of the function ``name`` over ``op``'s row: ``compute()`` gives the
    plain result, ``inputs`` hold the tensors ``out`` may not overlap. For ``from_out`` ops
    ``compute(dtype)`` computes in out's dtype (``dtype``, the one the caller gave, must agree).
    """
    outs = outputs(name, op, out)
    check_grad(name, op, inputs, outs)
    rule = op.out
    kind = "exact" if rule is None else rule.dtype
    if callable(kind):  # an overload's rule: the row's function of the arguments
        kind = kind(*inputs)
    if rule is None or rule.reads is None:
        _check_overlap(name, rule, outs, inputs)
    if kind == "from_out":
        result = compute(dtype_for(name, op, dtype, outs))
    else:
        result = compute()
    _check_count(name, op, result, outs)
    if rule is not None and rule.reads is not None:  # a list op's count is known only now
        _check_overlap(name, rule, outs, inputs)
    return write(name, op, result, outs, out, kind)


def call_op(op, out, args, dtype_at: int | None):
    """``op(*args)`` with ``out=``, for the functions generated from the table; ``dtype_at`` is
    the position of the op's ``dtype`` argument, for ``from_out`` ops."""
    if dtype_at is None:
        return call(op.name, op, out, args, lambda: op(*args))

    def compute(dtype):
        given = list(args)
        given[dtype_at] = dtype
        return op(*given)

    return call(op.name, op, out, args, compute, args[dtype_at])
