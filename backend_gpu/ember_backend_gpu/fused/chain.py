"""The kernel text of one fused chain (ember's compiler/fusion.py ``FusedKernel``), per dialect.

``em_fused(outputs..., inputs...)``: outputs contiguous, inputs contiguous at their own shape
and read through the description's broadcast strides; the sizes are constants of the source (a
new shape is a new kernel, as on the CPU). Each step is a device function wrapping its op's
expression from the dialect's table (the eager kernels' own), so a step rounds as the eager op
does. An elementwise chain runs a work-item per element of the collapsed output (a grid-stride
loop); a chain ending in a row op (sum, mean, amax, softmax, log_softmax, layer_norm over the
last dim) runs a work-item per row, which takes the CPU kernel's passes over its row: the steps
and the row's statistic, then softmax's exponentials and scale, log_softmax's log-sum-exp,
layer_norm's centred variance and affine map.

``source`` returns None for what it does not know (an op missing from the dialect's table, a
dtype, a row op that is not last, a description field it does not read), so the chain replays
op by op: never wrong numbers.
"""

from __future__ import annotations

import dataclasses
import math

from ..launch import coalesce
from .dialect import C_TYPES, TOKENS, Dialect

ROW = frozenset(("sum", "mean", "amax", "softmax", "log_softmax", "layer_norm"))
REDUCE = frozenset(("sum", "mean", "amax"))
# The FusedKernel fields this generator reads; a description that sets another (a later
# fusion feature) is declined rather than half understood.
KNOWN = frozenset(("device_type", "shape", "dtype", "inputs", "steps", "outputs", "segments",
                   "writes"))  # fmt: skip
KERNEL = "em_fused"


def known(d) -> bool:
    """Whether every field of ``d`` is one this generator reads, set to what it handles."""
    if dataclasses.is_dataclass(d):
        extra = {f.name for f in dataclasses.fields(d)} - KNOWN
        if any(getattr(d, name) not in (None, (), {}, False, 0) for name in extra):
            return False
    return d.dtype in TOKENS and all(i.dtype in C_TYPES for i in d.inputs)


def step_functions(d, dialect: Dialect, count: int) -> list | None:
    """A device function per step of the first ``count`` (``em_s<n>``), or None when an op or
    its dtype is missing from the dialect's table."""
    token = TOKENS[d.dtype]
    ct = C_TYPES[d.dtype]
    lines = [f"#define ct {ct}"]
    for n, step in enumerate(d.steps[:count]):
        expression = dialect.expressions.get(step.op, {}).get(token)
        if expression is None or step.op in ROW or len(step.args) not in (1, 2, 3):
            return None
        names = ("x",) if len(step.args) == 1 else ("a", "b", "c")[: len(step.args)]
        types = [_arg_type(d, arg, ct) for arg in step.args]
        params = ", ".join(f"{t} {v}" for t, v in zip(types, names))
        out = "int" if step.dtype == "bool" else ct
        bound = dialect.params.format(*_params(step))
        lines += [
            f"{dialect.fn} {out} em_s{n}({params}) {{",
            f"    {bound}",
            f"    return ({expression});",
            "}",
        ]
    lines.append("#undef ct")
    return lines


def _params(step) -> tuple:
    """The expression's parameters: GELU's form (1: tanh), as the eager glue passes it."""
    if step.op == "gelu":
        return ("1.0" if step.params.get("approximate") == "tanh" else "0.0", "0.0", "0.0")
    return ("0.0", "0.0", "0.0")


def _arg_type(d, arg, ct: str) -> str:
    kind, value = arg
    if kind == "input":
        return "int" if d.inputs[value].dtype == "bool" else ct
    if kind == "step":
        return "int" if d.steps[value].dtype == "bool" else ct
    return ct


def operand(arg, dialect: Dialect, dtype: str) -> str:
    kind, value = arg
    if kind == "input":
        return f"v{value}"
    if kind == "step":
        return f"s{value}"
    return dialect.literal(value, dtype)


def body(d, dialect: Dialect, index: list, count: int, indent: str) -> list:
    """Lines loading every input at ``index[k]`` and computing the first ``count`` steps."""
    lines = []
    for k, spec in enumerate(d.inputs):
        load = f"i{k}[{index[k]}]"
        if spec.dtype == "bool":
            lines.append(f"{indent}int v{k} = {load} != 0;")
        else:
            lines.append(f"{indent}{C_TYPES[d.dtype]} v{k} = {load};")
    for n, step in enumerate(d.steps[:count]):
        ct = "int" if step.dtype == "bool" else C_TYPES[d.dtype]
        args = ", ".join(operand(a, dialect, d.dtype) for a in step.args)
        lines.append(f"{indent}{ct} s{n} = em_s{n}({args});")
    return lines


def signature(d, dialect: Dialect) -> tuple[list, list]:
    """``(parameter declarations, lines making each pointer its tensor's first element)``."""
    params, bases = [], []
    for k, index in enumerate(d.outputs):
        ct = dialect.u8 if d.steps[index].dtype == "bool" else C_TYPES[d.dtype]
        params += dialect.pointer(ct, f"o{k}", False)
        bases.append(dialect.base(ct, f"o{k}", False))
    for k, spec in enumerate(d.inputs):
        ct = dialect.u8 if spec.dtype == "bool" else C_TYPES[spec.dtype]
        params += dialect.pointer(ct, f"i{k}", True)
        bases.append(dialect.base(ct, f"i{k}", True))
    return params, [b for b in bases if b]


def unravel(sizes: list, strides: list, at: str, indent: str, i64: str) -> list:
    """Lines setting ``b<k>``, input k's offset of the element (or row) ``at`` of the collapsed
    space ``sizes``, innermost dimension first."""
    lines = [f"{indent}{i64} rem = {at}, q = 0; (void)q;"]
    lines += [f"{indent}{i64} b{k} = 0;" for k in range(len(strides))]
    for dim in range(len(sizes) - 1, -1, -1):
        if dim:
            lines.append(f"{indent}q = rem % {sizes[dim]}; rem /= {sizes[dim]};")
        value = "q" if dim else "rem"
        lines += [f"{indent}b{k} += {value} * {s[dim]};" for k, s in enumerate(strides) if s[dim]]
    return lines


def source(d, dialect: Dialect) -> tuple[str, int] | None:
    """``(text, work items)`` of ``d``'s kernel (the dialect's prelude not included), or None."""
    if not known(d) or getattr(d, "segments", ()):
        return None
    *body_steps, last = d.steps
    row = last.op in ROW
    if any(s.op in ROW for s in body_steps) or (row and last.op not in _ROW_TEXT):
        return None
    functions = step_functions(d, dialect, len(d.steps) - row)
    if functions is None:
        return None
    params, bases = signature(d, dialect)
    lines = [*functions, f"{dialect.kernel} {KERNEL}({', '.join(params)}) {{", *bases]
    strides = [list(i.strides) for i in d.inputs]
    if row:
        n = d.shape[-1]
        outer, ostrides = coalesce(tuple(d.shape[:-1]) or (1,), [s[:-1] or [0] for s in strides])
        rows = math.prod(d.shape[:-1])
        work = rows
        lines.append(_grid_loop(dialect, "r", rows))
        lines += unravel(list(outer), [list(s) for s in ostrides], "r", " " * 8, dialect.i64)
        lines += _ROW_TEXT[last.op](d, dialect, [s[-1] for s in strides], n)
    else:
        work = math.prod(d.shape)
        sizes, collapsed = coalesce(tuple(d.shape) or (1,), [s or [0] for s in strides])
        lines.append(_grid_loop(dialect, "i", work))
        lines += unravel(list(sizes), [list(s) for s in collapsed], "i", " " * 8, dialect.i64)
        lines += body(d, dialect, [f"b{k}" for k in range(len(d.inputs))], len(d.steps), " " * 8)
        lines += [f"        o{k}[i] = s{index};" for k, index in enumerate(d.outputs)]
    lines += ["    }", "}"]
    return "\n".join(lines) + "\n", work


def _grid_loop(dialect: Dialect, var: str, count: int) -> str:
    """A grid-stride loop over ``count`` items (elements or rows)."""
    start, step = dialect.gid, dialect.gsize
    return f"    for ({dialect.i64} {var} = {start}; {var} < {count}; {var} += {step}) {{"


# ---- row ops: one work-item per row ------------------------------------------------------------
def _first_pass(d, dialect: Dialect, inner: list, start: str, update: str) -> list:
    """The row's first pass: the steps, the stored ones written, the row op's input kept in its
    output row (softmax, log_softmax, layer_norm) and folded into the statistic ``acc``."""
    last = len(d.steps) - 1
    x = d.steps[last].args[0][1]
    index = [f"b{k} + j * {s}" if s else f"b{k}" for k, s in enumerate(inner)]
    n = d.shape[-1]
    lines = [f"        {start}", f"        for ({dialect.i64} j = 0; j < {n}; j++) {{"]
    lines += body(d, dialect, index, last, " " * 12)
    stored = [(k, i) for k, i in enumerate(d.outputs) if i != last]
    lines += [f"            o{k}[r * {n} + j] = s{i};" for k, i in stored]
    if d.steps[last].op not in REDUCE:
        lines.append(f"            {_row_out(d)}[r * {n} + j] = s{x};")
    lines += ["            " + update.format(x=f"s{x}"), "        }"]
    return lines


def _row_out(d) -> str:
    return f"o{d.outputs.index(len(d.steps) - 1)}"


def _lowest(d, dialect) -> str:
    return f"{C_TYPES[d.dtype]} acc = {dialect.literal(float('-inf'), d.dtype)};"


MAX = "acc = ({x} != {x} || {x} > acc) ? {x} : acc;"  # a NaN, once taken, stays


def _reduce(d, dialect, inner, n) -> list:
    ct = C_TYPES[d.dtype]
    op = d.steps[-1].op
    if op == "amax":
        lines = _first_pass(d, dialect, inner, _lowest(d, dialect), MAX)
        value = "acc"
    else:
        lines = _first_pass(d, dialect, inner, f"{dialect.acc} acc = 0;", "acc += {x};")
        value = f"({ct})(acc / {n})" if op == "mean" else f"({ct})acc"
    return lines + [f"        {_row_out(d)}[r] = {value};"]


def _softmax(d, dialect, inner, n) -> list:
    ct = C_TYPES[d.dtype]
    lines = _first_pass(d, dialect, inner, _lowest(d, dialect), MAX)
    row = f"{_row_out(d)}[r * {n} + j]"
    loop = f"        for ({dialect.i64} j = 0; j < {n}; j++)"
    if d.steps[-1].op == "softmax":
        return lines + [
            f"        {dialect.acc} total = 0;",
            f"{loop} {{ {ct} e = exp(({ct})({row} - acc)); {row} = e; total += e; }}",
            f"        {ct} sum = ({ct})total;",
            f"{loop} {row} = {row} / sum;",
        ]
    return lines + [
        f"        {dialect.acc} total = 0;",
        f"{loop} total += exp(({ct})({row} - acc));",
        f"        {ct} lse = log(({ct})total);",
        f"{loop} {row} = ({ct})({row} - acc) - lse;",
    ]


def _layer_norm(d, dialect, inner, n) -> list:
    ct = C_TYPES[d.dtype]
    last = d.steps[-1]
    lines = _first_pass(d, dialect, inner, f"{dialect.acc} acc = 0;", "acc += {x};")
    row = f"{_row_out(d)}[r * {n} + j]"
    eps = dialect.literal(last.params["eps"], d.dtype)
    lines += [
        f"        {ct} mean = ({ct})(acc / {n});",
        f"        {dialect.acc} var = 0;",
        f"        for ({dialect.i64} j = 0; j < {n}; j++) {{ {ct} c = ({ct})({row} - mean); "
        f"var += ({ct})(c * c); }}",
        f"        {ct} rstd = ({ct})(1 / sqrt(({ct})(({ct})(var / {n}) + {eps})));",
        f"        for ({dialect.i64} j = 0; j < {n}; j++) {{",
        f"            {ct} y = ({ct})({row} - mean) * rstd;",
    ]
    for arg, sign in zip(last.args[1:3], "*+"):
        if arg[0] == "input":
            k = arg[1]
            at = f"b{k} + j * {inner[k]}" if inner[k] else f"b{k}"
            lines.append(f"            y = y {sign} i{k}[{at}];")
    return lines + [f"            {row} = y;", "        }"]


_ROW_TEXT = {"sum": _reduce, "mean": _reduce, "amax": _reduce, "softmax": _softmax,
             "log_softmax": _softmax, "layer_norm": _layer_norm}  # fmt: skip
