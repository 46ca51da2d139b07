"""``mode="reduce-overhead"``: replay plans whose outputs live in preallocated buffers.

PyTorch records a CUDA graph per region and replays it: the launches and the memory of every
output and intermediate are fixed at recording, so a replay costs no allocation and little
Python, and the outputs are overwritten by the next replay (``torch.compiler`` docs): reading
an output after its buffer was written again raises PyTorch's RuntimeError. ember's equivalent
caches the whole launch sequence: the region's dispatch-free program (replay.py) is written
with every output that the program allocates itself (plain elementwise nodes and fused chains)
bound to a buffer allocated once when the plan is built, so a replay is the kernel calls
alone; each call returns fresh tensor objects over the buffers. Nodes that call
their runner (matmuls, reductions, lowered composites) still allocate as in default mode.

Iterations, as PyTorch's cudagraph trees count them: by default each call of a region starts a
new iteration, so a call overwrites the previous call's outputs. Once
``ember.compiler.cudagraph_mark_step_begin()`` has been called, iterations are the spans
between its calls: a region called twice in one span (``f(x) + f(x)``) gives its second call a
second buffer set, so both results stay valid until the next mark.

Only the no-grad program is planned this way; a region that records gradients keeps its
default replay (its outputs feed autograd, which may keep them as ``.grad``).
"""

from __future__ import annotations

import threading

import ember
from ember._tensor import Tensor

from . import replay

MODE = "reduce-overhead"
_STEPS = threading.local()  # .marks: how many times cudagraph_mark_step_begin() was called


def mark_step_begin() -> None:
    """``ember.compiler.cudagraph_mark_step_begin`` (the package's public function)."""
    _STEPS.marks = getattr(_STEPS, "marks", 0) + 1


class _StaticProgram(replay._Program):
    """replay's writer with each allocated output bound to a buffer made now."""

    def alloc(self, result, shape: str, dtype: str, device: str) -> str:
        buffer = ember.empty(result.sizes(), dtype=result.dtype(), device=result.device())
        return self.bind(buffer, "BUF")


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

    __slots__ = ("_build", "_mark", "_next", "buffers", "handed", "programs")

    def __init__(self, build):
        self._build = build  # () -> a static program, or None (control flow)
        self.programs = []
        self.buffers: list = []  # per program: ids of its buffers
        self.handed: list = []  # per program: the output tensors its last call returned
        self._add()
        self._mark = None  # the mark of the iteration this region last ran in
        self._next = 0

    def _add(self) -> None:
        program = self._build()
        self.programs.append(program)
        names = program.__globals__.items() if program is not None else ()
        self.buffers.append({id(v) for k, v in names if k.startswith("BUF")})
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
        buffers = self.buffers[index]
        handed = []
        result = []
        for t in out:
            if id(t) in buffers:  # a fresh tensor over the buffer (PyTorch's are distinct)
                t = t.as_subclass(Tensor)
                handed.append(t)
            result.append(t)
        self.handed[index] = handed
        return tuple(result)


def plans(graph, method: bool):
    """The region's ``Plans``, or None where the dispatch-free program does not apply."""
    found = Plans(lambda: replay.build(graph, method=method, fuse=True, writer=_StaticProgram))
    return found if found.usable else None
