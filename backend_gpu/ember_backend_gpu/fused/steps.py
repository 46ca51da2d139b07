"""A fused chain's steps as device functions, and the lines computing them per element.

Each step becomes ``em_s<n>``, a device function wrapping its op's expression from the
dialect's table (the target's eager elementwise kernels' own), its parameters bound as the
eager glue binds them; ``body`` loads the inputs and calls the functions in order. Shared by
the chain kernels (chain.py, rows.py) and the multi-tensor ones (multi.py).
"""

from __future__ import annotations

import dataclasses
import math

from .dialect import C_TYPES, TOKENS, Dialect

REDUCE = frozenset(("sum", "mean", "amax"))  # row statistics: anywhere in a chain (rows.py)
ROW = REDUCE | {"softmax", "log_softmax", "layer_norm"}
# steps written inline by rows.py, not from the table: ``full`` (a constant) and
# ``scatter_add`` of one value per row along the last dim (reads the position in the row)
INDEXED = frozenset(("full", "scatter_add"))
# The FusedKernel fields the generators read; a description that sets another (a later
# fusion feature) is declined rather than half understood.
KNOWN = frozenset(("device_type", "shape", "dtype", "inputs", "steps", "outputs", "segments",
                   "writes", "features", "dynamic"))  # fmt: skip
# The description features (``FusedKernel.features``) the generators write; a description
# listing another is declined and the scheduler plans the program again without it
FEATURES = frozenset(("row_steps", "row_index", "row_tail"))


# The non-tensor arguments a step may carry (``FusedStep.params``), by op: GELU's form here,
# the row ops' in rows.py; any other is declined
KNOWN_PARAMS = {"gelu": {"approximate"}, "sum": {"keepdim"}, "mean": {"keepdim"},
                "amax": {"keepdim"}, "layer_norm": {"eps"}, "addcmul": {"value"},
                "full": {"value"}}  # fmt: skip


def known(d) -> bool:
    """Whether every field of ``d`` is one this generator reads, set to what it handles."""
    if dataclasses.is_dataclass(d):
        extra = {f.name for f in dataclasses.fields(d)} - KNOWN
        if any(getattr(d, name) not in (None, (), {}, False, 0) for name in extra):
            return False
    features = set(getattr(d, "features", ()))
    if features - FEATURES:
        return False
    # int64 inputs: scatter_add's indices, a row tail's targets, only
    types = {*C_TYPES, "int64"} if features & {"row_index", "row_tail"} else C_TYPES
    return d.dtype in TOKENS and all(i.dtype in types for i in d.inputs)


def step_functions(d, dialect: Dialect, count: int, skip=frozenset()) -> list | None:
    """A device function per step of the first ``count`` (``em_s<n>``; a row statistic and
    an indexed step have none: rows.py accumulates or writes them, as the steps in ``skip``),
    or None when an op or its dtype is missing from the dialect's table, or a step has a
    parameter not bound here."""
    token = TOKENS[d.dtype]
    ct = C_TYPES[d.dtype]
    lines = [f"#define ct {ct}"]
    for n, step in enumerate(d.steps[:count]):
        if set(step.params) - KNOWN_PARAMS.get(step.op, set()):  # an argument not bound here
            return None
        if step.op in REDUCE or step.op in INDEXED or n in skip:
            continue
        expression = dialect.expressions.get(step.op, {}).get(token)
        if expression is None or step.op in ROW or len(step.args) not in (1, 2, 3):
            return None
        bound = _params(step)
        if bound is None:
            return None
        names = ("x",) if len(step.args) == 1 else ("a", "b", "c")[: len(step.args)]
        types = [_arg_type(d, arg, ct) for arg in step.args]
        params = ", ".join(f"{t} {v}" for t, v in zip(types, names))
        out = "int" if step.dtype == "bool" else ct
        bound = dialect.params.format(*bound)
        lines += [
            f"{dialect.fn} {out} em_s{n}({params}) {{",
            f"    {bound}",
            f"    return ({expression});",
            "}",
        ]
    lines.append("#undef ct")
    return lines


def _params(step) -> tuple | None:
    """The expression's parameters as the eager glue passes them: GELU's form (1: tanh),
    addcmul's value (a double, exact; None for one C cannot spell as a literal)."""
    if step.op == "gelu":
        return ("1.0" if step.params.get("approximate") == "tanh" else "0.0", "0.0", "0.0")
    if step.op == "addcmul":
        value = float(step.params.get("value", 1.0))
        return (value.hex(), "0.0", "0.0") if math.isfinite(value) else None
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
