"""The fusion scheduler: chains of elementwise nodes of a captured graph as one backend kernel.

A chain is a run of elementwise nodes (op-table rows: add, mul, gelu, where...) of one shape and
floating dtype, each joining the chains of its operands; its inputs may broadcast, its scalars
are known numbers (constants, guarded sizes). A value of the chain that something outside it
reads (a returned value, a value the backward saves) is stored as one more output, provided
every such reader comes after the chain's end (the chain runs where its last node was). A chain
may hold row reductions over the last dim (``REDUCE``: sum, mean, amax with keepdim) whose
per-row value later steps read (the backward formulas' ``x * sum(g * x, -1, keepdim=True)``),
and may end in one row op (``ROW``: those, softmax, log_softmax, layer_norm); such a chain's
kernel runs a row at a time, one pass over the row per statistic (docs/compile.md). ``plan``
finds the chains (pure: explain() reports it); ``schedule`` asks the backend serving the
chain's device for a kernel through the ``ember_fused_kernel`` hook (dispatcher/hookspecs.py)
with a ``FusedKernel`` description. The replay (replay.py) then runs the chain as one call,
where eager makes one per op. A chain the backend declines (no hook, no C compiler, a
``features`` entry it does not know) replays op by op, as before.

Both the no-grad replay and the training pair's forward and backward programs (joint.py) fuse.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ember.dispatcher.devices import REGISTRY
from ember.jit.types import TensorType

from . import fusion_tail, logs
from .fusion_steps import (
    COMPARE,
    FLOATS,
    INDEXED,
    NORMS,
    REDUCE,
    ROW,
    _constant,
    _dtype,
    _name,
    _sizes,
    step_of,
)

# What a description may use beyond a plain chain; a generator that does not know one of its
# ``features`` returns None (the chain then replays op by op)
ROW_STEPS = "row_steps"  # steps of one value per row (``FusedStep.row``) before the last step
# cross-entropy's backward: ``full(0)`` then ``scatter_add`` of one value per row along the last
# dim (the one-hot gradient of its ``gather``), a step that reads the position in the row
ROW_INDEX = "row_index"


@dataclass(frozen=True)
class FusedInput:
    dtype: str  # "float32", "float64"; "bool" for a where's condition
    shape: tuple
    strides: tuple  # in elements, broadcast to the output shape (0 where it repeats)


@dataclass(frozen=True)
class FusedStep:
    op: str  # the op-table row
    args: tuple  # ("input", k) | ("step", n) | ("scalar", value)
    dtype: str  # its result's dtype ("bool" for a comparison)
    params: dict = field(default_factory=dict)  # non-tensor arguments: {"approximate": "tanh"}
    # a row op (ROW) reads ``args[0]`` along the last dim; a reduction keeps {"keepdim": bool},
    # layer_norm {"eps": float} (its weight and bias are args 1, 2), addcmul {"value": float}
    row: bool = False  # one value per row (a reduction, or a step reading only such values)
    # one value for the whole kernel, known after every row (a row tail's sum over the rows,
    # or a step reading only such values: fusion_tail.py)
    total: bool = False


@dataclass(frozen=True)
class FusedKernel:
    """What a backend's ``ember_fused_kernel`` receives: a chain in the op table's vocabulary."""

    device_type: str
    shape: tuple  # the elementwise steps' shape (a row op's input)
    dtype: str
    inputs: tuple  # FusedInput, in the order the kernel receives the tensors (after outputs)
    steps: tuple  # FusedStep, in order
    outputs: tuple  # indices of the steps whose values the kernel stores, in the call's order
    # A multi-tensor kernel (multi_tensor.py, a compiled optimizer's update): the chain over
    # tensors of these sizes (``shape`` is their sum) given one by one, never concatenated
    segments: tuple = ()
    writes: tuple = ()  # with segments, per output: the input it is stored into, or None
    # ROW_STEPS...: what a generator must know to run it, sorted; empty, a generator that reads
    # only the fields above sees the chain it knew (ember_backend_gpu's checks: falsy)
    features: tuple = ()
    # element dims whose sizes each call gives (a size-generic program, dynamic.py): the
    # kernel takes them from its tensors' shapes; empty, every size is the one in ``shape``
    dynamic: tuple = ()


@dataclass
class Chain:
    nodes: list  # graph nodes, in graph order; the last one's output is the chain's
    inputs: list = field(default_factory=list)  # graph values, in the description's order
    outputs: list = field(default_factory=list)  # the values it stores (the last node's last)
    description: FusedKernel | None = None
    kernel: object = None

    @property
    def output(self):
        return self.nodes[-1].output()

    def ops(self) -> str:
        return ", ".join(node.kind().split("::")[-1] for node in self.nodes)


# ---- chains --------------------------------------------------------------------------------------
def plan(nodes, outputs, rows: bool = True) -> tuple[list, list]:
    """``(chains, reasons)``: the chains of two or more fusible nodes, and a line per
    elementwise node left out saying why. ``rows=False``: the chains a generator without
    ``features`` takes (no per-row steps, a row op only last, no indexed steps)."""
    users: dict = {}  # value -> the nodes reading it (a node once per argument)
    for node in nodes:
        for value in node.inputs():
            users.setdefault(value, []).append(node)
    returned = set(outputs)
    order = {node: i for i, node in enumerate(nodes)}
    notes: list = []  # (node, why it is not a step)
    group = _grow(nodes, users, order, notes, rows)
    _absorb(nodes, group, users, order, rows)
    if rows:
        fusion_tail.attach(nodes, group, users, order)
    reasons = [why for node, why in notes if node not in group]  # a tail's steps are in
    chains, seen = [], set()
    for node in nodes:
        chain = group.get(node)
        if chain is None or id(chain) in seen:
            continue
        seen.add(id(chain))
        chain.sort(key=order.__getitem__)
        if len(chain) < 2:
            reasons.append(f"{node.kind()}: alone (no fusible neighbour reads its result)")
        elif _dtype(chain[-1].output()) not in FLOATS:
            reasons.append(f"{chain[-1].kind()}: a chain ending in a bool result")
        else:
            chains.append(Chain(chain, outputs=_stored(chain, users, returned)))
    return chains, reasons


def _stored(chain, users, returned) -> list:
    """The chain's values that something outside it reads (a saved value, an output), the last
    node's last: the kernel stores each, the others stay in registers."""
    inside = set(chain)
    found = [
        n.output()
        for n in chain[:-1]
        if n.output() in returned
        or any(u not in inside and not _metadata(u) for u in users.get(n.output(), ()))
    ]
    return [*found, chain[-1].output()]


def _grow(nodes, users, order, notes, rows) -> dict:
    """node -> its chain (a list shared by the chain's nodes): each fusible node joins the
    chains of its operands. A value also read outside the chain is stored (a second output)
    when all those readers come after the chain's end; a softmax, log_softmax, layer_norm or
    reduction without keepdim ends its chain (``element_shape``)."""
    group: dict = {}
    for node in nodes:
        step = step_of(node)
        if not rows and isinstance(step, tuple) and step[0] in INDEXED | {"full"}:
            step = None
        if not isinstance(step, tuple):
            if step is not None:
                notes.append((node, f"{node.kind()}: {step}"))
            continue
        chain = [node]
        for value in step[1]:
            producer = None if isinstance(value, tuple) else value.node()
            if producer not in group or group[producer] is chain:
                continue
            joined = [n for n in group[producer] if n not in chain] + chain
            if _joins(value, node, rows) and _closed(joined, node, users, order, rows):
                chain = joined
        for member in chain:
            group[member] = chain
    return group


def _closed(chain, last, users, order, rows) -> bool:
    """Whether ``chain`` can run at ``last`` (its end): its nodes fit one kernel
    (``element_shape``), and every reader of its values outside it comes later."""
    if element_shape(chain, last, rows) is None:
        return False
    inside = set(chain)
    at = order[last]
    return all(
        order.get(u, -1) > at or _metadata(u)
        for n in chain
        for u in users.get(n.output(), ())
        if u not in inside
    )


def _per_row(sizes: tuple, shape: tuple) -> bool:
    """Whether ``sizes`` is one value per row of ``shape`` (a keepdim statistic of its last
    dim), read by the element steps as a broadcast."""
    return bool(shape) and shape[-1] != 1 and sizes == (*shape[:-1], 1)


def element_shape(chain, last=None, rows: bool = True) -> tuple | None:
    """The shape of ``chain``'s element steps, or None when its nodes do not fit one kernel.
    Each node is of that shape or per-row (``_per_row``); a row op reads an element value; a
    reduction without keepdim, softmax, log_softmax and layer_norm only as ``last``; a per-row
    elementwise node reads per-row values only. ``rows=False``: a row op only as ``last``,
    no per-row steps before it."""
    last = chain[-1] if last is None else last
    ops = [n for n in chain if _name(n) in ROW]
    if ops:
        shape = _sizes(ops[0].inputsAt(0))
    else:
        shape = max((_sizes(n.output()) for n in chain), key=lambda s: (len(s), s[-1:]))
    for node in chain:
        name, sizes = _name(node), _sizes(node.output())
        if name in ROW:
            if _sizes(node.inputsAt(0)) != shape or (node is not last and name in NORMS):
                return None
            if node is not last and not rows:
                return None
            if name in REDUCE and not _per_row(sizes, shape) and node is not last:
                return None  # no keepdim: nothing in the chain can broadcast it
        elif sizes != shape and not (
            rows
            and _per_row(sizes, shape)
            and all(_sizes(v) != shape for v in node.inputs() if isinstance(v.type(), TensorType))
        ):
            return None
    return shape


def _metadata(node) -> bool:
    """A size read: known from the guarded type, so the replay writes it as a number
    (replay.py) and it does not need the value computed."""
    return _constant(node.output()) is not None if node.kind() == "prim::size" else False


def _absorb(nodes, group, users, order, rows) -> None:
    """Merge a chain into the one chain that reads its result more than once (``z`` in
    ``where(x > 0, z, -z)``, ``y * sigmoid(y)``): the result stays in registers."""
    changed = True
    while changed:
        changed = False
        for chain in {id(c): c for c in group.values()}.values():
            last = max(chain, key=order.__getitem__)
            value = last.output()
            readers = users.get(value, [])
            if not readers or any(r not in group for r in readers):
                continue
            target = group[readers[0]]
            if target is chain or any(group[r] is not target for r in readers):
                continue
            end = max(target, key=order.__getitem__)
            if all(_joins(value, r, rows) for r in readers) and _closed(
                chain + target, end, users, order, rows
            ):
                target.extend(chain)
                for member in chain:
                    group[member] = target
                changed = True
                break


def _joins(value, node, rows: bool = True) -> bool:
    """Whether ``value`` (made by a chain) can stay inside ``node``'s chain: the shape of the
    node's elementwise work or a per-row statistic of it, and the chain's dtype (a
    comparison's bool only as a where's condition)."""
    if _name(node) in ROW:  # the row op reads the elementwise steps' value, as its input
        return value is node.inputsAt(0) and _dtype(value) == _dtype(node.output())
    if _name(node) in COMPARE and _dtype(value) not in FLOATS:
        return False  # a comparison of the chain's values: its bool stays inside (Rprop's)
    out = node.output().type()
    sizes, target = _sizes(value), tuple(out.sizes())
    if sizes != target and not (rows and _per_row(sizes, target)):
        return False
    return _dtype(value) == "bool" or _name(node) in COMPARE or value.type().dtype() == out.dtype()


_WANTED = {("where", 0): "bool", ("scatter_add", 1): "int64"}  # inputs not of the chain's dtype


def describe(chain: Chain) -> FusedKernel | str:
    """The chain's description (its ``inputs`` filled in), or why it cannot be described."""
    body, tail = fusion_tail.split(chain.nodes)
    dtype = _dtype(body[-1].output())
    shape = element_shape(body)
    if shape is None or not math.prod(shape):
        return f"no elements, or steps of several shapes ({chain.ops()})"
    position = {node: n for n, node in enumerate(body)}
    inputs: dict = {}
    steps = []
    for node in body:
        name, args, params = step_of(node)
        refs = []
        for value in args:
            if isinstance(value, tuple):
                refs.append(value)
            elif value.node() in position:
                if _dtype(value) not in (dtype, "bool"):  # a comparison of another float type
                    return f"{node.kind()} reads a {_dtype(value)} step ({dtype} wanted)"
                refs.append(("step", position[value.node()]))
            else:
                wanted = _WANTED.get((name, len(refs)), dtype)
                if _dtype(value) != wanted:
                    return f"{node.kind()} reads a {_dtype(value)} operand ({wanted} wanted)"
                refs.append(("input", inputs.setdefault(value, len(inputs))))
        row = _sizes(node.output()) != shape
        steps.append(FusedStep(name, tuple(refs), _dtype(node.output()), params, row))
    per_row: set = set()  # inputs the tail reads once per row

    def operand(value):
        if value.node() in position:
            return ("step", position[value.node()])
        per_row.add(value)
        return ("input", inputs.setdefault(value, len(inputs)))

    found = fusion_tail.steps(tail, shape, body[-1], position, operand, dtype) if tail else []
    if isinstance(found, str):
        return found
    steps += [FusedStep(*step) for step in found]
    chain.inputs = list(inputs)
    specs = tuple(_input(v, shape, v in per_row) for v in chain.inputs)
    device = chain.output.type().device().type
    stored = tuple(position[value.node()] for value in chain.outputs)
    features = {ROW_STEPS} if any(s.row for s in steps[: len(body) - 1]) else set()
    features |= {ROW_INDEX} if any(s.op in INDEXED for s in steps) else set()
    features |= {fusion_tail.ROW_TAIL} if tail else set()
    return FusedKernel(
        device, shape, dtype, specs, tuple(steps), stored, features=tuple(sorted(features))
    )


def _input(value, shape: tuple, per_row: bool) -> FusedInput:
    """An input's spec; one read once per row (``rows`` or ``rows + (1,)``) walks the rows."""
    sizes = tuple(value.type().sizes())
    walk = (*shape[:-1], 1) if per_row else sizes
    return FusedInput(_dtype(value), sizes, _strides(walk, shape))


def _strides(sizes: tuple, shape: tuple) -> tuple:
    """A contiguous tensor of ``sizes``' element strides, broadcast to ``shape``."""
    own = [0] * len(sizes)
    step = 1
    for i in range(len(sizes) - 1, -1, -1):
        own[i] = step if sizes[i] != 1 else 0
        step *= sizes[i]
    lead = len(shape) - len(sizes)
    return tuple([0] * lead + [s if shape[lead + i] != 1 else 0 for i, s in enumerate(own)])


# ---- kernels -------------------------------------------------------------------------------------
def kernel_for(description: FusedKernel):
    """``(kernel or None, why not)`` from the backend serving the description's device."""
    try:
        backend = REGISTRY.backend(description.device_type)
    except Exception as exc:  # an unavailable device: the op-by-op replay reports it
        return None, str(exc)
    record = getattr(backend, "record", None)
    if record is None or record.obj is None:
        return None, f"the {description.device_type} backend is built in (no plugin hooks)"
    try:
        found = REGISTRY.host._call_one(
            record, "ember_fused_kernel", device_type=description.device_type,
            description=description,
        )  # fmt: skip
    except AttributeError:
        return None, f"backend '{record.name}' has no ember_fused_kernel hook"
    except Exception as exc:  # a plugin's failure costs the fusion, never the call
        return None, f"backend '{record.name}' failed: {type(exc).__name__}: {exc}"
    if found is None:
        return None, f"backend '{record.name}' returned no kernel"
    return found, ""


def schedule(nodes, outputs, check=None) -> list:
    """The chains that got a kernel; the fusion log says which fused and why others did not.
    When the backend declines a chain that uses ``features`` (a generator written before
    them), the graph is planned again without them, so that backend fuses what it knows.
    ``check(chain, description)``: the description to ask for (a size-generic program's,
    with its ``dynamic`` dims), or why the chain runs op by op."""
    fused, reasons, declined = _schedule(*plan(nodes, outputs), check)
    if declined:
        fused, reasons, _ = _schedule(*plan(nodes, outputs, rows=False), check)
        reasons.insert(0, f"declined with features ({', '.join(declined)}): planned without")
    if logs.enabled("fusion"):
        logs.log("fusion", report(fused, reasons, len(nodes)))
    return fused


def _schedule(chains, reasons, check=None) -> tuple:
    """``(chains with a kernel, reasons, chains declined that used features)``."""
    fused, declined = [], []
    for chain in chains:
        description = describe(chain)
        if check is not None and not isinstance(description, str):
            description = check(chain, description)
        why = description if isinstance(description, str) else ""
        if not why:
            chain.description = description
            chain.kernel, why = kernel_for(description)
            if description.dynamic and getattr(chain.kernel, "dynamic", ()) != description.dynamic:
                chain.kernel, why = None, why or "its kernel does not take the sizes per call"
        if why:
            reasons.append(f"chain ({chain.ops()}): {why}; runs op by op")
            if chain.description is not None and chain.description.features:
                declined.append(chain.ops())
            continue
        fused.append(chain)
    return fused, reasons, declined


def summary(graph) -> str:
    """The plan of a captured graph, before any kernel is asked for (the capture's log line,
    explain())."""
    nodes = list(graph.block().nodes())
    chains, reasons = plan(nodes, graph.outputs())
    ops = sum(1 for n in nodes if not n.kind().startswith("prim::"))
    lines = [
        f"{ops} ops; {len(chains)} elementwise chain(s) to fuse at the first replay that "
        "records no gradient (the others replay one by one, kernels pre-resolved; a training "
        "region plans its forward and backward programs when it builds them)"
    ]
    lines += [f"  chain: {chain.ops()}" for chain in chains]
    lines += [f"  not fused: {reason}" for reason in reasons]
    return "\n".join(lines)


def report(fused: list, reasons: list, count: int) -> str:
    lines = [f"{len(fused)} fused kernel(s) for a region of {count} nodes"]
    for chain in fused:
        d = chain.description
        numel = math.prod(d.shape)
        lines.append(
            f"  fused: {chain.ops()} ({len(d.inputs)} inputs, {d.dtype} {list(d.shape)}, "
            f"{numel} elements, one call{''.join(f', {f}' for f in sorted(d.features))}"
            f"{f', sizes per call in dims {list(d.dynamic)}' if d.dynamic else ''})"
        )
    lines += [f"  not fused: {reason}" for reason in reasons]
    return "\n".join(lines)
