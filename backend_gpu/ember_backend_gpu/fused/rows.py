"""The text of a chain that works a row of the last dim at a time: row statistics in the
middle of the chain (sum, mean, amax with keepdim, read by later steps: feature ``row_steps``)
and a trailing row op (those, softmax, log_softmax, layer_norm), in two shapes.

Rows shorter than ``BLOCK_MIN`` take a work-item each, which walks its row as the CPU kernel
(the CPU plugin's fused_rows.py) does; longer rows take a work-group each (``LANES``
work-items at most, a power of two), as the eager softmax kernels do: every pass strides over
the row by the group's size, and each statistic is folded across the group by a tree in local
(shared) memory (``Row.fold``), so a GPU keeps its threads busy on a few long rows (a
vocabulary's softmax).

The passes follow the CPU kernel's plan: each statistic takes one pass over the row, which
recomputes the element steps it reads from the inputs (rather than keeping them: a work-group
has no room for a row) and accumulates; the per-row steps that read it (``FusedStep.row``:
``rsqrt(var * (1/n) + eps)``) run once per row after the fold, and later passes read them as
row constants. A value something outside reads is stored in the first pass that can compute
it, a per-row one once per row. A last softmax, log_softmax or layer_norm takes its first pass
after every statistic (its input kept in its output row, its max or sum folded on the way),
then its own passes over that row; a work-item reads back only the row elements it wrote
itself, so those passes need no barrier beyond the folds'. Sums accumulate in double where the
device has it.

Cross-entropy's backward adds ``full`` (a constant) and ``scatter_add`` of one value per row
at the row's int64 index (feature ``row_index``: ``j == index ? base + value : base``), the
index checked against the row's length into the device's status word; its forward adds a
tail after the row op (feature ``row_tail``: tail.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import tail
from .dialect import C_TYPES, Dialect
from .steps import INDEXED, REDUCE, operand

LANES = 256  # work-items per row in a work-group (CUDA's launch.BLOCK; OpenCL: at most this)
BLOCK_MIN = 64  # rows at least this long take a work-group (as launch.ROW_BLOCK_MIN)
NORMS = frozenset(("softmax", "log_softmax", "layer_norm"))  # a chain's last step only
SCRATCH = "em_red"  # the local-memory array of the tree reductions
MAX = "{a} = ({x} != {x} || {x} > {a}) ? {x} : {a};"  # a NaN, once taken, stays


@dataclass(frozen=True)
class Row:
    """How one row is walked: by a work-item alone, or by a work-group (``block``)."""

    dialect: Dialect
    n: int
    block: bool

    def loop(self, body: str = "{") -> str:
        i64 = self.dialect.i64
        if self.block:
            d = self.dialect
            return f"        for ({i64} j = {d.lid}; j < {self.n}; j += {d.lsize}) {body}"
        return f"        for ({i64} j = 0; j < {self.n}; j++) {body}"

    def fold(self, var: str, maximum: bool = False) -> list:
        """Lines folding each work-item's ``var`` across the group (every item gets it)."""
        if not self.block:
            return []
        d, red = self.dialect, SCRATCH
        a, b = f"{red}[lid]", f"{red}[lid + s]"
        both = f"{b} != {b} || {b} > {a} ? {b} : {a}"
        combined = f"{a} != {a} ? {a} : ({both})" if maximum else f"{a} + {b}"
        sync = f"{d.barrier};"
        return [
            f"        {red}[lid] = {var}; {sync}",
            f"        for (int s = (int)({d.lsize}) / 2; s > 0; s >>= 1) {{",
            f"            if (lid < s) {a} = {combined};",
            f"            {sync}",
            "        }",
            f"        {var} = {red}[0]; {sync}",
        ]

    def once(self, line: str) -> str:
        """A statement the row makes once (a reduction's result)."""
        return f"        if (lid == 0) {line}" if self.block else f"        {line}"


def head(dialect: Dialect, block: bool) -> list:
    """The kernel's first lines in block mode: the work-item's lane and the reduction array."""
    if not block:
        return []
    return [
        f"    {dialect.shared} {dialect.acc} {SCRATCH}[{LANES}];",
        f"    const int lid = (int){dialect.lid};",
    ]


def rowwise(d) -> bool:
    """Whether ``d`` runs a row at a time: a row statistic anywhere, a row op last, or a step
    that reads the position in the row (scatter_add)."""
    return any(s.op in REDUCE or s.op in NORMS or s.op in INDEXED or getattr(s, "row", False)
               for s in d.steps)  # fmt: skip


def indices_known(d) -> bool:
    """Whether every int64 input is a scatter_add's index of one value per row (its last
    stride 0), and only read there, or read by a row tail's steps only: what the compiler's
    ``row_index`` and ``row_tail`` chains hold."""
    end = tail.body_end(d)
    tailed = {a[1] for s in d.steps[end + 1 :] for a in s.args if a[0] == "input"}
    wanted = {k for k, spec in enumerate(d.inputs) if spec.dtype == "int64"} - tailed
    if any(d.inputs[k].strides[-1] for k in tailed):
        return False
    found = set()
    for s in d.steps[: end + 1]:
        for position, (kind, value) in enumerate(s.args):
            if kind != "input" or value not in wanted:
                continue
            if s.op != "scatter_add" or position != 1 or d.inputs[value].strides[-1]:
                return False
            found.add(value)
    return found == wanted


@dataclass(frozen=True)
class Plan:
    """Which pass over the row computes what (the CPU plugin's fused_rows.py's plan)."""

    per_row: tuple  # per step: one value per row (a statistic, or a step of such values)
    ready: tuple  # per step: the passes that must finish before its value is known
    stored: tuple  # (output k, step) of the element values stored
    final: int  # the last pass

    @classmethod
    def of(cls, d) -> Plan:
        last = tail.body_end(d)  # a row tail's steps after it: tail.py
        steps = d.steps[: last + 1]
        norm = steps[last].op in NORMS
        per_row = tuple(s.op in REDUCE or getattr(s, "row", False) for s in steps)
        ready: list = []
        for s in steps:
            before = max((ready[a[1]] for a in s.args if a[0] == "step"), default=0)
            ready.append(before + 1 if s.op in REDUCE else before)
        stored = tuple((k, i) for k, i in enumerate(d.outputs)
                       if i <= last and not per_row[i] and not (norm and i == last))  # fmt: skip
        passes = [ready[i] - 1 for i, s in enumerate(steps) if s.op in REDUCE]
        passes += [ready[i] for _k, i in stored] + ([ready[last]] if norm else [])
        return cls(per_row, tuple(ready), stored, max(passes, default=-1))

    def closure(self, steps, roots) -> set:
        """The element steps that ``roots`` need (per-row values are known already)."""
        found: set = set()
        todo = [n for n in roots if not self.per_row[n]]
        while todo:
            n = todo.pop()
            if n not in found:
                found.add(n)
                todo += [a[1] for a in steps[n].args if a[0] == "step" and not self.per_row[a[1]]]
        return found


def text(d, dialect: Dialect, inner: list, block: bool) -> list:
    """The lines of ``d``'s row ``r``, whose input offsets are ``b<k>``."""
    row = Row(dialect, d.shape[-1], block)
    plan = Plan.of(d)
    last = tail.body_end(d)
    norm = d.steps[last].op in NORMS
    lines = _row_loads(d, plan, dialect) + _row_steps(d, plan, dialect, 0)
    for p in range(plan.final + 1):
        stats = [
            i
            for i, s in enumerate(d.steps[: last + 1])
            if s.op in REDUCE and plan.ready[i] == p + 1
        ]
        outs = [(k, i) for k, i in plan.stored if plan.ready[i] == p]
        first = norm and p == plan.final  # the row op's first pass
        if stats or outs or first:
            lines += _pass(d, plan, row, inner, stats, outs, first)
        lines += _row_steps(d, plan, dialect, p + 1)
    if norm:
        lines += _NORM[d.steps[last].op](d, row, inner)
    ours = [(k, i) for k, i in enumerate(d.outputs) if i <= last and plan.per_row[i]]
    lines += [row.once(f"o{k}[r] = s{i};") for k, i in ours]
    return lines + (tail.row_lines(d, dialect, row, _out(d)) if tail.has_tail(d) else [])


def _load(d, k: int, index: str, dialect) -> str:
    spec = d.inputs[k]
    if spec.dtype == "bool":
        return f"int v{k} = i{k}[{index}] != 0;"
    ct = dialect.i64 if spec.dtype == "int64" else C_TYPES[d.dtype]
    return f"{ct} v{k} = i{k}[{index}];"


def _row_loads(d, plan: Plan, dialect) -> list:
    """Row-scope loads of the inputs that per-row steps read (broadcast along the row), and of
    scatter_add's indices, each checked against the row's length into the status word."""
    steps = d.steps[: len(plan.per_row)]
    wanted = {a[1] for i, s in enumerate(steps) if plan.per_row[i] and s.op not in REDUCE
              for a in s.args if a[0] == "input"}  # fmt: skip
    indices = {s.args[1][1] for s in steps if s.op == "scatter_add"}
    lines = [f"        {_load(d, k, f'b{k}', dialect)}" for k in sorted(wanted | indices)]
    n = d.shape[-1]
    for k in sorted(indices):
        lines.append(f"        if (v{k} < 0 || v{k} >= {n}) {{ {dialect.fail.format(f'v{k}')} }}")
    return lines


def _compute(d, n: int, dialect) -> str:
    step = d.steps[n]
    ct = "int" if step.dtype == "bool" else C_TYPES[d.dtype]
    args = [operand(a, dialect, d.dtype) for a in step.args]
    if step.op == "full":
        return f"{ct} s{n} = {dialect.literal(step.params['value'], d.dtype)};"
    if step.op == "scatter_add":  # the base plus the row's value at its index (j: the position)
        base, index, value = args
        return f"{ct} s{n} = j == {index} ? ({ct})({base} + {value}) : {base};"
    return f"{ct} s{n} = em_s{n}({', '.join(args)});"


def _row_steps(d, plan: Plan, dialect, at: int) -> list:
    """The per-row elementwise steps known after ``at`` passes, once per row (every
    work-item of a group computes them: no barrier)."""
    return [
        f"        {_compute(d, n, dialect)}"
        for n, s in enumerate(d.steps[: len(plan.per_row)])
        if plan.per_row[n] and s.op not in REDUCE and plan.ready[n] == at
    ]


def _pass(d, plan: Plan, row: Row, inner: list, stats: list, outs: list, first: bool) -> list:
    """One walk over the row: the element steps wanted, the values stored, the statistics
    accumulated (``a<n>``, folded across the group after it, then ``s<n>``); with ``first``, the
    last row op's input written into its output row and its max or sum accumulated (``acc``)."""
    steps, dialect, n = d.steps, row.dialect, row.n
    ct = C_TYPES[d.dtype]
    last = tail.body_end(d)
    reads = [steps[i].args[0] for i in stats] + ([steps[last].args[0]] if first else [])
    roots = [a[1] for a in reads if a[0] == "step"] + [i for _k, i in outs]
    wanted = sorted(plan.closure(steps, roots))
    lines = [f"        {_start(d, dialect, steps[i].op, f'a{i}')}" for i in stats]
    if first:
        lines.append(f"        {_start(d, dialect, steps[last].op, 'acc')}")
    lines.append(row.loop())
    used = {a[1] for i in wanted for a in steps[i].args if a[0] == "input"}
    used |= {a[1] for a in reads if a[0] == "input"}
    index = [f"b{k} + j * {s}" if s else f"b{k}" for k, s in enumerate(inner)]
    lines += [f"            {_load(d, k, index[k], dialect)}" for k in sorted(used)]
    lines += [f"            {_compute(d, i, dialect)}" for i in wanted]
    lines += [f"            o{k}[r * {n} + j] = s{i};" for k, i in outs]
    for i in stats:
        lines.append("            " + _update(steps[i].op, f"a{i}", steps[i].args[0], d, dialect))
    if first:
        x = operand(steps[last].args[0], dialect, d.dtype)
        lines.append(f"            {_out(d)}[r * {n} + j] = {x};")
        lines.append("            " + _update(steps[last].op, "acc", steps[last].args[0], d,
                                              dialect))  # fmt: skip
    lines.append("        }")
    for i in stats:
        lines += row.fold(f"a{i}", steps[i].op == "amax")
        value = f"({ct})(a{i} / {n})" if steps[i].op == "mean" else f"({ct})a{i}"
        lines.append(f"        {ct} s{i} = {value};")
    if first:
        lines += row.fold("acc", steps[last].op != "layer_norm")
    return lines


def _start(d, dialect, op: str, var: str) -> str:
    """An accumulator's declaration: the lowest value for a max, zero for a sum."""
    if op in ("amax", "softmax", "log_softmax"):
        return f"{C_TYPES[d.dtype]} {var} = {dialect.literal(float('-inf'), d.dtype)};"
    return f"{dialect.acc} {var} = 0;"


def _update(op: str, var: str, arg, d, dialect) -> str:
    x = operand(arg, dialect, d.dtype)
    if op in ("amax", "softmax", "log_softmax"):
        return MAX.format(a=var, x=x)
    return f"{var} += {x};"


def _out(d) -> str:
    """The row op's output rows: its stored output, or the scratch rows a tail reads."""
    end = tail.body_end(d)
    return "em_y" if tail.scratch(d) else f"o{d.outputs.index(end)}"


def _softmax(d, row: Row, inner) -> list:
    """softmax and log_softmax after their first pass (the row max in ``acc``)."""
    ct = C_TYPES[d.dtype]
    at = f"{_out(d)}[r * {row.n} + j]"
    lines = [f"        {row.dialect.acc} total = 0;"]
    if d.steps[tail.body_end(d)].op == "softmax":
        return lines + [
            row.loop(f"{{ {ct} e = exp(({ct})({at} - acc)); {at} = e; total += e; }}"),
            *row.fold("total"),
            f"        {ct} sum = ({ct})total;",
            row.loop(f"{at} = {at} / sum;"),
        ]
    return lines + [
        row.loop(f"total += exp(({ct})({at} - acc));"),
        *row.fold("total"),
        f"        {ct} lse = log(({ct})total);",
        row.loop(f"{at} = ({ct})({at} - acc) - lse;"),
    ]


def _layer_norm(d, row: Row, inner) -> list:
    """layer_norm after its first pass (the row sum in ``acc``): the centred second moment,
    then ``(x - mean) * rstd * w + b``."""
    ct, dialect, n = C_TYPES[d.dtype], row.dialect, row.n
    last = d.steps[tail.body_end(d)]
    at = f"{_out(d)}[r * {n} + j]"
    eps = dialect.literal(last.params["eps"], d.dtype)
    lines = [
        f"        {ct} mean = ({ct})(acc / {n});",
        f"        {dialect.acc} var = 0;",
        row.loop(f"{{ {ct} c = ({ct})({at} - mean); var += ({ct})(c * c); }}"),
        *row.fold("var"),
        f"        {ct} rstd = ({ct})(1 / sqrt(({ct})(({ct})(var / {n}) + {eps})));",
        row.loop(),
        f"            {ct} y = ({ct})({at} - mean) * rstd;",
    ]
    for arg, sign in zip(last.args[1:3], "*+"):
        if arg[0] == "input":
            k = arg[1]
            index = f"b{k} + j * {inner[k]}" if inner[k] else f"b{k}"
            lines.append(f"            y = y {sign} i{k}[{index}];")
    return lines + [f"            {at} = y;", "        }"]


_NORM = {"softmax": _softmax, "log_softmax": _softmax, "layer_norm": _layer_norm}
OPS = REDUCE | NORMS  # the row ops a chain may end in
