"""User classes in scripted code (``@ember.jit.script class Counter: ...``, or any plain class
scripted code constructs): objects with typed fields and methods, as TorchScript's classes.

An object is a graph value of a ``ClassType``: ``Counter(3)`` is ``prim::CreateObject``
followed by ``__init__`` inlined with ``self`` bound to it; ``obj.x`` is
``prim::GetObjAttr[name=x]`` and ``obj.x = v`` ``prim::SetObjAttr`` (objects are mutable, so
neither is merged or folded); methods are inlined. Field types come from ``__init__``'s
assignments (or the class's annotations), in order, as TorchScript infers them. At run time an
object is a ``types.SimpleNamespace``, so saved graphs need no class to load.
"""

from __future__ import annotations

import ast
import inspect

from .. import types as T
from ..ir import Value
from .sugar import Sugar

CREATE, GET, SET = "prim::CreateObject", "prim::GetObjAttr", "prim::SetObjAttr"
_TYPES: dict = {}  # class -> its ClassType, fields filled in while __init__ compiles
# operators TorchScript desugars to a class's magic methods
BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
MAGIC = {ast.Add: "__add__", ast.Sub: "__sub__", ast.Mult: "__mul__", ast.Div: "__truediv__"}
MAGIC.update({ast.FloorDiv: "__floordiv__", ast.Mod: "__mod__", ast.Pow: "__pow__"})
MAGIC.update({ast.Eq: "__eq__", ast.NotEq: "__ne__", ast.Lt: "__lt__", ast.LtE: "__le__"})
MAGIC.update({ast.Gt: "__gt__", ast.GtE: "__ge__"})
# ``a += b`` calls ``__iadd__`` where the class defines it, else ``a = a + b`` (``__add__``)
INPLACE_MAGIC = {op: "__i" + name[2:] for op, name in MAGIC.items() if op in BINOPS}
UNARY_MAGIC = {ast.USub: "__neg__", ast.Invert: "__invert__"}
# int(a), float(a), bool(a) (and ``if a:``), str(a); reflected methods (__radd__) are not
# among them: torch.jit.script refuses ``1 + a`` even where the class defines __radd__
CONVERT_MAGIC = {int: "__int__", float: "__float__", bool: "__bool__", str: "__str__"}


def is_script_class(obj) -> bool:
    """A plain user class scripted code may construct."""
    from ember.nn.modules.module import Module

    if not inspect.isclass(obj) or issubclass(obj, (Module, tuple, BaseException)):
        return False
    module = obj.__module__ or ""
    if module in ("builtins", "typing") or module.startswith(("ember", "jit.", "nn.", "torch")):
        return False
    return "__init__" in vars(obj)


def class_type(cls) -> T.ClassType:
    """The type an annotation naming user class ``cls`` stands for (a scripted function's
    parameter or return ``p: Point``): its fields are what ``__init__`` assigns, so ``__init__``
    is compiled once, on its own, on a fresh object, as constructing one would."""
    kind = _TYPES.get(cls)
    if kind is not None:  # known, or being compiled (a method naming its own class)
        return kind
    from ..ir import Graph
    from .annotations import resolve
    from .compiler import Unit

    kind = _TYPES[cls] = T.ClassType(cls.__name__, {}, cls)
    try:
        for name, hint in getattr(cls, "__annotations__", {}).items():
            kind.fields[name] = resolve(hint, {})
        graph = Graph()
        obj = graph.insert(CREATE, []).output().setType(kind)
        Unit().function(cls.__init__, self_ref=obj, graph=graph)
    except BaseException:
        del _TYPES[cls]
        raise
    kind.complete = True
    return kind


class BoundMethod(Sugar):
    """``obj.method`` before the call."""

    def __init__(self, obj: Value, fn):
        self.obj, self.fn = obj, fn

    def describe(self) -> str:
        return f"method {self.fn.__qualname__}"


class Classes:
    def magic(self, obj, method: str, args, node):
        """``obj.method(*args)`` when ``obj`` is a script-class object whose class defines
        ``method`` (``a + b``, ``a < b``, ``len(a)``, ``a[i]``, ``x in a`` call these in
        TorchScript); None otherwise, for the built-in meaning."""
        if not isinstance(obj, Value) or not isinstance(obj.type(), T.ClassType):
            return None
        cls = obj.type().cls
        fn = vars(cls).get(method) if cls is not None else None
        if not inspect.isfunction(fn):
            return None
        return self.call_bound(BoundMethod(obj, fn), list(args), {}, node)

    def construct(self, cls, args, kwargs, node):
        kind = _TYPES.get(cls)
        fresh = kind is None
        if fresh:
            kind = _TYPES[cls] = T.ClassType(cls.__name__, {}, cls)
            for name, hint in getattr(cls, "__annotations__", {}).items():
                kind.fields[name] = self.annotation_object(hint, node)
        obj = self.graph.insert(CREATE, []).output().setType(kind)
        try:
            self.unit.call_function(self, cls.__init__, args, kwargs, node, self_ref=obj)
        except BaseException:
            if fresh:
                del _TYPES[cls]
            raise
        kind.complete = True
        return obj

    def object_attribute(self, obj: Value, name: str, node):
        kind = obj.type()
        if name in kind.fields:
            return self.graph.insert(GET, [obj], name=name).output().setType(kind.fields[name])
        # TorchScript compiles only a class's own methods (torch.jit.frontend's get_jit_class_def
        # takes those in cls.__dict__): a base class's method is no method of the subclass
        # (and looks static methods up on the class only: Cls.f(), not self.f())
        own = kind.cls is not None and name in vars(kind.cls)
        fn = getattr(kind.cls, name, None) if own else None
        if inspect.isfunction(fn) and not isinstance(vars(kind.cls)[name], staticmethod):
            return BoundMethod(obj, fn)
        raise self.no_attribute(kind, name, node)

    def no_attribute(self, kind, name: str, node):
        """TorchScript's error for a missing field or method of an object (its class is named
        by its Python name, where TorchScript adds the qualified name and compilation unit)."""
        return self.source.error(
            f"'{kind.annotation()}' object has no attribute or method '{name}'. Did you forget "
            "to initialize an attribute in __init__()?",
            node,
        )

    def call_bound(self, method: BoundMethod, args, kwargs, node):
        return self.unit.call_function(self, method.fn, args, kwargs, node, self_ref=method.obj)

    def set_object_attribute(self, obj: Value, name: str, value, node) -> None:
        kind = obj.type()
        value = self.materialize(value)
        if name not in kind.fields:
            if kind.complete:
                raise self.source.error(
                    f"Tried to set nonexistent attribute: {name}. Did you forget to initialize "
                    "it in __init__()?",
                    node,
                )
            kind.fields[name] = value.type()
        value = self.coerce(value, kind.fields[name], node)
        self.graph.insert(SET, [obj, value], num_outputs=0, name=name)

    def annotation_object(self, hint, node):
        from .annotations import AnnotationError, resolve

        try:
            return resolve(hint, {})
        except AnnotationError as e:
            raise self.source.error(str(e), node) from None
