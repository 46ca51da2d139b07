"""``ember.jit.script``: functions and modules to graphs.

A ``Unit`` is one compilation. Functions called from scripted code (user functions, methods,
submodules' ``forward``) are inlined into the caller's graph, as TorchScript's inlined graphs
show them, so a method's graph only calls op-table ops and prims and saves like a traced one.
Already compiled graphs (scripted or traced functions and modules used inside scripted code)
are inlined too, their attribute reads prefixed with the submodule's qualified name.
"""

from __future__ import annotations

import ast
import copy
import inspect
import itertools

from ember.nn.modules.module import Module

from .. import pytree
from .. import types as T
from ..graph_utils import copy_node
from ..ir import Graph, Value
from ..script_module import Method, RecursiveScriptModule, ScriptFunction, ScriptModule, mirror
from . import api, arguments, attributes, classes, interfaces, modules, overloads, tracing
from .annotations import AnnotationError, is_final, resolve, to_type
from .builtins import BindError
from .emitter import Emitter, terminator
from .frontend import FrontendError, NotSupportedError, ScriptError, Source, namespace_of
from .returns import returns_in_loops, with_final_return
from .sugar import ModuleRef, PyObj, Sugar, SugarTuple

_SOURCES: dict = {}


def source_of(fn) -> Source:
    fn = getattr(fn, "__func__", fn)
    found = _SOURCES.get(fn)
    if found is None:
        found = _SOURCES[fn] = Source(fn)
    return found


class ScriptMethod(Method):
    """A compiled method: calls bind arguments by the Python signature (defaults, keywords)
    before running the graph."""

    def __init__(self, name, graph, signature, method=True, inferred=frozenset()):
        count = len(graph.inputs())
        in_spec = {
            "type": "tuple",
            "children": [
                {"type": "tuple", "children": [dict(pytree.LEAF) for _ in range(count)]},
                {"type": "dict", "keys": [], "children": []},
            ],
        }
        super().__init__(name, graph, in_spec, dict(pytree.LEAF), method)
        self.signature = signature
        self.inferred = set(inferred)  # unannotated parameters (typed Tensor)

    def call(self, owner, args, kwargs):
        args = arguments.bind(self.name, self.signature, self.graph, self.inferred, args, kwargs)
        fn = self.generated.fn

        def run():
            result = (fn(owner, *args) if self.is_method else fn(*args))[0]
            return result if self._named is None else T.rebuild_named_tuples(result, self._named)

        state = tracing.active_trace()
        if state is not None:
            recorded = tracing.record(state, self, owner if self.is_method else None, args, run)
            if recorded is not None:
                return recorded
        return run()


class Unit:
    """One compilation: the functions being inlined (recursion is an error), attribute reads."""

    def __init__(self):
        self.stack: list = []
        self.attrs: dict = {}  # (graph, qualified name) -> Value of its prim::GetAttr
        self.written: frozenset = frozenset()  # tensors the module's methods assign: read in place
        self.moved: frozenset = frozenset()  # submodule slots the methods assign: read in place

    # ---- entry points -----------------------------------------------------------------------
    def function(self, fn, self_ref=None, name=None, graph=None) -> ScriptMethod:
        source = source_of(fn)
        definition = source.definition()
        graph = Graph() if graph is None else graph
        env = {}
        params = _parameters(source, definition, skip_self=self_ref is not None)
        scope = namespace_of(fn)
        kept, inferred = [], set()
        for param in params:
            if param.annotation is None:
                inferred.add(param.arg)
            kind = _param_type(source, param, scope, fn)
            env[param.arg] = graph.addInput(param.arg, kind)
            kept.append(param.arg)
        signature = _signature(fn, kept)
        result = self.emit(source, definition, graph, env, self_ref, fn)
        graph.registerOutput(result)
        from ..passes.dce import eliminate_dead_code

        eliminate_dead_code(graph)
        graph.lint()
        name = name or definition.name
        return ScriptMethod(name, graph, signature, self_ref is not None, inferred)

    def emit(self, source, definition, graph, env, self_ref, fn) -> Value:
        key = getattr(fn, "__func__", fn)
        if key in self.stack:
            raise source.error(f"Recursive calls aren't supported: {definition.name}", definition)
        self.stack.append(key)
        try:
            if self_ref is not None:
                env.setdefault(
                    definition.args.args[0].arg if definition.args.args else "self", self_ref
                )
            emitter = Emitter(self, source, graph, env, self_ref)
            unannotated = [p.arg for p in definition.args.args if p.annotation is None]
            emitter.inferred = {id(env[n]) for n in unannotated if _is_tensor_input(env.get(n))}
            if definition.returns is not None:
                emitter.return_type = emitter.annotation(definition.returns)
            body = definition.body
            if returns_in_loops(definition):
                emitter.start_loop_returns()
                body = with_final_return(body, terminator(body) is not None)
            emitter.body(body)
            result = emitter.env.get("$return")
            result = emitter.constant(None) if result is None else emitter.materialize(result)
            if emitter.loop_returns:
                emitter.settle_return_start(result.type())
            return result
        finally:
            self.stack.pop()

    # ---- calls from scripted code -----------------------------------------------------------
    def call_function(self, caller, fn, args, kwargs, node, self_ref=None):
        if overloads.declarations(fn):
            args, result = overloads.choose(caller, fn, args, kwargs, node, self_ref is not None)
            value = self.inline_function(caller, fn, args, {}, node, self_ref)
            return value if result is None else caller.coerce(value, result, node)
        return self.inline_function(caller, fn, args, kwargs, node, self_ref)

    def inline_function(self, caller, fn, args, kwargs, node, self_ref=None):
        source = source_of(fn)
        definition = source.definition()
        params = _parameters(source, definition, skip_self=self_ref is not None)
        try:
            bound = _signature(fn, [p.arg for p in params]).bind(*args, **kwargs)
        except TypeError as e:
            raise caller.source.error(f"{definition.name}(): {e}", node) from None
        env = {}
        scope = namespace_of(fn)
        for param in params:
            value = bound.arguments.get(param.arg, inspect.Parameter.empty)
            if value is inspect.Parameter.empty:
                value = PyObj(_default_of(fn, param.arg))
            iface = interfaces.parameter_interface(fn, param.arg) if param.annotation else None
            if iface is not None:
                value = interfaces.check_object(caller, caller.materialize(value), iface, node)
            elif param.annotation is not None and not isinstance(value, Sugar):
                value = caller.coerce(value, _param_type(source, param, scope, fn), node)
            env[param.arg] = value
        return self.emit(source, definition, caller.graph, env, self_ref, fn)

    def call_method(self, caller, ref, args, kwargs, node):
        modifier = api.modifier(ref.fn)
        if modifier is api.FunctionModifiers.UNUSED:
            return caller.unused(ref.fn, node)
        if modifier is api.FunctionModifiers.IGNORE:
            return caller.python_op(ref.fn, args, kwargs, node)
        module = ref.owner.module
        if isinstance(module, ScriptModule) and ref.name in module._methods:
            return self.inline_graph(
                caller, module._methods[ref.name], ref.owner, args, kwargs, node
            )
        return self.call_function(caller, ref.fn, args, kwargs, node, self_ref=ref.owner)

    def call_module(self, caller, ref, args, kwargs, node):
        module = ref.module
        if ref.interface is not None:
            return interfaces.call(caller, ref, args, kwargs, node)
        if isinstance(module, ScriptModule):
            return self.inline_graph(caller, module._method("forward"), ref, args, kwargs, node)
        lower = modules.lowering(module)
        if lower is not None:
            return lower(caller, ref, list(args), dict(kwargs))
        forward = type(module).forward
        if forward is Module.forward:
            raise caller.source.error(f"Module '{type(module).__name__}' has no forward", node)
        bound = forward.__get__(module)
        if not (type(module).__module__ or "").startswith("ember."):
            return self.call_function(caller, bound, args, kwargs, node, self_ref=ref)
        try:  # an ember layer without a lowering: its own forward may be in the subset
            return self.call_function(caller, bound, args, kwargs, node, self_ref=ref)
        except (FrontendError, ScriptError) as e:
            reason = str(e).splitlines()[0].rstrip(":")
            raise caller.source.not_supported(
                f"ember.jit.script has no lowering for the layer {type(module).__name__}, and "
                f"its forward is outside the subset ({reason})",
                node,
            ) from None

    def inline_graph(self, caller, method, ref, args, kwargs, node):
        """A compiled graph's nodes copied into the caller's graph."""
        if isinstance(method, ScriptMethod):
            try:
                bound = method.signature.bind(*args, **kwargs)
            except TypeError as e:
                raise caller.source.error(f"{method.name}(): {e}", node) from None
            bound.apply_defaults()  # a default is a constant of the caller's graph
            args = [
                a if isinstance(a, (Value, Sugar)) else PyObj(a) for a in bound.arguments.values()
            ]
        elif kwargs:
            raise caller.source.not_supported("keyword arguments to traced code", node)
        leaves = []
        for arg in args:
            leaves += arg.items if isinstance(arg, SugarTuple) else [arg]
        graph = method.graph
        if len(leaves) != len(graph.inputs()):
            raise caller.source.error(
                f"{method.name}() expected {len(graph.inputs())} inputs but received {len(leaves)}",
                node,
            )
        mapping = {v: caller.materialize(a) for v, a in zip(graph.inputs(), leaves)}
        prefix = ref.prefix if ref is not None else ""
        for inner in graph.nodes():
            made = caller.graph.insertNode(copy_node(inner, caller.graph, mapping))
            _prefix_attributes(made, prefix)
        outputs = [mapping[v] for v in graph.outputs()]
        if method.out_spec == pytree.LEAF or isinstance(method, ScriptMethod):
            return outputs[0]
        return _rebuild(caller, iter(outputs), method.out_spec)

    # ---- attributes -------------------------------------------------------------------------
    def get_attr(self, graph, qualified: str) -> Value:
        """One ``prim::GetAttr`` per name, at the top of the graph (usable in every block);
        a tensor some method assigns is read where the code reads it, each time."""
        if qualified in self.written or any(qualified.startswith(f"{m}.") for m in self.moved):
            return graph.insert("prim::GetAttr", [], name=qualified).output().setType(T.Tensor)
        found = self.attrs.get((graph, qualified))
        if found is None:
            top = graph.block()
            node = graph.create("prim::GetAttr", name=qualified)
            leading = list(itertools.takewhile(lambda n: n.kind() == "prim::GetAttr", top.nodes()))
            first = next(top.nodes(), None)
            if leading:
                node.insertAfter(leading[-1])
            elif first is not None:
                node.insertBefore(first)
            else:
                top.appendNode(node)
            found = node.output().setType(T.Tensor).setDebugName(qualified)
            self.attrs[(graph, qualified)] = found
        return found


def _prefix_attributes(node, prefix: str) -> None:
    if not prefix:
        return
    if node.kind() == "prim::GetAttr":
        node.setAttr("name", f"{prefix}.{node['name']}")
        node.output().setDebugName(node["name"])
    for block in node.blocks():
        for inner in block.nodes():
            _prefix_attributes(inner, prefix)


def _rebuild(caller, outputs, spec):
    if spec["type"] == "leaf":
        return next(outputs)
    items = [_rebuild(caller, outputs, child) for child in spec["children"]]
    if spec["type"] == "list":
        return caller.list_value(items)
    if spec["type"] == "tuple":
        return caller.tuple_value(items)
    raise NotSupportedError("dict outputs of traced code in scripted code aren't supported")


def _is_tensor_input(value) -> bool:
    return isinstance(value, Value) and isinstance(value.type(), T.TensorType)


_VARARGS = (
    "Compiled functions can't take variable number of arguments or use keyword-only arguments "
    "with defaults"
)


def _parameters(source, definition, skip_self: bool):
    spec = definition.args
    # TorchScript's order and places: **kwargs, then *args (from the star to the end of the
    # name), then a keyword-only default
    for star in (spec.kwarg, spec.vararg):
        if star is not None:
            where = ast.Constant(None, lineno=star.lineno, col_offset=star.col_offset - 1)
            where.end_lineno, where.end_col_offset = star.lineno, star.col_offset + len(star.arg)
            raise source.not_supported(_VARARGS, where)
    for default in spec.kw_defaults:
        if default is not None:
            raise source.not_supported(_VARARGS, default)
    params = list(spec.posonlyargs) + list(spec.args) + list(spec.kwonlyargs)
    return params[1:] if skip_self else params


def _param_type(source, param, scope, fn) -> T.Type:
    if param.annotation is None:
        return _unannotated(fn, param.arg)
    evaluated = getattr(getattr(fn, "__func__", fn), "__annotations__", {}).get(param.arg)
    try:
        if evaluated is not None and not isinstance(evaluated, str):
            return to_type(evaluated)
        return resolve(ast.unparse(param.annotation), scope)
    except AnnotationError as e:
        raise source.error(str(e), _annotation_range(param.annotation)) from None


def _annotation_range(node):
    """Where an annotation error points: a string annotation (``x: "Name"``) is underlined
    from its opening quote for the name's length plus one, as TorchScript underlines it."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        node = ast.Constant(node.value, lineno=node.lineno, col_offset=node.col_offset)
        node.end_lineno, node.end_col_offset = node.lineno, node.col_offset + len(node.value) + 1
    return node


_DEFAULT_TYPES = {bool: T.BoolType, int: T.IntType, float: T.FloatType, str: T.StrType}


def _unannotated(fn, name: str) -> T.Type:
    """Tensor, TorchScript's type for an unannotated parameter; ember's own layers (whose
    sources carry no annotations) get the type their default implies (None: Optional[Tensor])."""
    module = getattr(fn, "__module__", "") or ""
    if module.startswith("ember."):
        default = inspect.signature(fn).parameters[name].default
        if default is None:
            return T.OptionalType(T.Tensor)
        found = _DEFAULT_TYPES.get(type(default))
        if found is not None:
            return found
    return T.Tensor


def _signature(fn, names) -> inspect.Signature:
    params = inspect.signature(fn).parameters
    kept = [params[n].replace(annotation=inspect.Parameter.empty) for n in names if n in params]
    return inspect.Signature(kept)


def _default_of(fn, name):
    return inspect.signature(fn).parameters[name].default


# ---- modules ------------------------------------------------------------------------------------
def script_module(module: Module) -> RecursiveScriptModule:
    made = mirror(module, RecursiveScriptModule, RecursiveScriptModule)
    _keep_script_methods(made, module)
    _compile_methods(made, module, root=True)
    _copy_runtime_attributes(made, module)
    return made


def _copy_runtime_attributes(made, module) -> None:
    """The attributes the graphs read or write at run time, copied onto the scripted module
    (as PyTorch's scripted modules hold their own); ``training`` is there already."""
    from .._paths import parent

    for method in made._methods.values():
        for kind in (attributes.READ, attributes.WRITE):
            for node in method.graph.findAllNodes(kind):
                owner, leaf = parent(module, node["name"])
                target, _ = parent(made, node["name"])
                value = owner.__dict__.get(leaf)
                if leaf == "training" and not isinstance(value, attributes.Attribute):
                    continue
                value = attributes.plain_value(getattr(owner, leaf))
                object.__setattr__(target, leaf, copy.deepcopy(value))
                target.__dict__.setdefault("_script_attributes", set()).add(leaf)
    for name, child in module._modules.items():
        if child is not None and made._modules.get(name) is not None:
            _copy_runtime_attributes(made._modules[name], child)


def _compile_methods(made, module, root: bool) -> None:
    """Graphs for ``forward`` and the exported methods of ``module`` and of each submodule (so
    ``scripted.encoder(x)`` runs, as in PyTorch). A submodule whose forward is outside the
    subset gets no graph unless it is the root: its parent may still call only what compiles."""
    _check_constants(module)
    if not isinstance(module, ScriptModule):
        unit, ref = Unit(), ModuleRef(module, "")
        unit.written = attributes.written_tensors(module)
        unit.moved = attributes.assigned_submodules(module)
        lower = modules.lowering(module)
        names = ["forward"] + [n for n in _exported(module) if n != "forward"]
        try:
            source = getattr(lower, "source", None)  # a forward written in the subset
            if source is not None:
                made._add_method(unit.function(source, self_ref=ref, name="forward"))
            elif lower is not None:
                made._add_method(_lowered_forward(unit, ref, lower))
            else:
                for name in names:
                    made._add_method(unit.function(getattr(module, name), self_ref=ref, name=name))
        except (FrontendError, ScriptError, OSError):
            if root:
                raise
    for name, child in module._modules.items():
        iface = interfaces.slot_interface(module, name)
        if child is not None and iface is not None:  # checked when scripting, as TorchScript
            interfaces.check_slot(child, name, iface)
            made.__dict__.setdefault("_interfaces", {})[name] = iface
        if child is not None:
            _compile_methods(made._modules[name], child, root=False)


class _LayerSource:
    """Where an ember layer's lowering reports from (it has no TorchScript source)."""

    def __init__(self, module):
        self.fn = type(module).forward
        self.filename = f"<{type(module).__name__}.forward>"
        self.first_line = 1

    def error(self, message, node=None):
        return ScriptError(f"{message} ({self.filename})")

    not_supported = error


def _lowered_forward(unit, ref, lower) -> ScriptMethod:
    graph = Graph()
    emitter = Emitter(unit, _LayerSource(ref.module), graph, {}, ref)
    x = graph.addInput("input", T.Tensor)
    try:
        result = lower(emitter, ref, [x], {})
    except BindError as e:
        raise ScriptError(str(e)) from None
    graph.registerOutput(emitter.materialize(result))
    signature = inspect.Signature(
        [inspect.Parameter("input", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    )
    return ScriptMethod("forward", graph, signature)


def _exported(module) -> list[str]:
    names = []
    for cls in type(module).__mro__:
        for name, member in vars(cls).items():
            if inspect.isfunction(member) and api.modifier(member) is api.FunctionModifiers.EXPORT:
                names.append(name)
    return list(dict.fromkeys(names))


def _keep_script_methods(made, module) -> None:
    """Submodules that are already compiled (scripted or traced) keep their graphs."""
    for name, child in module._modules.items():
        target = made._modules.get(name)
        if child is None or target is None:
            continue
        if isinstance(child, ScriptModule):
            for method in child._methods.values():
                target._add_method(method)
        _keep_script_methods(target, child)


def _check_constants(module) -> None:
    """``__constants__`` and ``Final`` attributes must hold constants (PyTorch's check)."""
    from .expressions import _is_constant_object

    names = set(getattr(type(module), "__constants__", ()))
    hints = getattr(type(module), "__annotations__", {})
    names |= {n for n, a in hints.items() if is_final(a)}
    for name in names:
        value = getattr(module, name, None)
        if isinstance(value, Module):
            continue
        if not _is_constant_object(value):
            raise TypeError(
                f"'{type(value).__name__}' object in attribute '{type(module).__name__}.{name}' "
                "is not a valid constant.\nValid constants are:\n1. a nn.ModuleList\n2. a value "
                "of type {bool, float, int, str, NoneType, torch.device, torch.layout, "
                "torch.dtype}\n3. a list or tuple of (2)\n"
            )


def script(obj):
    """See ``ember.jit.script`` (``jit/script/__init__.py``)."""
    if isinstance(obj, ScriptModule | ScriptFunction):
        return obj
    if isinstance(obj, Module):
        return script_module(obj)
    if classes.is_script_class(obj):
        return obj  # compiled where scripted code constructs it (its fields come from there)
    if isinstance(obj, type):
        raise NotSupportedError(
            f"ember.jit.script of a class ({obj.__name__}): script an instance of the module"
        )
    if not inspect.isfunction(obj) and not inspect.ismethod(obj):
        raise NotSupportedError(
            f"ember.jit.script expects a function or an nn.Module, got {type(obj).__name__}"
        )
    overloads.refuse_direct(obj)
    method = Unit().function(obj, name=obj.__name__)
    method.is_method = False
    return ScriptFunction(obj.__name__, method)
