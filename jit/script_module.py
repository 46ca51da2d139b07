"""ScriptModule and ScriptFunction: graphs that run without the Python code they came from.

A ``ScriptModule`` is an ``nn.Module`` whose methods are graphs: it holds the parameters and
buffers (by their qualified names, in a tree of submodules mirroring the original), and
``forward`` runs the Python that ``jit.codegen`` generated from the graph. ``.graph`` prints the
IR, ``.code`` shows the generated source, ``.save(f)`` writes an archive ``ember.jit.load``
reads in a process that never imported the original class.
"""

from __future__ import annotations

from ember.nn.modules.module import Module

from . import pytree
from .codegen import generate
from .ir import Graph
from .types import OptionalType, TensorType, has_named_tuple, rebuild_named_tuples


class Method:
    """One graph method: the graph, its input/output structure and the compiled code."""

    def __init__(self, name: str, graph: Graph, in_spec: dict, out_spec: dict, method=True):
        self.name = name
        self.graph = graph
        self.in_spec = in_spec
        self.out_spec = out_spec
        self.is_method = method
        self._generated = None
        self._named = None

    def recompile(self) -> None:
        """Regenerate the code after the graph changed."""
        self._generated = None

    @property
    def generated(self):
        if self._generated is None:
            self._generated = generate(self.graph, self.name, self.is_method)
            outputs = self.graph.outputs()
            named = any(has_named_tuple(o.type()) for o in outputs)
            self._named = outputs[0].type() if named else None
        return self._generated

    @property
    def code(self) -> str:
        return self.generated.source

    def call(self, owner, args: tuple, kwargs: dict):
        leaves = self._leaves(tuple(args), dict(kwargs))
        fn = self.generated.fn
        flat = fn(owner, *leaves) if self.is_method else fn(*leaves)
        if self._named is not None:
            flat = [rebuild_named_tuples(v, o.type()) for v, o in zip(flat, self.graph.outputs())]
        return pytree.unflatten(flat, self.out_spec)

    @property
    def named(self):
        """The first output's type when some output holds NamedTuples (results are rebuilt
        as their classes), else None."""
        self.generated  # noqa: B018 - computes it with the code
        return self._named

    def _leaves(self, args: tuple, kwargs: dict) -> list:
        """The graph's inputs for a call. A graph whose inputs are the positional arguments
        themselves (scripted methods: an input may be a tuple or None) takes them as they are;
        otherwise the arguments are flattened and must have the recorded structure."""
        inputs = self.graph.inputs()
        if not kwargs and _positional_leaves(self.in_spec) == len(inputs):
            args = self._pad_optional(args)
            if len(args) == len(inputs) and all(map(_fits, args, inputs)):
                return list(args)
        leaves, spec = pytree.flatten((args, kwargs))
        if spec != self.in_spec:
            raise TypeError(
                f"{self.name}(): expected arguments structured as {_describe(self.in_spec)}, "
                f"got {_describe(spec)}"
            )
        return leaves

    def _pad_optional(self, args: tuple) -> tuple:
        """Trailing ``Optional`` inputs of a flat signature default to None (a scripted
        ``state: Optional[Tensor] = None`` after loading, when the Python defaults are gone)."""
        inputs = self.graph.inputs()
        if len(args) >= len(inputs) or pytree.num_leaves(self.in_spec) != len(inputs):
            return args
        rest = inputs[len(args) :]
        if not all(isinstance(v.type(), OptionalType) for v in rest):
            return args
        return (*args, *(None for _ in rest))


class _Bound:
    """A traced method other than forward, bound to its module."""

    def __init__(self, owner, method: Method):
        self.owner, self.method = owner, method

    def __call__(self, *args, **kwargs):
        return self.method.call(self.owner, args, kwargs)

    @property
    def graph(self) -> Graph:
        return self.method.graph

    @property
    def code(self) -> str:
        return self.method.code


def _positional_leaves(spec: dict) -> int | None:
    """n for the spec of ``(leaf_1, ..., leaf_n), {}``, else None."""
    positional, keywords = spec["children"]
    if keywords["children"] or any(c["type"] != "leaf" for c in positional["children"]):
        return None
    return len(positional["children"])


def _fits(arg, value) -> bool:
    """Whether an argument may be passed as the graph input ``value`` as it is."""
    from ember._tensor import Tensor

    return isinstance(arg, Tensor) or not isinstance(value.type(), TensorType)


def _describe(spec: dict) -> str:
    """``(Tensor, (Tensor, Tensor)), {}``-like text of an (args, kwargs) spec."""
    kind = spec["type"]
    if kind == "leaf":
        return "Tensor"
    children = [_describe(c) for c in spec["children"]]
    if kind == "dict":
        return "{" + ", ".join(f"{k}: {c}" for k, c in zip(spec["keys"], children)) + "}"
    if kind == "list":
        return "[" + ", ".join(children) + "]"
    return "(" + ", ".join(children) + ("," if len(children) == 1 else "") + ")"


class ScriptModule(Module):
    """A module whose methods are graphs (``torch.jit.ScriptModule``)."""

    def __init__(self, original_name: str = "Module"):
        super().__init__()
        object.__setattr__(self, "original_name", original_name)
        object.__setattr__(self, "_methods", {})

    def __setattr__(self, name, value):
        interfaces = self.__dict__.get("_interfaces")
        if interfaces and name in interfaces:  # a slot typed by an interface: TorchScript's checks
            from .script.interfaces import assign

            assign(self, name, value)
        super().__setattr__(name, value)

    # ---- methods -----------------------------------------------------------------------------
    def _add_method(self, method: Method) -> None:
        self._methods[method.name] = method
        if method.name != "forward":  # an instance attribute: it wins over Module's methods
            object.__setattr__(self, method.name, _Bound(self, method))

    def _method(self, name: str) -> Method:
        found = self._methods.get(name)
        if found is None:
            raise RuntimeError(
                f"{self.original_name} (ScriptModule) has no graph for method '{name}': only "
                f"{sorted(self._methods) or 'no methods'} were traced (trace a submodule or more "
                "methods with ember.jit.trace_module)"
            )
        return found

    def forward(self, *args, **kwargs):
        return self._method("forward").call(self, args, kwargs)

    def to(self, *args, **kwargs):
        """As ``Module.to``; moving to a device also moves the devices the trace baked into
        the graphs (``ember.arange(n, device=x.device)``), as ``load(map_location=)`` does."""
        from ember._frontends import _to_args
        from ember.dispatcher.memory import normalize_device

        from .serialize import retarget_devices

        super().to(*args, **kwargs)
        device = _to_args(None, args, dict(kwargs))[1]
        if device is not None:
            target = normalize_device(device)
            for method in self._methods.values():
                retarget_devices(method.graph, target)
                method.recompile()
        return self

    @property
    def graph(self) -> Graph:
        return self._method("forward").graph

    @property
    def inlined_graph(self) -> Graph:
        return self.graph

    @property
    def code(self) -> str:
        return self._method("forward").code

    @property
    def code_with_constants(self):
        generated = self._method("forward").generated
        return generated.source, {f"c{i}": v for i, v in enumerate(generated.constants)}

    def method_names(self) -> list[str]:
        return sorted(self._methods)

    def save(self, f, _extra_files=None) -> None:
        """Write this module to ``f`` (a path or a binary file); see ``ember.jit.save``."""
        from .serialize import save

        save(self, f, _extra_files)

    def extra_repr(self) -> str:
        return f"original_name={self.original_name}"

    def _get_name(self) -> str:
        return type(self).__name__


class RecursiveScriptModule(ScriptModule):
    """What ``ember.jit.load`` returns (PyTorch's class name for loaded modules)."""


class TopLevelTracedModule(ScriptModule):
    """What ``ember.jit.trace`` returns for a module (PyTorch's class name)."""


class TracedModule(ScriptModule):
    """A submodule of a traced module (it holds parameters; its own forward was not traced)."""


class ScriptFunction:
    """A traced function (``torch.jit.ScriptFunction``)."""

    def __init__(self, name: str, method: Method):
        self.name = self.qualified_name = name
        self._method = method

    def __call__(self, *args, **kwargs):
        return self._method.call(None, args, kwargs)

    @property
    def graph(self) -> Graph:
        return self._method.graph

    @property
    def inlined_graph(self) -> Graph:
        return self._method.graph

    @property
    def code(self) -> str:
        return self._method.code

    def save(self, f, _extra_files=None) -> None:
        from .serialize import save

        save(self, f, _extra_files)

    def __repr__(self) -> str:
        return f"<ember.jit.ScriptFunction {self.name}>"


def mirror(module: Module, root_class=TopLevelTracedModule, child_class=TracedModule):
    """A ScriptModule tree with ``module``'s submodules, parameters and buffers (shared, not
    copied) and training flags."""
    made = root_class(type(module).__name__)
    _fill(made, module, child_class)
    return made


def _fill(target: ScriptModule, source: Module, child_class) -> None:
    object.__setattr__(target, "training", source.training)
    for name, param in source._parameters.items():
        target._parameters[name] = param
    for name, buf in source._buffers.items():
        target._buffers[name] = buf
    target._non_persistent_buffers_set |= set(source._non_persistent_buffers_set)
    for name, child in source._modules.items():
        if child is None:
            target._modules[name] = None
            continue
        made = child_class(type(child).__name__)
        _fill(made, child, child_class)
        target._modules[name] = made
