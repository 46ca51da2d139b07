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


def _device_mem(e) -> str:
    return format_memory(e.self_device_memory_usage)


def _percent(part: float, whole: float) -> str:
    return f"{100 * part / whole:.2f}%" if whole else "0.00%"


def _columns(events, total, profile_memory):
    """(header, width, alignment, cell) per column, in PyTorch's order."""
    name_width = max(len(e.key) for e in events) + 4
    columns = [
        ("Name", name_width, ">", lambda e: e.key),
        ("Self CPU %", _WIDTH, ">", lambda e: _percent(e.self_cpu_time_total, total)),
        ("Self CPU", _WIDTH, ">", lambda e: format_time(e.self_cpu_time_total)),
        ("CPU total %", _WIDTH, ">", lambda e: _percent(e.cpu_time_total, total)),
        ("CPU total", _WIDTH, ">", lambda e: format_time(e.cpu_time_total)),
        ("CPU time avg", _WIDTH, ">", lambda e: format_time(e.cpu_time)),
    ]
    if profile_memory:
        columns += [
            ("CPU Mem", _WIDTH, ">", lambda e: format_memory(e.cpu_memory_usage)),
            ("Self CPU Mem", _WIDTH, ">", lambda e: format_memory(e.self_cpu_memory_usage)),
        ]
        if any(e.device_memory_usage for e in events):
            columns += [
                ("Device Mem", _WIDTH, ">", lambda e: format_memory(e.device_memory_usage)),
                (
                    "Self Device Mem",
                    _WIDTH,
                    ">",
                    lambda e: format_memory(e.self_device_memory_usage),
                ),
            ]
    columns.append(("# of Calls", _WIDTH, ">", lambda e: str(e.count)))
    if any(e.input_shapes is not None for e in events):
        width = max(len(str(e.input_shapes)) for e in events) + 4
        columns.append(("Input Shapes", width, ">", lambda e: str(e.input_shapes)))
    stacks = [e.stack for e in events if e.stack]
    if stacks:
        width = max(len(line) for stack in stacks for line in stack) + 4
        columns.append(("Source Location", width, "<", lambda e: (e.stack or [""])[0]))
    flops = [e.flops for e in events if e.flops > 0]
    if flops:
        power = max(0, min(int(math.log10(min(flops)) // 3), len(_FLOP_UNITS) - 1))
        scale = 10.0 ** (-3 * power)
        columns.append(
            (
                f"Total {_FLOP_UNITS[power]}",
                _WIDTH,
                ">",
                lambda e: f"{e.flops * scale:8.3f}" if e.flops else "--",
            )
        )
    return columns


def table(events, sort_by, row_limit, profile_memory) -> str:
    """PyTorch's layout: a rule, the headers, a rule, the rows, a rule, the self CPU total."""
    if not events:
        return ""
    rows = list(events)
    if sort_by is not None:
        rows.sort(key=lambda e: getattr(e, sort_by), reverse=True)
    if row_limit is not None and row_limit > 0:
        rows = rows[:row_limit]
    total = sum(e.self_cpu_time_total for e in events)
    columns = _columns(events, total, profile_memory)

    def line(values):
        cells = (f"{v:{a}{w}}" for v, (_, w, a, _) in zip(values, columns))
        return (" " * _SPACING).join(cells) + " " * _SPACING

    rule = "".join("-" * w + " " * _SPACING for _, w, _, _ in columns)
    lines = [rule, line([c[0] for c in columns]), rule]
    source = [c[0] for c in columns].index("Source Location") if "Source" in lines[1] else None
    for event in rows:
        lines.append(line([get(event) for _, _, _, get in columns]))
        if source is not None:  # the rest of the call site's frames, then a blank row
            for frame in [*(event.stack or [])[1:], ""]:
                lines.append(line([frame if i == source else "" for i in range(len(columns))]))
    lines += [rule, f"Self CPU time total: {format_time(total)}"]
    return "\n".join(lines) + "\n"
