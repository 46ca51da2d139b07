"""Symbolic tracing: run ``forward`` on proxies and record what it does (``torch.fx.Tracer``).

While tracing, calls that receive a proxy are recorded instead of run: the public functions
of ``ember`` and ``ember.nn.functional`` (``call_function`` with that function as target),
``math`` functions, functions registered with ``ember.fx.wrap``, and, as a safety net, any
op-table op reached another way (a dispatch layer at the tracing priority; target: the op).
Leaf modules (``is_leaf_module``: ember's own layers) become ``call_module`` nodes; other
modules are traced through. Parameters and buffers read as attributes become ``get_attr``.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import inspect
import math
import sys
import types

from ember._tensor import Tensor
from ember.dispatcher.layers import STACK, Layer
from ember.nn.modules.container import Sequential
from ember.nn.modules.module import Module

from .graph import Graph
from .proxy import Proxy, has_proxy, tracer_of

# (globals dict, name) of functions ember.fx.wrap registered.
_WRAPPED: list = []


def wrap(fn_or_name):
    """Record calls to a function as one ``call_function`` node instead of tracing into it
    (``torch.fx.wrap``): ``ember.fx.wrap("name")`` at module scope (builtins such as ``len``
    too), or ``@ember.fx.wrap`` on a module-level function.
    """
    if isinstance(fn_or_name, str):
        _WRAPPED.append((inspect.currentframe().f_back.f_globals, fn_or_name))
        return None
    _WRAPPED.append((sys.modules[fn_or_name.__module__].__dict__, fn_or_name.__name__))
    return fn_or_name


class _ProxyOps(Layer):
    """Ops called with proxies among their arguments become call_function nodes."""

    name = "fx"
    priority = 300

    def wants(self, op, args) -> bool:
        return has_proxy(args)

    def handle(self, op, args):
        return tracer_of(args, {}).create_proxy("call_function", op, args, {})


class Tracer:
    """Builds a Graph from a module or function; subclass and override ``is_leaf_module``
    (and the other hooks) to change what is traced through."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=()):
        self.autowrap_modules = tuple(autowrap_modules)
        self.autowrap_functions = tuple(autowrap_functions)
        self.graph = None
        self.root = None

    # ---- hooks -------------------------------------------------------------------------------
    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        """ember's own layers are leaves (one call_module node); Sequential and user modules
        are traced through."""
        return m.__module__.startswith("ember.nn") and not isinstance(m, Sequential)

    def path_of_module(self, mod: Module) -> str:
        found = self._module_paths.get(id(mod))
        if found is None:
            raise NameError("module is not installed as a submodule")
        return found

    def call_module(self, m: Module, forward, args, kwargs):
        name = self.path_of_module(m)
        if not self.is_leaf_module(m, name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", name, args, kwargs)

    def getattr(self, attr: str, attr_val, parameter_proxy_cache: dict):
        """What reading ``attr`` of a module gives while tracing: a get_attr proxy for
        parameters and buffers, the value itself otherwise."""
        if isinstance(attr_val, Tensor):
            name = self._tensor_paths.get(id(attr_val))
            if name is not None:
                if name not in parameter_proxy_cache:
                    parameter_proxy_cache[name] = self.create_proxy("get_attr", name, (), {})
                return parameter_proxy_cache[name]
        return attr_val

    # ---- building ----------------------------------------------------------------------------
    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None,
                     proxy_factory_fn=None):  # fmt: skip
        node = self.create_node(kind, target, self.create_arg(args), self.create_arg(kwargs),
                                name, type_expr)  # fmt: skip
        return proxy_factory_fn(node) if proxy_factory_fn else self.proxy(node)

    def create_arg(self, a):
        """An argument as the graph holds it: proxies as their nodes, parameters as get_attr
        nodes, other tensors as constants attached to the root."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, tuple):
            items = tuple(self.create_arg(x) for x in a)
            return type(a)(*items) if hasattr(a, "_fields") else items
        if isinstance(a, list):
            return [self.create_arg(x) for x in a]
        if isinstance(a, dict):
            return {k: self.create_arg(v) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(*(self.create_arg(x) for x in (a.start, a.stop, a.step)))
        if isinstance(a, Tensor):
            return self._tensor_node(a)
        if isinstance(a, Module):
            return self.create_node("get_attr", self.path_of_module(a), (), {})
        return a

    def _tensor_node(self, t: Tensor):
        name = self._tensor_paths.get(id(t))
        if name is None:
            index = 0
            while hasattr(self.root, f"_tensor_constant{index}"):
                index += 1
            name = f"_tensor_constant{index}"
            setattr(self.root, name, t)
            self._tensor_paths[id(t)] = name
        return self.create_node("get_attr", name, (), {})

    # ---- tracing -----------------------------------------------------------------------------
    def trace(self, root, concrete_args: dict | None = None) -> Graph:
        """The graph of ``root.forward`` (or of the function ``root``)."""
        if isinstance(root, Module):
            self.root, fn = root, type(root).forward
            call = functools.partial(fn, root)
        else:
            self.root, fn = Module(), root
            call = root
        self._module_paths = {id(m): name for name, m in self.root.named_modules()}
        self._tensor_paths = {}
        for name, t in [*self.root.named_parameters(), *self.root.named_buffers()]:
            self._tensor_paths.setdefault(id(t), name)
        self.graph = Graph(tracer_cls=type(self))
        args, kwargs = self._placeholders(fn, isinstance(root, Module), concrete_args or {})
        with self._patched():
            result = call(*args, **kwargs)
        self.create_node("output", "output", (self.create_arg(result),), {})
        return self.graph

    def _placeholders(self, fn, skip_self: bool, concrete: dict):
        params = list(inspect.signature(fn).parameters.values())[1 if skip_self else 0 :]
        args, kwargs = [], {}
        for p in params:
            if p.name in concrete:
                value = concrete[p.name]
            elif p.kind is p.VAR_POSITIONAL or p.kind is p.VAR_KEYWORD:
                continue
            else:
                default = inspect.Signature.empty if p.default is p.empty else p.default
                value = self.create_proxy("placeholder", p.name, (), {}, type_expr=None)
                if default is not inspect.Signature.empty:
                    value.node.args = (default,)
            if p.kind is p.KEYWORD_ONLY:
                kwargs[p.name] = value
            else:
                args.append(value)
        return args, kwargs

    @contextlib.contextmanager
    def _patched(self):
        patches = _Patches()
        tracer = self
        cache: dict = {}
        original_call, original_getattr = Module.__call__, Module.__getattr__

        def module_call(mod, *args, **kwargs):
            return tracer.call_module(mod, lambda *a, **k: original_call(mod, *a, **k), args,
                                      kwargs)  # fmt: skip

        def module_getattr(mod, attr):
            return tracer.getattr(attr, original_getattr(mod, attr), cache)

        patches.set(Module, "__call__", module_call)
        patches.set(Module, "__getattr__", module_getattr)
        for namespace in _namespaces(self.autowrap_modules):
            for name, value in list(vars(namespace).items()):
                if _wrappable(name, value):
                    patches.set(namespace, name, _recorder(value))
        for globals_, name in _WRAPPED:
            found = globals_.get(name, getattr(builtins, name, None))
            if found is not None:
                patches.set_item(globals_, name, _recorder(found))
        for fn in self.autowrap_functions:
            patches.set_item(sys.modules[fn.__module__].__dict__, fn.__name__, _recorder(fn))
        layer = _ProxyOps()
        STACK.install(layer)
        try:
            yield
        finally:
            STACK.remove(layer)
            patches.undo()


def _namespaces(autowrap_modules) -> list:
    import ember
    import ember.nn.functional as F

    found = [ember, F, *autowrap_modules]
    # nn.functional's families: modules calling each other by their own globals.
    found += [m for name, m in sys.modules.items() if name.startswith("ember.nn.functional.")]
    return found


def _wrappable(name: str, value) -> bool:
    if name.startswith("_") or isinstance(value, type):
        return False
    return isinstance(value, (types.FunctionType, types.BuiltinFunctionType))


def _recorder(fn):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if has_proxy(args) or has_proxy(kwargs):
            return tracer_of(args, kwargs).create_proxy("call_function", fn, args, kwargs)
        return fn(*args, **kwargs)

    call.__fx_original__ = fn
    return call


class _Patches:
    def __init__(self):
        self.undo_list: list = []

    def set(self, obj, name: str, value) -> None:
        self.undo_list.append((setattr, obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    def set_item(self, mapping: dict, name: str, value) -> None:
        if name in mapping:
            self.undo_list.append((dict.__setitem__, mapping, name, mapping[name]))
        else:  # a builtin shadowed for the trace: remove the shadow afterwards
            self.undo_list.append((lambda m, k, _v: m.pop(k, None), mapping, name, None))
        mapping[name] = value

    def undo(self) -> None:
        for restore, obj, name, value in reversed(self.undo_list):
            restore(obj, name, value)
        self.undo_list.clear()


def symbolic_trace(root, concrete_args: dict | None = None):
    """Trace ``root`` (a module or function) into a ``GraphModule``.

    Example:
        >>> gm = ember.fx.symbolic_trace(model)
        >>> print(gm.graph); gm.graph.print_tabular()
    """
    from .graph_module import GraphModule

    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
