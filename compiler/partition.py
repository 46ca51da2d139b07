"""The joint graph's partition: which forward values the backward gets saved, which it recomputes.

PyTorch's ``min_cut_rematerialization_partition`` (torch/_functorch/partitioners.py) as a
min cut over bytes. Every forward value is a pair of vertices joined by an edge whose capacity
is the bytes of saving it; a value the backward reads is joined to the sink, a value that
cannot be recomputed (an input, a parameter, the result of an expensive, random or stateful
op) to the source, and each cheap op's inputs to its output by infinite edges. A minimum cut
then separates what the forward computes from what the backward must have: its finite edges
are the values saved, and the cheap nodes on the sink's side are recomputed by the backward
from them. For ``gelu(x @ W1 + b1) @ W2`` the pair saves ``h = x @ W1 + b1`` and recomputes
``gelu(h)`` (the second product's weight gradient reads it), where saving both costs twice the
bytes.

Cheap (``recomputable``): elementwise ops, views and broadcasts, casts and copies, constant
factories and the scalar prims, as PyTorch's default recomputable ops. Never recomputed: GEMM,
convolutions, reductions, norms, index ops (the cost is not worth their bytes), random draws
(a second draw gives other numbers: the dropout mask is saved, or what it is made from), an
uninitialised ``empty``, ops that write into an argument, and a node that reads a value which
the forward writes into later, or whose own value it writes into later (recomputing it would
see other data than the forward saw). A node that computes (not a pure view or scalar prim)
is recomputed only where that fuses into a backward kernel or reads only values the backward
keeps anyway (``_unfused``): the time a recomputation costs stays a pass over saved memory.
In the second case its value must also be at least ``SAVE_BELOW_BYTES``: a smaller one is
saved, since its bytes are nothing next to the kernel call a recomputation costs (PyTorch's
partitioner has no such floor: on a GPU a launch costs microseconds too, on the CPU a call).

Ties: the capacity is ``bytes * scale + 1``, so among cuts of equal bytes the one that saves
fewer tensors wins, and among those the cut nearest the backward (the least recomputation:
the sink side found from the sink in the residual graph). Bytes are each value's
``numel * itemsize`` (a view counts as its own size, as ``Joint.saved_bytes`` has always
counted).
"""

from __future__ import annotations

import math
from collections import deque

from ember.dispatcher.opdef import Kind
from ember.jit.ops import has_side_effects, is_view, mutates, prim_writes, resolve
from ember.jit.prims import PRIMS
from ember.jit.types import TensorType

from .fusion_steps import step_of

# op kinds whose nodes are cheap to recompute (PyTorch's pointwise, view and misc ops)
_CHEAP_KINDS = frozenset((Kind.ELEMENTWISE, Kind.VIEW, Kind.COPY, Kind.FACTORY))
# ...except these: an uninitialised buffer (a second one holds other bytes)
_NOT_RECOMPUTED = frozenset(("empty",))
# A value below this many bytes is saved rather than recomputed by a kernel call of its own:
# bench_compile's tiny MLP recomputed three gelu(h) of 1 KiB for its weight gradients, 21,000
# instructions of its 1.51 M a step, to save 3 KiB (docs/compile.md). 64 KiB is where the
# CPU's small allocations end (its runtime's cache_min_bytes); every other model of
# bench_compile has larger activations and keeps recomputing them.
SAVE_BELOW_BYTES = 1 << 16


def choose(nodes, sources, needed, inline=frozenset(), backward=()):
    """``(saved, recomputed)``: the forward values to save (a list) and the forward nodes the
    backward recomputes from them (a list, in forward order).

    Args:
        nodes: the forward program's nodes, in order.
        sources: the values the forward program takes (inputs, parameters): always at hand.
        needed: the forward values the backward reads (or returns), in the order to keep.
        inline: values both programs make themselves (constants): never saved.
        backward: the backward program's nodes (``_unfused``'s readers).
    """
    values = [v for v in sources if v not in inline]
    values += [v for n in nodes for v in n.outputs() if v not in inline]
    known = set(values) | set(inline)
    banned = _banned(nodes) | _unfused(nodes, backward, set(needed))
    producer = {v: n for n in nodes for v in n.outputs()}
    flow = _Flow()
    scale = len(values) + 1  # one byte outweighs any number of saved tensors
    for v in values:
        flow.edge(("in", v), ("out", v), _bytes(v) * scale + 1)
        node = producer.get(v)
        alone = node is None or node in banned or len(node.outputs()) != 1
        if alone or any(u not in known for u in node.inputs()):
            flow.edge("source", ("in", v), math.inf)
            continue
        for u in node.inputs():
            if u not in inline:
                flow.edge(("out", u), ("in", v), math.inf)
    for v in needed:
        flow.edge(("out", v), "sink", math.inf)
    flow.run("source", "sink")
    near = flow.reaching("sink")  # the sink's side of the cut nearest it
    cut = [v for v in values if ("in", v) not in near and ("out", v) in near]
    recomputed = {producer[v] for v in values if ("in", v) in near}
    first = [v for v in needed if v in cut]
    saved = first + [v for v in cut if v not in set(first)]
    return saved, [n for n in nodes if n in recomputed]


def placed(recomputed, nodes) -> list:
    """The backward's nodes with each recomputed node put just ahead of its first reader (its
    value lives no longer than needed, and the fusion scheduler sees it beside the formula
    that reads it)."""
    pending = set(recomputed)
    order = {n: i for i, n in enumerate(recomputed)}
    made = {v: n for n in recomputed for v in n.outputs()}
    out: list = []

    def emit(node):
        for v in node.inputs():
            producer = made.get(v)
            if producer in pending:
                pending.discard(producer)
                emit(producer)
        out.append(node)

    for node in nodes:
        emit(node)
    for node in sorted(pending, key=order.__getitem__):  # returned as is (a gradient)
        if node in pending:
            pending.discard(node)
            emit(node)
    return out


def recomputable(node) -> bool:
    """Whether ``node`` is cheap and gives the same value when run again (module docstring)."""
    kind = node.kind()
    if kind.startswith("prim::"):
        spec = PRIMS.get(kind)
        return spec is not None and spec.run is not None and not (spec.effects or spec.writes)
    op = resolve(kind)
    if op is None or has_side_effects(node) or mutates(op):
        return False
    base = op.inplace_of or op
    if base.name in _NOT_RECOMPUTED:
        return False
    return base.kind in _CHEAP_KINDS or is_view(op)


def _unfused(nodes, backward, needed) -> set:
    """Cheap nodes that compute (not a pure view or a scalar prim) whose recomputation would
    cost a kernel of its own and reads tensors the backward would not need otherwise: the node
    is no fusion step or a reader of its value (through pure views) is none, and one of its
    tensor inputs is not ``needed``. Recomputing all cheap nodes made the GPT step of
    bench_compile.py 6% slower (docs/compile.md); a recomputation that fuses costs next to
    nothing, and one from values saved anyway (``gelu(h)`` from ``h``, ``softmax * mask``)
    saves its bytes for one pass over them, unless they are fewer than ``SAVE_BELOW_BYTES``
    (then the call costs more than the bytes are worth)."""
    readers: dict = {}
    for node in [*nodes, *backward]:
        for v in node.inputs():
            readers.setdefault(v, []).append(node)

    def fused(value) -> bool:
        for reader in readers.get(value, ()):
            if _pure_view(reader):
                if not all(fused(v) for v in reader.outputs()):
                    return False
            elif not isinstance(step_of(reader), tuple):
                return False
        return True

    return {
        n
        for n in nodes
        if not (n.kind().startswith("prim::") or _pure_view(n))
        and not (isinstance(step_of(n), tuple) and all(fused(v) for v in n.outputs()))
        and (
            not all(v in needed for v in n.inputs() if isinstance(v.type(), TensorType))
            or all(_small(v) for v in n.outputs())
        )
    }


def _small(value) -> bool:
    """Whether ``value`` has known sizes and fewer than ``SAVE_BELOW_BYTES`` bytes."""
    typ = value.type()
    return isinstance(typ, TensorType) and typ.is_complete() and _bytes(value) < SAVE_BELOW_BYTES


def _pure_view(node) -> bool:
    """A view op that never copies (``reshape``, ``contiguous`` may)."""
    kind = node.kind()
    return not kind.startswith("prim::") and resolve(kind).kind is Kind.VIEW


def _banned(nodes) -> set:
    """Nodes that are not ``recomputable``, and those whose inputs the forward writes into
    after them or whose value it writes into at all (``_written``)."""
    banned = {n for n in nodes if not recomputable(n)}
    written = _written(nodes)
    for index, node in enumerate(nodes):
        if any(written.get(v, -1) > index for v in node.inputs()):
            banned.add(node)
        if any(v in written for v in node.outputs()):
            banned.add(node)
    return banned


def _written(nodes) -> dict:
    """value -> the position of the last node that writes into its memory (the value, a
    view of it, or a value it is a view of), for every value sharing memory with a write."""
    group: dict = {}  # value -> a representative of the values sharing its memory

    def find(v):
        while group.get(v, v) is not v:
            v = group[v]
        return v

    def join(a, b):
        ra, rb = find(a), find(b)
        if ra is not rb:
            group[ra] = rb

    last: dict = {}  # representative -> position
    writes = []
    for index, node in enumerate(nodes):
        kind = node.kind()
        op = None if kind.startswith("prim::") else resolve(kind)
        writer = prim_writes(node) if op is None else mutates(op)
        aliases = writer or (op is not None and is_view(op))
        if aliases and node.inputs():
            for v in node.outputs():
                join(v, node.inputsAt(0))
        if writer and node.inputs():
            writes.append((node.inputsAt(0), index))
    for value, index in writes:
        root = find(value)
        last[root] = max(index, last.get(root, index))
    members = {v for n in nodes for v in (*n.inputs(), *n.outputs())}
    return {v: last[find(v)] for v in members if find(v) in last}


def _bytes(value) -> int:
    typ = value.type()
    if isinstance(typ, TensorType) and typ.is_complete():
        return math.prod(typ.sizes()) * typ.dtype().itemsize
    return 0


class _Flow:
    """A flow network on hashable vertices; ``run`` finds a maximum flow (Dinic)."""

    def __init__(self):
        self.adjacent: dict = {}  # vertex -> [edge], an edge [head, capacity left, reverse edge]

    def edge(self, tail, head, capacity) -> None:
        forward = [head, capacity, None]
        backward = [tail, 0, forward]
        forward[2] = backward
        self.adjacent.setdefault(tail, []).append(forward)
        self.adjacent.setdefault(head, []).append(backward)

    def run(self, source, sink) -> None:
        while True:
            level = self._levels(source)
            if sink not in level:
                return
            cursor = {v: 0 for v in level}
            while self._push(source, sink, math.inf, level, cursor) > 0:
                pass

    def _levels(self, source) -> dict:
        level = {source: 0}
        queue = deque([source])
        while queue:
            v = queue.popleft()
            for head, left, _ in self.adjacent.get(v, ()):
                if left > 0 and head not in level:
                    level[head] = level[v] + 1
                    queue.append(head)
        return level

    def _push(self, v, sink, limit, level, cursor):
        """One augmenting path's flow from ``v`` (iterative, so a deep graph does not hit the
        recursion limit)."""
        path: list = []  # edges taken
        while True:
            if v == sink:
                sent = min([limit, *(e[1] for e in path)])
                for e in path:
                    e[1] -= sent
                    e[2][1] += sent
                return sent
            edges = self.adjacent.get(v, ())
            while cursor[v] < len(edges):
                e = edges[cursor[v]]
                if e[1] > 0 and level.get(e[0], -1) == level[v] + 1:
                    break
                cursor[v] += 1
            else:
                if not path:
                    return 0
                level[v] = -1  # a dead end: never entered again in this phase
                e = path.pop()
                v = e[2][0]
                continue
            path.append(e)
            v = e[0]

    def reaching(self, sink) -> set:
        """The vertices with a path of capacity left to ``sink``."""
        found = {sink}
        queue = deque([sink])
        while queue:
            v = queue.popleft()
            for head, _, reverse in self.adjacent.get(v, ()):
                # the edge head -> v is ``reverse``; it has capacity left when reverse[1] > 0
                if reverse[1] > 0 and head not in found:
                    found.add(head)
                    queue.append(head)
        return found
