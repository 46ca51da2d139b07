"""``with`` statements in scripted code, as TorchScript has them: grad mode
(``ember.no_grad()``, ``enable_grad()``, ``set_grad_enabled(b)``: ``prim::set_grad_enabled``
around the body), ``ember.autocast(...)`` and ``ember.profiler.record_function(name)``
(``prim::enter``/``prim::exit``, jit/contexts.py; ``with ... as m`` binds ``m`` to the
entered manager, as TorchScript's ``prim::Enter`` gives it; the deprecated
``ember.cpu.amp.autocast()`` / ``ember.cuda.amp.autocast()`` are ``autocast`` of their device)
and objects of script classes that define ``__enter__`` and ``__exit__`` (``with Ctx(n) as v:``
binds ``v`` to what ``__enter__`` returns). Several items enter left to right and exit right
to left; the exits run after the body also when it returns, since a ``return`` only ends the
block's code generation and the graph runs on."""

from __future__ import annotations

import ast
import inspect

from .. import types as T
from ..contexts import contexts
from ..ir import Value


class Contexts:
    def stmt_With(self, stmt):  # noqa: N802
        exits = [self.enter(item, stmt) for item in stmt.items]
        ended = self.body(stmt.body)
        for leave in reversed(exits):
            leave()
        return ended

    def enter(self, item, stmt):
        """Enters one ``with`` item; returns what leaves it."""
        flag = self.grad_mode(item.context_expr)
        if flag is not None:
            previous = self.prim("prim::is_grad_enabled", [], T.BoolType)
            self.graph.insert("prim::set_grad_enabled", [flag], num_outputs=0)
            if item.optional_vars is not None:  # `with no_grad() as g`: g is None
                self.assign(item.optional_vars, self.constant(None))
            return lambda: self.graph.insert("prim::set_grad_enabled", [previous], num_outputs=0)
        manager = self.library_context(item.context_expr)
        if manager is not None:
            if item.optional_vars is not None:
                self.assign(item.optional_vars, manager)
            return lambda: self.graph.insert("prim::exit", [manager], num_outputs=0)
        obj = self.expr(item.context_expr)
        kind = obj.type() if isinstance(obj, Value) else None
        if not isinstance(kind, T.ClassType):
            raise self.source.not_supported(
                "with statements are supported for ember.no_grad(), ember.enable_grad(), "
                "ember.set_grad_enabled() and objects of classes with __enter__ and __exit__",
                stmt,
            )
        entered = self.magic(obj, "__enter__", [], item.context_expr)
        if entered is None or not _defines(kind, "__exit__"):
            missing = "__enter__" if entered is None else "__exit__"
            raise self.no_attribute(kind, missing, item.context_expr)
        if item.optional_vars is not None:
            self.assign(item.optional_vars, entered)
        none = self.constant(None)
        return lambda: self.magic(obj, "__exit__", [none, none, none], item.context_expr)

    def library_context(self, expr):
        """``ember.autocast(...)`` / ``record_function(...)``: enters it (``prim::enter``, the
        arguments bound to the constructor's signature) and returns the manager's value."""
        if not isinstance(expr, ast.Call):
            return None
        target = getattr(self.expr(expr.func), "obj", None)
        names = {cls: name for name, cls in contexts().items()}
        device = _deprecated_autocast(target)
        if not isinstance(target, type) or (target not in names and device is None):
            return None
        args = [self.expr(a) for a in expr.args]
        kwargs = {k.arg: self.expr(k.value) for k in expr.keywords}
        try:
            given = dict(inspect.signature(target).bind(*args, **kwargs).arguments)
        except TypeError as e:
            raise self.source.error(f"{target.__name__}(): {e}", expr) from None
        if device is not None:  # ember.cpu.amp.autocast(...) is autocast("cpu", ...)
            given.pop("self", None)
            target = next(cls for cls in names if names[cls] == "autocast")
            given = {"device_type": self.constant(device), **given}
        bound = inspect.signature(target).bind(**given)
        bound.apply_defaults()  # the defaults are Python values: constants
        values = [
            self.materialize(given[k]) if k in given else self.constant(v)
            for k, v in bound.arguments.items()
        ]
        inputs = [self.constant(names[target]), *values]
        return self.prim("prim::enter", inputs, T.AnyType)

    def grad_mode(self, expr):
        import ember

        if not isinstance(expr, ast.Call):
            return None
        func = self.expr(expr.func)
        target = getattr(func, "obj", None)
        if target is ember.no_grad and not expr.args:
            return self.constant(False)
        if target is ember.enable_grad and not expr.args:
            return self.constant(True)
        if target is ember.set_grad_enabled and len(expr.args) == 1:
            return self.coerce(self.value(expr.args[0]), T.BoolType, expr)
        return None


def _deprecated_autocast(target) -> str | None:
    """The device of ``ember.cpu.amp.autocast`` / ``ember.cuda.amp.autocast`` (PyTorch's older
    spellings, classes of the module ``ember.<device>.amp``), else None."""
    from ember.amp import autocast

    if not isinstance(target, type) or target is autocast or not issubclass(target, autocast):
        return None
    parts = target.__module__.split(".")
    return parts[1] if len(parts) == 3 and parts[2] == "amp" else None


def _defines(kind, name: str) -> bool:
    return kind.cls is not None and name in vars(kind.cls)
