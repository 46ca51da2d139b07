"""``mode="reduce-overhead"``: replay plans whose outputs live in preallocated buffers.

PyTorch records a CUDA graph per region and replays it: the launches and the memory of every
output and intermediate are fixed at recording, so a replay costs no allocation and little
Python, and the outputs are overwritten by the next replay (``torch.compiler`` docs; reading an
overwritten output is an error there, a changed value here). ember's equivalent caches the whole
launch sequence: the region's dispatch-free program (replay.py) is written with every output
that the program allocates itself (plain elementwise nodes and fused chains) bound to a buffer
allocated once when the plan is built, so a replay is the kernel calls alone. Nodes that call
their runner (matmuls, reductions, lowered composites) still allocate as in default mode.

Iterations, as PyTorch's cudagraph trees count them: by default each call of a region starts a
new iteration, so a call overwrites the previous call's outputs. Once
``cudagraph_mark_step_begin()`` has been called, iterations are the spans between its calls:
a region called twice in one span (``f(x) + f(x)``) gives its second call a second buffer set,
so both results stay valid until the next mark.

Only the no-grad program is planned this way; a region that records gradients keeps its
default replay (its outputs feed autograd, which may keep them as ``.grad``).
"""

from __future__ import annotations

import threading

import ember

from . import replay

MODE = "reduce-overhead"
_STEPS = threading.local()  # .marks: how many times cudagraph_mark_step_begin() was called


def cudagraph_mark_step_begin() -> None:
    """Mark the start of a new iteration (PyTorch's ``torch.compiler.cudagraph_mark_step_begin``).

    Outputs of ``mode="reduce-overhead"`` regions stay valid until the next mark instead of
    until the region's next call: call it at the top of each training or inference step when
    one step calls a compiled function more than once and keeps all the results.

    Example:
        >>> @ember.compile(mode="reduce-overhead")
        ... def rand_foo():
        ...     return ember.rand([4])
        >>> for _ in range(5):
        ...     ember.compiler.cudagraph_mark_step_begin()
        ...     rand_foo() + rand_foo()
    """
    _STEPS.marks = getattr(_STEPS, "marks", 0) + 1


class _StaticProgram(replay._Program):
    """replay's writer with each allocated output bound to a buffer made now."""

    def alloc(self, result, shape: str, dtype: str, device: str) -> str:
        buffer = ember.empty(result.sizes(), dtype=result.dtype(), device=result.device())
        return self.bind(buffer, "BUF")


class Plans:
    """A region's static programs, one per buffer set, chosen by iteration."""

    __slots__ = ("_build", "_mark", "_next", "programs")

    def __init__(self, build):
        self._build = build  # () -> a static program, or None (control flow)
        self.programs = [build()]
        self._mark = None  # the mark of the iteration this region last ran in
        self._next = 0

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
            self.programs.append(self._build())
        return self.programs[index](*args)


def plans(graph, method: bool):
    """The region's ``Plans``, or None where the dispatch-free program does not apply."""
    found = Plans(lambda: replay.build(graph, method=method, fuse=True, writer=_StaticProgram))
    return found if found.usable else None
