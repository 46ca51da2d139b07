"""Capture: a dispatch layer at the tracing priority (300) that records every op call.

While a ``TracingState`` is active, each op called on the tracing thread becomes one node of
its graph: the arguments become values (traced tensors by identity, module parameters and
buffers as ``prim::GetAttr`` of their qualified name, other tensors and Python values as
constants, traced sizes as the values that computed them), the op then runs below the layer
with recording suspended (its decomposition is not recorded) and the real outputs give the
node's output values and their types. ``capture`` is the entry point ``jit.trace``,
``export`` and ``ember.compile`` share.
"""

from __future__ import annotations

import inspect
import sys
import threading
import warnings
from dataclasses import dataclass

from ember._tensor import Tensor
from ember.autograd.grad_mode import THREAD as GRAD
from ember.dispatcher.layers import STACK, Layer

from . import pytree
from . import types as T
from ._patches import tracing_patches
from .ir import Graph, Node, Value
from .ops import kind_of
from .symbolic import SymInt, plain


class TracerWarning(Warning):
    """A trace that may not generalise: a Python value of a tensor was baked in as a constant
    (PyTorch's ``torch.jit.TracerWarning``)."""


_ACTIVE: list = []  # the live TracingState (one at a time)


def current():
    """The TracingState recording on this thread, or None."""
    if _ACTIVE and _ACTIVE[-1].thread == threading.get_ident():
        return _ACTIVE[-1]
    return None


def is_tracing() -> bool:
    """Whether the calling code runs under ``ember.jit.trace`` (PyTorch's
    ``torch.jit.is_tracing``)."""
    state = current()
    return state is not None and state.recording()


class TracingState:
    """The graph being recorded and what maps Python objects to its values."""

    def __init__(
        self,
        attrs: dict | None = None,
        module_names: dict | None = None,
        expand=None,
        observer=None,
    ):
        self.graph = Graph()
        self.env: dict = {}  # id(tensor) -> Value
        self.keep: list = []  # the traced tensors, so ids stay unique while tracing
        self.attrs = attrs or {}  # id(parameter or buffer) -> qualified name
        self.attr_values: dict = {}  # qualified name -> Value of its prim::GetAttr
        self.module_names = module_names or {}  # id(module) -> qualified name
        self.constants: dict = {}  # (type, value) -> Value, for hashable scalars
        self.scope: list = []
        self.suspended = 0
        self.thread = threading.get_ident()
        self.live = True  # False once the trace ends: its SymInts become plain ints
        self.expand = expand  # op -> bool: record its decomposition's ops instead of it
        # ember.compile's hooks (None for jit.trace/export): ``read(name)`` when the code reads
        # a graph tensor's data, ``module(m)`` per module call, ``closure`` (true: tensors that
        # require grad and are no parameter of the root are held by reference, as a closure's)
        self.observer = observer
        # ember.compile's captures record grad mode (see ``follow_grad_mode``); jit.trace's
        # graphs do not, as PyTorch's traces
        self.entry_grad = GRAD.mode.enabled
        self.grad_mode = GRAD.mode.enabled if observer is not None else None

    def recording(self) -> bool:
        return self.live and self.suspended == 0 and self.thread == threading.get_ident()

    # ---- building ----------------------------------------------------------------------------
    def insert(self, kind: str, inputs, type_=None, num_outputs: int = 1, **attrs) -> Node:
        node = self.graph.insert(kind, inputs, num_outputs, **attrs)
        node.setScope(self.scope[-1] if self.scope else "")
        node.setSourceRange(_user_frame())
        if num_outputs == 1 and type_ is not None:
            node.output().setType(type_)
        return node

    def bind(self, tensor: Tensor, value: Value) -> None:
        self.env[id(tensor)] = value
        self.keep.append(tensor)

    def add_input(self, tensor: Tensor, name: str) -> Value:
        value = self.graph.addInput(name, T.TensorType.of(tensor))
        if id(tensor) not in self.env:
            self.bind(tensor, value)
        return value

    def follow_grad_mode(self, mode: bool) -> None:
        """A ``prim::set_grad_enabled`` node where grad mode differs from the previous op's (a
        ``no_grad`` block of the user's code), so that replays run those ops without recording
        autograd history, as eager did (TorchScript and dynamo keep grad mode the same way)."""
        if self.grad_mode is None or mode == self.grad_mode:
            return
        self.grad_mode = mode
        self.insert("prim::set_grad_enabled", [self.constant(mode)], num_outputs=0)

    # ---- Python objects as values ------------------------------------------------------------
    def value_of(self, obj, elem_type=None) -> Value:
        """The value for an op argument; ``elem_type`` is set for list arguments of the schema
        (``int[]``, ``Tensor[]``), which become lists whatever Python sequence holds them."""
        if isinstance(obj, Tensor):
            return self.tensor_value(obj)
        if obj.__class__ is SymInt:
            if obj._state is self:
                return obj._value
            obj = int(obj)
        if isinstance(obj, (list, tuple)) and _holds_values(self, obj):
            items = [self.value_of(item) for item in obj]
            if isinstance(obj, tuple) and elem_type is None:
                return self.insert(
                    "prim::TupleConstruct", items, T.TupleType(v.type() for v in items)
                ).output()
            element = elem_type or T._common(v.type() for v in items)
            return self.insert("prim::ListConstruct", items, T.ListType(element)).output()
        return self.constant(list(obj) if elem_type is not None and isinstance(obj, tuple) else obj)

    def constant(self, obj) -> Value:
        try:
            key = (type(obj), obj)
            hash(key)
        except TypeError:
            key = None
        if key is not None and not isinstance(obj, Tensor):
            found = self.constants.get(key)
            if found is not None:
                return found
        value = self.insert("prim::Constant", (), T.type_of(obj), value=obj).output()
        if key is not None:
            self.constants[key] = value
        return value

    def tensor_value(self, t: Tensor) -> Value:
        found = self.env.get(id(t))
        if found is not None:
            return found
        name = self.attrs.get(id(t))
        if name is not None:
            value = self.attr_values.get(name)
            if value is None:
                node = self.insert("prim::GetAttr", (), T.TensorType.of(t), name=name)
                value = node.output().setDebugName(name)
                self.attr_values[name] = value
            self.bind(t, value)
            return value
        if t._requires_grad and not (self.observer is not None and self.observer.closure):
            raise RuntimeError(
                "Cannot insert a Tensor that requires grad as a constant. Consider making it a "
                "parameter or input, or detaching the gradient"
            )
        value = self.insert("prim::Constant", (), T.TensorType.of(t), value=t).output()
        self.bind(t, value)
        return value

    # ---- recording an op call ----------------------------------------------------------------
    def record(self, op, args, layer):
        if self.expand is not None and self.expand(op):
            # its decomposition's ops reach this layer in turn (sizes stay SymInts)
            return op.decomposition(*args)
        schema_args = op.schema.args
        if len(args) < len(schema_args):  # operators pass fewer: a node holds every argument
            rest = schema_args[len(args) :]
            if all(a.has_default for a in rest):
                args = (*args, *(_default(a) for a in rest))
        inputs = [self.value_of(a, _elem_type(schema_args[i])) for i, a in enumerate(args)]
        self.suspended += 1
        try:
            out = op.redispatch(layer, tuple(plain(a) for a in args))
        finally:
            self.suspended -= 1
        self.follow_grad_mode(GRAD.mode.enabled)
        node = self.insert(kind_of(op), inputs, num_outputs=0)
        self.bind_outputs(op, node, out)
        return out

    def bind_outputs(self, op, node: Node, out) -> None:
        if isinstance(out, Tensor):
            self.bind(out, node.addOutput(T.TensorType.of(out)))
            return
        returns = op.schema.returns
        if isinstance(out, list) and len(returns) == 1 and returns[0][0] == "Tensor[]":
            whole = node.addOutput(T.ListType(T.Tensor))
            unpack = self.insert("prim::ListUnpack", [whole], num_outputs=len(out))
            for item, value in zip(out, unpack.outputs()):
                value.setType(T.TensorType.of(item))
                self.bind(item, value)
            return
        items = out if isinstance(out, tuple) else (out,)
        for item in items:
            value = node.addOutput(T.type_of(item))
            if isinstance(item, Tensor):
                self.bind(item, value)


def _default(arg):
    return tuple(arg.default) if isinstance(arg.default, list) else arg.default


def _elem_type(arg):
    if arg.is_list and arg.type == "Tensor":
        return T.OptionalType(T.Tensor) if arg.optional else T.Tensor
    if arg.is_list and arg.type == "int":
        return T.IntType
    return None


def _holds_values(state: TracingState, items) -> bool:
    """Whether a list argument contains traced tensors or sizes (else it is one constant)."""
    for item in items:
        if isinstance(item, Tensor):
            return True
        if item.__class__ is SymInt and item._state is state:
            return True
        if isinstance(item, (list, tuple)) and _holds_values(state, item):
            return True
    return False


def _user_frame() -> str:
    """``file:line`` of the innermost caller outside ember (the user's model code)."""
    frame = sys._getframe(2)
    while frame is not None:
        module = frame.f_globals.get("__name__") or ""
        if not (module == "ember" or module.startswith("ember.")):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


class TracingLayer(Layer):
    name = "tracing"
    priority = 300

    def __init__(self, state: TracingState):
        self.state = state

    def wants(self, op, args) -> bool:
        state = self.state
        return state.suspended == 0 and state.thread == threading.get_ident()

    def handle(self, op, args):
        return self.state.record(op, args, self)


@dataclass
class Capture:
    """What ``capture`` recorded: the graph, the input/output structure, the eager outputs."""

    graph: Graph
    in_spec: dict
    out_spec: dict
    outputs: object


def capture(
    fn,
    args: tuple,
    kwargs: dict | None = None,
    *,
    root=None,
    strict: bool = True,
    expand=None,
    observer=None,
) -> Capture:
    """Run ``fn(*args, **kwargs)`` recording a graph whose inputs are the tensors in ``args``
    (nested tuples/lists/dicts) and whose outputs are the tensors ``fn`` returns.

    ``root``: the module whose parameters and buffers become ``prim::GetAttr`` nodes.
    ``expand``: ``op -> bool``, true for composite ops to record as the ops of their
    decomposition rather than as one node (the ONNX exporter's ops that have no rule).
    ``observer``: ember.compile's hooks (see ``TracingState``).
    """
    kwargs = kwargs or {}
    leaves, in_spec = pytree.flatten((tuple(args), kwargs))
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(
                f"Type '{type(leaf).__name__}' cannot be traced. Only Tensors and (possibly "
                "nested) Lists, Dicts, and Tuples of Tensors can be traced"
            )
    if current() is not None:
        raise RuntimeError("ember.jit.trace: tracing inside a trace is not supported")
    with CAPTURE_LOCK:  # the layer and the patches are process-wide: one trace at a time
        return _capture(fn, args, kwargs, leaves, in_spec, root, strict, expand, observer)


# Two threads tracing at once (two threads' first calls of a compiled model) would install two
# tracing layers of one priority and patch Tensor's methods twice: they take turns
# (ember.compile holds it around its own patches too: compiler/region.py).
CAPTURE_LOCK = threading.RLock()


def _capture(fn, args, kwargs, leaves, in_spec, root, strict, expand, observer) -> Capture:
    state = TracingState(*_module_tables(root), expand=expand, observer=observer)
    names = _input_names(fn, in_spec)
    for leaf, name in zip(leaves, names):
        state.add_input(leaf, name)
    layer = TracingLayer(state)
    _ACTIVE.append(state)
    STACK.install(layer)
    try:
        with tracing_patches(state):
            result = fn(*args, **kwargs)
    finally:
        STACK.remove(layer)
        _ACTIVE.remove(state)
        state.live = False
    state.follow_grad_mode(state.entry_grad)  # a block still open at the last op ends here
    outputs, out_spec = pytree.flatten(result)
    _check_outputs(result, outputs, strict)
    for leaf in outputs:
        state.graph.registerOutput(state.value_of(leaf))
    from .passes.dce import eliminate_dead_code

    eliminate_dead_code(state.graph)
    return Capture(state.graph, in_spec, out_spec, result)


def _input_names(fn, in_spec) -> list[str]:
    """Graph input names after the function's parameters: ``x``, ``hidden.0``, ``mask``."""
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        params = []
    names = []
    for path in pytree.leaf_paths(in_spec):
        group, position, *rest = path.split(".")
        if group == "0":  # positional: path "0.<index>..."
            index = int(position)
            position = params[index] if index < len(params) else f"input{index}"
        names.append(".".join([position, *rest]))
    return names


def _module_tables(root) -> tuple[dict, dict]:
    if root is None:
        return {}, {}
    attrs = {}
    for name, t in root.named_parameters(remove_duplicate=False):
        attrs.setdefault(id(t), name)
    for name, t in root.named_buffers(remove_duplicate=False):
        attrs.setdefault(id(t), name)
    modules = {id(m): name for name, m in root.named_modules()}
    return attrs, modules


def _check_outputs(result, outputs: list, strict: bool) -> None:
    for leaf in outputs:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(
                "Only tensors, lists, tuples of tensors, or dictionary of tensors can be output "
                "from traced functions"
            )
    if strict and _has_mutable(result):
        warnings.warn(
            "Encountering a list at the output of the tracer might cause the trace to be "
            "incorrect, this is only valid if the container structure does not change based on "
            "the module's inputs. Consider using a constant container instead (e.g. for `list`, "
            "use a `tuple` instead. for `dict`, use a `NamedTuple` instead). If you absolutely "
            "need this and know the side effects, pass strict=False to trace() to allow this "
            "behavior.",
            TracerWarning,
            stacklevel=4,
        )


def _has_mutable(tree) -> bool:
    if isinstance(tree, (list, dict)):
        return True
    if isinstance(tree, tuple):
        return any(_has_mutable(item) for item in tree)
    return False
