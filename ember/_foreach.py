"""``torch._foreach_*``: the multi-tensor forms of elementwise ops that optimizers written for
PyTorch call (``_foreach_mul_(params, 1 - lr * wd)``, ``_foreach_add_(params, grads,
alpha=-lr)``, ``_foreach_lerp_``, ``_foreach_addcdiv_``...).

Each is the op applied tensor by tensor, as PyTorch's own fallback for lists its fused kernels
do not take, so autograd records the parts and every device works. Three of them keep their
one-call kernels (dispatcher/optable/foreach.py): the norms of a list, and scaling or
incrementing a list of one device and floating dtype by a number. The tables below say which
overloads each name has, after PyTorch's native_functions.yaml: a tensor list (``List``), a
number (``Scalar``), a list of numbers (``ScalarList``), a 0-dim tensor (``Tensor``).
Out-of-place forms return a tuple, in-place forms the list they were given, as PyTorch's do.
"""

from __future__ import annotations

import numbers

import ember

from ._tensor import Tensor
from .dispatcher.optable import OPS

UNARY = (
    "abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
    "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round",
    "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
)  # fmt: skip

# name -> (the op a tensor or list operand takes, the op a number takes, the overloads
# beyond List/Scalar/ScalarList that PyTorch gives it; without "Tensor", a 0-dim tensor is
# read as a number, as PyTorch's argument parser reads it)
BINARY = {
    "add": ("add", "add", {"alpha", "Tensor"}),
    "sub": ("sub", "sub", {"alpha"}),
    "mul": ("mul", "mul", {"Tensor"}),
    "div": ("div", "div", {"Tensor"}),
    "pow": ("pow", "pow", set()),
    # maximum(x, number) is clamp_min, as PyTorch's foreach kernels compute it
    "maximum": ("maximum", "clamp_min", set()),
    "minimum": ("minimum", "clamp_max", set()),
    "clamp_min": ("clamp_min", "clamp_min", set()),
    "clamp_max": ("clamp_max", "clamp_max", set()),
}

TERNARY = ("addcmul", "addcdiv")

_UNSET = object()  # no alpha given


def _tensors(name: str, tensors) -> list:
    if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(
            f"{name}(): argument 'self' must be tuple of Tensors, not {type(tensors).__name__}"
        )
    if not tensors:
        raise RuntimeError("Tensor list must have at least one tensor.")
    return list(tensors)


def _same_count(first: list, second) -> list:
    second = list(second)
    if len(second) != len(first):
        raise RuntimeError(
            f"Tensor lists must have the same number of tensors, got {len(first)} and {len(second)}"
        )
    return second


def _scalars(tensors: list, values) -> list:
    """A ScalarList (or a 1-d tensor of them, for addcmul/addcdiv): one number per tensor."""
    if isinstance(values, Tensor):
        values = values.tolist()
    values = list(values)
    if len(values) != len(tensors):
        raise RuntimeError("Tensor list must have same number of elements as scalar list.")
    return values


def _is_number(value) -> bool:
    return isinstance(value, numbers.Number)


def _operands(name: str, tensors: list, other, overloads: set) -> tuple[list, bool]:
    """``(per-tensor operands, whether they are numbers)`` of ``other`` by overload."""
    if isinstance(other, Tensor):
        if "Tensor" not in overloads:
            if other.dim() == 0:  # a number to PyTorch's argument parser
                return [other.item()] * len(tensors), True
            raise TypeError(f"{name}(): argument 'other' must be tuple of Tensors, not Tensor")
        if other.dim() != 0:
            raise RuntimeError(
                f"scalar tensor expected to be 0 dim but it has {other.dim()} dimensions and "
                f"{other.numel()} elements."
            )
        return [other] * len(tensors), False
    if isinstance(other, (list, tuple)):
        if other and all(isinstance(o, Tensor) for o in other):
            return _same_count(tensors, other), False
        if all(_is_number(o) for o in other):
            return _scalars(tensors, other), True
    elif _is_number(other):
        return [other] * len(tensors), True
    raise TypeError(
        f"{name}() received an invalid combination of arguments - got "
        f"({type(tensors).__name__}, {type(other).__name__})"
    )


def _binary(name: str, inplace: bool):
    tensor_op, number_op, overloads = BINARY[name]
    public = f"_foreach_{name}{'_' if inplace else ''}"

    def call(self, other, *, alpha=_UNSET):
        alpha = {} if alpha is _UNSET else {"alpha": alpha}  # passed on only when given
        if alpha and "alpha" not in overloads:
            raise TypeError(f"{public}() got an unexpected keyword argument 'alpha'")
        tensors = _tensors(public, self)
        operands, numbers_ = _operands(public, tensors, other, overloads)
        if alpha and numbers_:  # PyTorch's Scalar and ScalarList overloads take no alpha
            raise TypeError(
                f"{public}() received an invalid combination of arguments - got "
                f"({type(self).__name__}, {type(other).__name__}, alpha=...)"
            )
        op = number_op if numbers_ else tensor_op
        if inplace:
            fast = _one_call(name, tensors, other, numbers_, alpha)
            if fast is not None:
                fast(tensors, other)
                return self
            for t, o in zip(tensors, operands):
                getattr(t, f"{op}_")(o, **alpha)
            return self
        fn = getattr(ember, op)
        return tuple(fn(t, o, **alpha) for t, o in zip(tensors, operands))

    call.__name__ = call.__qualname__ = public
    call.__doc__ = f"``torch.{public}``: ``{name}`` of each tensor of the list (module docstring)."
    return call


def _one_call(name: str, tensors, other, numbers_: bool, alpha: dict):
    """The one-call row of dispatcher/optable/foreach.py that takes this call, or None."""
    if name == "mul" and (isinstance(other, Tensor) or (numbers_ and _is_number(other))):
        return OPS["_foreach_mul_"]
    if name == "add" and numbers_ and _is_number(other) and not alpha:
        return OPS["_foreach_add_"]
    return None


def _unary(name: str, inplace: bool):
    public = f"_foreach_{name}{'_' if inplace else ''}"

    def call(self):
        tensors = _tensors(public, self)
        if inplace:
            for t in tensors:
                getattr(t, f"{name}_")()
            return self
        fn = getattr(ember, name)
        return tuple(fn(t) for t in tensors)

    call.__name__ = call.__qualname__ = public
    return call


def _ternary(name: str, inplace: bool):
    public = f"_foreach_{name}{'_' if inplace else ''}"

    def call(self, tensor1, tensor2, value=1):
        tensors = _tensors(public, self)
        firsts, seconds = _same_count(tensors, tensor1), _same_count(tensors, tensor2)
        values = [value] * len(tensors) if _is_number(value) else _scalars(tensors, value)
        if inplace:
            for t, a, b, v in zip(tensors, firsts, seconds, values):
                getattr(t, f"{name}_")(a, b, value=v)
            return self
        fn = getattr(ember, name)
        return tuple(fn(t, a, b, value=v) for t, a, b, v in zip(tensors, firsts, seconds, values))

    call.__name__ = call.__qualname__ = public
    return call


def _lerp(inplace: bool):
    public = f"_foreach_lerp{'_' if inplace else ''}"

    def call(self, tensors1, weight):
        tensors = _tensors(public, self)
        ends = _same_count(tensors, tensors1)
        if _is_number(weight):
            weights = [weight] * len(tensors)
        elif weight and all(isinstance(w, Tensor) for w in weight):
            weights = _same_count(tensors, weight)
        else:
            weights = _scalars(tensors, weight)
        if inplace:
            for t, e, w in zip(tensors, ends, weights):
                t.lerp_(e, w)
            return self
        return tuple(ember.lerp(t, e, w) for t, e, w in zip(tensors, ends, weights))

    call.__name__ = call.__qualname__ = public
    return call


_POW_OF_LIST = _binary("pow", False)


def _foreach_pow(self, exponent):
    """``torch._foreach_pow``: also a number raised to each tensor of a list."""
    if _is_number(self):
        tensors = _tensors("_foreach_pow", exponent)
        return tuple(ember.pow(self, t) for t in tensors)
    return _POW_OF_LIST(self, exponent)


def _foreach_zero_(self):
    for t in _tensors("_foreach_zero_", self):
        t.zero_()
    return self


def _foreach_copy_(self, src, non_blocking=False):
    tensors = _tensors("_foreach_copy_", self)
    for t, s in zip(tensors, _same_count(tensors, src)):
        t.copy_(s, non_blocking=non_blocking)
    return self


def _foreach_clone(self):
    return tuple(t.clone() for t in _tensors("_foreach_clone", self))


def _foreach_max(self):
    return tuple(ember.max(t) for t in _tensors("_foreach_max", self))


def _foreach_norm(self, ord=2, dtype=None):
    return tuple(OPS["_foreach_norm"](self, ord, dtype))


def _foreach_powsum(self, ord=2, dtype=None):
    """``sum(|x| ** ord)`` of each tensor: its norm before the root."""
    tensors = _tensors("_foreach_powsum", self)
    if dtype is not None:
        tensors = [t.to(dtype) for t in tensors]
    return tuple((t.abs() ** ord).sum() for t in tensors)


def _foreach_mm(self, mat2):
    tensors = _tensors("_foreach_mm", self)
    return tuple(ember.mm(a, b) for a, b in zip(tensors, _same_count(tensors, mat2)))


def _table() -> dict:
    found = {}
    for inplace in (False, True):
        suffix = "_" if inplace else ""
        for name in UNARY:
            found[f"_foreach_{name}{suffix}"] = _unary(name, inplace)
        for name in BINARY:
            found[f"_foreach_{name}{suffix}"] = _binary(name, inplace)
        for name in TERNARY:
            found[f"_foreach_{name}{suffix}"] = _ternary(name, inplace)
        found[f"_foreach_lerp{suffix}"] = _lerp(inplace)
    found.update(
        _foreach_pow=_foreach_pow,
        _foreach_zero_=_foreach_zero_,
        _foreach_copy_=_foreach_copy_,
        _foreach_clone=_foreach_clone,
        _foreach_max=_foreach_max,
        _foreach_norm=_foreach_norm,
        _foreach_powsum=_foreach_powsum,
        _foreach_mm=_foreach_mm,
    )
    return found


FUNCTIONS = _table()
METHODS: dict = {}
