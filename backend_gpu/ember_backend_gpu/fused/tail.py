"""Row tails (feature ``row_tail``; ember's compiler/fusion_tail.py): the steps after a chain's
softmax, log_softmax or layer_norm, cross-entropy's forward being the case, in the GPU
dialects (the CPU plugin's fused_tail.py is the same plan in C).

Per row, once the row op's output row is written (the stored output, or a scratch row
``em_y`` when nothing outside reads it), the tail's per-row steps (``FusedStep.row``) run once
per row after a barrier, every work-item of the row's group computing them: the target's mask
(``ne``, ``bitwise_not``, ``where`` in int64 and bool), the ``gather`` of the row at the
masked target (checked against the row's length into the status word; every row's index is
kept in ``em_ix`` so the glue names the first bad one, as eager's gather does), the cast of
the mask to a weight, the weighted negative. A ``sum`` over every row (``FusedStep.total``)
is deterministic, not atomic: each row writes its value into ``em_part`` (a column per sum),
and a second kernel, ``em_fused_total``, one work-group, adds each column in a fixed order
(work-item ``l`` the rows ``l, l + L, ...`` in turn, then the group's tree) and runs the total
steps (the mean's division) once, storing them as 0-d outputs.
"""

from __future__ import annotations

# the plan's reading of a description is the CPU plugin's (a dependency of this package)
# (``_integral``: whether a step works on int64 values, a comparison or select of the target)
from ember_backend_cpu.fused_tail import _integral, body_end, scratch, totals

from .dialect import C_TYPES, Dialect
from .steps import operand

MASKS = {"bitwise_not": "(!{0})", "logical_not": "(!{0})"}
SAME = frozenset(("unsqueeze", "squeeze", "view", "reshape"))  # a value per row either way
COMPARE = {"gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==", "ne": "!="}
TOTAL_KERNEL = "em_fused_total"


def has_tail(d) -> bool:
    return body_end(d) < len(d.steps) - 1


def gathers(d) -> list:
    return [i for i in range(body_end(d) + 1, len(d.steps)) if d.steps[i].op == "gather"]


def inline(d, n: int) -> bool:
    """Whether tail step ``n`` is written here rather than from the dialect's table (an
    integer or bool step, a gather, a cast, a reshape, a sum over the rows)."""
    if n <= body_end(d):
        return False
    step = d.steps[n]
    if step.op in MASKS or step.op in SAME or step.op in ("gather", "_to_copy", "sum"):
        return True
    return _integral(d, step) or step.dtype == "bool"


def known(d) -> bool:
    """Whether every tail step is one this module or the dialect's table writes: a gather
    reads the row op's output at a per-row int64 index."""
    end = body_end(d)
    for n in range(end + 1, len(d.steps)):
        step = d.steps[n]
        row, total = getattr(step, "row", False), getattr(step, "total", False)
        if row == total:
            return False
        if step.op == "gather" and (step.args[0] != ("step", end) or not row):
            return False
        if step.op == "sum" and (not total or _scope(d, step.args[0]) != "row"):
            return False
        if total and step.op != "sum" and any(_scope(d, a) == "row" for a in step.args):
            return False
        if any(a == ("step", end) for a in step.args) and step.op != "gather":
            return False
    return True


def _scope(d, arg) -> str:
    kind, value = arg
    if kind != "step":
        return "row" if kind == "input" else "scalar"
    step = d.steps[value]
    return "total" if getattr(step, "total", False) else "row"


def _operand(d, arg, dialect: Dialect, integral: bool) -> str:
    kind, value = arg
    if kind == "scalar" and integral and float(value).is_integer():
        return f"(({dialect.i64}){int(value)})"
    return operand(arg, dialect, d.dtype)


def _type(d, step, dialect: Dialect) -> str:
    if step.dtype == "bool":
        return "int"
    return dialect.i64 if step.dtype == "int64" else C_TYPES[d.dtype]


def expression(d, n: int, dialect: Dialect) -> str:
    """Step ``n``'s value (``v<k>``: the per-row inputs, ``s<m>``: earlier steps)."""
    step = d.steps[n]
    integral = _integral(d, step)
    args = [_operand(d, a, dialect, integral) for a in step.args]
    if step.op in MASKS:
        return MASKS[step.op].format(*args)
    if step.op in SAME:
        return args[0]
    if step.op == "_to_copy":
        return f"(({C_TYPES[d.dtype]}){args[0]})"
    if step.op == "where":
        return f"({args[0]} ? {args[1]} : {args[2]})"
    if step.op in COMPARE and (integral or step.dtype == "bool"):
        return f"({args[0]} {COMPARE[step.op]} {args[1]})"
    return f"em_s{n}({', '.join(args)})"


def row_lines(d, dialect: Dialect, row, out: str) -> list:
    """A row's tail after its row op's passes (``out``: the output rows, ``row``: rows.Row):
    a barrier (the gather reads what other work-items wrote), the per-row steps, the stored
    values and the sums' column entries, written once per row."""
    end, n = body_end(d), d.shape[-1]
    lines = [f"        {dialect.gbarrier};"] if row.block else []
    wanted = sorted({a[1] for s in d.steps[end + 1 :] for a in s.args if a[0] == "input"})
    for k in wanted:
        ct = dialect.i64 if d.inputs[k].dtype == "int64" else C_TYPES[d.dtype]
        if d.inputs[k].dtype == "bool":
            lines.append(f"        int v{k} = i{k}[b{k}] != 0;")
        else:
            lines.append(f"        {ct} v{k} = i{k}[b{k}];")
    for i in range(end + 1, len(d.steps)):
        step = d.steps[i]
        if getattr(step, "total", False):
            if step.op == "sum":
                column = totals(d).index(i)
                x = operand(step.args[0], dialect, d.dtype)
                lines.append(row.once(f"em_part[{column} * {_rows(d)} + r] = {x};"))
            continue
        if step.op == "gather":
            g = operand(step.args[1], dialect, d.dtype)
            lines += [
                f"        {dialect.i64} g{i} = {g};",
                row.once(f"em_ix[r] = g{i};"),
                f"        if (g{i} < 0 || g{i} >= {n}) {{",
                f"            {dialect.fail.format(f'g{i}')} g{i} = 0;",
                "        }",
                f"        {C_TYPES[d.dtype]} s{i} = {out}[r * {n} + g{i}];",
            ]
            continue
        lines.append(f"        {_type(d, step, dialect)} s{i} = {expression(d, i, dialect)};")
    for k, i in enumerate(d.outputs):
        if i > end and not getattr(d.steps[i], "total", False):
            lines.append(row.once(f"o{k}[r] = s{i};"))
    return lines


def _rows(d) -> int:
    count = 1
    for size in d.shape[:-1]:
        count *= size
    return count


def extras(d, itemsize: int) -> list:
    """``(name, kind, bytes)`` of the scratch arguments after the inputs: the row op's output
    rows (``em_y``, kind "ct"), the sums' columns (``em_part``, "acc", 8 bytes an entry) and
    the gathers' indices (``em_ix``, "i64")."""
    rows, n = _rows(d), d.shape[-1]
    found = []
    if scratch(d):
        found.append(("em_y", "ct", rows * n * itemsize))
    if totals(d):
        found.append(("em_part", "acc", len(totals(d)) * rows * 8))
    if gathers(d):
        found.append(("em_ix", "i64", rows * 8))
    return found


def total_kernel(d, dialect: Dialect, row, lanes: int, params: list, bases: list) -> list:
    """``em_fused_total``: one work-group adds each column of ``em_part`` in a fixed order,
    then runs the total steps once and stores them (0-d outputs)."""
    ct = C_TYPES[d.dtype]
    lines = [f"{dialect.kernel} {TOTAL_KERNEL}({', '.join(params)}) {{", *bases]
    lines += [f"    {dialect.shared} {dialect.acc} em_red[{lanes}];",
              f"    const int lid = (int){dialect.lid};"]  # fmt: skip
    for column, i in enumerate(totals(d)):
        lines += [
            f"        {dialect.acc} a{i} = 0;",
            row.loop(f"a{i} += em_part[{column} * {_rows(d)} + j];"),
            *row.fold(f"a{i}"),
            f"        {ct} s{i} = ({ct})a{i};",
        ]
    for i, step in enumerate(d.steps):
        if getattr(step, "total", False) and step.op != "sum":
            lines.append(f"        {_type(d, step, dialect)} s{i} = {expression(d, i, dialect)};")
    for k, i in enumerate(d.outputs):
        if getattr(d.steps[i], "total", False):
            lines.append(f"        if (lid == 0) o{k}[0] = s{i};")
    return [*lines, "}"]
