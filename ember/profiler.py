"""A profiler as a dispatch layer: ``with ember.profiler.profile() as prof: ...``.

Like ``torch.profiler.profile``: every op called inside the block (forward ops, the ops that
backward formulas run, optimizer updates) is timed, and ``prof.key_averages().table()`` prints
count, total and self time per op, self time being what remains after the ops the op called
itself (a composite's decomposition, a backward formula's parts). ``record_function(name)`` marks
a user region the same way. The layer sits at the top of the stack (priority 400), so an op's time
includes the autograd recording below it; outside a ``profile`` block it is not installed and
costs nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .dispatcher.layers import STACK, Layer

__all__ = ["EventList", "FunctionEventAvg", "profile", "record_function"]


@dataclass
class FunctionEventAvg:
    """Times of one op (or region) summed over its calls, in microseconds as PyTorch reports."""

    key: str
    count: int = 0
    cpu_time_total: float = 0.0
    self_cpu_time_total: float = 0.0

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0


class EventList(list):
    """The per-key averages, with PyTorch's ``table(sort_by=, row_limit=)``."""

    def table(self, sort_by: str = "self_cpu_time_total", row_limit: int = 100) -> str:
        rows = sorted(self, key=lambda event: -getattr(event, sort_by))[:row_limit]
        total = sum(event.self_cpu_time_total for event in self) or 1.0
        width = max([len("Name"), *(len(event.key) for event in rows)])
        header = f"{'Name':<{width}}  {'Self CPU %':>10}  {'Self CPU':>12}  {'CPU total':>12}"
        lines = [header + f"  {'# Calls':>8}", "-" * (len(header) + 10)]
        for event in rows:
            lines.append(
                f"{event.key:<{width}}  {100 * event.self_cpu_time_total / total:>9.2f}%  "
                f"{_us(event.self_cpu_time_total):>12}  {_us(event.cpu_time_total):>12}  "
                f"{event.count:>8}"
            )
        lines.append(f"Self CPU time total: {_us(total)}")
        return "\n".join(lines)


def _us(value: float) -> str:
    return f"{value / 1000:.3f}ms" if value >= 1000 else f"{value:.3f}us"


class _Recorder:
    """Accumulates (count, inclusive ns, self ns) per key; a stack of child time gives self time."""

    def __init__(self):
        self.stats: dict[str, list] = {}
        self.children: list[int] = []  # time spent in nested events, per open event

    def enter(self) -> int:
        self.children.append(0)
        return time.perf_counter_ns()

    def leave(self, key: str, start: int) -> None:
        elapsed = time.perf_counter_ns() - start
        nested = self.children.pop()
        if self.children:
            self.children[-1] += elapsed
        entry = self.stats.get(key)
        if entry is None:
            entry = self.stats[key] = [0, 0, 0]
        entry[0] += 1
        entry[1] += elapsed
        entry[2] += elapsed - nested


class ProfilingLayer(Layer):
    name = "profiling"
    priority = 400

    def __init__(self, recorder: _Recorder):
        self.recorder = recorder

    def wants(self, op, args) -> bool:
        return True

    def handle(self, op, args):
        recorder = self.recorder
        start = recorder.enter()
        try:
            return op.redispatch(self, args)
        finally:
            recorder.leave(op.name, start)


_ACTIVE: list[_Recorder] = []


class profile:  # noqa: N801 - PyTorch's name
    """Profile the ops run inside the block. Arguments PyTorch accepts are accepted; CPU time is
    what is measured (device ops are timed as their host calls)."""

    def __init__(self, activities=None, record_shapes=False, profile_memory=False, **_ignored):
        self.recorder = _Recorder()
        self.layer = ProfilingLayer(self.recorder)

    def __enter__(self):
        STACK.install(self.layer)
        _ACTIVE.append(self.recorder)
        return self

    def __exit__(self, *exc):
        STACK.remove(self.layer)
        _ACTIVE.remove(self.recorder)

    def key_averages(self) -> EventList:
        return EventList(
            FunctionEventAvg(key, count, total / 1000, own / 1000)
            for key, (count, total, own) in self.recorder.stats.items()
        )


class record_function:  # noqa: N801 - PyTorch's name
    """Time a user region under ``name`` in every active profile (a no-op otherwise)."""

    def __init__(self, name: str):
        self.name = name
        self.starts: list = []

    def __enter__(self):
        self.starts = [(recorder, recorder.enter()) for recorder in _ACTIVE]
        return self

    def __exit__(self, *exc):
        for recorder, start in self.starts:
            recorder.leave(self.name, start)
