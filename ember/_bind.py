"""Generate ``ember.*`` functions and Tensor methods from the op table.

Each function is real Python (built with ``exec`` from the schema, like ``dataclasses`` does), so it
has PyTorch's argument names and defaults, shows in ``help()``, and passes its arguments to the op
positionally: no keyword parsing happens on the hot path.
"""

from __future__ import annotations

import keyword

import numpy as np

from ._tensor import Tensor
from .dispatcher.layers import STACK
from .dispatcher.out import call_op
from .dispatcher.schema import Schema

# Python operators and the ops behind them: (forward, reflected, in-place).
BINARY_OPERATORS = {
    "add": ("__add__", "__radd__", "__iadd__"),
    "sub": ("__sub__", "__rsub__", "__isub__"),
    "mul": ("__mul__", "__rmul__", "__imul__"),
    "div": ("__truediv__", "__rtruediv__", "__itruediv__"),
    "floor_divide": ("__floordiv__", "__rfloordiv__", "__ifloordiv__"),
    "remainder": ("__mod__", "__rmod__", "__imod__"),
    "pow": ("__pow__", "__rpow__", "__ipow__"),
    "bitwise_and": ("__and__", "__rand__", "__iand__"),
    "bitwise_or": ("__or__", "__ror__", "__ior__"),
    "bitwise_xor": ("__xor__", "__rxor__", "__ixor__"),
    "bitwise_left_shift": ("__lshift__", "__rlshift__", "__ilshift__"),
    "bitwise_right_shift": ("__rshift__", "__rrshift__", "__irshift__"),
    "matmul": ("__matmul__", "__rmatmul__", None),
}
# Commutative ops whose reflected operator PyTorch binds to the op itself: ``2.0 * x`` is
# ``mul(x, 2.0)``, so the node's inputs are (x, None) there too.
COMMUTATIVE = frozenset({"add", "mul"})
COMPARISONS = {
    "eq": "__eq__",
    "ne": "__ne__",
    "lt": "__lt__",
    "le": "__le__",
    "gt": "__gt__",
    "ge": "__ge__",
}
UNARY_OPERATORS = {"neg": "__neg__", "abs": "__abs__", "bitwise_not": "__invert__"}


def _param(name: str) -> str:
    return f"{name}_" if keyword.iskeyword(name) else name


def _default(value) -> str:
    return repr(tuple(value)) if isinstance(value, list) else repr(value)


def _signature(schema: Schema, first: str | None, varargs: str | None) -> tuple[str, list[str]]:
    """Python parameter list and the names to pass on, in schema order."""
    params, names, star = [], [], False
    for i, arg in enumerate(schema.args):
        name = first if (i == 0 and first) else _param(arg.name)
        names.append(name)
        if varargs and arg.name == varargs:
            # x.flip(0, 1) and x.flip(dims=(0, 1)), as PyTorch's methods take both
            names[-1] = f"_{name}"
            params.append(f"*_{name}, {name}=None")
            star = True
            continue
        if arg.kwarg_only and not star:
            params.append("*")
            star = True
        params.append(f"{name}={_default(arg.default)}" if arg.has_default else name)
    return ", ".join(params), names


def _dtype_position(op) -> int | None:
    """Where the ``dtype`` argument of an op whose out= computes in out's dtype is."""
    if op.out.dtype != "from_out":
        return None
    for i, arg in enumerate(op.schema.args):
        if arg.name == "dtype":
            return i
    raise ValueError(f"op table: '{op.name}' computes out= in out's dtype but takes no dtype")


def make_callable(op, name: str, *, method: bool, varargs: str | None = None):
    """A function (or Tensor method when ``method``) that calls ``op`` with positional args.

    Functions of ops with an out= rule also take ``out=`` (Tensor methods never do, as in
    PyTorch); a call without it pays one ``is None`` test."""
    schema = op.schema
    use_varargs = varargs if method else None
    params, names = _signature(schema, "self" if method else None, use_varargs)
    call = f"({', '.join(names)})"
    takes_out = not method and op.out is not None
    if takes_out:
        star = any(arg.kwarg_only for arg in schema.args)
        params += ", out=None" if star else ", *, out=None"
    lines = [f"def {name}({params}):"]
    if use_varargs:
        v = _param(use_varargs)
        lines.append(f"    if {v} is not None:")
        lines.append(f"        if _{v}:")
        message = f"{name}() got multiple values for argument '{v}'"
        lines.append(f"            raise TypeError({message!r})")
        lines.append(f"        _{v} = ({v},)")
        lines.append(f"    if len(_{v}) == 1 and not isinstance(_{v}[0], int):")
        lines.append(f"        _{v} = _{v}[0]")
    if takes_out:
        lines.append("    if out is not None:")
        lines.append(f"        return _out(_op, out, {call[:-1]},), {_dtype_position(op)})")
    if _first_tensor_only(schema):
        # exp(x), x.relu(), x.reshape(2, 3): the one tensor argument decides whether a layer
        # wants the call (the operators' check in _operator; dispatcher/layers.py says why it
        # may be skipped)
        x = names[0]
        args = f"({', '.join(names)},)"
        lines.append(f"    if ({x}.__class__ is _Tensor and not {x}._requires_grad")
        lines.append("            and _stack.layers is _stack.grad_only_layers):")
        lines.append("        try:")
        lines.append(f"            return _op.runner(_op, {', '.join(names)})")
        lines.append("        except (AttributeError, TypeError) as error:")
        lines.append(f"            _op.argument_error({args}, error)")
        lines.append("            raise")
        lines.append("        except NotImplementedError as error:")
        lines.append(f"            return _op.refused({args}, error)")
        # autograd alone and x requires grad: its recorder (dispatcher/layers.py)
        lines.append(f"    if ({x}.__class__ is _Tensor and _stack.layers is _stack.direct_layers")
        lines.append("            and _op.recorder is not None):")
        lines.append(f"        return _op.recorder({', '.join(names)})")
    lines.append(f"    return _op{call}")
    namespace: dict = {}
    # __name__ marks the frames of generated functions as ember's (warnings skip them).
    scope = {"_op": op, "_out": call_op, "__name__": "ember", "_stack": STACK, "_Tensor": Tensor}
    exec("\n".join(lines), scope, namespace)
    fn = namespace[name]
    fn.__doc__ = f"{schema.text}\n\n{op.defn.notes}".strip()
    fn.__qualname__ = f"Tensor.{name}" if method else name
    fn.__module__ = "ember"
    fn._ember_op = op
    return fn


# Argument types that never hold a tensor: a call's only tensor is then its first argument.
_NOT_TENSORS = frozenset({"int", "bool", "ScalarType", "str"})


def _first_tensor_only(schema: Schema) -> bool:
    """Whether the op's one tensor argument is its first, the others sizes, dims, flags or
    dtypes (exp, relu, reshape, transpose, t...)."""
    first, rest = schema.args[0] if schema.args else None, schema.args[1:]
    if first is None or not first.is_tensor or first.is_list:
        return False
    return all(a.type in _NOT_TENSORS for a in rest)


def _numpy_operand(other):
    """A numpy operand as ops take it (numpy scalars as they are: runners treat them as Python
    scalars; arrays as tensors, as PyTorch does), or None when the operator does not apply."""
    if isinstance(other, np.generic):
        return other
    if isinstance(other, np.ndarray):
        from ._factories import as_tensor

        return as_tensor(other)
    return None


def _operator(op, dunder: str, reflected: bool, tensor_type):
    numbers = (bool, int, float, complex)
    stack = STACK

    if reflected:

        def method(self, other):
            cls = other.__class__
            if cls is float or cls is int or cls is tensor_type:
                layers = stack.layers
                if layers is stack.grad_only_layers:
                    # No layer wants a call where nothing requires grad: run the Backend layer.
                    if not (self._requires_grad or (cls is tensor_type and other._requires_grad)):
                        try:
                            return op.runner(op, other, self)
                        except (AttributeError, TypeError) as error:
                            op.argument_error((other, self), error)
                            raise
                        except NotImplementedError as error:  # Op.refused: the limited dtypes
                            return op.refused((other, self), error)
                    # Autograd alone: its recorder, without Op.__call__ (dispatcher/layers.py)
                    if layers is stack.direct_layers and (record := op.recorder) is not None:
                        return record(other, self)
                return op(other, self)
            # int and float subclasses (numpy scalars, sizes a trace records) are numbers
            if cls not in numbers and not isinstance(other, (tensor_type, int, float)):
                other = _numpy_operand(other)
                if other is None:
                    return NotImplemented
            return op(other, self)
    else:

        def method(self, other):
            cls = other.__class__
            if cls is tensor_type or cls is float or cls is int:
                layers = stack.layers
                if layers is stack.grad_only_layers:
                    # No layer wants a call where nothing requires grad: run the Backend layer.
                    if not (self._requires_grad or (cls is tensor_type and other._requires_grad)):
                        try:
                            return op.runner(op, self, other)
                        except (AttributeError, TypeError) as error:
                            op.argument_error((self, other), error)
                            raise
                        except NotImplementedError as error:  # Op.refused: the limited dtypes
                            return op.refused((self, other), error)
                    # Autograd alone: its recorder, without Op.__call__ (dispatcher/layers.py)
                    if layers is stack.direct_layers and (record := op.recorder) is not None:
                        return record(self, other)
                return op(self, other)
            # int and float subclasses (numpy scalars, sizes a trace records) are numbers
            if cls not in numbers and not isinstance(other, (tensor_type, int, float)):
                other = _numpy_operand(other)
                if other is None:
                    return NotImplemented
            return op(self, other)

    method.__name__ = dunder
    method.__qualname__ = f"Tensor.{dunder}"
    return method


def _rtruediv(divide):
    """``other / self`` as PyTorch's Tensor computes it, the reciprocal times ``other`` (its
    graph: MulBackward0 over ReciprocalBackward0), where a layer records the call (autograd,
    tracing); else the one ``div`` kernel (``divide``, the reflected operator), twice as fast
    on small tensors and within an ulp of PyTorch's value."""

    def method(self, other):
        if STACK.layers is STACK.grad_only_layers and not self._requires_grad:
            return divide(self, other)
        if not isinstance(other, (Tensor, bool, int, float, complex)):
            other = _numpy_operand(other)
            if other is None:
                return NotImplemented
        return self.reciprocal() * other

    method.__name__ = "__rtruediv__"
    method.__qualname__ = "Tensor.__rtruediv__"
    return method


def _unary_operator(op, dunder: str):
    stack = STACK

    def method(self):
        layers = stack.layers
        if layers is stack.grad_only_layers:
            if not self._requires_grad:
                try:
                    return op.runner(op, self)
                except (AttributeError, TypeError) as error:
                    op.argument_error((self,), error)
                    raise
                except NotImplementedError as error:
                    return op.refused((self,), error)
            if layers is stack.direct_layers and (record := op.recorder) is not None:
                return record(self)
        return op(self)

    method.__name__ = dunder
    return method


def bind(ops: dict, tensor_type, namespace: dict) -> None:
    """Attach functions to ``namespace`` (the ember module) and methods to ``tensor_type``."""
    for name, op in ops.items():
        defn = op.defn
        if op.inplace_of is not None:
            setattr(tensor_type, name, make_callable(op, name, method=True, varargs=defn.varargs))
            continue
        if defn.frontend:  # hand-written in ember/_frontends.py or ember/_factories.py
            continue
        if defn.function:
            namespace[name] = make_callable(op, name, method=False)
        if defn.method:
            setattr(tensor_type, name, make_callable(op, name, method=True, varargs=defn.varargs))
    for name, (forward, reflected, inplace) in BINARY_OPERATORS.items():
        setattr(tensor_type, forward, _operator(ops[name], forward, False, tensor_type))
        swapped = name not in COMMUTATIVE
        setattr(tensor_type, reflected, _operator(ops[name], reflected, swapped, tensor_type))
        if inplace:
            setattr(tensor_type, inplace, _operator(ops[f"{name}_"], inplace, False, tensor_type))
    tensor_type.__rtruediv__ = _rtruediv(tensor_type.__rtruediv__)
    for name, dunder in COMPARISONS.items():
        setattr(tensor_type, dunder, _operator(ops[name], dunder, False, tensor_type))
    for name, dunder in UNARY_OPERATORS.items():
        setattr(tensor_type, dunder, _unary_operator(ops[name], dunder))
