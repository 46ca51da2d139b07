"""Row kernels: a fused chain with statistics over the last dim, run one row at a time.

A description (ember's compiler/fusion.py ``FusedKernel``) whose steps include row values
(``FusedStep.row``: a sum, mean or amax over the last dim, or an elementwise step that reads
only such values and inputs broadcast along the row) or whose last step is a row op runs a
row per iteration (fused.py's loop over rows, OpenMP over them). Each statistic takes one pass
over the row: the pass computes the element steps it reads and accumulates (sums in double,
max keeping NaN); the per-row steps that read it run once, after the pass; later passes read
them as row constants (``x * sum(g * x, -1, keepdim=True)``: two passes, one kernel). Element
steps are recomputed in each pass that needs them rather than kept: the row's inputs are still
in cache, and the steps are the eager loops' expressions, so each pass gives the same bits.
A value that something outside reads is stored in the first pass that can compute it; a last
softmax, log_softmax or layer_norm takes its first pass after every other statistic, then its
own passes over its output row.
"""

from __future__ import annotations

from . import fused, fused_tail

REDUCE = frozenset(("sum", "mean", "amax"))
NORMS = frozenset(("softmax", "log_softmax", "layer_norm"))
_MAX = "{a} = ({x} != {x} || {x} > {a}) ? {x} : {a};"  # a NaN, once taken, stays


def row_kernel(d, inner_strides, t) -> list:
    """The lines of one row's work (inside ``for r``, after fused._row_bases)."""
    last = fused_tail.body_end(d)  # the row op; a tail's steps follow it (fused_tail.py)
    steps = d.steps[: last + 1]
    norm = steps[last].op in NORMS
    per_row = [s.op in REDUCE or getattr(s, "row", False) for s in steps]
    ready = _ready(steps)  # passes finished before each step's value is known
    stored = [
        (k, i)
        for k, i in enumerate(d.outputs)
        if i <= last and not per_row[i] and not (norm and i == last)
    ]
    passes = [ready[i] - 1 for i, s in enumerate(steps) if s.op in REDUCE]
    passes += [ready[i] for _k, i in stored]
    final = max([*passes, ready[last]] if norm else passes, default=-1)
    lines = _row_loads(d, per_row + [True] * (len(d.steps) - len(steps)))
    if norm:  # the row op's output row: stored, or the thread's scratch row (a tail reads it)
        target = f"o{d.outputs.index(last)} + ob" if last in d.outputs else "scratch"
        lines.append(f"        {t} *restrict y = {target};")
    lines += _row_steps(d, t, per_row, ready, 0)
    for p in range(final + 1):
        stats = [i for i, s in enumerate(steps) if s.op in REDUCE and ready[i] == p + 1]
        outs = [(k, i) for k, i in stored if ready[i] == p]
        tail = norm and p == final
        if stats or outs or tail:
            lines += _pass(d, last, inner_strides, t, stats, outs, tail, per_row)
        lines += _row_steps(d, t, per_row, ready, p + 1)
    ours = [(k, i) for k, i in enumerate(d.outputs) if i <= last and per_row[i]]
    lines += [f"        o{k}[r] = s{i};" for k, i in ours]
    return lines + fused_tail.row_lines(d, last, t)


def _ready(steps) -> list:
    """Per step, the passes over the row that must finish before its value is known: an
    element step is computed in that pass, a statistic is known one pass after its input."""
    ready: list = []
    for s in steps:
        before = max((ready[a[1]] for a in s.args if a[0] == "step"), default=0)
        ready.append(before + 1 if s.op in REDUCE else before)
    return ready


def _row_loads(d, per_row) -> list:
    """Row-scope loads of the inputs per-row steps read (broadcast along the row), and of
    scatter_add's row indices (int64 inputs), each checked against the row's length into
    ``flag`` (a tail's gather checks its own index: fused_tail.py)."""
    wanted = {a[1] for i, s in enumerate(d.steps) if per_row[i] for a in s.args if a[0] == "input"}
    indices = {s.args[1][1] for s in d.steps if s.op == "scatter_add" and s.args[1][0] == "input"}
    t, n = fused.C_TYPES[d.dtype], d.shape[-1]
    lines = ["        " + fused.load_input(k, d.inputs[k], 0, t) for k in sorted(wanted | indices)]
    for k in sorted(indices):
        lines.append(f"        if (v{k} < 0 || v{k} >= {n}) {{ flag[0] = 1; flag[1] = v{k}; }}")
    return lines


def _row_steps(d, t, per_row, ready, at) -> list:
    """The per-row elementwise steps known after ``at`` passes, once per row."""
    return [
        "        " + fused.compute(n, s, t)
        for n, s in enumerate(d.steps[: len(ready)])
        if per_row[n] and s.op not in REDUCE and ready[n] == at
    ]


def _pass(d, last, inner_strides, t, stats, outs, tail, per_row) -> list:
    """One loop over the row: the element steps wanted, the values stored, the statistics
    accumulated (``a<n>``; the row op's, step ``last``, in ``acc``), then the statistics'
    values."""
    steps = d.steps
    reads = [steps[i].args[0] for i in stats] + ([steps[last].args[0]] if tail else [])
    wanted = _closure(steps, per_row, [a[1] for a in reads if a[0] == "step"] +
                      [i for _k, i in outs])  # fmt: skip
    lines = []
    for i in stats:
        init = f"{t} a{i} = -INFINITY;" if steps[i].op == "amax" else f"double a{i} = 0;"
        lines.append(f"        {init}")
    if tail and steps[last].op == "layer_norm":
        lines.append("        double acc = 0;")
    lines.append("        for (int64_t j = lo; j < hi; j++) {")
    used = {a[1] for n in wanted for a in steps[n].args if a[0] == "input"}
    used |= {a[1] for a in reads if a[0] == "input"}
    for k in sorted(used):
        lines.append("            " + fused.load_input(k, d.inputs[k], inner_strides[k], t))
    lines += ["            " + fused.compute(n, steps[n], t) for n in sorted(wanted)]
    lines += [f"            o{k}[ob + j] = s{i};" for k, i in outs]
    for i in stats:
        x = fused.operand(steps[i].args[0], t)
        update = _MAX.format(a=f"a{i}", x=x) if steps[i].op == "amax" else f"a{i} += {x};"
        lines.append(f"            {update}")
    if tail:  # the row op's input written into its output row; layer_norm sums it on the way
        x = fused.operand(steps[last].args[0], t)
        lines.append(f"            y[j] = {x};")
        if steps[last].op == "layer_norm":
            lines.append(f"            acc += {x};")
    lines.append("        }")
    n = d.shape[-1]
    for i in stats:
        value = f"({t})(a{i} / {n})" if steps[i].op == "mean" else f"({t})a{i}"
        lines.append(f"        {t} s{i} = {value};")
    if tail:
        lines += _norm(d, last, inner_strides, t)
    return lines


def _closure(steps, per_row, roots) -> set:
    """The element steps that ``roots`` need (per-row values are known already)."""
    found: set = set()
    todo = [n for n in roots if not per_row[n]]
    while todo:
        n = todo.pop()
        if n not in found:
            found.add(n)
            todo += [a[1] for a in steps[n].args if a[0] == "step" and not per_row[a[1]]]
    return found


def helpers(d) -> list:
    """Functions the row kernel calls, before it in the source: a last softmax or log_softmax's
    row max and sums, as the eager kernel (csrc/nn.c) computes them, so that GCC vectorises
    them without -ffast-math: the max over the floats' order-preserving integer keys (NaN
    tracked beside it and winning), sums in 64-byte vector lanes added in order at the end."""
    if d.steps[fused_tail.body_end(d)].op not in ("softmax", "log_softmax"):
        return []
    t = fused.C_TYPES[d.dtype]
    i, bits = ("int32_t", 32) if t == "float" else ("int64_t", 64)
    lanes = 64 // (4 if t == "float" else 8)
    return [
        f"typedef {t} row_vec __attribute__((vector_size(64)));",
        f"static const {i} ROW_MIN = ({i})((uint64_t)1 << {bits - 1});",
        f"static inline {t} row_max(const {t} *v, int64_t n) {{",
        f"    {i} best = ROW_MIN;",
        "    int nan = 0;",
        "    for (int64_t k = 0; k < n; k++) {",
        f"        {i} b;",
        "        memcpy(&b, v + k, sizeof b);",
        f"        {i} key = b ^ ((b >> {bits - 1}) & ~ROW_MIN);",
        "        best = key > best ? key : best;",
        "        nan |= v[k] != v[k];",
        "    }",
        f"    {i} b = best ^ ((best >> {bits - 1}) & ~ROW_MIN);",
        f"    {t} peak;",
        "    memcpy(&peak, &b, sizeof peak);",
        f"    return nan ? ({t})NAN : peak;",
        "}",
        # exps: the sum of em_exp(v - shift) instead of v (log_softmax keeps its row)
        f"static inline {t} row_sum(const {t} *v, int64_t n, int exps, {t} shift) {{",
        "    row_vec acc = {0}, x;",
        f"    {t} total = 0, e[{lanes}];",
        "    int64_t k = 0;",
        f"    for (; k + {lanes} <= n; k += {lanes}) {{",
        f"        for (int w = 0; w < {lanes}; w++)",
        "            e[w] = exps ? em_exp(v[k + w] - shift) : v[k + w];",
        "        memcpy(&x, e, sizeof x);",
        "        acc += x;",
        "    }",
        f"    for (int w = 0; w < {lanes}; w++) total += acc[w];",
        "    for (; k < n; k++) total += exps ? em_exp(v[k] - shift) : v[k];",
        "    return total;",
        "}",
    ]


def _norm(d, last, inner_strides, t) -> list:
    """The row op's (step ``last``) passes over its output row ``y``, which holds its input;
    ``acc`` is layer_norm's sum of it. softmax and log_softmax take eager's passes
    (csrc/nn.c's softmax_row: the max, the exponentials, their sum, the output)."""
    op, params = d.steps[last].op, d.steps[last].params
    row = "y[j]"
    n = d.shape[-1]
    if op in ("softmax", "log_softmax"):
        lines = [
            f"        {t} peak = row_max(y, {n});",
            "        if (isinf(peak) && peak < 0) peak = 0; /* all -inf: no (-inf) - (-inf) */",
        ]
        if op == "log_softmax":
            log = "logf" if t == "float" else "log"
            return lines + [
                f"        {t} shift = peak + {log}(row_sum(y, {n}, 1, peak));",
                f"        for (int64_t j = 0; j < {n}; j++) y[j] = y[j] - shift;",
            ]
        return lines + [
            f"        for (int64_t j = 0; j < {n}; j++) y[j] = em_exp(y[j] - peak);",
            f"        {t} scale = 1 / row_sum(y, {n}, 0, 0);",
            f"        for (int64_t j = 0; j < {n}; j++) y[j] = y[j] * scale;",
        ]
    # layer_norm: the mean, then the centred second moment, as the decomposition
    weight, bias = d.steps[last].args[1:3]
    lines = [
        f"        {t} mean = ({t})(acc / {n});",
        "        double var = 0;",
        "        for (int64_t j = lo; j < hi; j++) {",
        f"            {t} c = ({t})({row} - mean); var += ({t})(c * c);",
        "        }",
        f"        {t} rstd = ({t})(1 / sqrt(({t})(({t})(var / {n}) + "
        f"({t}){float(params['eps']).hex()})));",
        "        for (int64_t j = lo; j < hi; j++) {",
        f"            {t} z = ({t})({row} - mean) * rstd;",
    ]
    for arg, sign in ((weight, "*"), (bias, "+")):
        if arg[0] == "input":
            k = arg[1]
            index = f"b{k} + j * {inner_strides[k]}" if inner_strides[k] else f"b{k}"
            lines.append(f"            z = z {sign} i{k}[{index}];")
    return lines + [f"            {row} = z;", "        }"]
