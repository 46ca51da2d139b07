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
    # ember times device ops as their host calls: the device columns PyTorch has stay zero.
    device_time_total: float = 0.0
    self_device_time_total: float = 0.0

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0


class EventList(list):
    """The per-key averages, with PyTorch's ``table(sort_by=, row_limit=)``; the memory, flops,
    input-shape and source columns appear when the profile recorded them."""

    def __init__(self, events=(), profile_memory: bool = False):
        super().__init__(events)
        self.profile_memory = profile_memory

    def export_stacks(self, path: str, metric: str) -> None:
        """PyTorch's flame-graph lines: ``outer;...;inner <metric as int>`` per call site."""
        if metric not in STACK_METRICS:
            raise ValueError("metric should be one of: " + str(STACK_METRICS))
        attribute = metric.replace("cuda", "device").replace("xpu", "device")
        attribute = attribute.replace("privateuse1", "device")
        blanks = str.maketrans(" ;\t\n", "____")
        with open(path, "w") as file:
            for event in self:
                value = int(getattr(event, attribute))
                if event.stack and value > 0:
                    frames = ";".join(line.translate(blanks) for line in reversed(event.stack))
                    file.write(f"{frames} {value}\n")

    def table(
        self,
        sort_by: str | None = None,
        row_limit: int = 100,
        max_src_column_width: int = 75,
        max_name_column_width: int = 55,
        max_shapes_column_width: int = 80,
        header: str | None = None,
        top_level_events_only: bool = False,
        time_unit: str | None = None,
    ) -> str:
        from ._profiler_table import table

        if top_level_events_only:
            raise NotImplementedError(
                "EventList.table(top_level_events_only=True): ember's averages do not keep "
                "which calls were nested"
            )
        return table(
            self,
            sort_by,
            row_limit,
            self.profile_memory,
            max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width,
            header=header,
            time_unit=time_unit,
        )


@dataclass
class TraceEvent:
    """One call as the Chrome trace shows it: times in ns of ``time.perf_counter_ns``, the
    inputs' (dims, type) when shapes are recorded, and the bytes it created itself."""

    name: str
    category: str
    start_ns: int
    duration_ns: int
    inputs: tuple | None
    host_bytes: int
    device_bytes: int


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
STACK_METRICS = [
    "self_cpu_time_total",
    "self_cuda_time_total",
    "self_xpu_time_total",
    "self_privateuse1_time_total",
]


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


def _input(value) -> tuple:
    """An input's ``(dims, type)`` as PyTorch's trace writes them ("Input Dims", "Input type")."""
    if isinstance(value, Tensor):
        return list(value._shape), TYPE_NAMES.get(value.dtype.name, value.dtype.name)
    if value is None:
        return [], ""
    if isinstance(value, (tuple, list)):
        tensors = all(isinstance(item, Tensor) for item in value) and value
        return [], "TensorList" if tensors else "ScalarList"
    return [], "Scalar"


def _inputs(args) -> tuple:
    return tuple(_input(a) for a in args)


# ember's dtype names -> the C++ scalar type names PyTorch's trace writes ("Input type").
TYPE_NAMES = {
    "float32": "float",
    "float64": "double",
    "float16": "c10::Half",
    "bfloat16": "c10::BFloat16",
    "int64": "long int",
    "int32": "int",
    "int16": "short int",
    "int8": "signed char",
    "uint8": "unsigned char",
    "bool": "bool",
    "complex64": "c10::complex<float>",
    "complex128": "c10::complex<double>",
}


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
        self.trace: list[TraceEvent] = []  # every call, in the order they ended

    def enter(self, args) -> tuple:
        self.children.append([0, 0, 0])
        if self.memory:
            self.seen.update(id(t._storage) for t in _tensors(args))
        where = _caller_stack() if self.stack else None
        return time.perf_counter_ns(), where

    def leave(self, name: str, start: tuple, args, result, category: str = "cpu_op") -> None:
        elapsed = time.perf_counter_ns() - start[0]
        nested = self.children.pop()
        host, device = self._created(result) if self.memory else (0, 0)
        totals = (elapsed, host + nested[1], device + nested[2])
        if self.children:
            for i, value in enumerate(totals):
                self.children[-1][i] += value
        else:
            self.seen.clear()  # a top-level call is over: its storages' ids may be reused
        inputs = _inputs(args) if self.shapes else None
        self.trace.append(TraceEvent(name, category, start[0], elapsed, inputs, host, device))
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
        return EventList(groups.values(), profile_memory=options["memory"])


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
