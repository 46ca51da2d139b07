"""Graph nodes (``grad_fn``), saved tensors with version checks, and leaf accumulators."""

from __future__ import annotations

import functools
import itertools
import re
import threading
import weakref

from ember._dtype import FLOATING
from ember._hooks import RemovableHandle
from ember._tensor import Tensor, make
from ember.dispatcher.mathbits import keep_bits

from .context import Context
from .saved_sizes import is_size, saved_size
from .saved_values import (
    ALIASES,
    OUTPUTS,
    PARTS,
    WRAPS_NUMBERS,
    Call,
    saved_value,
    wrapped,
)
from .saved_weak import read as read_weak

_SEQUENCE = itertools.count()

FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


@functools.cache  # composites name their node on every recorded call: op names are few
def camel(name: str) -> str:
    """PyTorch's node-name spelling: each ``_`` part capitalized, and a letter after a digit
    too (``log1p`` -> ``Log1P``, ``upsample_bilinear2d`` -> ``UpsampleBilinear2D``)."""
    joined = "".join(part[:1].upper() + part[1:] for part in name.replace("::", "_").split("_"))
    return _AFTER_DIGIT.sub(lambda m: m.group(0).upper(), joined)


_AFTER_DIGIT = re.compile(r"(?<=[0-9])[a-z]")


def output_nr(t: Tensor) -> int:
    return t._output_nr  # a class default (0) unless set in the tensor's __dict__


def gradient_edge(t: Tensor):
    """Where a gradient for ``t`` should flow: ``(node, output index)``, or None.

    Runs for every tensor input of every recorded call: the common cases (a single-output
    node, a leaf whose accumulator exists) read no more than a few attributes.
    """
    node = t._grad_fn
    if node is not None:
        if t._base is not None:
            node = history(t)
        return (node, output_nr(t) if node.num_outputs != 1 else 0)
    if t._requires_grad:
        return leaf_edge(t)
    return None


def history(t: Tensor):
    """``t``'s grad_fn; for a view whose base was changed in place after the view's history was
    recorded, a new one over the base's current history (the view's values changed too)."""
    node = t._grad_fn
    base = t._base
    stale = base is not None and base._grad_fn is not t.__dict__.get("_view_of", base._grad_fn)
    if node is not None and stale:
        from .views import replay

        node = replay(t)
    return node


def leaf_edge(t: Tensor) -> tuple:
    """``(AccumulateGrad, 0)``: the edge of a leaf. The leaf keeps it (the node refers to the
    leaf weakly: no cycle), so the calls recorded on the leaf share one node and one tuple."""
    try:
        return t._leaf_edge
    except AttributeError:  # the leaf's first recorded call
        edge = t._leaf_edge = (AccumulateGrad(t), 0)
        return edge


class _SavedHooks(threading.local):
    """The saved-tensor hook pairs in effect (``autograd.graph.saved_tensors_hooks``)."""

    def __init__(self):
        self.stack: list = []
        self.disabled: str | None = None  # the message disable_saved_tensors_hooks gave


SAVED_HOOKS = _SavedHooks()
_UNSET = object()


def check_version(t: Tensor, version: int, owner) -> None:
    """Refuse a tensor saved at ``version`` whose memory was written in place since."""
    if t._storage.version != version:
        saved_by = owner.name() if owner is not None else "a backward function"
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [{t.dtype.name} tensor of shape {list(t._shape)}], which is "
            f"saved by {saved_by}, is at version {t._storage.version}; expected version "
            f"{version} instead. Hint: the operation that modified it was in-place "
            "(a method ending in '_' or an indexed assignment)."
        )


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    An op's own output (``output_nr`` is its index) is kept as a history-free alias: saving the
    tensor itself, or the node, would make a cycle node -> saved -> node that only the garbage
    collector frees. The owner node passed to ``unpack`` becomes the alias's grad_fn again, so
    higher-order gradients still flow through it.

    Under ``saved_tensors_hooks`` the pack hook's result is kept instead of the tensor, and the
    unpack hook turns it back into a tensor when backward needs it (checkpointing, offloading).
    """

    __slots__ = ("output_nr", "packed", "tensor", "unpack_hook", "version")

    def __init__(self, t: Tensor, output_nr: int | None = None):
        self.version = t._storage.version
        self.output_nr = output_nr
        self.unpack_hook = None
        if SAVED_HOOKS.stack:
            pack, self.unpack_hook = SAVED_HOOKS.stack[-1]
            self.packed = pack(t)
            self.tensor = None
            return
        if output_nr is not None:
            t = keep_bits(make(t._storage, t._shape, t._stride, t._offset, t._dtype, t._contig), t)
        self.tensor = t

    def register_hooks(self, pack_hook, unpack_hook) -> None:
        """Pack the saved tensor now with ``pack_hook``; ``unpack_hook`` gives it back."""
        if self.unpack_hook is not None:
            raise RuntimeError("Hooks were already registered on this SavedTensor")
        if self.tensor is None:
            raise RuntimeError(FREED)
        self.packed = pack_hook(self.tensor)
        self.unpack_hook = unpack_hook
        self.tensor = None

    def free(self) -> None:
        # The hooks go too: what they hold (a checkpoint's recomputed tensors) is freed with
        # the last node that saved into it, not with the whole graph.
        self.tensor = None
        self.packed = _UNSET
        self.unpack_hook = None

    def unpack(self, owner) -> Tensor:
        if self.unpack_hook is not None:
            return self._unpack_hooked(owner)
        t = self.tensor
        if t is None:
            raise RuntimeError(FREED)
        check_version(t, self.version, owner)
        return self._as_output(t, owner)

    def _unpack_hooked(self, owner) -> Tensor:
        if self.packed is _UNSET:
            raise RuntimeError(FREED)
        t = self.unpack_hook(self.packed)
        if not isinstance(t, Tensor):
            raise TypeError(
                "Output of saved tensor unpack_hook expected to be a Tensor but got result of "
                f"type {type(t).__name__}"
            )
        return self._as_output(t, owner)

    def _as_output(self, t: Tensor, owner) -> Tensor:
        # an integer output (sort's indices) has no history, as PyTorch's saved one
        if self.output_nr is not None and owner is not None and t._dtype.category >= FLOATING:
            alias = make(t._storage, t._shape, t._stride, t._offset, t._dtype, t._contig)
            keep_bits(alias, t)
            alias._grad_fn = owner
            alias._requires_grad = True
            if self.output_nr:
                alias.__dict__["_output_nr"] = self.output_nr
            tangents = t.__dict__.get("_fw")
            if tangents:  # forward AD shared the output's tangents with this copy
                alias.__dict__["_fw"] = tangents
            return alias
        return t


class Node(Context):
    """A backward function: applies an op's formula to incoming gradients.

    ``edges`` holds, per tensor input, the ``(node, output index)`` its gradient flows to (None
    for inputs that need none): what the engine walks. ``next_functions`` shows them as PyTorch
    does (``(None, 0)`` for inputs without one, only the inputs the op's PyTorch node has), and
    ``name()`` is PyTorch's node name (autograd/graph_names.py). ``_saved_<argument>`` reads
    what the node saved for backward (``_saved_self`` is the first argument, as in PyTorch);
    ``_saved_<argument>_sym_sizes`` the input sizes it keeps (autograd/saved_sizes.py).

    A formula's node is its own ctx (``node.ctx is node``, autograd/context.py): the call's
    values, what it saved, ``needs_input_grad``. Nodes of other kinds (a custom Function's, a
    library op's) keep a ctx of their own; a leaf's accumulator and a view replay have none.

    The class has no ``__getattr__``: with one, CPython 3.11 gives up its specialised loads
    for every attribute read on every node (the engine's ``edges``, ``formula``, ``_saved``...
    at 22 ns instead of 6). A formula's ``ctx.<argument>`` is a property of the formula's node
    class (``node_type``); the ``_saved_*`` names a program reads on a ``grad_fn`` are served
    by the class ``typed`` gives the nodes it shows (``_introspect``).
    """

    # _saved, _values: the call, as its formula reads it through ctx (autograd/context.py).
    # What most nodes never set (hooks, anomaly traces, a composite's display, a Tensor[]
    # call's spans, strides, the released flag) are class defaults, set per node in its
    # __dict__ when needed: recording writes eight slots, not seventeen.
    __slots__ = (
        "__dict__",
        "__weakref__",
        "_metadata",
        "_saved",
        "_values",
        "edges",
        "formula",
        "input_meta",
        "num_outputs",
        "op",
        "seq",
    )
    released = False  # True once backward freed what it saved (release)
    hooks = None
    pre_hooks = None
    retains = None
    trace = None
    # (name, edges, sizes of its arguments by position) a composite's node is shown with
    display = None
    _spans = None
    _strides = None
    _weak = None  # inputs PyTorch's node saves, kept weakly (saved_weak.py)

    # No __init__ of its own: a recorder makes its node with ``node_type()`` (object's
    # __init__, the cheapest call that makes one) and writes the slots; every other maker calls
    # ``fill``.
    def fill(self, op, formula, edges, input_meta, num_outputs=1) -> Node:
        self.op = op
        self.formula = formula
        self.edges = edges
        self.input_meta = input_meta
        self.num_outputs = num_outputs
        self.seq = next(_SEQUENCE)
        self._saved = None
        return self

    @property
    def ctx(self):
        """What the formula reads of the call: the node itself."""
        return self

    @property
    def needs_input_grad(self) -> tuple:
        """Per tensor argument, whether it needs a gradient: whether it has an edge (a tensor
        has one exactly when it requires grad), unless the call set its own (a Tensor[]
        argument's is one flag for the list): recording builds no tuple for it."""
        needs = self.__dict__.get("_needs")
        return tuple(edge is not None for edge in self.edges) if needs is None else needs

    @needs_input_grad.setter
    def needs_input_grad(self, needs: tuple) -> None:
        self.__dict__["_needs"] = needs

    def name(self) -> str:
        if self.display is not None:
            return self.display[0]
        from .graph_names import describe

        return describe(self)[0]

    @property
    def next_functions(self) -> tuple:
        """``((node, output index), ...)`` per input of the PyTorch node, ``(None, 0)`` for
        inputs that need no gradient."""
        if self.display is not None:
            edges = self.display[1]
        elif self.formula is not None and hasattr(self.op, "schema"):
            from .graph_names import describe

            edges = describe(self)[1]
        else:
            edges = self.edges
        return tuple((None, 0) if e is None else _shown_edge(e) for e in edges)

    def __repr__(self) -> str:  # PyTorch's class name: the name without its namespace
        return f"<{self.name().rpartition('::')[2]} object at {id(self):#x}>"

    def register_hook(self, hook):
        """``hook(grad_inputs, grad_outputs)`` after this node runs; may return new grad_inputs."""
        self.hooks = (self.hooks or []) + [hook]
        return _Handle(self, "hooks", hook)

    def register_prehook(self, hook):
        """``hook(grad_outputs)`` before this node runs; may return new grad_outputs."""
        return self._add_pre_hook((None, hook))

    def _add_pre_hook(self, entry):
        """``entry`` is ``(output index or None, fn)``: a tensor hook sees one output's grad."""
        self.pre_hooks = (self.pre_hooks or []) + [entry]
        return _Handle(self, "pre_hooks", entry)

    def release(self) -> None:
        """Free saved tensors (after a backward without retain_graph)."""
        self.released = True
        ctx = self.ctx
        if ctx is self:
            self.free_saved()
        elif ctx is not None:
            ctx.release()
        if self.display is not None and self.display.outputs:
            for saved in self.display.outputs.values():
                saved.free()

    def apply(self, grads: list) -> tuple:
        return self.formula.apply(self, grads)

    @property
    def metadata(self) -> dict:
        """A dict of the user's, kept with the node (PyTorch's ``Node.metadata``)."""
        try:
            return self._metadata
        except AttributeError:
            self._metadata = {}
            return self._metadata


def _shown_edge(edge):
    """``(node, index)``, the index the output of PyTorch's multi-output node that ``node``
    stands for when it shows one (a piece of a split made by its own narrow)."""
    node = typed(edge[0])
    display = node.display
    if display is not None and display.output_nr is not None:
        return (node, display.output_nr)
    return edge


def node_type(op, formula) -> type:
    """The class of ``formula``'s nodes (made on the op's first recorded call, not at import):
    Node with a property per argument of the op, ``ctx.<argument>`` (``Context.argument``),
    and ``ctx.result`` (the saved output).
    Names Node already has (``shape``, ``meta``...) stay Node's; Formula.bind refuses
    arguments named like the node's own attributes."""
    names = [name for name in (*formula.plan.position, "result") if not hasattr(Node, name)]
    attributes = {name: _argument(name) for name in names}
    attributes.update(__slots__=(), __module__=Node.__module__)
    return type(f"{camel(op.name)}Node", (Node,), attributes)


def _argument(name: str) -> property:
    return property(lambda ctx: ctx.argument(name), doc=f"the call's ``{name}``")


def _introspect(self, name: str):
    """``_saved_<argument>`` (and ``_raw_saved_``, ``_saved_<argument>_sym_sizes``) under
    PyTorch's names, on the nodes a program is shown (``typed``'s classes): the engine's nodes
    keep a class without ``__getattr__`` (Node's docstring)."""
    if name.startswith("_saved_") and is_size(name):
        return saved_size(self, name)
    if name.startswith("_raw_saved_"):
        return _saved_entry(self, name[len("_raw_saved_") :], raw=True)
    if name.startswith("_saved_"):
        return _saved_entry(self, name[len("_saved_") :], raw=False)
    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


_TYPES: dict = {}


def typed(node):
    """``node``, its class named as PyTorch's node type (``type(y.grad_fn).__name__`` is
    ``AddmmBackward0``, ``MyFnBackward`` for a custom Function): a subclass per name, made
    once, given when a program looks (``Tensor.grad_fn``, ``next_functions``), so recording
    never pays for it. The name can change once after recording (a composite's last node is
    shown as PyTorch's after the parts ran), hence the check on each look."""
    name = node.name().rpartition("::")[2]
    cls = type(node)
    if cls.__name__ != name:
        base = cls.__base__ if "_named" in cls.__dict__ else cls
        named = _TYPES.get((base, name))
        if named is None:
            attributes = {"__slots__": (), "_named": True, "__module__": base.__module__}
            if not hasattr(base, "__getattr__"):  # a custom Function's node reads its ctx
                attributes["__getattr__"] = _introspect
            named = _TYPES[(base, name)] = type(name, (base,), attributes)
        node.__class__ = named
    return node


def _saved_entry(node, name: str, raw: bool):
    """``node._saved_<name>``: a saved tensor (unpacked, or the SavedTensor when ``raw``), or
    the value of a non-tensor argument, under PyTorch's names (``self`` is the first one)."""
    display = node.display
    if display is not None and display.values is not None:  # a call made from parts
        saved = display.outputs.get(name) if display.outputs else None
        if saved is not None:
            return saved if raw else saved.unpack(node)
        part = PARTS.get(display.name, {}).get(name)
        if part is not None:  # a factor the part itself saved
            return _part_saved(node, *part, raw)
        if not raw:
            return saved_value(display.name, display.values, display.lists, name)
    ctx = node.ctx
    formula = node.formula
    if formula is None or ctx is not node:  # a formula's node: not a library op's
        raise AttributeError(f"'{node.name()}' object has no attribute '_saved_{name}'")
    args = node.op.schema.args
    own = args[0].name if name == "self" and args else ALIASES.get(node.name(), {}).get(name, name)
    saved = _saved_tensor(node, own, name)
    if saved is not None:
        items = saved if isinstance(saved, tuple) else (saved,)
        if raw:
            return items if isinstance(saved, tuple) else items[0]
        unpacked = [s.unpack(node) for s in items]
        return unpacked if isinstance(saved, tuple) else unpacked[0]
    if raw:
        raise AttributeError(f"'{node.name()}' object has no attribute '_raw_saved_{name}'")
    weak = node._weak and read_weak(node, own, name)  # kept weakly: saved_weak.py
    if weak is not None:
        return weak
    if _unneeded(node, own):
        return None  # saved only for another input's gradient, not needed: PyTorch's None too
    return saved_value(
        node.name(),
        _call(node),
        frozenset(a.name for a in args if a.is_list),
        own,
        args[0].name if args else None,
    )


def _part_saved(node, own: str, index: int | None, raw: bool):
    """What the node's own formula saved as ``own`` (its ``index``-th output for ``result``)."""
    saved = node.ctx._saved.get(own) if node.ctx is not None and node.ctx._saved else None
    if saved is not None and index is not None:
        saved = saved[index] if isinstance(saved, tuple) and index < len(saved) else None
    if saved is None:
        raise AttributeError(f"'{node.name()}' object has no attribute '_saved_{own}'")
    return saved if raw else saved.unpack(node)


def _unneeded(node, own: str) -> bool:
    """Whether tensor argument ``own`` is one PyTorch's node saves only for the gradient of
    another input (mul's input for its other), which the call did not need."""
    formula, meta = node.formula, node.input_meta
    when = formula.save.get(own)
    index = formula.plan.tensor_index
    if when is None or formula.plan.has_lists or own not in index:
        return False
    return _known(meta, index[own]) and not node.ctx.needs_input_grad[index[when]]


def _saved_tensor(node, own: str, name: str):
    """The SavedTensor (a tuple of them for a list) that the node's formula saved as argument
    ``own``, or as the output PyTorch's node shows as ``name`` (sort's indices); else None."""
    saved = node.ctx._saved
    if not saved:
        return None
    if own in saved:
        return saved[own]
    output = OUTPUTS.get(node.name(), {}).get(name)
    result = saved.get("result")
    return result[output] if output is not None and isinstance(result, tuple) else None


def _call(node) -> Call:
    """The node's call: its arguments by name (a tensor one only where absent: a saved one is
    read above) and the sizes of its tensor arguments."""
    args, plan = node.op.schema.args, node.formula.plan
    values, meta = node.ctx._values, node.input_meta
    wraps = (node.op.inplace_of or node.op).name in WRAPS_NUMBERS
    given = Call()
    given.saved = node.ctx._saved
    given.owner = node
    given.shapes = {  # (a Tensor[] argument's are spans of meta: none kept)
        a: tuple(meta[k][0])
        for a, k in plan.tensor_index.items()
        if not plan.has_lists and _known(meta, k)
    }
    for i, a in enumerate(args):
        value = values[i] if i < len(values) else plan.defaults[i]
        k = plan.tensor_index.get(a.name)
        # a tensor argument is kept only when saved (above); None where none was given
        if k is None or value is not None or not _known(meta, k):
            given[a.name] = wrapped(value) if wraps and k is not None else value
    return given


def _known(meta, k: int) -> bool:
    """Whether flat input ``k`` was a tensor (its metadata kept)."""
    return k < len(meta) and meta[k] is not None


class _Handle(RemovableHandle):
    """Returned by register_hook; ``remove()`` unregisters."""

    def __init__(self, owner, attribute: str, hook):
        self.owner = weakref.ref(owner) if not isinstance(owner, Tensor) else owner
        self.attribute = attribute
        self.hook = hook

    def remove(self) -> None:
        owner = self.owner() if isinstance(self.owner, weakref.ref) else self.owner
        if owner is None:
            return
        if isinstance(owner, Tensor):
            hooks = owner.__dict__.get(self.attribute) or []
            owner.__dict__[self.attribute] = [h for h in hooks if h is not self.hook]
            return
        hooks = getattr(owner, self.attribute) or []
        setattr(owner, self.attribute, [h for h in hooks if h is not self.hook] or None)


class AccumulateGrad(Node):
    """Leaf node: adds the incoming gradient into ``variable.grad``.

    The leaf owns its accumulator; the accumulator refers back weakly (``variable`` is None once
    the leaf is gone, and then there is nowhere to accumulate).
    """

    __slots__ = ("_variable",)
    ctx = None

    def __init__(self, variable: Tensor):
        self.fill(None, None, (), ())
        self._variable = weakref.ref(variable)

    @property
    def variable(self):
        return self._variable()

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"  # PyTorch's node name, namespace included

    def apply(self, grads: list) -> tuple:
        from .engine import accumulate_into_leaf, run_leaf_hooks

        variable = self.variable
        if grads[0] is not None and variable is not None:
            accumulate_into_leaf(variable, run_leaf_hooks(tensor_hooks(variable), grads[0]))
            run_post_accumulate_hooks(variable)
        return ()


def retain(t: Tensor) -> None:
    """Have ``t``'s grad_fn store the gradient of ``t`` in ``t.grad`` (weakly: no cycle)."""
    node = t._grad_fn
    node.retains = (node.retains or []) + [(output_nr(t), weakref.ref(t))]


def store_retained(node, grads: list) -> None:
    """After the node's hooks, as in PyTorch: ``.grad`` of the outputs that retain grad is a
    copy of their gradient (accumulated over backward calls)."""
    for index, ref in node.retains:
        owner, grad = ref(), grads[index]
        if owner is None or grad is None or owner._grad_fn is not node:
            continue
        owner._grad = grad.clone() if owner._grad is None else owner._grad + grad


def tensor_hooks(t: Tensor) -> list:
    return t.__dict__.get("_hooks") or []


def add_tensor_hook(t: Tensor, hook, table: str = "_hooks"):
    hooks = t.__dict__.setdefault(table, [])
    hooks.append(hook)
    return _Handle(t, table, hook)


def run_post_accumulate_hooks(variable: Tensor) -> None:
    """After ``variable.grad`` took this pass's gradient (PyTorch's post-accumulate-grad hooks:
    DDP starts a bucket's all-reduce from them)."""
    for hook in variable.__dict__.get("_post_accumulate_hooks") or ():
        if hook(variable) is not None:
            raise RuntimeError("a post accumulate grad hook must return None")
