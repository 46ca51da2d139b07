"""The text of a chain's trailing row op (sum, mean, amax, softmax, log_softmax, layer_norm over
the last dim), in two shapes.

Rows shorter than ``BLOCK_MIN`` take a work-item each, which walks its row as the CPU kernel
does: a first pass computes the chain's steps (storing those wanted) and folds the row op's
statistic, softmax and log_softmax take an exponential pass and a scaling pass, layer_norm a
centred-variance pass and the affine pass. Longer rows take a work-group each (``LANES``
work-items at most, a power of two), as the eager softmax kernels do: every pass strides over the
row by the group's size, and each statistic is folded across the group by a tree in local
(shared) memory, so a GPU keeps its threads busy on a few long rows (a vocabulary's softmax).
A work-item reads back only the row elements it wrote itself, so the passes need no barrier
beyond the reductions'. Sums accumulate in double where the device has it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .dialect import C_TYPES, Dialect
from .steps import body

LANES = 256  # work-items per row in a work-group (CUDA's launch.BLOCK; OpenCL: at most this)
BLOCK_MIN = 64  # rows at least this long take a work-group (as launch.ROW_BLOCK_MIN)
REDUCE = frozenset(("sum", "mean", "amax"))  # row ops whose output is one value per row
SCRATCH = "em_red"  # the local-memory array of the tree reductions


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


def text(d, dialect: Dialect, inner: list, block: bool) -> list:
    """The lines of ``d``'s row op for the row ``r`` whose input offsets are ``b<k>``."""
    row = Row(dialect, d.shape[-1], block)
    return _TEXT[d.steps[-1].op](d, row, inner)


def _first_pass(d, row: Row, inner: list, start: str, update: str) -> list:
    """The steps, the stored ones written, the row op's input kept in its output row (softmax,
    log_softmax, layer_norm) and folded into this work-item's ``acc``."""
    last = len(d.steps) - 1
    x = d.steps[last].args[0][1]
    index = [f"b{k} + j * {s}" if s else f"b{k}" for k, s in enumerate(inner)]
    n = row.n
    lines = [f"        {start}", row.loop()]
    lines += body(d, row.dialect, index, last, " " * 12)
    stored = [(k, i) for k, i in enumerate(d.outputs) if i != last]
    lines += [f"            o{k}[r * {n} + j] = s{i};" for k, i in stored]
    if d.steps[last].op not in REDUCE:
        lines.append(f"            {_out(d)}[r * {n} + j] = s{x};")
    return lines + ["            " + update.format(x=f"s{x}"), "        }"]


def _out(d) -> str:
    return f"o{d.outputs.index(len(d.steps) - 1)}"


def _lowest(d, dialect) -> str:
    return f"{C_TYPES[d.dtype]} acc = {dialect.literal(float('-inf'), d.dtype)};"


MAX = "acc = ({x} != {x} || {x} > acc) ? {x} : acc;"  # a NaN, once taken, stays


def _reduce(d, row: Row, inner) -> list:
    ct, dialect = C_TYPES[d.dtype], row.dialect
    op = d.steps[-1].op
    if op == "amax":
        lines = _first_pass(d, row, inner, _lowest(d, dialect), MAX) + row.fold("acc", True)
        value = "acc"
    else:
        start = f"{dialect.acc} acc = 0;"
        lines = _first_pass(d, row, inner, start, "acc += {x};") + row.fold("acc")
        value = f"({ct})(acc / {row.n})" if op == "mean" else f"({ct})acc"
    return lines + [row.once(f"{_out(d)}[r] = {value};")]


def _softmax(d, row: Row, inner) -> list:
    ct, dialect = C_TYPES[d.dtype], row.dialect
    lines = _first_pass(d, row, inner, _lowest(d, dialect), MAX) + row.fold("acc", True)
    at = f"{_out(d)}[r * {row.n} + j]"
    lines.append(f"        {dialect.acc} total = 0;")
    if d.steps[-1].op == "softmax":
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
    ct, dialect, n = C_TYPES[d.dtype], row.dialect, row.n
    last = d.steps[-1]
    lines = _first_pass(d, row, inner, f"{dialect.acc} acc = 0;", "acc += {x};")
    at = f"{_out(d)}[r * {n} + j]"
    eps = dialect.literal(last.params["eps"], d.dtype)
    lines += [
        *row.fold("acc"),
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


_TEXT = {"sum": _reduce, "mean": _reduce, "amax": _reduce, "softmax": _softmax,
         "log_softmax": _softmax, "layer_norm": _layer_norm}  # fmt: skip
OPS = frozenset(_TEXT)
