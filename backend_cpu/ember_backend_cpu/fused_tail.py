"""Row tails: the steps after a row kernel's softmax, log_softmax or layer_norm (feature
``row_tail``; ember's compiler/fusion_tail.py), cross-entropy's forward being the case.

Per row, once its log-probabilities are in ``y`` (the output row, or a scratch row when
nothing outside reads them), the tail's per-row steps (``FusedStep.row``) run once: the
target's mask (``ne``, ``bitwise_not``, ``where`` in int64 and bool), the ``gather`` of
``y`` at the row's index (checked against the row's length into ``flag``: the call raises
gather's IndexError), the cast of the mask to a weight, the weighted negative. A ``sum`` over
every row of such a value (``FusedStep.total``) accumulates in double per thread; after the
rows, the threads' partial sums are added in thread order (one order per thread count) and the
total steps (the mean's division) run once, their values stored as 0-d outputs.
"""

from __future__ import annotations

from . import fused

NORMS = frozenset(("softmax", "log_softmax", "layer_norm"))
_MASKS = {"bitwise_not": "(!{0})", "logical_not": "(!{0})"}
_SAME = frozenset(("unsqueeze", "squeeze", "view", "reshape"))  # a value per row either way
OPS = frozenset(("gather", "sum", "_to_copy", "where")) | frozenset(_MASKS) | _SAME
_INT = {"bool": "int", "int64": "int64_t"}


def body_end(d) -> int:
    """The index of the row op a tail follows (the last step when there is no tail)."""
    for i, step in enumerate(d.steps):
        if step.op in NORMS:
            return i
    return len(d.steps) - 1


def supported(d) -> bool:
    """Whether ``d``'s tail (steps after its row op) is one this generator writes."""
    end = body_end(d)
    tail = d.steps[end + 1 :]
    if not tail:
        return True
    if d.steps[end].op not in NORMS or "row_tail" not in getattr(d, "features", ()):
        return False
    return all(s.op in OPS or s.op in fused.OPS for s in tail)


def totals(d) -> list:
    """The indices of the tail's sums over every row (one partial per thread each)."""
    return [i for i, s in enumerate(d.steps) if getattr(s, "total", False) and s.op == "sum"]


def scratch(d) -> bool:
    """Whether the row op's output row is kept in a per-thread scratch row (not stored)."""
    end = body_end(d)
    return end < len(d.steps) - 1 and end not in d.outputs


def prologue(d, t) -> list:
    """``rows()``'s lines before its loop: the scratch row, the partial sums."""
    lines = [f"    double tot{i} = 0;" for i in totals(d)]
    if scratch(d):
        lines.append(f"    {t} *scratch = ({t} *)malloc({d.shape[-1]} * sizeof({t}));")
    return lines


def epilogue(d) -> list:
    """``rows()``'s lines after its loop: the partial sums handed back."""
    lines = [f"    part[{k}] = tot{i};" for k, i in enumerate(totals(d))]
    return lines + (["    free(scratch);"] if scratch(d) else [])


def row_lines(d, end: int, t: str) -> list:
    """A row's tail: its per-row steps after the row op, their stored values, the sums."""
    lines = []
    n = d.shape[-1]
    for i in range(end + 1, len(d.steps)):
        step = d.steps[i]
        if getattr(step, "total", False):
            if step.op == "sum":
                lines.append(f"        tot{i} += {_operand(step.args[0], t)};")
            continue
        ct = _INT.get(step.dtype, t)
        if step.op == "gather":
            index = _operand(step.args[1], t)
            lines += [
                f"        int64_t g{i} = {index};",
                f"        if (g{i} < 0 || g{i} >= {n}) {{",
                f"            flag[0] = 1; flag[1] = g{i}; g{i} = 0;",
                "        }",
                f"        {ct} s{i} = y[g{i}];",
            ]
            continue
        lines.append(f"        {ct} s{i} = {_expression(d, step, t)};")
    for k, i in enumerate(d.outputs):
        if i > end and not getattr(d.steps[i], "total", False):
            lines.append(f"        o{k}[r] = s{i};")
    return lines


def enter(d) -> list:
    """``ember_fused``'s first lines: ``part``, a row of partial sums per thread."""
    count = len(totals(d))
    if not count:
        return ["    double *part = 0;"]
    return [
        "#ifdef _OPENMP",
        "    int64_t threads = omp_get_max_threads();",
        "#else",
        "    int64_t threads = 1;",
        "#endif",
        f"    double *part = (double *)calloc(threads * {count}, sizeof(double));",
    ]


def part(d) -> str:
    """The ``part`` argument of thread ``t``'s ``rows()`` call."""
    count = len(totals(d))
    return f"part + t * {count}" if count else "part"


def leave(d, t: str) -> list:
    """``ember_fused``'s last lines: the partial sums added in thread order, the total steps
    computed once, their values stored."""
    sums = totals(d)
    if not sums:
        return []
    lines = []
    for k, i in enumerate(sums):
        lines += [
            f"    double a{i} = 0;",
            f"    for (int64_t p = 0; p < threads; p++) a{i} += part[p * {len(sums)} + {k}];",
            f"    {t} s{i} = ({t})a{i};",
        ]
    for i, step in enumerate(d.steps):
        if getattr(step, "total", False) and step.op != "sum":
            lines.append(f"    {t} s{i} = {_expression(d, step, t)};")
    for k, i in enumerate(d.outputs):
        if getattr(d.steps[i], "total", False):
            ct = fused.C_TYPES[d.steps[i].dtype]
            lines.append(f"    (({ct} *)ptrs[{k}])[0] = s{i};")
    return lines + ["    free(part);"]


def _expression(d, step, t: str) -> str:
    args = [_operand(a, t, _integral(d, step)) for a in step.args]
    if step.op in _MASKS:
        return _MASKS[step.op].format(*args)
    if step.op in _SAME:
        return args[0]
    if step.op == "_to_copy":
        return f"(({t}){args[0]})"
    if step.op == "where":  # a select of two values computed already: no blend needed
        return f"({args[0]} ? {args[1]} : {args[2]})"
    if step.op in fused.COMPARE:  # an int64 target against an integer (ignore_index)
        return f"({args[0]} {fused.COMPARE[step.op]} {args[1]})"
    return fused._expression(step, t)  # float arithmetic, comparisons: the eager expressions


def _integral(d, step) -> bool:
    """Whether the step's scalars are integers (a comparison or select of int64 values)."""
    for kind, value in step.args:
        if kind == "input" and d.inputs[value].dtype == "int64":
            return True
        if kind == "step" and d.steps[value].dtype == "int64":
            return True
    return step.dtype == "int64"


def _operand(arg, t: str, integral: bool = False) -> str:
    kind, value = arg
    if kind == "scalar" and integral and float(value).is_integer():
        return f"((int64_t){int(value)})"
    return fused.operand(arg, t)
