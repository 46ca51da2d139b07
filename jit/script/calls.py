"""Attributes and calls: ``self.fc``, ``x.shape``, ``F.relu(x)``, ``x.view(n, -1)``,
``self.helper(x)``, ``range``/``len``/``int``..., ``ember.jit.annotate``, ``@ignore``d and
``@unused`` functions, and other scripted or traced functions (inlined).
"""

from __future__ import annotations

import ast
import inspect
import math

from ember._tensor import Tensor
from ember.dispatcher.optable import OPS
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter

from .. import types as T
from ..ir import Value
from ..scalars import MATH, RUNTIME, TOLIST_ELEMENTS
from ..tracer import is_tracing
from . import api
from . import builtins as lib
from .annotations import AnnotationError, is_named_tuple, named_tuple_type
from .attributes import is_runtime
from .classes import BoundMethod, is_script_class
from .frontend import FrontendError
from .lists import is_list_method
from .pybuiltins import BUILTINS
from .strings import is_str_method
from .sugar import (
    MethodRef,
    ModuleRef,
    PyObj,
    Sugar,
    SugarTuple,
    TensorMethod,
)

# Tensor properties and the prims that read them.
_PROPERTIES = {
    "shape": ("prim::shape", T.ListType(T.IntType)),
    "ndim": ("prim::dim", T.IntType),
    "dtype": ("prim::dtype", T.ScalarTypeType),
    "device": ("prim::device", T.DeviceObjType),
    "requires_grad": ("prim::requires_grad", T.BoolType),
    "real": ("prim::real", T.Tensor),
    "imag": ("prim::imag", T.Tensor),
}
_PURE_MODULES = (math,)


class Calls:
    # ---- attributes -------------------------------------------------------------------------
    def attribute(self, owner, name: str, node):
        if isinstance(owner, ModuleRef):
            return self.module_attribute(owner, name, node)
        if isinstance(owner, PyObj):
            try:
                return PyObj(getattr(owner.obj, name))
            except AttributeError:
                raise self.source.error(
                    f"Module '{getattr(owner.obj, '__name__', owner.obj)}' has no attribute "
                    f"'{name}'",
                    node,
                ) from None
        if isinstance(owner, Sugar):
            raise self.source.error(f"{owner.describe()} has no attribute '{name}'", node)
        kind = owner.type()
        if isinstance(kind, T.TensorType):
            if name in _PROPERTIES:
                prim, type_ = _PROPERTIES[name]
                return self.prim(prim, [owner], type_)
            if name == "T":
                return self.call_op("permute", [owner, self.reversed_dims(owner)], {})
            return TensorMethod(owner, name)
        if isinstance(kind, T.DictType) and name in ("keys", "values", "items", "get"):
            return TensorMethod(owner, name)
        if kind == T.StrType and is_str_method(name):
            return TensorMethod(owner, name)
        if isinstance(kind, T.ClassType):
            return self.object_attribute(owner, name, node)
        if isinstance(kind, T.NamedTupleType) and name in kind.fields:
            return self.tuple_index(owner, kind.fields.index(name))
        if isinstance(kind, T.ListType) and is_list_method(name):
            return TensorMethod(owner, name)
        if kind == T.ComplexType:  # TorchScript's complex has no attributes (not even .real)
            raise self.source.error(f"'complex' object has no attribute or method '{name}'.", node)
        raise self.source.error(
            f"Tried to access nonexistent attribute or method '{name}' of type "
            f"'{kind.annotation()}'",
            node,
        )

    def reversed_dims(self, tensor) -> Value:
        raise self.source.not_supported("Tensor.T isn't supported yet", self.current)

    def module_attribute(self, ref: ModuleRef, name: str, node):
        module = ref.module
        if name in module._parameters or name in module._buffers:
            tensor = module._parameters.get(name, module._buffers.get(name))
            if tensor is None:
                return self.constant(None)
            return self.unit.get_attr(self.graph, ref.qualified(name))
        if name in module._modules:
            child = module._modules[name]
            return self.constant(None) if child is None else self.submodule(ref, name)
        if is_runtime(module, name):
            return self.read_attribute(ref, name, node)
        if name == "training":
            return self.constant(bool(module.training))
        try:
            value = getattr(module, name)
        except AttributeError:
            raise self.source.error(
                f"Module '{type(module).__name__}' has no attribute '{name}'", node
            ) from None
        if inspect.ismethod(value) and value.__self__ is module:
            return MethodRef(ref, name, value)
        if isinstance(value, Tensor):
            raise self.source.not_supported(
                f"attribute '{name}' is a tensor that is neither a parameter nor a buffer "
                "(register it with register_buffer)",
                node,
            )
        return PyObj(value)

    # ---- calls ------------------------------------------------------------------------------
    def expr_Call(self, node, wanted=None):  # noqa: N802
        func = self.expr(node.func)
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            raise self.source.not_supported("*args and **kwargs in calls aren't supported", node)
        if isinstance(func, PyObj) and func.obj is api.annotate:
            wanted = self.annotation(node.args[0])
            return self.coerce(self.expr(node.args[1], wanted), wanted, node)
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        if isinstance(func, TensorMethod) and func.name == "tolist" and not args and not kwargs:
            return self.tolist(func.value, wanted, node)
        return self.call(func, args, kwargs, node)

    def tolist(self, value, wanted, node):
        """``y: List[List[float]] = x.tolist()``: TorchScript's prim::tolist, typed by the
        annotation (or the return type), whose dim and element type are checked at run time."""
        if not isinstance(value.type(), T.TensorType):
            return self.call(TensorMethod(value, "tolist"), [], {}, node)
        if wanted is None:
            raise self.source.error("Expected type hint for result of tolist()", node)
        dim, elem = 0, wanted
        while isinstance(elem, T.ListType):
            dim, elem = dim + 1, elem.elem
        code = TOLIST_ELEMENTS.get(str(elem))
        if code is None:
            raise self.source.error(
                f"{elem.annotation()} is not one of the supported element types for tolist: "
                "int, float, complex, bool",
                node,
            )
        return self.prim("prim::tolist", [value, self.constant(dim), self.constant(code)], wanted)

    def call(self, func, args, kwargs, node):
        try:
            if isinstance(func, TensorMethod):
                return self.tensor_method(func.value, func.name, args, kwargs, node)
            if isinstance(func, ModuleRef):
                return self.unit.call_module(self, func, args, kwargs, node)
            if isinstance(func, MethodRef):
                view = self.module_dict_view(func)
                if view is not None:
                    return view
                return self.unit.call_method(self, func, args, kwargs, node)
            if isinstance(func, PyObj):
                return self.call_python(func.obj, args, kwargs, node)
            if isinstance(func, BoundMethod):
                return self.call_bound(func, args, kwargs, node)
        except lib.BindError as e:
            raise self.source.error(str(e), node) from None
        raise self.source.error(f"{func.describe()} is not callable", node)

    def module_dict_view(self, func):
        """``self.blocks.items()`` / ``keys()`` / ``values()`` of a ModuleDict: unrolled."""
        from ember.nn.modules.container import ModuleDict

        owner = func.owner
        if not isinstance(owner.module, ModuleDict) or func.name not in ("items", "keys", "values"):
            return None
        children = owner.module._modules.items()
        refs = [(self.constant(k), ModuleRef(m, owner.qualified(k))) for k, m in children]
        if func.name == "keys":
            return SugarTuple([k for k, _ in refs])
        if func.name == "values":
            return SugarTuple([m for _, m in refs])
        return SugarTuple([SugarTuple([k, m]) for k, m in refs])

    def call_op(self, name: str, args, kwargs, pyfn=None):
        return lib.emit_op(self, OPS[name], list(args), dict(kwargs), pyfn)

    def dict_method(self, value, name, args, node):
        kind = value.type()
        if name == "get":
            key = self.coerce(args[0], kind.key, node)
            default = args[1] if len(args) > 1 else self.constant(None)
            found = self.prim("prim::contains", [value, key], T.BoolType)
            cond = self.graph.insert("prim::If", [found], num_outputs=0)
            then, other = cond.addBlock(), cond.addBlock()
            with self.graph.insert_point_guard(then):
                then.registerOutput(self.prim("prim::DictIndex", [value, key], kind.value))
            with self.graph.insert_point_guard(other):
                other.registerOutput(self.materialize(default))
            return cond.addOutput(self.unify(kind.value, other.outputs()[0].type(), "get", node))
        if args:
            raise self.source.error(f"{name}() takes no arguments", node)
        if name == "keys":
            return self.prim("prim::DictKeys", [value], T.ListType(kind.key))
        if name == "values":
            return self.prim("prim::DictValues", [value], T.ListType(kind.value))
        pair = T.TupleType([kind.key, kind.value])
        return self.prim("prim::DictItems", [value], T.ListType(pair))

    def tensor_method(self, value, name, args, kwargs, node):
        if isinstance(value.type(), T.DictType):
            return self.dict_method(value, name, [self.materialize(a) for a in args], node)
        if value.type() == T.StrType:
            return self.str_method(value, name, args, kwargs, node)
        if isinstance(value.type(), T.ListType):
            return self.list_method(value, name, args, kwargs, node)
        if name == "size":
            if not args:
                return self.prim("prim::shape", [value], T.ListType(T.IntType))
            return self.prim("prim::size", [value, args[0]], T.IntType)
        if name in ("dim", "numel") and not args:
            return self.prim(f"prim::{name}", [value], T.IntType)
        if name in ("is_floating_point", "is_complex") and not args and not kwargs:
            return self.prim(f"prim::{name}", [value], T.BoolType)
        if name in lib.CASTS and not args and not kwargs:
            return self.call_op("_to_copy", [value], {"dtype": self.constant(lib.CASTS[name])})
        if name == "to":
            return self.to(value, args, kwargs, node)
        if name in lib.NEW_FACTORIES:
            try:
                return lib.new_factory(self, value, name, list(args), dict(kwargs))
            except lib.BindError as e:
                raise self.source.error(str(e), node) from None
        if name == "item" and not args and not kwargs:
            return self.prim("prim::item", [value], T.NumberType)
        if name == "tolist":
            raise self.source.error("Expected type hint for result of tolist()", node)
        op = lib.overload(name, [value, *args], kwargs)
        if op is None:
            raise self.source.not_supported(
                f"Tensor method '{name}' has no op-table row ember.jit.script can call", node
            )
        return lib.emit_op(self, op, [value, *args], kwargs, getattr(Tensor, name, None))

    def to(self, value, args, kwargs, node):
        # x.to(ember.float64): the dtype arrives as a Python object, a constant of the graph
        args = [self.materialize(a) for a in args]
        if len(args) == 1 and not kwargs and isinstance(args[0].type(), T.TensorType):
            other = args[0]
            dtype = self.prim("prim::dtype", [other], T.ScalarTypeType)
            device = self.prim("prim::device", [other], T.DeviceObjType)
            return self.call_op("_to_copy", [value], {"dtype": dtype, "device": device})
        if len(args) == 1 and not kwargs and args[0].type() == T.ScalarTypeType:
            return self.call_op("_to_copy", [value], {"dtype": args[0]})
        if len(args) == 1 and not kwargs and args[0].type() == T.DeviceObjType:
            return self.call_op("_to_copy", [value], {"device": args[0]})
        if not args and set(kwargs) <= {"dtype", "device", "non_blocking"}:
            return self.call_op("_to_copy", [value], kwargs)
        raise self.source.not_supported("this form of Tensor.to() isn't supported", node)

    # ---- Python callables -------------------------------------------------------------------
    def call_python(self, fn, args, kwargs, node):
        handler = BUILTINS.get(fn) if _hashable(fn) else None
        if handler is not None:
            return handler(self, args, kwargs, node)
        if fn is api.is_scripting:
            return self.constant(True)
        if fn is is_tracing:  # scripted code never traces itself (TorchScript folds it too)
            return self.constant(False)
        if is_named_tuple(fn):
            return self.named_tuple(fn, args, kwargs, node)
        if is_script_class(fn):
            return self.construct(fn, args, kwargs, node)
        modifier = api.modifier(fn) if callable(fn) else None
        if modifier is api.FunctionModifiers.UNUSED:
            return self.unused(fn, node)
        if modifier is api.FunctionModifiers.IGNORE:
            return self.python_op(fn, args, kwargs, node)
        from ..script_module import ScriptFunction

        if isinstance(fn, ScriptFunction):
            return self.unit.inline_graph(self, fn._method, None, args, kwargs, node)
        special = lib.special(fn)
        if special is not None:
            return special(self, list(args), dict(kwargs), fn)
        op = lib.library_op(fn, args, kwargs)
        if op is not None:
            return lib.emit_op(self, op, list(args), dict(kwargs), fn)
        if isinstance(fn, type) and issubclass(fn, Module):  # TorchScript's words for it
            where = node.func if isinstance(node, ast.Call) else node
            raise self.source.error(
                f"Class {fn.__name__} does not have an __init__ function defined", where
            )
        if fn is Parameter:  # TorchScript has no Parameter type: slots hold plain tensors
            where = node.func if isinstance(node, ast.Call) else node
            raise FrontendError(
                f"Cannot instantiate class 'Parameter' in a script function:\n"
                f"{self.source.highlight(where)}"
            )
        if inspect.isfunction(fn) and not _is_library(fn):
            return self.unit.call_function(self, fn, args, kwargs, node)
        if getattr(fn, "__module__", None) in ("math",) or fn in _FOLDABLE:
            return self.fold(fn, args, kwargs, node)
        raise self.source.not_supported(
            f"Python builtin {fn!r} is currently not supported in Torchscript", node
        )

    def fold(self, fn, args, kwargs, node):
        """A pure function of constants (``math.sqrt(2.0)``) runs now."""
        plain = [
            self.known(self.materialize(a)) if not isinstance(a, PyObj) else a.obj for a in args
        ]
        name = getattr(fn, "__name__", "")
        if getattr(math, name, None) is fn and name in MATH and len(args) == MATH[name]:
            return self.math_call(name, [self.materialize(a) for a in args], node)
        if not all(self.is_constant(self.materialize(a)) for a in args) or kwargs:
            raise self.source.not_supported(
                f"{getattr(fn, '__name__', fn)}() of values only known at run time isn't supported",
                node,
            )
        return self.constant(fn(*plain))

    def named_tuple(self, cls, args, kwargs, node):
        """``Point(x, y=1)``: a tuple of the NamedTuple's type (defaults as the class has)."""
        try:
            kind = named_tuple_type(cls)
        except AnnotationError as e:
            raise self.source.error(str(e), node) from None
        defaults = cls._field_defaults
        try:
            bound = inspect.Signature(
                [
                    inspect.Parameter(
                        f,
                        inspect.Parameter.POSITIONAL_OR_KEYWORD,
                        default=defaults.get(f, inspect.Parameter.empty),
                    )
                    for f in kind.fields
                ]
            ).bind(*args, **kwargs)
        except TypeError as e:
            raise self.source.error(f"{cls.__name__}(): {e}", node) from None
        bound.apply_defaults()
        items = [
            self.coerce(self.materialize(_as_value(self, bound.arguments[f])), elem, node)
            for f, elem in zip(kind.fields, kind.elems)
        ]
        return self.prim("prim::TupleConstruct", items, kind)

    def math_call(self, name: str, args, node):
        """``math.exp(x)`` of numbers: folded when constant, else a ``prim::math_exp`` node (C's
        results, as TorchScript: ``math.log(-1.0)`` is nan)."""
        for value in args:
            if value.type() not in (T.IntType, T.FloatType, T.BoolType):
                raise self.source.error(
                    f"math.{name}() expects numbers, got {value.type().annotation()}", node
                )
        run = getattr(RUNTIME, name)
        if all(self.is_constant(a) for a in args):
            return self.constant(run(*(self.known(a) for a in args)))
        kind = _MATH_RESULTS.get(name, T.FloatType)
        return self.prim(f"prim::math_{name}", args, kind)

    def unused(self, fn, node):
        name = getattr(fn, "__qualname__", getattr(fn, "__name__", "fn"))
        message = f"{_UNUSED} ({name} is @ember.jit.unused)"
        self.graph.insert("prim::RaiseException", [self.constant(message)], num_outputs=0)
        return self.graph.insert("prim::Uninitialized").output().setType(T.Tensor)

    def python_op(self, fn, args, kwargs, node):
        if kwargs:
            raise self.source.not_supported("keyword arguments to @ignore'd functions", node)
        callee = self.constant(fn, T.AnyType)
        op = self.graph.insert("prim::PythonOp", [callee, *(self.materialize(a) for a in args)])
        op.setSourceRange(self.where(node))
        returns = inspect.signature(fn).return_annotation
        kind = T.Tensor
        if returns is not inspect.Signature.empty:
            from .annotations import AnnotationError, resolve

            try:
                kind = resolve(returns, getattr(fn, "__globals__", {}))
            except AnnotationError:
                kind = T.AnyType
        return op.output().setType(kind)


def _as_value(em, value):
    """A class default (a Python value) as a graph constant; graph values as they are."""
    return value if isinstance(value, (Value, Sugar)) else em.constant(value)


def _hashable(obj) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True


def _is_library(fn) -> bool:
    module = getattr(fn, "__module__", "") or ""
    if module.startswith("ember.jit.script."):
        return False  # the subset sources of this compiler (attention, recurrent, pooling)
    return module == "ember" or module.startswith(("ember.", "jit.", "nn.", "typing"))


_FOLDABLE = {round}
_UNUSED = "This Python function is annotated to be ignored and cannot be run"  # TorchScript's
_MATH_RESULTS = {
    **dict.fromkeys(("floor", "ceil", "factorial", "gcd"), T.IntType),
    **dict.fromkeys(("isnan", "isinf", "isfinite"), T.BoolType),
}
