"""How a formula saves what it needs at forward time and turns output grads into input grads.

A formula is ``fn(ctx, *grad_outputs) -> grads for the op's tensor arguments`` (one value per
Tensor / Tensor[] argument, in schema order; a single value when there is one). ``ctx`` is the
call's node (autograd/context.py says what it exposes). The engine then sums each grad down to
its input's shape (broadcasting) and casts it to the input's dtype and device, so formulas never
deal with either.
"""

from __future__ import annotations

from ember import _dtype as dt
from ember._tensor import Tensor

from .context import Context
from .node import Node, SavedTensor, gradient_edge, leaf_edge, node_type
from .saved_weak import keep as keep_weakly

# The graph node's own names, which a formula's ctx.<argument> cannot read (ctx is the node);
# Context's (shape, meta...) were never readable as arguments either.
_NODE_NAMES = frozenset(dir(Node)) - frozenset(dir(Context))


class Plan:
    """What recording needs to know about an op's schema, worked out once per op."""

    __slots__ = (
        "defaults",
        "has_lists",
        "op_name",
        "position",
        "saves",
        "tensor_index",
        "tensor_positions",
    )

    def __init__(self, op, save: dict):
        args = op.schema.args
        self.op_name = op.name
        self.position = {a.name: i for i, a in enumerate(args)}
        self.defaults = tuple(
            (tuple(a.default) if isinstance(a.default, list) else a.default)
            if a.has_default
            else None
            for a in args
        )
        tensors = [(i, a) for i, a in enumerate(args) if a.is_tensor]
        self.tensor_positions = tuple(i for i, _ in tensors)
        self.tensor_index = {a.name: k for k, (_, a) in enumerate(tensors)}
        self.has_lists = any(a.is_list for _, a in tensors)
        unknown = sorted(set(save) - set(self.position) - {"result"})
        if unknown:
            raise ValueError(f"autograd formula of '{op.name}' saves unknown arguments {unknown}")
        # (argument position, name, index of the tensor argument whose need decides, or None)
        self.saves = tuple(
            (self.position[name], name, None if when is None else self.tensor_index[when])
            for name, when in save.items()
            if name != "result"
        )


class Formula:
    """A backward function plus the tensors it needs saved.

    ``save`` is a tuple of argument names (and/or "result"), or a dict ``{name: other}`` meaning
    "save ``name`` only when argument ``other`` needs a gradient" (``mul`` keeps ``input`` only to
    differentiate with respect to ``other``): less memory, and graphs that save nothing can be
    run backward twice, as in PyTorch. ``{"result": name}`` keeps the output only when argument
    ``name`` is a tensor (``x ** 3`` keeps ``x`` alone, as PyTorch's PowBackward0 does).

    ``forward``: ``forward(node, op, *args) -> output``, the op's own run for a recorded call
    while autograd is the only layer (in place of its runner), which saves what the op
    computes on the way in ``node._saved``: layer_norm keeps the rows' mean and rstd, as
    ATen's native_layer_norm returns them for its backward, instead of the backward computing
    them again.
    """

    __slots__ = (
        "fn",
        "forward",
        "node_class",
        "plan",
        "result_when",
        "save",
        "saves_result",
        "strides",
        "weak",
    )

    def __init__(self, fn, save=(), strides=(), weak=(), forward=None):
        self.fn = fn
        self.forward = forward
        self.save = dict(save) if isinstance(save, dict) else dict.fromkeys(save)
        self.saves_result = "result" in self.save
        # {"result": name}: the output is kept only when argument ``name`` is a tensor
        self.result_when = self.save.get("result")
        self.strides = tuple(strides)
        # inputs PyTorch's node saves that this formula does not read: kept weakly, readable
        # as _saved_* while their memory lives (saved_weak.py)
        self.weak = tuple(weak)
        self.plan = None
        self.node_class = None  # node.node_type's, made on the first recorded call

    def node_type(self, op) -> type:
        """The class of this formula's nodes (``ctx.<argument>`` as properties)."""
        if self.node_class is None:
            self.node_class = node_type(op, self)
        return self.node_class

    def bind(self, op) -> None:
        """Attach to ``op`` (at install): its schema decides how calls are recorded."""
        self.plan = Plan(op, self.save)
        unknown = sorted(set(self.strides) - set(self.plan.tensor_index))
        if unknown:
            raise ValueError(f"autograd formula of '{op.name}' asks strides of {unknown}")
        unknown = sorted(set(self.weak) - set(self.plan.tensor_index))
        if unknown:
            raise ValueError(f"autograd formula of '{op.name}' keeps unknown inputs {unknown}")
        taken = sorted(set(self.plan.position) & _NODE_NAMES)
        if taken:  # ctx.<argument> would read the node's attribute: ctx is the node
            raise ValueError(f"autograd formula of '{op.name}': arguments {taken} are node names")

    def record(self, op, args, originals: dict | None = None) -> Node:
        """The node of a call of ``op`` (its ctx too): the gradient edge and metadata of each
        tensor input, the arguments, what the formula saves.

        ``originals``: values to save instead of arguments an in-place op is about to change.
        """
        plan = self.plan
        if plan.has_lists:
            edges, meta, needs, values, spans = scan(plan, args)
        else:
            # Nearly every recorded call: no Tensor[] argument, so no spans, and the two common
            # edges (a leaf's accumulator, a plain tensor's single-output node) inline. Written
            # out here rather than in a function of its own: a frame is a fifth of this step.
            n = len(args)
            edges, meta, needs = [], [], []
            values = list(args)
            spans = None
            for i in plan.tensor_positions:
                value = args[i] if i < n else None
                if isinstance(value, Tensor):
                    requires = value._requires_grad
                    needs.append(requires)
                    node = value._grad_fn
                    if node is None:
                        if requires:  # a leaf: its edge, made once (node.leaf_edge)
                            edges.append(leaf_edge(value))
                        else:
                            edges.append(None)
                    elif value._base is None and node.num_outputs == 1:
                        edges.append((node, 0))
                    else:  # a view's history may need a replay; a multi-output node its index
                        edges.append(gradient_edge(value))
                    meta.append((value._shape, value._dtype, value._storage.device))
                    values[i] = None
                else:  # absent, None or a Python scalar (kept in values)
                    needs.append(False)
                    edges.append(None)
                    meta.append(None)
            needs = tuple(needs)
        node = (self.node_class or self.node_type(op))().fill(op, self, tuple(edges), tuple(meta))
        node._values = values
        if spans is not None:
            node._spans = spans
            node.needs_input_grad = needs  # one flag per argument, not per flat input
        node._saved = _keep(plan, args, needs, originals) if plan.saves else None
        if self.strides:
            node._strides = {name: args[plan.position[name]]._stride for name in self.strides}
        if self.weak:
            keep_weakly(node, self, args)
        return node

    def save_result(self, node: Node, out) -> None:
        when = self.result_when
        if self.saves_result and (when is None or node._meta_of(when) is not None):
            if node._saved is None:
                node._saved = {}
            if isinstance(out, tuple):
                node._saved["result"] = tuple(SavedTensor(o, i) for i, o in enumerate(out))
            else:
                node._saved["result"] = SavedTensor(out, 0)

    def apply(self, node, grads: list) -> tuple:
        for g in grads:
            if g is not None:
                break
        else:
            return (None,) * len(node.edges)
        result = self.fn(node, *grads)  # the node is its own ctx (autograd/context.py)
        if result.__class__ is not tuple:
            result = (result,)
        meta = node.input_meta
        if node._spans is not None or len(result) != len(meta):  # a Tensor[] argument's list
            result = _flat(node, result)
        # Each gradient as its input was (fit); the loop checks the common case, a gradient
        # already of its input's shape, dtype and device, without fit's frame.
        out = []
        for g, m in zip(result, meta):
            if g is None or m is None:
                out.append(None)
            elif g.__class__ is Tensor and g._shape == m[0] and g._dtype is m[1]:
                out.append(g if g._storage.device is m[2] else fit(g, m))
            else:
                out.append(fit(g, m))
        return tuple(out)


def _flat(node, result: tuple) -> tuple:
    """A formula's gradients with each Tensor[] argument's list spread out, one per input."""
    flat = []
    for value in result:
        if isinstance(value, list):
            flat.extend(value)
        else:
            flat.append(value)
    if len(flat) != len(node.input_meta):
        raise RuntimeError(
            f"autograd formula of '{node.op.name}' returned {len(flat)} gradients for "
            f"{len(node.input_meta)} tensor inputs"
        )
    return tuple(flat)


def scan(plan: Plan, args) -> tuple[list, list, tuple, list, list | None]:
    """One pass over the tensor arguments of a call with a Tensor[] argument (``record`` has
    the loop of the other calls).

    Returns the gradient edge and the (shape, dtype, device) of each tensor input, flat (a
    Tensor[] argument gives one entry per tensor; None for an absent tensor or a Python scalar),
    whether each tensor argument needs a gradient, the arguments with the tensors blanked out
    (what a formula reads by name), and each tensor argument's span of the flat entries (None
    when the op has no Tensor[] argument).
    """
    n = len(args)
    edges, meta, needs = [], [], []
    values = list(args)
    spans = []
    for i in plan.tensor_positions:
        value = args[i] if i < n else None
        start = len(meta)
        if isinstance(value, Tensor):  # the common case first
            needs.append(value._requires_grad)
            edges.append(gradient_edge(value))
            meta.append((value._shape, value._dtype, value._storage.device))
            values[i] = None
        elif value.__class__ is list or value.__class__ is tuple:
            needs.append(any(_requires(t) for t in value))
            for t in value:
                edges.append(gradient_edge(t) if isinstance(t, Tensor) else None)
                meta.append(_meta(t))
            values[i] = None
        else:  # absent, None or a Python scalar (kept in values)
            needs.append(False)
            edges.append(None)
            meta.append(None)
        spans.append((start, len(meta)))
    return edges, meta, tuple(needs), values, spans


def _keep(plan, args, needs, originals) -> dict:
    """The SavedTensors of the arguments the formula saves (and needs, for conditional saves)."""
    saved = {}
    n = len(args)
    for position, name, when in plan.saves:
        if position >= n or (when is not None and not needs[when]):
            continue
        value = args[position] if originals is None else originals.get(name, args[position])
        if isinstance(value, Tensor):  # _save's common case, without its frame
            saved[name] = SavedTensor(value)
            continue
        kept = _save(value)
        if kept is not None:
            saved[name] = kept
    return saved


def _requires(t) -> bool:
    return isinstance(t, Tensor) and t._requires_grad


def _meta(t):
    if not isinstance(t, Tensor):
        return None
    return (t._shape, t._dtype, t._storage.device)


def _save(value):
    if isinstance(value, (list, tuple)):
        return tuple(SavedTensor(t) for t in value)
    return SavedTensor(value) if isinstance(value, Tensor) else None


def sum_to_shape(grad: Tensor, shape: tuple) -> Tensor:
    """Undo broadcasting: sum ``grad`` over the dims that were expanded to reach its shape."""
    if grad._shape == shape:
        return grad
    lead = len(grad._shape) - len(shape)
    dims = list(range(lead))
    for i, size in enumerate(shape):
        if size == 1 and grad._shape[lead + i] != 1:
            dims.append(lead + i)
    if dims:
        grad = grad.sum(dims, keepdim=True)
    return grad.reshape(shape) if grad._shape != shape else grad


def fit(grad, meta) -> Tensor:
    """``grad`` made to match an input's (shape, dtype, device)."""
    shape, dtype, device = meta
    if not isinstance(grad, Tensor):
        raise TypeError(f"autograd formula returned {type(grad).__name__}, expected a Tensor")
    if grad._shape != shape:
        grad = sum_to_shape(grad, shape)
    if grad._dtype is not dtype and dtype.category >= dt.FLOATING:
        if grad._dtype.category == dt.COMPLEX and dtype.category != dt.COMPLEX:
            grad = grad.real  # a real input's gradient is the real part (PyTorch's rule)
        grad = grad.to(dtype)
    if grad._storage.device is not device:
        grad = grad.to(device)
    return grad
