"""The backward engine: runs graph nodes in reverse creation order once all their gradients are in.

``backward`` accumulates into leaves' ``.grad``; ``grad`` returns gradients for chosen inputs and
leaves ``.grad`` alone. Both only run the nodes that lead to what was asked for, free saved tensors
afterwards unless ``retain_graph``, and record a graph of the backward pass when ``create_graph``.
"""

from __future__ import annotations

import heapq
import itertools
import math
import sys
import warnings
from collections import defaultdict

from ember import _dtype as dt
from ember._tensor import Tensor, make
from ember.dispatcher.mathbits import keep_bits

from . import anomaly, grad_mode
from .node import (
    AccumulateGrad,
    gradient_edge,
    run_post_accumulate_hooks,
    store_retained,
    tensor_hooks,
)
from .walk import mark_repeats, walk, walk_plain


def _as_tuple(value):
    if value is None:
        return ()
    if isinstance(value, Tensor):
        return (value,)
    return tuple(value)


def _root_grads(outputs, grad_outputs, unit: bool = False) -> list:
    """The gradient each output starts with; ``unit``: an implicit one may be the cached
    ``_unit`` (execute says when nothing can see or keep it)."""
    grads = list(_as_tuple(grad_outputs)) if grad_outputs is not None else [None] * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(
            f"grad_tensors/grad_outputs has {len(grads)} entries but there are {len(outputs)} "
            "outputs"
        )
    result = []
    for i, (out, grad) in enumerate(zip(outputs, grads)):
        if grad is None:
            if math.prod(out._shape) != 1:
                raise RuntimeError(
                    "grad can be implicitly created only for scalar outputs (output "
                    f"{i} has shape {list(out._shape)}); pass gradient= / grad_outputs="
                )
            grad = _unit(out) if unit else None
            if grad is None:
                from ember import ones_like

                grad = ones_like(out)
        elif not isinstance(grad, Tensor):
            from ember import full_like

            grad = full_like(out, grad)
        elif grad._shape != out._shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {list(grad._shape)} and "
                f"output[{i}] has a shape of {list(out._shape)}."
            )
        result.append(grad)
    return result


_UNIT_DTYPES = frozenset((dt.float32, dt.float64))
_UNITS: dict = {}  # (dtype, device) -> (the 0-dim one, _holders of it when made)


def _unit(out: Tensor):
    """A 0-dim float32/float64 CPU one, made once: ``loss.backward()``'s root gradient without
    a ``ones_like`` per step (14 us). None for other outputs. ``execute`` hands it only to a
    root node without hooks, not under create_graph, capture or anomaly mode, and marks it
    shared (a leaf copies it, never keeps it). If anything kept it, a view of it or its memory
    (a custom Function's backward can), or wrote into it, a new one is made: a program never
    holds the one the next backward uses."""
    if out._shape != () or out._dtype not in _UNIT_DTYPES:
        return None
    device = out._storage.device
    if device.type != "cpu":
        return None
    key = (out._dtype, device)
    cached = _UNITS.get(key)
    if cached is not None:
        unit = cached[0]
        if _holders(unit) == cached[1]:  # (``unit`` is a local then too: the counts compare)
            return unit
    from ember import ones_like

    unit = ones_like(out)
    _UNITS[key] = (unit, None)  # counted as the check above will count it: one tuple holds it
    holders = _holders(unit)
    _UNITS[key] = (unit, holders)
    return unit


def _holders(unit: Tensor) -> tuple:
    """What tells whether something else holds ``unit``: the references to it, its storage and
    the storage's buffer (a view holds the storage, a numpy view the buffer), and the version
    (an in-place write)."""
    storage = unit._storage
    return (sys.getrefcount(unit), sys.getrefcount(storage), sys.getrefcount(storage.handle),
            storage.version)  # fmt: skip


def _roots(outputs) -> list:
    edges = []
    for i, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            raise TypeError(f"backward: output {i} is {type(out).__name__}, not a Tensor")
        edge = gradient_edge(out)
        if edge is None:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )
        edges.append(edge)
    return edges


def _dependencies(root_nodes) -> dict:
    deps: dict = defaultdict(int)
    seen = set(root_nodes)
    stack = list(root_nodes)
    while stack:
        node = stack.pop()
        for edge in node.edges:
            if edge is None:
                continue
            nxt = edge[0]
            deps[nxt] += 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps


def _needed(root_nodes, targets: set) -> set | None:
    """Nodes worth running: those with an edge leading to a target (None: every node).

    A target itself only runs if another target lies beyond it; its incoming gradient is captured
    before it would run."""
    if targets is None:
        return None
    parents: dict = defaultdict(list)
    seen = set(root_nodes)
    stack = list(root_nodes)
    while stack:  # iterative, so deep graphs don't hit the recursion limit
        node = stack.pop()
        for edge in node.edges:
            if edge is None:
                continue
            parents[edge[0]].append(node)
            if edge[0] not in seen:
                seen.add(edge[0])
                stack.append(edge[0])
    # The ancestors of the targets, found by walking the edges backwards. (A depth-first visit
    # order is no topological order when paths rejoin, so marking in it missed some paths.)
    runs: set = set()
    stack = [node for node in targets if node in seen]
    while stack:
        for parent in parents.pop(stack.pop(), ()):
            if parent not in runs:
                runs.add(parent)
                stack.append(parent)
    return runs


def _run_pre_hooks(node, grads: list) -> list:
    for index, hook in node.pre_hooks or ():
        if index is None:
            replaced = hook(tuple(grads))
            if replaced is not None:
                grads = list(replaced)
        elif grads[index] is not None:
            replaced = hook(grads[index])
            if replaced is not None:
                grads[index] = replaced
    return grads


def execute(outputs, grad_outputs, retain_graph, create_graph, capture=None, accumulate=True):
    """Run backward from ``outputs``. ``capture`` maps edges to slots for ``autograd.grad``."""
    root_edges = _roots(outputs)
    root_nodes = list({edge[0]: None for edge in root_edges})
    targets = None if capture is None else {edge[0] for edge in capture}
    run = _Pass(_needed(root_nodes, targets), _dependencies(root_nodes), retain_graph, capture)
    unit = (
        run.plain
        and not create_graph
        and grad_outputs is None
        and not grad_mode.THREAD.mode.anomaly
        and _quiet(root_nodes[0])
    )
    root_grads = _root_grads(outputs, grad_outputs, unit and len(outputs) == 1)
    run.roots = set(root_nodes)
    run.accumulate = accumulate and capture is None
    given = _as_tuple(grad_outputs) if grad_outputs is not None else ()
    for i, ((node, index), grad) in enumerate(zip(root_edges, root_grads)):
        run.add(node, index, grad)
        if i < len(given) and given[i] is grad:
            run.shared.add(id(grad))  # the caller holds it too
    if unit:
        run.shared.add(id(root_grads[0]))  # the cached unit: never a leaf's .grad itself
    ready = [(-node.seq, id(node), node) for node in root_nodes if run.deps[node] == 0]
    heapq.heapify(ready)
    state = grad_mode.THREAD.mode
    previous, valid = state.enabled, state.checkpoint_valid
    state.enabled = create_graph
    state.checkpoint_valid = capture is None
    _RUNNING.append(run)
    try:
        if run.plain and not state.anomaly:
            walk_plain(run, ready)
        else:
            walk(run, ready)
    finally:
        _RUNNING.pop()
        state.enabled, state.checkpoint_valid = previous, valid
    return run.captured


def _quiet(node) -> bool:
    """Whether nothing but the formula sees the gradient ``node`` receives: no hooks, no
    retained grad, not a leaf (whose ``.grad`` it would become)."""
    return (
        node.pre_hooks is None
        and node.retains is None
        and node.hooks is None
        and not isinstance(node, AccumulateGrad)
    )


_RUNNING: list = []  # the passes under way, innermost last (a hook may run a nested backward)
_PASS_IDS = itertools.count()


def current_graph_task_id() -> int:
    """The id of the backward pass running now (-1 outside one); PyTorch's
    ``torch._C._current_graph_task_id``."""
    return _RUNNING[-1].task_id if _RUNNING else -1


def will_engine_execute_node(node) -> bool:
    """Whether the running backward pass runs ``node`` (or, for ``autograd.grad``, gives its
    gradient back); PyTorch's ``torch._C._will_engine_execute_node``."""
    if not _RUNNING:
        raise RuntimeError(
            "_will_engine_execute_node should only be called during the backward pass"
        )
    run = _RUNNING[-1]
    if run.needed is None:
        return node in run.roots or node in run.deps
    if isinstance(node, AccumulateGrad):
        raise RuntimeError(
            "A leaf node was passed to _will_engine_execute_node but we are currently running "
            "autograd.grad(). This is currently not supported."
        )
    captured = run.capture is not None and any(node is edge[0] for edge in run.capture)
    return node in run.needed or captured


class _Pass:
    """The state of one backward pass.

    ``shared`` holds the ids of gradients something else also references: the caller's
    grad_outputs, tensors a hook has seen, captured ones, and one tensor a formula returned for
    two inputs (add gives ``(g, g)``). A leaf may take over any other gradient as its ``.grad``,
    but must copy a shared one, or a later in-place accumulation would write into the other
    holder's tensor (PyTorch decides the same by reference count).
    """

    __slots__ = ("accumulate", "buffers", "capture", "captured", "deps", "needed", "retain")
    __slots__ += ("plain", "roots", "shared", "task_id")

    def __init__(self, needed, deps, retain_graph, capture):
        self.needed = needed
        self.deps = deps
        self.retain = retain_graph
        self.capture = capture
        self.captured: dict = {}
        self.buffers: dict = {}
        self.shared: set = set()
        self.accumulate = True
        self.roots: set = set()
        self.task_id = next(_PASS_IDS)
        # every node runs and nothing is captured: step's short path
        self.plain = needed is None and capture is None

    def add(self, node, index: int, grad) -> None:
        slots = self.buffers.get(node)
        if slots is None:
            slots = [None] * max(node.num_outputs, 1)
            self.buffers[node] = slots
        slots[index] = grad if slots[index] is None else slots[index] + grad

    def step(self, node) -> list:
        """Run ``node`` on its gathered gradients; returns the nodes that became ready."""
        grads = self.buffers.pop(node, None) or [None] * max(node.num_outputs, 1)
        if self.plain and node.pre_hooks is None and node.retains is None:
            # Nearly every node of a plain backward (no hooks, no capture, every node needed):
            # the checks below skipped (the step runs once per node, 240 times in minGPT's).
            if isinstance(node, AccumulateGrad):
                self._accumulate(node, grads)
                return []
            for g in grads:
                if g is not None:
                    outputs = self._apply(node, grads)
                    break
            else:
                outputs = None
            if not self.retain:
                node.release()
            return self._pass_on(node, outputs)
        if node.pre_hooks:
            grads = _run_pre_hooks(node, grads)
            self.shared.update(id(g) for g in grads)
        if node.retains:
            store_retained(node, grads)
        leaf = isinstance(node, AccumulateGrad)
        if leaf and grads[0] is not None and node.variable is not None:
            hooks = tensor_hooks(node.variable)
            if hooks:  # before capture: autograd.grad returns what the leaf's hooks make of it
                grads[0] = run_leaf_hooks(hooks, grads[0])
                self.shared.add(id(grads[0]))
        if self.capture is not None:
            for index, grad in enumerate(grads):
                if (node, index) in self.capture:
                    self.captured[(node, index)] = grad
                    self.shared.add(id(grad))
        runs = (self.needed is None or node in self.needed) and any(g is not None for g in grads)
        outputs = None
        if leaf:
            variable = node.variable
            if runs and self.accumulate and variable is not None:
                accumulate_into_leaf(variable, grads[0], id(grads[0]) not in self.shared)
                run_post_accumulate_hooks(variable)
        elif runs:
            outputs = self._apply(node, grads)
        if not self.retain and not leaf:
            node.release()
        return self._pass_on(node, outputs)

    def _accumulate(self, node, grads: list) -> None:
        """A leaf's step in a plain pass: its tensor hooks, then ``.grad``."""
        grad = grads[0]
        variable = node._variable()
        if grad is None or variable is None:
            return
        own = variable.__dict__
        hooks = own.get("_hooks")
        if hooks:
            grad = run_leaf_hooks(hooks, grad)
            self.shared.add(id(grad))
        if self.accumulate:
            accumulate_into_leaf(variable, grad, id(grad) not in self.shared)
            if own.get("_post_accumulate_hooks"):
                run_post_accumulate_hooks(variable)

    def _pass_on(self, node, outputs) -> list:
        """Hand ``node``'s input gradients to the nodes its edges lead to (``add``, inline);
        returns those whose gradients are now all in."""
        ready = []
        deps = self.deps
        buffers = self.buffers
        for i, edge in enumerate(node.edges):
            if edge is None:
                continue
            nxt = edge[0]
            if outputs is not None:
                grad = outputs[i]
                if grad is not None:
                    slots = buffers.get(nxt)
                    if slots is None:
                        slots = buffers[nxt] = [None] * max(nxt.num_outputs, 1)
                    index = edge[1]
                    slots[index] = grad if slots[index] is None else slots[index] + grad
            left = deps[nxt] - 1
            deps[nxt] = left
            if left == 0:
                ready.append(nxt)
        return ready

    def _apply(self, node, grads: list) -> tuple:
        try:
            outputs = node.apply(grads)
        except Exception as exc:
            if grad_mode.THREAD.mode.anomaly:
                anomaly.note_origin(exc, node)
            raise
        if node.hooks:
            for hook in node.hooks:
                replaced = hook(outputs, tuple(grads))
                if replaced is not None:
                    outputs = tuple(replaced)
            self.shared.update(id(g) for g in outputs)
        if len(outputs) > 1:
            mark_repeats(outputs, self.shared)
        mode = grad_mode.THREAD.mode
        if mode.anomaly and mode.anomaly_check_nan:
            anomaly.check_nan(node, outputs)
        return outputs


def run_leaf_hooks(hooks: list, grad):
    """A leaf's tensor hooks in order; each may return a replacement gradient."""
    for hook in hooks:
        replaced = hook(grad)
        if replaced is not None:
            grad = replaced
    return grad


def accumulate_into_leaf(variable: Tensor, grad, owned: bool = False) -> None:
    """``variable.grad += grad`` (PyTorch's AccumulateGrad; the leaf's hooks have run).

    ``owned``: nothing else references ``grad``, so it may become ``.grad`` without a copy.
    """
    if grad is None:
        return
    if grad._shape != variable._shape:
        from .formula import sum_to_shape

        grad = sum_to_shape(grad, variable._shape)
        owned = True
    if grad._dtype is not variable._dtype:
        grad = grad.to(variable._dtype)
        owned = True
    create_graph = grad_mode.THREAD.mode.enabled
    current = variable._grad
    if current is None:
        variable._grad = _own(grad, owned and not create_graph)
    elif create_graph:
        variable._grad = current + grad
    else:  # grad mode is off here (create_graph is): add_ records nothing
        current.add_(grad)


def _own(grad: Tensor, owned: bool) -> Tensor:
    """``grad`` itself when the leaf may keep it, else a copy: tensors someone else holds are
    copied, and views unless nothing else reaches their memory (linear's weight gradient is the
    transpose of a transposed product: the leaf takes an alias of it without the base). Under
    create_graph the copy is recorded, so the gradient stays differentiable."""
    if owned and grad._grad_fn is None and not grad._requires_grad:
        if grad._base is None:
            return grad
        if _sole_view(grad):
            alias = make(grad._storage, grad._shape, grad._stride, 0, grad._dtype, True)
            return keep_bits(alias, grad)
    return grad.clone()


def _sole_view(grad: Tensor) -> bool:
    """Whether ``grad`` is a contiguous view of all of its base's memory, and nothing but
    ``grad`` references the base or the storage (so a later in-place accumulation into the
    leaf's ``.grad`` writes into no one else's tensor). PyTorch decides by reference count too.
    """
    storage = grad._storage
    whole = grad._offset == 0 and storage._nbytes == grad.numel() * grad._dtype.itemsize
    # The references counted: grad's and getrefcount's argument for the base; the base's,
    # grad's and the argument for the storage (``storage`` here is one more).
    return (
        whole
        and grad._contig
        and sys.getrefcount(grad._base) == 2
        and sys.getrefcount(storage) == 4
    )


def backward(
    tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
    inputs=None,
):  # fmt: skip
    """Accumulate gradients of ``tensors`` into the leaves' ``.grad`` (``torch.autograd.backward``).

    Args:
        tensors: tensor(s) to differentiate.
        grad_tensors: gradient w.r.t. each of them (None for scalars: 1).
        retain_graph: keep saved tensors for another backward (default: ``create_graph``).
        create_graph: record the backward pass, for higher-order derivatives.
        grad_variables: ``grad_tensors``' deprecated name (warned, as in PyTorch).
        inputs: only accumulate into these tensors.
    """
    if grad_variables is not None:
        warnings.warn(
            "`grad_variables` is deprecated. Use `grad_tensors` instead.",
            FutureWarning,
            stacklevel=2,
        )
        if grad_tensors is not None:
            raise RuntimeError(
                "`grad_tensors` and `grad_variables` (deprecated) arguments both passed to "
                "`backward()`. Please only use `grad_tensors`."
            )
        grad_tensors = grad_variables
    outputs = _as_tuple(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError("backward: 'inputs' argument to backward() cannot be empty.")
        capture = {_input_edge(t, i): i for i, t in enumerate(inputs)}
        found = execute(outputs, grad_tensors, retain_graph, create_graph, capture)
        for edge, grad in found.items():
            if grad is not None:
                t = inputs[capture[edge]]
                if isinstance(edge[0], AccumulateGrad):
                    accumulate_into_leaf(t, grad)
                else:
                    _accumulate_nonleaf(t, grad, create_graph)
        return
    execute(outputs, grad_tensors, retain_graph, create_graph)


def _accumulate_nonleaf(t: Tensor, grad, create_graph: bool) -> None:
    t._grad = grad if t._grad is None else t._grad + grad


def _input_edge(t: Tensor, i: int):
    if not isinstance(t, Tensor):
        raise TypeError(f"grad: input {i} is {type(t).__name__}, not a Tensor")
    edge = gradient_edge(t)
    if edge is None:
        raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not require grad")
    return edge


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    only_inputs=True,
    allow_unused=None,
    is_grads_batched=False,
    materialize_grads=False,
):
    """Gradients of ``outputs`` with respect to ``inputs`` (``torch.autograd.grad``).

    Returns a tuple with one entry per input; ``.grad`` fields are not touched.
    ``only_inputs`` is PyTorch's deprecated argument: ignored, warned when False.
    """
    if not only_inputs:
        warnings.warn(
            "only_inputs argument is deprecated and is ignored now (defaults to True). To "
            "accumulate gradient for other parts of the graph, please use "
            "torch.autograd.backward.",
            FutureWarning,
            stacklevel=2,
        )
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if retain_graph is None:
        retain_graph = create_graph
    if allow_unused is None:
        allow_unused = materialize_grads
    if is_grads_batched:
        return _batched_grad(
            outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
            materialize_grads,
        )  # fmt: skip
    capture = {}
    order = []
    for i, t in enumerate(inputs):
        edge = _input_edge(t, i)
        capture[edge] = i
        order.append(edge)
    found = execute(outputs, grad_outputs, retain_graph, create_graph, capture)
    result = []
    for i, edge in enumerate(order):
        g = found.get(edge)
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"One of the differentiated Tensors (input {i}) appears to not have been used "
                    "in the graph. Set allow_unused=True if this is the desired behavior."
                )
            if materialize_grads:
                from ember import zeros_like

                g = zeros_like(inputs[i])
        elif g._shape != inputs[i]._shape:
            from .formula import sum_to_shape

            g = sum_to_shape(g, inputs[i]._shape)
        result.append(g)
    return tuple(result)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                  materialize_grads):  # fmt: skip
    """``is_grads_batched``: the first dim of every grad_output is a batch, and the backward
    runs once under vmap (as PyTorch's), giving gradients with that batch dim in front. An input
    the outputs do not reach stays None (or zeros with ``materialize_grads``). It was accepted
    and ignored before: the batched grad_outputs then failed the shape check."""
    from ember.func import vmap

    if grad_outputs is None:
        raise RuntimeError("is_grads_batched=True requires grad_outputs")
    grad_outputs = _as_tuple(grad_outputs)
    unused = []

    def one(*gs):
        grads = grad(outputs, inputs, gs, retain_graph=retain_graph, create_graph=create_graph,
                     allow_unused=allow_unused, materialize_grads=materialize_grads)  # fmt: skip
        unused[:] = [g is None for g in grads]
        return tuple(g if g is not None else gs[0].new_zeros(()) for g in grads)

    batched = vmap(one)(*grad_outputs)  # one backward pass, over batched gradients
    return tuple(None if gone else g for g, gone in zip(batched, unused, strict=True))
