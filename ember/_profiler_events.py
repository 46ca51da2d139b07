"""What ember.profiler records: per-call times, shapes, call sites, created bytes and flops, and
their per-key averages with PyTorch's names (``FunctionEventAvg``, ``EventList.table``)."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from ._tensor import Tensor


@dataclass
class FunctionEventAvg:
    """Totals of one op (or region) over its calls; times in microseconds, memory in bytes."""

    key: str
    count: int = 0
    cpu_time_total: float = 0.0
    self_cpu_time_total: float = 0.0
    input_shapes: list | None = None
    stack: list | None = None
    cpu_memory_usage: int = 0
    self_cpu_memory_usage: int = 0
    device_memory_usage: int = 0
    self_device_memory_usage: int = 0
    flops: int = 0

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0


def _us(value: float) -> str:
    return f"{value / 1000:.3f}ms" if value >= 1000 else f"{value:.3f}us"


def _bytes(value: int) -> str:
    for unit, size in (("Gb", 1 << 30), ("Mb", 1 << 20), ("Kb", 1 << 10)):
        if abs(value) >= size:
            return f"{value / size:.2f} {unit}"
    return f"{value} b"


class EventList(list):
    """The per-key averages, with PyTorch's ``table(sort_by=, row_limit=)``; the memory, flops,
    input-shape and source columns appear when the profile recorded them."""

    def table(self, sort_by: str | None = None, row_limit: int = 100, **_layout) -> str:
        sort_by = sort_by or "self_cpu_time_total"
        rows = sorted(self, key=lambda event: -getattr(event, sort_by))[:row_limit]
        total = sum(event.self_cpu_time_total for event in self) or 1.0
        columns = [
            ("Name", lambda e: e.key, "<"),
            ("Self CPU %", lambda e: f"{100 * e.self_cpu_time_total / total:.2f}%", ">"),
            ("Self CPU", lambda e: _us(e.self_cpu_time_total), ">"),
            ("CPU total", lambda e: _us(e.cpu_time_total), ">"),
        ]
        if any(e.cpu_memory_usage or e.device_memory_usage for e in self):
            columns += [
                ("CPU Mem", lambda e: _bytes(e.cpu_memory_usage), ">"),
                ("Self CPU Mem", lambda e: _bytes(e.self_cpu_memory_usage), ">"),
                ("Device Mem", lambda e: _bytes(e.device_memory_usage), ">"),
            ]
        if any(e.flops for e in self):
            columns.append(("Total MFLOPs", lambda e: f"{e.flops / 1e6:.3f}", ">"))
        columns.append(("# Calls", lambda e: str(e.count), ">"))
        if any(e.input_shapes is not None for e in rows):
            columns.append(("Input Shapes", lambda e: str(e.input_shapes), "<"))
        if any(e.stack for e in rows):
            columns.append(("Source Location", lambda e: (e.stack or [""])[0], "<"))
        cells = [[get(e) for _, get, _ in columns] for e in rows]
        widths = [
            max([len(name)] + [len(r[i]) for r in cells]) for i, (name, _, _) in enumerate(columns)
        ]

        def line(values):
            return "  ".join(f"{v:{a}{w}}" for v, w, (_, _, a) in zip(values, widths, columns))

        header = line([name for name, _, _ in columns])
        lines = [header, "-" * len(header), *(line(r) for r in cells)]
        lines.append(f"Self CPU time total: {_us(total)}")
        return "\n".join(lines)


def _mm(a, b):
    return 2 * a[0] * a[1] * b[1]


# Floating-point operations of the matrix products, from input shapes (PyTorch counts the same).
FLOPS = {
    "mm": lambda a, b, *_: _mm(a, b),
    "addmm": lambda _c, a, b, *_: _mm(a, b),
    "bmm": lambda a, b, *_: a[0] * _mm(a[1:], b[1:]),
    "baddbmm": lambda _c, a, b, *_: a[0] * _mm(a[1:], b[1:]),
    "mv": lambda a, *_: 2 * a[0] * a[1],
    "dot": lambda a, *_: 2 * a[0],
}

_STACK_DEPTH = 16


def _caller_stack() -> tuple:
    """The caller's frames, innermost first, without ember's own (its modules, and the op
    functions generated into them, all live in the ``ember`` package namespace)."""
    frames, frame = [], sys._getframe(1)
    while frame is not None and len(frames) < _STACK_DEPTH:
        module = frame.f_globals.get("__name__", "")
        if module != "ember" and not module.startswith("ember."):
            code = frame.f_code
            frames.append(f"{code.co_filename}({frame.f_lineno}): {code.co_name}")
        frame = frame.f_back
    return tuple(frames)


def _shapes(args) -> tuple:
    return tuple(tuple(a._shape) if isinstance(a, Tensor) else () for a in args)


def _tensors(value):
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            if isinstance(item, Tensor):
                yield item


class Recorder:
    """Accumulates per (name, input shapes, call site): count, inclusive and self ns, created
    bytes (host, device; inclusive and self) and flops. A stack of the nested events' totals
    gives self figures; a storage is counted by the innermost op that returned it first."""

    def __init__(self, shapes=False, memory=False, stack=False, flops=False):
        self.shapes, self.memory, self.stack, self.flops = shapes, memory, stack, flops
        self.stats: dict[tuple, list] = {}
        self.children: list[list] = []  # per open event: [ns, host bytes, device bytes]
        self.seen: set = set()  # ids of storages already counted (or given as inputs)

    def enter(self, args) -> tuple:
        self.children.append([0, 0, 0])
        if self.memory:
            self.seen.update(id(t._storage) for t in _tensors(args))
        where = _caller_stack() if self.stack else None
        return time.perf_counter_ns(), where

    def leave(self, name: str, start: tuple, args, result) -> None:
        elapsed = time.perf_counter_ns() - start[0]
        nested = self.children.pop()
        host, device = self._created(result) if self.memory else (0, 0)
        totals = (elapsed, host + nested[1], device + nested[2])
        if self.children:
            for i, value in enumerate(totals):
                self.children[-1][i] += value
        else:
            self.seen.clear()  # a top-level call is over: its storages' ids may be reused
        key = (name, _shapes(args) if self.shapes else None, start[1])
        entry = self.stats.get(key)
        if entry is None:
            entry = self.stats[key] = [0] * 8
        own = (elapsed - nested[0], host, device)
        for i, value in enumerate((1, totals[0], own[0], totals[1], own[1], totals[2], own[2])):
            entry[i] += value
        if self.flops and name in FLOPS:
            entry[7] += _flops(name, args)

    def _created(self, result) -> tuple:
        host = device = 0
        for t in _tensors(result):
            storage = t._storage
            if id(storage) in self.seen:
                continue
            self.seen.add(id(storage))
            if storage.device.type == "cpu":
                host += storage.nbytes
            else:
                device += storage.nbytes
        return host, device

    def averages(self, by_shape: bool, stack_n: int, options: dict) -> EventList:
        groups: dict[tuple, FunctionEventAvg] = {}
        for (name, shapes, where), entry in self.stats.items():
            key = (
                name,
                shapes if by_shape else None,
                where[:stack_n] if stack_n and where else None,
            )
            event = groups.get(key)
            if event is None:
                event = groups[key] = FunctionEventAvg(name)
                event.input_shapes = [list(s) for s in shapes] if by_shape else None
                event.stack = list(key[2]) if key[2] else ([] if options["stack"] else None)
            _add(event, entry)
        return EventList(groups.values())


def _add(event: FunctionEventAvg, entry: list) -> None:
    event.count += entry[0]
    event.cpu_time_total += entry[1] / 1000
    event.self_cpu_time_total += entry[2] / 1000
    event.cpu_memory_usage += entry[3]
    event.self_cpu_memory_usage += entry[4]
    event.device_memory_usage += entry[5]
    event.self_device_memory_usage += entry[6]
    event.flops += entry[7]


def _flops(name: str, args) -> int:
    shapes = [tuple(a._shape) for a in args if isinstance(a, Tensor)]
    try:
        return int(FLOPS[name](*shapes))
    except (IndexError, TypeError):
        return 0
