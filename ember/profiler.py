"""A profiler as a dispatch layer: ``with ember.profiler.profile() as prof: ...``.

Like ``torch.profiler.profile``: every op called inside the block (forward ops, the ops that
backward formulas run, optimizer updates) is timed, and ``prof.key_averages().table()`` prints
count, total and self time per op, self time being what remains after the ops the op called
itself (a composite's decomposition, a backward formula's parts). ``record_function(name)`` marks
a user region the same way. The layer sits at the top of the stack (priority 400), so an op's time
includes the autograd recording below it; outside a ``profile`` block (or outside the recording
steps of its ``schedule``) it is not installed and costs nothing.

PyTorch's options are honoured: ``record_shapes`` (``key_averages(group_by_input_shape=True)``),
``profile_memory`` (bytes each op allocates less bytes freed, self and total, per host or
device, from the allocation routes of the caching allocator, and each allocation and free as a
``[memory]`` event in the trace), ``with_stack`` (the user's Python calls as PyTorch's Python
tracer records them: ``python_function`` events enclosing the ops in the trace and rows of their
own; each op's call site for ``group_by_stack_n``), ``with_flops`` (matrix products),
``with_modules`` (each ``nn.Module`` call as a ``nn.Module: Linear_0`` scope around its ops,
in the trace and in every op's ``stack``; PyTorch records the scopes only with its Python tracer,
ember with either option), ``schedule`` and ``on_trace_ready``.
``prof.export_chrome_trace(path)`` writes PyTorch's Chrome trace-event JSON (Perfetto,
chrome://tracing), ``tensorboard_trace_handler(dir)`` one file per recorded span, and
``prof.export_stacks(path)`` flame-graph lines. What ember cannot do is said with a warning:
device activities are timed as their host calls.
"""

from __future__ import annotations

import enum
import functools
import warnings
from collections.abc import Callable

from . import _profiler_modules
from ._profiler_events import _STACK_DEPTH, EventList, FunctionEventAvg, Recorder
from ._profiler_python import PythonTracer
from ._profiler_trace import tensorboard_trace_handler, write_chrome_trace
from .dispatcher import memory
from .dispatcher.layers import STACK, Layer

__all__ = [
    "EventList",
    "FunctionEventAvg",
    "ProfilerAction",
    "ProfilerActivity",
    "kineto_available",
    "profile",
    "record_function",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
]


class ProfilerActivity(enum.Enum):
    """What to profile, as torch names it. ember times host calls for every device."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


def supported_activities() -> set[ProfilerActivity]:
    """The activities ember traces on their own: the host's (device ops are timed as their host
    calls, so a device activity adds nothing), as torch answers on a machine without CUPTI."""
    return {ProfilerActivity.CPU}


def kineto_available() -> bool:
    """True, as in torch builds with Kineto: code that asks before using ``torch.profiler``'s
    API (schedules, Chrome traces, ``tensorboard_trace_handler``) finds all of it in ember,
    which writes Kineto's trace format itself."""
    return True


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(
    *,
    wait: int,
    warmup: int,
    active: int,
    repeat: int = 0,
    skip_first: int = 0,
    skip_first_wait: int = 0,
) -> Callable[[int], ProfilerAction]:
    """PyTorch's step schedule: skip ``skip_first`` steps, then cycles of ``wait`` idle,
    ``warmup`` and ``active`` recorded steps, ``repeat`` times (0: forever); ``skip_first_wait``
    shifts every cycle left by ``wait``. ``on_trace_ready`` runs at the end of every active span."""

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        position = step % cycle
        if position < wait:
            return ProfilerAction.NONE
        if position < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if position < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0)."
        )
    if warmup == 0:
        warnings.warn(
            "Profiler won't be using warmup, this can skew profiler results", stacklevel=2
        )
    return schedule_fn


def _always(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


class ProfilingLayer(Layer):
    name = "profiling"
    priority = 400

    def __init__(self, recorder: Recorder):
        self.recorder = recorder

    def wants(self, op, args) -> bool:
        return True

    def handle(self, op, args):
        recorder = self.recorder
        start = recorder.enter(args)
        result = None
        try:
            result = op.redispatch(self, args)
            return result
        finally:
            recorder.leave(op.name, start, args, result)


_ACTIVE: list[Recorder] = []
_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


class profile:  # noqa: N801 - PyTorch's name
    """Profile the ops run inside the block (torch.profiler.profile's arguments).

    Args:
        activities: ProfilerActivity values; device ones are timed as their host calls (warned).
        schedule: ``step -> ProfilerAction`` (see ``schedule``); ``prof.step()`` advances it.
            Without one, the whole block is recorded.
        on_trace_ready: called with the profiler at the end of each recorded span.
        acc_events: keep the events of every span (by default each span starts afresh).
        record_shapes: keep input shapes (``key_averages(group_by_input_shape=True)``).
        profile_memory: bytes each op allocates less bytes freed (``cpu_memory_usage``...).
        with_stack: record the Python calls (trace events and rows) and each op's call site
            (``key_averages(group_by_stack_n=n)``).
        with_flops: floating-point operations of matrix products (``flops``).
        with_modules: each ``nn.Module`` call as a scope, ``nn.Module: <class>_<n>``, around
            its ops: ``python_function`` events in the trace, and the ops' ``stack`` (without
            ``with_stack``, the scopes alone), so ``key_averages(group_by_stack_n=n)`` groups
            by module. ``with_stack`` records the scopes too, as PyTorch's Python tracer does.

    Example:
        >>> with ember.profiler.profile(record_shapes=True) as prof:
        ...     model(x)
        >>> print(prof.key_averages(group_by_input_shape=True).table(row_limit=10))
    """

    def __init__(
        self,
        *,
        activities=None,
        schedule: Callable[[int], ProfilerAction] | None = None,
        on_trace_ready: Callable | None = None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_flops: bool = False,
        with_modules: bool = False,
        experimental_config=None,
        execution_trace_observer=None,
        acc_events: bool = False,
        use_cuda: bool | None = None,
        custom_trace_id_callback=None,
        post_processing_timeout_s: float | None = None,
    ):
        _warn_unsupported(
            activities,
            experimental_config=experimental_config,
            execution_trace_observer=execution_trace_observer,
            use_cuda=use_cuda,
            custom_trace_id_callback=custom_trace_id_callback,
        )
        self.options = {
            "shapes": bool(record_shapes),
            "memory": bool(profile_memory),
            "stack": bool(with_stack),
            "flops": bool(with_flops),
            "modules": bool(with_modules),
        }
        self.schedule = schedule or _always
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = ProfilerAction.NONE
        self.recorder = Recorder(**self.options)
        self.saved = self.recorder
        self.layer = ProfilingLayer(self.recorder)
        self.acc_events = bool(acc_events)
        self.spans = 0  # recording spans started
        self.tracer: PythonTracer | None = None

    # ---- recording spans -------------------------------------------------------------------
    def _start(self) -> None:
        if self.spans and not self.acc_events:
            _warn_once(
                "Warning: Profiler clears events at the end of each cycle. "
                "Only events from the current cycle will be reported. "
                "To keep events across cycles, set acc_events=True."
            )
        if not (self.spans and self.acc_events):  # acc_events: one recorder for every cycle
            self.recorder = Recorder(**self.options)
        self.spans += 1
        self.layer = ProfilingLayer(self.recorder)
        STACK.install(self.layer)
        _ACTIVE.append(self.recorder)
        if self.options["memory"]:
            _watch_memory(self.recorder)
        if self.options["stack"]:
            self.tracer = self.recorder.tracer = PythonTracer(self.recorder)
            self.tracer.start()
        if self.recorder.module_names is not None:
            _profiler_modules.RECORDERS.append(self.recorder)

    def _stop(self, save: bool) -> None:
        if self.recorder in _profiler_modules.RECORDERS:
            _profiler_modules.RECORDERS.remove(self.recorder)
            self.recorder.close_scopes()
        if self.tracer is not None:
            self.tracer.stop()
            self.tracer = self.recorder.tracer = None
        STACK.remove(self.layer)
        if self.recorder in _ACTIVE:
            _ACTIVE.remove(self.recorder)
        _unwatch_memory(self.recorder)
        self.saved = self.recorder
        if save and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _move_to(self, action: ProfilerAction) -> None:
        before, self.current_action = self.current_action, action
        if before in _RECORDING and (
            action not in _RECORDING or before is ProfilerAction.RECORD_AND_SAVE
        ):
            self._stop(save=before is ProfilerAction.RECORD_AND_SAVE)
            before = ProfilerAction.NONE
        if action in _RECORDING and before not in _RECORDING:
            self._start()

    def start(self) -> None:
        self.step_num = 0
        self._move_to(self.schedule(0))

    def stop(self) -> None:
        if self.current_action in _RECORDING:
            self._stop(save=True)
        self.current_action = ProfilerAction.NONE

    def step(self) -> None:
        """End a training step: the schedule decides whether the next one is recorded."""
        self.step_num += 1
        self._move_to(self.schedule(self.step_num))

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    # ---- results ---------------------------------------------------------------------------
    def key_averages(
        self, group_by_input_shape: bool = False, group_by_stack_n: int = 0, **_options
    ) -> EventList:
        """Per-op (and per input shape / call site, when asked and recorded) totals."""
        if group_by_input_shape and not self.options["shapes"]:
            raise RuntimeError(
                "key_averages(group_by_input_shape=True) needs profile(record_shapes=True)"
            )
        if group_by_stack_n and not (self.options["stack"] or self.options["modules"]):
            raise RuntimeError(
                "key_averages(group_by_stack_n=...) needs profile(with_stack=True) or "
                "profile(with_modules=True)"
            )
        return self.saved.averages(group_by_input_shape, group_by_stack_n, self.options)

    def export_chrome_trace(self, path: str) -> None:
        """Write the last recorded span as Chrome trace-event JSON (Perfetto, chrome://tracing,
        TensorBoard); gzip-compressed when ``path`` ends in ``.gz``."""
        write_chrome_trace(self.saved.trace, self.saved.memory_events, self.options, path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write the call sites' times as flame-graph lines (``with_stack=True`` needed for any)."""
        calls = self.saved.averages(self.options["shapes"], _STACK_DEPTH, self.options)
        calls.export_stacks(path, metric)

    def events(self) -> EventList:
        """The calls, grouped by name (and input shapes and whole stacks, when recorded)."""
        stacks = self.options["stack"] or self.options["modules"]
        return self.saved.averages(self.options["shapes"], _STACK_DEPTH * stacks, self.options)


_MEMORY: list[Recorder] = []  # the recording spans of profile(profile_memory=True)


def _report_memory(nbytes: int, address, device) -> None:
    reserved = 0  # PyTorch reports none for host memory
    if device.type != "cpu":
        allocator = memory.backend_for(device.type).allocator(device.index)
        reserved = allocator.current["reserved_bytes"]
    for recorder in _MEMORY:
        recorder.allocation(nbytes, address, device, reserved)


def _watch_memory(recorder: Recorder) -> None:
    if not _MEMORY:
        memory.observe(_report_memory)
    _MEMORY.append(recorder)


def _unwatch_memory(recorder: Recorder) -> None:
    if recorder in _MEMORY:
        _MEMORY.remove(recorder)
        if not _MEMORY:
            memory.observe(None)


_WARNINGS_SHOWN: set[str] = set()


def _warn_once(message: str) -> None:
    """PyTorch's profiler says some things once per process."""
    if message not in _WARNINGS_SHOWN:
        _WARNINGS_SHOWN.add(message)
        warnings.warn(message, UserWarning, stacklevel=5)  # the caller of prof.step()


def _warn_unsupported(activities, **options) -> None:
    devices = [a for a in activities or () if a is not ProfilerActivity.CPU]
    if devices or options.pop("use_cuda"):
        names = ", ".join(str(a) for a in devices) or "use_cuda"
        warnings.warn(
            f"ember.profiler: {names}: ember times device ops as their host calls (kernel times "
            "on the device are not recorded separately)",
            UserWarning,
            stacklevel=3,
        )
    given = [name for name, value in options.items() if value]
    if given:
        warnings.warn(
            f"ember.profiler: {', '.join(given)} not supported by ember (ignored)",
            UserWarning,
            stacklevel=3,
        )


class record_function:  # noqa: N801 - PyTorch's name
    """Time a user region under ``name`` in every active profile (a no-op otherwise); a context
    manager or, as PyTorch's, a decorator timing each call of the function."""

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        self.starts: list[list] = []  # one entry per open use, so recursion nests

    def __enter__(self):
        self.starts.append([(recorder, recorder.enter(())) for recorder in _ACTIVE])
        return self

    def __exit__(self, *exc):
        for recorder, start in self.starts.pop():
            recorder.leave(self.name, start, (), None, "user_annotation")

    def __call__(self, func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return wrapped
