"""What ember.profiler records: per-call times, shapes, call sites, allocated and freed bytes and
flops, and their per-key averages with PyTorch's names (``FunctionEventAvg``,
``EventList.table``)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ._profiler_modules import ModuleNames
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
    """One call as the Chrome trace shows it: times in ns of ``time.perf_counter_ns`` and the
    inputs' (dims, type) when shapes are recorded."""

    name: str
    category: str
    start_ns: int
    duration_ns: int
    inputs: tuple | None
    stack: tuple | None = None  # the call site's frames, innermost first (with_stack)


@dataclass
class MemoryEvent:
    """One allocation (positive ``nbytes``) or free (negative) as the caching allocator's route
    reported it, with the bytes this profile has seen allocated on that device after it."""

    time_ns: int
    nbytes: int
    address: int | None
    device: object
    total_allocated: int
    total_reserved: int


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

_STACK_DEPTH = 1 << 16  # export_stacks keeps whole call stacks, as PyTorch's does
STACK_METRICS = [
    "self_cpu_time_total",
    "self_cuda_time_total",
    "self_xpu_time_total",
    "self_privateuse1_time_total",
]


def _shapes(args) -> tuple:
    return tuple(tuple(a._shape) if isinstance(a, Tensor) else () for a in args)


def _input(value) -> tuple:
    """An input as PyTorch's trace writes it: ("Input Dims", "Input type", "Input Strides",
    "Concrete Inputs") entries."""
    if isinstance(value, Tensor):
        kind = TYPE_NAMES.get(value.dtype.name, value.dtype.name)
        return list(value._shape), kind, list(value._stride), ""
    if value is None:
        return [], "", [], ""
    if isinstance(value, (tuple, list)):
        if value and all(isinstance(item, Tensor) for item in value):
            dims = [list(t._shape) for t in value]
            return dims, "TensorList", [list(t._stride) for t in value], ""
        return [], "ScalarList", [], "[" + ", ".join(_concrete(v) for v in value) + "]"
    return [], "Scalar", [], _concrete(value)


def _concrete(value) -> str:
    """A scalar as c10 prints it: ``1``, ``0.5``, ``2.`` (an integral float), ``False``, a
    dtype as its ScalarType number."""
    if isinstance(value, float) and value.is_integer():
        return f"{int(value)}."
    name = getattr(value, "name", None)
    if name in SCALAR_TYPES and not isinstance(value, (int, float, str)):
        return str(SCALAR_TYPES[name])
    return str(value)


# c10::ScalarType numbers, which PyTorch's trace writes for a dtype argument.
SCALAR_TYPES = {
    "uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5, "float32": 6,
    "float64": 7, "complex64": 9, "complex128": 10, "bool": 11, "bfloat16": 15,
}  # fmt: skip


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


class Recorder:
    """Accumulates per (name, input shapes, call site): count, inclusive and self ns, bytes
    allocated less bytes freed (host, device; inclusive and self) and flops. A stack of the open
    events gives self figures: an allocation or free counts for the innermost open op, as
    PyTorch's profiler attributes its allocator's reports."""

    def __init__(self, shapes=False, memory=False, stack=False, flops=False, modules=False):
        self.shapes, self.memory, self.stack, self.flops = shapes, memory, stack, flops
        self.tracer = None  # the PythonTracer of the span being recorded (with_stack)
        # nn.Module scopes: recorded with with_modules, and with with_stack as PyTorch does
        self.module_names = ModuleNames() if modules or stack else None
        self.scopes: list[tuple] = []  # open scopes the tracer does not hold: (name, start)
        self.stats: dict[tuple, list] = {}
        # per open event: [nested ns, nested host bytes, nested device bytes, own host, own device]
        self.children: list[list] = []
        self.trace: list[TraceEvent] = []  # every call, in the order they ended
        self.memory_events: list[MemoryEvent] = []
        self.allocated: dict[tuple, int] = {}  # (device type, index) -> bytes seen in use

    def enter(self, args) -> tuple:
        self.children.append([0, 0, 0, 0, 0])
        # with_stack: the Python calls open around the op, innermost first, as PyTorch's
        # stacks are its Python tracer's open calls; with_modules alone: the module scopes.
        if self.tracer is not None:
            where = self.tracer.stack()
        elif self.module_names is not None:
            where = tuple(name for name, _ in reversed(self.scopes))
        else:
            where = None
        return time.perf_counter_ns(), where

    def enter_module(self, module, frame) -> tuple | None:
        """Open the scope of a module call (``frame``: the call's, which the tracer, when there
        is one, names and closes itself, so scopes and Python calls nest in one stack)."""
        name = self.module_names(module)
        if self.tracer is not None and self.tracer.name_call(frame, name):
            return None
        scope = (name, self.enter_python())
        self.scopes.append(scope)
        return scope

    def leave_module(self, scope: tuple | None) -> None:
        """Close a scope (and any left open inside it); one closed already, when recording
        stopped inside the call, is left alone."""
        if scope is None or not any(s is scope for s in self.scopes):
            return
        while True:
            opened = self.scopes.pop()
            self.leave(opened[0], opened[1], (), None, "python_function")
            if opened is scope:
                return

    def close_scopes(self) -> None:
        """End the scopes still open when recording stops, innermost first."""
        while self.scopes:
            name, start = self.scopes.pop()
            self.leave(name, start, (), None, "python_function")

    def enter_python(self) -> tuple:
        """A Python call's start: its own call site is its parent event, so no stack."""
        self.children.append([0, 0, 0, 0, 0])
        return time.perf_counter_ns(), None

    def leave(self, name: str, start: tuple, args, result, category: str = "cpu_op") -> None:
        elapsed = time.perf_counter_ns() - start[0]
        nested = self.children.pop()
        own = (elapsed - nested[0], nested[3], nested[4])
        totals = (elapsed, nested[1] + own[1], nested[2] + own[2])
        if self.children:
            parent = self.children[-1]
            for i, value in enumerate(totals):
                parent[i] += value
        inputs = _inputs(args) if self.shapes else None
        self.trace.append(TraceEvent(name, category, start[0], elapsed, inputs, start[1]))
        key = (name, _shapes(args) if self.shapes else None, start[1])
        entry = self.stats.get(key)
        if entry is None:
            entry = self.stats[key] = [0] * 8
        for i, value in enumerate((1, totals[0], own[0], totals[1], own[1], totals[2], own[2])):
            entry[i] += value
        if self.flops and name in FLOPS:
            entry[7] += _flops(name, args)

    def allocation(self, nbytes: int, address, device, reserved: int) -> None:
        """An allocation (or, negative, a free) the allocator reported while recording; outside
        every op it counts for a row of its own, ``[memory]``, as in PyTorch."""
        host = device.type == "cpu"
        if self.children:
            self.children[-1][3 if host else 4] += nbytes
        else:
            key = ("[memory]", () if self.shapes else None, None)
            entry = self.stats.get(key)
            if entry is None:
                entry = self.stats[key] = [0] * 8
            entry[0] += 1
            for i in (3, 4) if host else (5, 6):
                entry[i] += nbytes
        key = (device.type, device.index)
        total = self.allocated[key] = self.allocated.get(key, 0) + nbytes
        event = MemoryEvent(time.perf_counter_ns(), nbytes, address, device, total, reserved)
        self.memory_events.append(event)

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
                event.stack = (
                    list(key[2])
                    if key[2]
                    else ([] if options["stack"] or options["modules"] else None)
                )
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
