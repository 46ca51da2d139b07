"""``EventList.table()``: PyTorch's profiler table (``torch.autograd.profiler_util._build_table``),
same columns, order, units and layout, for the host times ember records."""

from __future__ import annotations

import math

_WIDTH = 12
_SPACING = 2
_FLOP_UNITS = ("FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs")


def format_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def format_memory(nbytes: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def _percent(part: float, whole: float) -> str:
    return f"{100 * part / whole:.2f}%" if whole else "0.00%"


def _trim_name(name: str, width: int | None) -> str:
    if width is not None and len(name) >= width - 3:
        return name[: width - 3] + "..."
    return name


def _trim_path(path: str, width: int) -> str:
    """The end of a long source line, as PyTorch cuts it ("..." in front)."""
    if len(path) > width:
        path = path[len(path) - width :]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


def _cap(width: int, limit: int | None) -> int:
    return width if limit is None else min(width, limit)


def _columns(events, total, profile_memory, layout):
    """(header, width, alignment, cell) per column, in PyTorch's order."""
    name_width = _cap(max(len(e.key) for e in events) + 4, layout["max_name_column_width"])
    clock = layout["clock"]
    columns = [
        ("Name", name_width, ">", lambda e: _trim_name(e.key, layout["max_name_column_width"])),
        ("Self CPU %", _WIDTH, ">", lambda e: _percent(e.self_cpu_time_total, total)),
        ("Self CPU", _WIDTH, ">", lambda e: clock(e.self_cpu_time_total)),
        ("CPU total %", _WIDTH, ">", lambda e: _percent(e.cpu_time_total, total)),
        ("CPU total", _WIDTH, ">", lambda e: clock(e.cpu_time_total)),
        ("CPU time avg", _WIDTH, ">", lambda e: clock(e.cpu_time)),
    ]
    if profile_memory:
        columns += _memory_columns(events)
    columns.append(("# of Calls", _WIDTH, ">", lambda e: str(e.count)))
    if any(e.input_shapes is not None for e in events):
        width = max(len(str(e.input_shapes)) for e in events) + 4
        width = _cap(width, layout["max_shapes_column_width"])
        columns.append(("Input Shapes", width, ">", lambda e: str(e.input_shapes)))
    stacks = [e.stack for e in events if e.stack]
    if stacks:
        width = max(len(line) for stack in stacks for line in stack) + 4
        width = _cap(width, layout["max_src_column_width"])
        source = lambda e: _trim_path((e.stack or [""])[0], width)  # noqa: E731
        columns.append(("Source Location", width, "<", source))
    flops = [e.flops for e in events if e.flops > 0]
    if flops:
        power = max(0, min(int(math.log10(min(flops)) // 3), len(_FLOP_UNITS) - 1))
        scale = 10.0 ** (-3 * power)
        flop = lambda e: f"{e.flops * scale:8.3f}" if e.flops else "--"  # noqa: E731
        columns.append((f"Total {_FLOP_UNITS[power]}", _WIDTH, ">", flop))
    return columns


def _memory_columns(events) -> list:
    columns = [
        ("CPU Mem", _WIDTH, ">", lambda e: format_memory(e.cpu_memory_usage)),
        ("Self CPU Mem", _WIDTH, ">", lambda e: format_memory(e.self_cpu_memory_usage)),
    ]
    if any(e.device_memory_usage for e in events):
        columns += [
            ("Device Mem", _WIDTH, ">", lambda e: format_memory(e.device_memory_usage)),
            ("Self Device Mem", _WIDTH, ">", lambda e: format_memory(e.self_device_memory_usage)),
        ]
    return columns


def _clock(time_unit: str | None):
    scales = {"s": 1e6, "ms": 1e3, "us": 1.0}
    if time_unit not in scales:
        return format_time
    return lambda us: f"{us / scales[time_unit]:.3f}{time_unit}"


def _rows(events, sort_by, row_limit):
    rows = list(events)
    if sort_by is not None:
        attribute = sort_by.replace("cuda", "device").replace("xpu", "device")
        attribute = attribute.replace("privateuse1", "device")
        rows.sort(key=lambda e: getattr(e, attribute), reverse=True)
    # PyTorch stops when the count reaches row_limit: 0 shows none, a negative one all.
    return rows if row_limit is None or row_limit < 0 else rows[:row_limit]


def table(events, sort_by, row_limit, profile_memory, **layout) -> str:
    """PyTorch's layout: a rule, the headers, a rule, the rows, a rule, the self CPU total.

    ``layout``: PyTorch's ``max_name_column_width``, ``max_shapes_column_width``,
    ``max_src_column_width``, ``header`` and ``time_unit``."""
    if not events:
        return ""
    clock = layout["clock"] = _clock(layout.get("time_unit"))
    total = sum(e.self_cpu_time_total for e in events)
    columns = _columns(events, total, profile_memory, layout)

    def line(values):
        cells = (f"{v:{a}{w}}" for v, (_, w, a, _) in zip(values, columns))
        return (" " * _SPACING).join(cells) + " " * _SPACING

    rule = "".join("-" * w + " " * _SPACING for _, w, _, _ in columns)
    lines = [] if layout.get("header") is None else ["=" * (len(rule) - _SPACING), layout["header"]]
    lines += [rule, line([c[0] for c in columns]), rule]
    names = [c[0] for c in columns]
    source = names.index("Source Location") if "Source Location" in names else None
    for event in _rows(events, sort_by, row_limit):
        lines.append(line([get(event) for _, _, _, get in columns]))
        if source is not None:  # the rest of the call site's frames, then a blank row
            for frame in [*(event.stack or [])[1:], ""]:
                frame = _trim_path(frame, columns[source][1])
                lines.append(line([frame if i == source else "" for i in range(len(columns))]))
    lines += [rule, f"Self CPU time total: {clock(total)}"]
    return "\n".join(lines) + "\n"
