"""``mode="reduce-overhead"``: replay plans whose intermediates live in preallocated buffers.

PyTorch records a CUDA graph per region and replays it: the launches and the memory of every
output and intermediate are fixed at recording, so a replay costs no allocation and little
Python, and the outputs are overwritten by the next replay (``torch.compiler`` docs): reading
an output after its buffer was written again raises PyTorch's RuntimeError. ember's equivalent
caches the whole launch sequence: the region's dispatch-free program (replay.py) is written
with every value that the program allocates itself (plain elementwise nodes and fused chains)
bound to a buffer allocated once when the plan is built, so a replay is the kernel calls
alone. ``mm``/``bmm`` nodes call their kernel into a buffer too, and lowered composites
(``linear``, ``matmul``...) get sub-programs of their own written the same way. Nodes that
call their runner (reductions, ``cat``, views of a buffer) still allocate, or alias, as in
default mode.

Which outputs live in buffers follows PyTorch, which records CUDA graphs for CUDA tensors only
(``_graphed``): a region whose tensors are all on one ``cuda`` device (ember's CUDA plugin or
its ROCm one, which serves the same device type as PyTorch's HIP build does) returns its
outputs in buffers, each call fresh tensor objects over them, and an output (or a view of a
buffer returned as one) read after its buffer was written again raises PyTorch's error. On
every other device (``cpu``, ``ref``, ``xpu``), or a region mixing devices, PyTorch runs
without CUDA graphs and each call's outputs are its own: the outputs and what they are views
of are allocated per call as in default mode, only the intermediates live in buffers, and
nothing is ever overwritten.

Iterations, as PyTorch's cudagraph trees count them (CUDA regions): by default each call of a
region starts a new iteration, so a call overwrites the previous call's outputs. Once
``ember.compiler.cudagraph_mark_step_begin()`` has been called, iterations are the spans
between its calls: a region called twice in one span (``f(x) + f(x)``) gives its second call a
second buffer set, so both results stay valid until the next mark. Other regions keep one
buffer set (their outputs are never buffers).

Training regions (the joint forward/backward pair, joint.py) are planned too: the forward's
outputs follow the same rule (buffers with the overwrite rule on CUDA, fresh elsewhere), the
tensors it saves for the backward and the backward's gradients are allocated per call
(autograd keeps them, as ``.grad``), every other intermediate of both programs lives in
buffers (``training``).
"""

from __future__ import annotations

import functools
import threading

import ember
from ember._tensor import Tensor
from ember.dispatcher.kinds.functional import runs_decomposition
from ember.jit.ops import is_view, resolve
from ember.jit.types import TensorType

from . import lower, replay

MODE = "reduce-overhead"
_STEPS = threading.local()  # .marks: how many times cudagraph_mark_step_begin() was called


def mark_step_begin() -> None:
    """``ember.compiler.cudagraph_mark_step_begin`` (the package's public function)."""
    _STEPS.marks = getattr(_STEPS, "marks", 0) + 1


class _StaticProgram(replay._Program):
    """replay's writer with each allocated value bound to a buffer made now: elementwise
    nodes, fused chains, ``mm``/``bmm`` (their kernels write a given contiguous output), and
    the same inside lowered composites (``linear`` is ``mm`` and ``add``), each node's
    sub-program built for it alone. ``buffers`` collects every buffer, nested ones too.
    Allocated per call instead (``fresh``, with the values they are views of, so that no
    returned tensor aliases a buffer): every returned value where not ``graphed`` (PyTorch's
    CUDA graphs alone fix outputs' memory: ``_graphed``; for a composite's sub-program,
    whether its node's outputs may be buffers), and ``fresh_rule(outputs)`` (a training
    program's saved tensors and gradients)."""

    ARENA = False  # every buffer is made once, when the program is built

    def __init__(self, graph, nodes, chains=(), buffers=None, fresh=None, graphed=True):
        super().__init__(graph, nodes, chains)
        self.buffers = [] if buffers is None else buffers
        self.fresh_rule = fresh
        self.graphed = graphed
        self.fresh: set = set()

    def program(self, name, inputs, outputs, method: bool) -> list:
        outputs = list(outputs)
        fresh = [] if self.fresh_rule is None else list(self.fresh_rule(outputs))
        if not self.graphed:
            fresh += outputs
        self.fresh = _with_bases(self.nodes, fresh)
        return super().program(name, inputs, outputs, method)

    def alloc(self, value, shape: str, dtype: str, device: str) -> str:
        if value in self.fresh:
            return super().alloc(value, shape, dtype, device)
        typ = value.type()
        buffer = ember.empty(typ.sizes(), dtype=typ.dtype(), device=typ.device())
        self.buffers.append(buffer)
        return self.bind(buffer, "BUF")

    def lower(self, op, node):
        if self.fresh_rule is not None:  # a training program: composites as in default mode
            return super().lower(op, node)
        graphed = self.fresh.isdisjoint(node.outputs())  # its outputs may be buffers
        writer = functools.partial(_StaticProgram, buffers=self.buffers, graphed=graphed)
        return lower.lowered(op, node, functools.partial(replay.build, writer=writer), cache=False)


def _graphed(inputs, nodes) -> bool:
    """Whether PyTorch would run this region as a CUDA graph: cudagraph trees skip a graph
    with a tensor on the CPU or on more than one device (inductor's "skipping cudagraphs due
    to cpu device" / "multiple devices"), and CUDA graphs exist for ``cuda`` devices alone.
    ember's ROCm plugin serves the ``cuda`` device type too (``ember_backend_rocm``'s
    device_types), as PyTorch's HIP build exposes AMD GPUs as ``cuda`` and records hipGraphs
    for them there, so it is graphed; ``xpu``, ``ref`` and ``cpu`` are not."""
    values = [*inputs, *(v for node in nodes for v in node.outputs())]
    devices = {v.type().device() for v in values if isinstance(v.type(), TensorType)}
    return len(devices) == 1 and all(d is not None and d.type == "cuda" for d in devices)


def _with_bases(nodes, values) -> set:
    """``values`` and the values they may share memory with (a buffer shared with an output
    would be overwritten under it, or returned where outputs must be the call's own)."""
    made = {value: node for node in nodes for value in node.outputs()}
    found: set = set()
    todo = list(values)
    while todo:
        value = todo.pop()
        if value not in found:
            found.add(value)
            if value in made:
                todo += _bases(made[value], value)
    return found


def _bases(node, value) -> list:
    """The inputs of ``node`` whose memory its output ``value`` may be: a view's or an in-place
    op's first input; for a composite (``ravel``, ``tensor_split``: not view ops, yet views),
    the inputs its decomposition returns views of; every input of a prim (lists and tuples
    built or unpacked) and of a composite that cannot be traced."""
    kind = node.kind()
    op = None if kind.startswith("prim::") else resolve(kind)
    if op is None:
        return node.inputs()
    if is_view(op) or op.mutates:
        return node.inputs()[:1]
    if not runs_decomposition(op):
        return []  # its kernel writes memory of its own
    specs = lower.arguments(op, node)
    graph = None if specs is None else lower.decomposition(op, specs)
    if graph is None:  # its runner runs the decomposition: any input may come back
        return node.inputs()
    inner = _with_bases(graph.block().nodes(), [graph.outputs()[node.outputs().index(value)]])
    tensors = [v for v in node.inputs() if isinstance(v.type(), TensorType)]
    return [t for t, v in zip(tensors, graph.inputs()) if v in inner]


def training(graph, forward, backward):
    """The joint pair's programs (joint.py) for reduce-overhead: ``forward`` and ``backward``
    are ``(inputs, nodes, outputs, name, n_out)``. The forward's outputs are a no-grad
    region's (on CUDA in buffers, Plans: overwritten by the next call, PyTorch's error on
    reading a stale one; elsewhere fresh), what it saves for the backward is allocated per
    call on every device (a second forward before the first's backward must not overwrite
    it); the backward's intermediates live in buffers, its gradients are fresh (autograd may
    keep them as ``.grad``). Returns ``(forward Plans, backward program)`` or None (control
    flow)."""
    inputs, nodes, outputs, name, n_out = forward
    graphed = _graphed(inputs, nodes)

    def build_forward(made):
        writer = functools.partial(
            _StaticProgram, buffers=made, fresh=lambda outs: outs[n_out:], graphed=graphed
        )
        return replay.build(graph, inputs, nodes, outputs, name=name, fuse=True, writer=writer)

    plans = Plans(build_forward, graphed)
    writer = functools.partial(_StaticProgram, fresh=lambda outs: outs)
    ins, body, outs, called, _ = backward  # (the names above stay the forward's: Plans rebuilds)
    program = replay.build(graph, ins, body, outs, name=called, fuse=True, writer=writer)
    return (plans, program) if plans.usable and program is not None else None


_MESSAGE = (
    "Error: accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run. "
    "To prevent overwriting, clone the tensor outside of ember.compile() or call "
    "ember.compiler.cudagraph_mark_step_begin() before each model invocation."
)


class _Overwritten:
    """The storage of an output whose buffer a later call has overwritten: any use of the
    tensor's data raises PyTorch's error (its shape and dtype stay readable, as in PyTorch)."""

    __slots__ = ()

    def __getattr__(self, name):
        raise RuntimeError(_MESSAGE)


_OVERWRITTEN = _Overwritten()


class Plans:
    """A region's static programs, one per buffer set, chosen by iteration (``graphed``: its
    outputs are buffers, ``_graphed``); a region whose outputs are fresh runs its one
    program, nothing to overwrite."""

    __slots__ = ("_build", "_mark", "_next", "buffers", "graphed", "handed", "programs", "storages")

    def __init__(self, build, graphed: bool):
        self._build = build  # (list to collect its buffers) -> a static program, or None
        self.graphed = graphed
        self.programs = []
        self.buffers: list = []  # per program: ids of its buffers
        self.storages: list = []  # per program: ids of its buffers' storages (for their views)
        self.handed: list = []  # per program: the output tensors its last call returned
        self._add()
        self._mark = None  # the mark of the iteration this region last ran in
        self._next = 0

    def _add(self) -> None:
        made: list = []  # the program's buffers, those of its lowered composites included
        program = self._build(made)
        self.programs.append(program)
        self.buffers.append({id(v) for v in made})
        self.storages.append({id(v._storage) for v in made})
        self.handed.append(())

    @property
    def usable(self) -> bool:
        return self.programs[0] is not None

    def __call__(self, *args):
        if not self.graphed:
            return self.programs[0](*args)
        mark = getattr(_STEPS, "marks", 0)
        if mark == 0 or mark != self._mark:  # a new iteration: overwrite the first set
            self._mark = mark
            self._next = 0
        index = self._next
        self._next += 1
        if index == len(self.programs):
            self._add()
        for old in self.handed[index]:  # their buffers are about to be overwritten
            old._storage = _OVERWRITTEN
        out = self.programs[index](*args)
        if out is None:
            return None
        buffers, storages = self.buffers[index], self.storages[index]
        handed = []
        result = []
        for t in out:
            if id(t) in buffers:  # a fresh tensor over the buffer (PyTorch's are distinct)
                t = t.as_subclass(Tensor)
                handed.append(t)
            elif id(getattr(t, "_storage", None)) in storages:  # a view of a buffer (fresh)
                handed.append(t)
            result.append(t)
        self.handed[index] = handed
        return tuple(result)


def plans(graph, method: bool):
    """The region's ``Plans``, or None where the dispatch-free program does not apply."""

    graphed = _graphed(graph.inputs(), graph.block().nodes())

    def build(made):
        writer = functools.partial(_StaticProgram, buffers=made, graphed=graphed)
        return replay.build(graph, method=method, fuse=True, writer=writer)

    found = Plans(build, graphed)
    return found if found.usable else None
