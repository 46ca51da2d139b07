"""The kernel text of a multi-tensor chain (a compiled optimizer's update), per dialect.

The description (compiler/multi_tensor.py) has ``segments``, the sizes of the tensors it runs
over, and ``writes``: per output, the input it is stored into (the parameter and the states,
updated in place) or None. An input of nonzero stride comes as one tensor per segment (a
parameter, its gradient, a state); an input of stride 0 (a 0-d number: the LR, a bias
correction) as one tensor. The kernel's grid is tensors x blocks: dimension 1 picks the
tensor, dimension 0 strides over its elements, and every element reads all its inputs before
it writes, so the in-place outputs are safe.

How a work-group finds its tensor's pointers differs by target. CUDA/HIP: a table in device
memory, a row per tensor (``[pointer of each per-tensor argument..., size]``), written by the
glue at each call (the gradients are new tensors each step); one launch covers every tensor.
OpenCL has no pointers to hand over: the kernel takes ``slots`` tensors' buffers, offsets and
sizes as arguments and picks its slot with a switch; the glue launches it once per ``slots``
tensors (the device's parameter space bounds them). The sizes are not in the source, so one
program serves every bucket of the same chain.
"""

from __future__ import annotations

from .dialect import C_TYPES, TOKENS, Dialect
from .steps import body, known, step_functions

KERNEL = "em_fused_multi"


def segmented(spec) -> bool:
    return any(spec.strides)


def layout(d) -> list:
    """``(kind, k, ctype, const)`` per per-tensor argument, in the table's (or a slot's) order:
    the outputs not written in place, then the inputs of nonzero stride."""
    found = [("o", k, C_TYPES[d.dtype], False) for k, w in enumerate(d.writes) if w is None]
    written = {w for w in d.writes if w is not None}
    for k, spec in enumerate(d.inputs):
        if segmented(spec):
            found.append(("i", k, C_TYPES[spec.dtype], k not in written))
    return found


def source(d, dialect: Dialect, slots: int = 0) -> str | None:
    """The text of ``d``'s multi-tensor kernel (``slots`` tensors per launch on OpenCL), or
    None where the chain cannot be expressed (the update then runs as before)."""
    if not known(d) or not d.segments or len(d.writes) != len(d.outputs):
        return None
    if any(s.op not in dialect.expressions for s in d.steps) or d.dtype not in TOKENS:
        return None
    functions = step_functions(d, dialect, len(d.steps))
    if functions is None or any(spec.dtype == "bool" for spec in d.inputs):
        return None
    args = layout(d)
    numbers = [k for k, spec in enumerate(d.inputs) if not segmented(spec)]
    i64 = dialect.i64
    params = [] if dialect.offsets else [f"const {i64} *table"]
    if dialect.offsets:
        for s in range(slots):
            for kind, k, ct, const in args:
                params += dialect.pointer(ct, f"{kind}{k}_{s}", const)
            params.append(f"{i64} n_{s}")
    for k in numbers:
        params += dialect.pointer(C_TYPES[d.inputs[k].dtype], f"i{k}", True)
    lines = [*functions, f"{dialect.kernel} {KERNEL}({', '.join(params)}) {{"]
    lines += [dialect.base(C_TYPES[d.inputs[k].dtype], f"i{k}", True) for k in numbers]
    lines += _find_tensor(args, dialect, slots)
    first = f"({i64}){dialect.group[0]} * {dialect.lsize} + {dialect.lid}"
    stride = f"({i64}){dialect.groups} * {dialect.lsize}"
    lines.append(f"    for ({i64} j = {first}; j < n; j += {stride}) {{")
    index = ["j" if segmented(spec) else "0" for spec in d.inputs]
    lines += body(d, dialect, index, len(d.steps), " " * 8)
    for k, step in enumerate(d.outputs):
        target = f"o{k}" if d.writes[k] is None else f"i{d.writes[k]}"
        lines.append(f"        {target}[j] = s{step};")
    lines += ["    }", "}"]
    return "\n".join(line for line in lines if line) + "\n"


def _find_tensor(args, dialect: Dialect, slots: int) -> list:
    """Lines declaring each per-tensor pointer and ``n`` for this work-group's tensor."""
    i64 = dialect.i64
    space = dialect.space
    decl = [f"    {space}{'const ' if c else ''}{ct} *{kind}{k};" for kind, k, ct, c in args]
    if not dialect.offsets:  # a row of the device table
        width = len(args) + 1
        lines = [f"    const {i64} *row = table + ({i64}){dialect.group[1]} * {width};"]
        for column, (kind, k, ct, const) in enumerate(args):
            qual = "const " if const else ""
            lines.append(f"    {qual}{ct} *{kind}{k} = ({qual}{ct} *)row[{column}];")
        return [*lines, f"    const {i64} n = row[{width - 1}];"]
    lines = [*decl, f"    {i64} n = 0;", f"    switch ({dialect.group[1]}) {{"]
    for s in range(slots):
        picks = " ".join(f"{kind}{k} = {kind}{k}_{s}_ + {kind}{k}_{s}_o;" for kind, k, *_ in args)
        lines.append(f"    case {s}: {picks} n = n_{s}; break;")
    return [*lines, "    default: return;", "    }"]
