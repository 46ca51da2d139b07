"""The Chrome trace-event JSON PyTorch's profiler writes (``prof.export_chrome_trace(path)``,
``tensorboard_trace_handler``), loadable by Perfetto, chrome://tracing and TensorBoard's plugin.

Each recorded call is a complete event (``"ph": "X"``, ``ts``/``dur`` in microseconds) on the
recording thread, ``cpu_op`` for ops and ``user_annotation`` for ``record_function`` regions, with
"Input Dims", "Input type", "Input Strides" and "Concrete Inputs" when shapes were recorded;
``with_stack`` adds the Python calls as ``python_function`` events (with "Python id" and "Python
parent id"), ``with_modules`` or ``with_stack`` the ``nn.Module: Linear_0`` scopes of module calls
among them (with "Python module id"); with ``profile_memory`` every allocation and free is an
instant ``[memory]`` event at the time the allocator's route reported it, with PyTorch's args
(positive or negative "Bytes", "Addr", the running "Total Allocated"). The top-level keys are
PyTorch's.
"""

from __future__ import annotations

import gzip
import json
import os
import socket
import threading
import time

from ._profiler_modules import module_id

# PyTorch's c10::DeviceType numbers for the memory events' "Device Type".
DEVICE_TYPES = {"cpu": 0, "cuda": 1, "hip": 6, "xpu": 12, "mps": 13, "meta": 14}
_PRIVATE_USE = 20  # any other device type, as PyTorch numbers an out-of-tree backend


def _metadata(pid: int, tid: int, ts: float) -> list[dict]:
    def meta(name, tid_, args):
        return {"ph": "M", "name": name, "ts": ts, "pid": pid, "tid": tid_, "args": args}

    return [
        meta("process_name", 0, {"name": "python"}),
        meta("process_labels", 0, {"labels": "CPU"}),
        meta("process_sort_index", 0, {"sort_index": pid}),
        meta("thread_name", tid, {"name": f"thread {tid} (python)"}),
        meta("thread_sort_index", tid, {"sort_index": tid}),
    ]


def _op_args(event, index: int) -> dict:
    args = {"External id": index + 1, "Record function id": 0, "Ev Idx": index}
    if event.inputs is not None and event.category == "cpu_op":  # regions have no inputs
        args["Concrete Inputs"] = [value for _, _, _, value in event.inputs]
        args["Input type"] = [kind for _, kind, _, _ in event.inputs]
        args["Input Strides"] = [strides for _, _, strides, _ in event.inputs]
        args["Input Dims"] = [dims for dims, _, _, _ in event.inputs]
    if event.stack:  # as PyTorch writes it with experimental_config verbose=True
        args["Call stack"] = "".join(frame + ";" for frame in event.stack)
    return args


def _python_args(python_events, first_index: int) -> list[dict]:
    """PyTorch's "Python id" (1, 2, ... in start order) and "Python parent id" (the innermost
    Python call enclosing it, or None) of each ``with_stack`` event."""
    out, open_calls = [], []  # open_calls: (end ns, Python id)
    for i, event in enumerate(python_events):
        while open_calls and open_calls[-1][0] < event.start_ns + event.duration_ns:
            open_calls.pop()
        parent = open_calls[-1][1] if open_calls else None
        out.append({"Python parent id": parent, "Python id": i + 1, "Ev Idx": first_index + i})
        open_calls.append((event.start_ns + event.duration_ns, i + 1))
    return out


def _complete_event(event, args: dict, pid: int, tid: int) -> dict:
    return {
        "ph": "X",
        "cat": event.category,
        "name": event.name,
        "pid": pid,
        "tid": tid,
        "ts": event.start_ns / 1000,
        "dur": event.duration_ns / 1000,
        "args": args,
    }


def _memory_event(event, index: int, pid: int, tid: int) -> dict:
    device = event.device
    args = {
        "Total Reserved": event.total_reserved,
        "Total Allocated": event.total_allocated,
        "Bytes": event.nbytes,
        "Device Id": -1 if device.type == "cpu" else (device.index or 0),
        "Device Type": DEVICE_TYPES.get(device.type, _PRIVATE_USE),
        "Addr": event.address or 0,
        "finished": False,
        "Ev Idx": index,
    }
    return {
        "ph": "i",
        "cat": "cpu_instant_event",
        "s": "t",
        "name": "[memory]",
        "pid": pid,
        "tid": tid,
        "ts": event.time_ns / 1000,
        "args": args,
    }


def chrome_trace(events, memory_events, options: dict, path: str) -> dict:
    """The trace document for ``events`` and ``memory_events`` (a Recorder's ``trace`` and
    ``memory_events``), as PyTorch writes it."""
    pid, tid = os.getpid(), threading.get_native_id()
    ordered = sorted(events, key=lambda e: (e.start_ns, -e.duration_ns))
    start = ordered[0].start_ns / 1000 if ordered else 0.0
    trace = _metadata(pid, tid, start)
    ops = [e for e in ordered if e.category != "python_function"]
    trace += [_complete_event(e, _op_args(e, i), pid, tid) for i, e in enumerate(ops)]
    python = [e for e in ordered if e.category == "python_function"]
    for event, args in zip(python, _python_args(python, len(ops))):
        number = module_id(event.name)
        if number is not None:  # an nn.Module scope, as PyTorch marks them
            args["Python module id"] = number
        trace.append(_complete_event(event, args, pid, tid))
    first = len(ordered)
    trace += [_memory_event(e, first + i, pid, tid) for i, e in enumerate(memory_events)]
    return {
        "schemaVersion": 1,
        "deviceProperties": [],
        "with_stack": int(options["stack"]),
        "with_modules": int(options["modules"]),
        "profile_memory": int(options["memory"]),
        "record_shapes": int(options["shapes"]),
        "host_name": socket.gethostname(),
        "displayTimeUnit": "ms",
        # perf_counter's origin is arbitrary: this puts the ts values on the wall clock.
        "baseTimeNanoseconds": time.time_ns() - time.perf_counter_ns(),
        "traceEvents": trace,
        "traceName": path,
    }


def write_chrome_trace(events, memory_events, options: dict, path: str) -> None:
    """Write the trace to ``path``; gzip-compressed when it ends in ``.gz``, as PyTorch does."""
    text = json.dumps(chrome_trace(events, memory_events, options, path))
    if path.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as file:
            file.write(text)
    else:
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)


def tensorboard_trace_handler(
    dir_name: str,
    worker_name: str | None = None,
    use_gzip: bool = False,
    use_python_export: bool = False,
):
    """An ``on_trace_ready`` handler writing ``<worker_name>.<time_ns>.pt.trace.json[.gz]`` into
    ``dir_name`` (TensorBoard's profiler plugin reads that folder); ``worker_name`` defaults to
    ``<hostname>_<pid>``. ``use_python_export`` is accepted (ember always writes from Python)."""

    def handler_fn(prof) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name = file_name + ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn
