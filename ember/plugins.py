"""``python -m ember.plugins`` (also the ``ember.plugins`` command): what the dispatcher can reach.

Shows the backend plugins (name, version, distribution, device types, priority, status and the
reason when unavailable), each available backend's coverage of the op table, third-party op
libraries, CPU-fallback counts of this process, and with ``--explain "add(cpu float32)"`` which
kernel such a call reaches and why.
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap

from .dispatcher import coverage as cov
from .dispatcher import registry
from .dispatcher.devices import REGISTRY, DeviceUnavailableError
from .dispatcher.opdef import Kind
from .dispatcher.plugins import BACKENDS_GROUP, OPS_GROUP, root_cause
from .dispatcher.registry import explain


def _table(rows: list[list[str]], indent: str = "  ") -> str:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        lines.append(indent + "  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
        if n == 0:
            lines.append(indent + "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _backend_rows() -> tuple[list, dict]:
    rows = [["name", "version", "distribution", "device types", "priority", "status"]]
    loaded: dict = {}
    for record in REGISTRY.host.records(BACKENDS_GROUP):
        if not record.ok:
            rows.append(
                [
                    record.name,
                    record.version or "?",
                    record.distribution or "?",
                    "?",
                    "?",
                    f"broken: {record.error}",
                ]
            )
            continue
        types = record.device_types
        priority = REGISTRY.policy.priority(record.name, record.info.get("priority"))
        if not REGISTRY.policy.enabled(record.name):
            status = "disabled by plugins.toml"
        else:
            states = []
            for device_type in types:
                try:
                    backend = REGISTRY.backend(device_type)
                except RuntimeError as exc:
                    states.append(f"{device_type}: unavailable ({_first_line(exc)})")
                    continue
                if backend.record is record:
                    loaded[device_type] = backend
                    count = backend.device_count()
                    states.append(f"{device_type}: available ({count} device{'s' * (count != 1)})")
                else:
                    reason = record.loads.get(device_type)
                    why = (
                        f"{root_cause(reason)}"
                        if isinstance(reason, BaseException)
                        else (f"'{backend.name}' has priority")
                    )
                    states.append(f"{device_type}: not serving ({why})")
            status = "; ".join(states)
        rows.append(
            [
                record.name,
                record.version or "?",
                record.distribution or "(in memory)",
                ",".join(types),
                str(priority),
                status,
            ]
        )
    return rows, loaded


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return " ".join(lines[1:2] or lines[:1])


def _coverage_section(loaded: dict, ops: dict, verbose: bool) -> str:
    rows = [["backend", "device", *cov.CATEGORIES, "ops"]]
    details = []
    for device_type, backend in sorted(loaded.items()):
        result = cov.coverage(device_type, ops)
        counts = result.counts
        rows.append(
            [
                backend.name,
                device_type,
                *(str(counts.get(c, 0)) for c in cov.CATEGORIES),
                str(len(ops)),
            ]
        )
        for category in ("missing", "cpu fallback") + (("decomposition",) if verbose else ()):
            # In-place variants share their functional op's kernel: listing both adds nothing.
            names = [n for n in result.ops(category) if ops[n].inplace_of is None]
            if names:
                details.append(
                    textwrap.fill(
                        ", ".join(names),
                        width=100,
                        initial_indent=f"  {category} on {device_type} ({len(names)}): ",
                        subsequent_indent="    ",
                    )
                )
    return _table(rows) + ("\n" + "\n".join(details) if details else "")


def _op_libraries(loaded: dict) -> str:
    lines = []
    for record in REGISTRY.host.records(OPS_GROUP):
        state = "ok" if record.ok else f"broken: {record.error}"
        if record.distribution:
            source = f"from {record.distribution} {record.version or ''} ({record.target})"
        else:
            source = "(in memory)"
        lines.append(f"  {record.name} {source}: {state}")
    ops = _library_ops()
    if ops:
        lines += ["", _table(_library_rows(ops, loaded))]
    return "\n".join(lines) or "  none"


def _library_ops() -> dict:
    from .library import LIBRARY

    return dict(sorted(LIBRARY.ops.items()))


def _library_rows(ops: dict, loaded: dict) -> list:
    """One row per third-party op: its provider, formula, shape rule and how each available
    device runs it."""
    from .library import LIBRARY

    devices = sorted(loaded)
    rows = [["op", "provided by", "autograd", "shape rule", *devices, "kernels"]]
    try:
        cpu = REGISTRY.backend("cpu")
    except RuntimeError:
        cpu = None
    for name, op in ops.items():
        kernels = "; ".join(
            f"{dev}: {', '.join(dtypes)} ({provider})"
            for dev, provider, dtypes in registry.EXTRA.providers(name)
        )
        rows.append(
            [
                name,
                LIBRARY.provider(name) or "?",
                "yes"
                if op.formula is not None
                else ("n/a" if not op.defn.differentiable else "no"),
                "yes" if op.info.get("shape") is not None else "no",
                *(cov.classify(op, loaded[d], cpu) for d in devices),
                kernels or "none",
            ]
        )
    return rows


def _fallbacks() -> str:
    counts = registry.FALLBACK_COUNTS
    if not counts:
        return "  none"
    return "\n".join(f"  {name}: {count}" for name, count in counts.most_common())


_CALL = re.compile(r"^\s*([\w:.]+)\s*\((.*)\)\s*$")


def explain_call(text: str, ops: dict) -> str:
    """``"add(cpu float32, cpu float32)"`` -> which implementation that call would reach."""
    from . import _dtype as dt

    match = _CALL.match(text)
    if match is None:
        raise SystemExit(f'--explain expects "op(device dtype, ...)", got {text!r}')
    name, args = match.groups()
    op = ops.get(name)
    if op is None:
        raise SystemExit(f"--explain: no op named '{name}'")
    pairs = [a.split() for a in args.split(",") if a.strip()]
    if not pairs or any(len(p) != 2 for p in pairs):
        raise SystemExit(f'--explain: arguments must be "device dtype", got {args!r}')
    device_type = pairs[0][0].split(":")[0]
    dtypes = [dt.ALIASES.get(p[1]) or dt._by_name(p[1]) for p in pairs]
    from .dispatcher.promotion import promote_types

    common = dtypes[0]
    promotes = op.kind is not Kind.LIBRARY  # library kernels are chosen by the first dtype
    for other in dtypes[1:] if promotes else ():
        common = promote_types(common, other)
    try:
        lines = [explain(op, device_type, common)]
    except DeviceUnavailableError as exc:
        lines = [f"{op.name}({device_type} {common.name}): the device is unavailable. {exc}"]
    if len(dtypes) > 1 and promotes:
        lines.insert(0, f"promotion: {' + '.join(d.name for d in dtypes)} -> {common.name}")
    return "\n".join(lines)


def report(verbose: bool = False) -> str:
    ops = all_ops()
    rows, loaded = _backend_rows()
    policy = " + ".join(REGISTRY.policy.sources)
    parts = [
        f"ember plugins (policy: {policy})",
        "",
        f"Backends (entry-point group {BACKENDS_GROUP}):",
        _table(rows),
        "",
        f"Op coverage ({len(ops)} ops: the table and third-party ops):",
        _coverage_section(loaded, ops, verbose) if loaded else "  no backend available",
        "",
        f"Op libraries (entry-point group {OPS_GROUP}):",
        _op_libraries(loaded),
        "",
        "CPU fallback calls in this process:",
        _fallbacks(),
    ]
    return "\n".join(parts)


def all_ops() -> dict:
    """The op table and every third-party op (installed op libraries are loaded), by name."""
    from .dispatcher.optable import OPS
    from .library import load_op_libraries

    load_op_libraries()
    return {**OPS, **_library_ops()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="ember.plugins", description=__doc__.splitlines()[0])
    parser.add_argument("--explain", metavar="CALL", help='e.g. "add(cpu float32, cpu float32)"')
    parser.add_argument("-v", "--verbose", action="store_true", help="also list decompositions")
    args = parser.parse_args(argv)
    if args.explain:
        print(explain_call(args.explain, all_ops()))
        return 0
    print(report(args.verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
