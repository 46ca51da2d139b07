"""``mode="reduce-overhead"``: replay plans whose outputs live in preallocated buffers.

PyTorch records a CUDA graph per region and replays it: the launches and the memory of every
output and intermediate are fixed at recording, so a replay costs no allocation and little
Python, and the outputs are overwritten by the next replay (``torch.compiler`` docs): reading
an output after its buffer was written again raises PyTorch's RuntimeError. ember's equivalent
caches the whole launch sequence: the region's dispatch-free program (replay.py) is written
with every output that the program allocates itself (plain elementwise nodes and fused chains)
bound to a buffer allocated once when the plan is built, so a replay is the kernel calls
alone; each call returns fresh tensor objects over the buffers. ``mm``/``bmm`` nodes call
their kernel into a buffer too, and lowered composites (``linear``, ``matmul``...) get
sub-programs of their own written the same way. Nodes that call their runner (reductions,
``cat``, views of a buffer) still allocate, or alias, as in default mode; an output that is a
view of a buffer is overwritten with it, and raises on reading like the buffer's own tensor.

Iterations, as PyTorch's cudagraph trees count them: by default each call of a region starts a
new iteration, so a call overwrites the previous call's outputs. Once
``ember.compiler.cudagraph_mark_step_begin()`` has been called, iterations are the spans
between its calls: a region called twice in one span (``f(x) + f(x)``) gives its second call a
second buffer set, so both results stay valid until the next mark.

Training regions (the joint forward/backward pair, joint.py) are planned too: the forward's
outputs in buffers with the same overwrite rule, the tensors it saves for the backward and the
backward's gradients allocated per call (autograd keeps them, as ``.grad``), every other
intermediate of both programs in buffers (``training``).
"""

from __future__ import annotations

import functools
import threading

import ember
from ember._tensor import Tensor
from ember.jit.ops import is_view, resolve

from . import lower, replay

MODE = "reduce-overhead"
_STEPS = threading.local()  # .marks: how many times cudagraph_mark_step_begin() was called


def mark_step_begin() -> None:
    """``ember.compiler.cudagraph_mark_step_begin`` (the package's public function)."""
    _STEPS.marks = getattr(_STEPS, "marks", 0) + 1


class _StaticProgram(replay._Program):
    """replay's writer with each allocated output bound to a buffer made now: elementwise
    nodes, fused chains, ``mm``/``bmm`` (their kernels write a given contiguous output), and
    the same inside lowered composites (``linear`` is ``mm`` and ``add``), each node's
    sub-program built for it alone. ``buffers`` collects every buffer, nested ones too.
    ``fresh(outputs)``: the returned values that must be allocated per call (a training
    program's saved tensors and gradients), with the values they are views of."""

    def __init__(self, graph, nodes, chains=(), buffers=None, fresh=None):
        super().__init__(graph, nodes, chains)
        self.buffers = [] if buffers is None else buffers
        self.fresh_rule = fresh
        self.fresh: set = set()

    def program(self, name, inputs, outputs, method: bool) -> list:
        if self.fresh_rule is not None:
            self.fresh = _with_bases(self.nodes, self.fresh_rule(list(outputs)))
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
        writer = functools.partial(_StaticProgram, buffers=self.buffers)
        return lower.lowered(op, node, functools.partial(replay.build, writer=writer), cache=False)


def _with_bases(nodes, values) -> set:
    """``values`` and the values they are views of (a buffer's view would be overwritten)."""
    base: dict = {}
    for node in nodes:
        kind = node.kind()
        op = None if kind.startswith("prim::") else resolve(kind)
        if op is not None and is_view(op) and node.inputs():
            for value in node.outputs():
                base[value] = node.inputsAt(0)
    found = set()
    for value in values:
        while value is not None and value not in found:
            found.add(value)
            value = base.get(value)
    return found


def training(graph, forward, backward):
    """The joint pair's programs (joint.py) for reduce-overhead: ``forward`` and ``backward``
    are ``(inputs, nodes, outputs, name, n_out)``. The forward's outputs live in buffers as a
    no-grad region's do (Plans: overwritten by the next call, PyTorch's error on reading a
    stale one), but what it saves for the backward is allocated per call (a second forward
    before the first's backward must not overwrite it); the backward's intermediates live in
    buffers, its gradients are fresh (autograd may keep them as ``.grad``). Returns
    ``(forward Plans, backward program)`` or None (control flow)."""
    inputs, nodes, outputs, name, n_out = forward

    def build_forward(made):
        writer = functools.partial(_StaticProgram, buffers=made, fresh=lambda outs: outs[n_out:])
        return replay.build(graph, inputs, nodes, outputs, name=name, fuse=True, writer=writer)

    plans = Plans(build_forward)
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
    """A region's static programs, one per buffer set, chosen by iteration."""

    __slots__ = ("_build", "_mark", "_next", "buffers", "handed", "programs", "storages")

    def __init__(self, build):
        self._build = build  # (list to collect its buffers) -> a static program, or None
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

    def build(made):
        writer = functools.partial(_StaticProgram, buffers=made)
        return replay.build(graph, method=method, fuse=True, writer=writer)

    found = Plans(build)
    return found if found.usable else None
