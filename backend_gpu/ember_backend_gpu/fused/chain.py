"""The kernel text of one fused chain (ember's compiler/fusion.py ``FusedKernel``), per dialect.

``em_fused(outputs..., inputs...)``: outputs contiguous, inputs contiguous at their own shape
and read through the description's broadcast strides; the sizes are constants of the source (a
new shape is a new kernel, as on the CPU). The steps are steps.py's device functions, so a step
rounds as the eager op does. An elementwise chain runs a work-item per element of the collapsed
output (a grid-stride loop); a chain with row statistics (feature ``row_steps``) or ending in
a row op runs a work-item or a work-group per row (rows.py).

``source`` returns None for what it does not know (an op missing from the dialect's table, a
dtype, a softmax, log_softmax or layer_norm that is not last, a description field or feature
it does not read), so the chain replays op by op: never wrong numbers.
"""

from __future__ import annotations

import math

from ..launch import coalesce
from . import rows, tail
from .dialect import C_TYPES, Dialect
from .steps import INDEXED, KNOWN_PARAMS, ROW, body, known, step_functions

KERNEL = "em_fused"


def signature(d, dialect: Dialect) -> tuple[list, list]:
    """``(parameter declarations, lines making each pointer its tensor's first element)``."""
    params, bases = [], []
    for k, index in enumerate(d.outputs):
        # a bool or int64 output (a tail's masked target, which a training pair saves for the
        # one-hot gradient) is stored as its own type; the others in the compute type
        dtype = d.steps[index].dtype
        ct = dialect.ctype(dtype) if dtype in ("bool", "int64") else C_TYPES[d.dtype]
        params += dialect.pointer(ct, f"o{k}", False)
        bases.append(dialect.base(ct, f"o{k}", False))
    for k, spec in enumerate(d.inputs):
        ct = dialect.ctype(spec.dtype)
        params += dialect.pointer(ct, f"i{k}", True)
        bases.append(dialect.base(ct, f"i{k}", True))
    kinds = {"ct": C_TYPES[d.dtype], "acc": dialect.acc, "i64": dialect.i64}
    for name, kind, _bytes in tail.extras(d, 8):  # a row tail's scratch (tail.py)
        params += dialect.pointer(kinds[kind], name, False)
        bases.append(dialect.base(kinds[kind], name, False))
    if checked(d):
        params.append(dialect.status)
    return params, [b for b in bases if b]


def checked(d) -> bool:
    """Whether the kernel reads indices (scatter_add's, a tail's gather), which it checks into
    the device's status word (its last argument): the call then raises the op's IndexError,
    as eager's."""
    return any(s.op in INDEXED or s.op == "gather" for s in d.steps)


def index_error(d) -> tuple:
    """``(op, detail format of the bad value)`` of a checked kernel's IndexError: eager's."""
    dim, size = len(d.shape) - 1, d.shape[-1]
    op = "gather" if tail.gathers(d) else "scatter_add"
    return op, f"index {{bad}} is out of bounds for dim {dim} with size {size}"


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


def source(d, dialect: Dialect, sized=None) -> tuple[str, int, int] | None:
    """``(text, work, lanes)`` of ``d``'s kernel (the dialect's prelude not included): ``work``
    elements or rows, ``lanes`` work-items per row (0: a work-item per element or row); or
    None. ``sized``: for a description with ``dynamic`` dims, the CPU plugin's
    ``fused_sizes.Sizes`` of an elementwise chain (``sizes``): the numbers that change with the
    sizes are ``i64`` kernel arguments after the tensors (``em_<i>``: ``Sizes.varying``), the
    others constants."""
    if not known(d) or getattr(d, "segments", ()):
        return None
    if getattr(d, "dynamic", ()) and (sized is None or rows.rowwise(d)):
        return None
    end = tail.body_end(d)
    *body_steps, last = d.steps[: end + 1]
    row = rows.rowwise(d)
    if any(s.op in rows.NORMS for s in body_steps) or (last.op in ROW and last.op not in rows.OPS):
        return None
    if tail.has_tail(d) and ("row_tail" not in getattr(d, "features", ()) or not tail.known(d)):
        return None
    if set(last.params) - KNOWN_PARAMS.get(last.op, set()) or not rows.indices_known(d):
        return None
    skip = {n for n in range(len(d.steps)) if d.steps[n].op in rows.NORMS or tail.inline(d, n)}
    functions = step_functions(d, dialect, len(d.steps), skip)
    if functions is None:
        return None
    params, bases = signature(d, dialect)
    if sized is not None:
        params += [f"{dialect.i64} em_{i}" for i, v in enumerate(sized.varies) if v]
    lines = [*functions, f"{dialect.kernel} {KERNEL}({', '.join(params)}) {{", *bases]
    strides = [list(i.strides) for i in d.inputs]
    i64 = dialect.i64
    if row:
        outer, ostrides = coalesce(tuple(d.shape[:-1]) or (1,), [s[:-1] or [0] for s in strides])
        work = math.prod(d.shape[:-1])
        block = d.shape[-1] >= rows.BLOCK_MIN
        lines += rows.head(dialect, block)
        if block:  # a work-group per row
            first, step = dialect.group[0], dialect.groups
            lines.append(f"    for ({i64} r = {first}; r < {work}; r += {step}) {{")
        else:
            lines.append(_grid_loop(dialect, "r", work))
        lines += unravel(list(outer), [list(s) for s in ostrides], "r", " " * 8, i64)
        lines += rows.text(d, dialect, [s[-1] for s in strides], block)
        lanes = rows.LANES if block else 0
    else:
        work, lanes = math.prod(d.shape), 0
        sizes, collapsed = coalesce(tuple(d.shape) or (1,), [s or [0] for s in strides])
        count = work
        if sized is not None:  # the numbers that change with the sizes are arguments
            count, _rows, sizes, collapsed, _decl = sized.named()
        lines.append(_grid_loop(dialect, "i", count))
        lines += unravel(list(sizes), [list(s) for s in collapsed], "i", " " * 8, i64)
        lines += body(d, dialect, [f"b{k}" for k in range(len(d.inputs))], len(d.steps), " " * 8)
        lines += [f"        o{k}[i] = s{index};" for k, index in enumerate(d.outputs)]
    lines += ["    }", "}"]
    if tail.totals(d):  # the second kernel: the sums over every row, in a fixed order
        whole = rows.Row(dialect, work, True)
        lines += tail.total_kernel(d, dialect, whole, rows.LANES, params, bases)
    return "\n".join(lines) + "\n", work, lanes


def sizes_of(d):
    """The CPU plugin's ``fused_sizes.Sizes`` of an elementwise chain with ``dynamic`` dims
    (its loop nest's numbers per call), or None (no dynamic dims, a row kernel, a nest that
    differs between sizes)."""
    if not getattr(d, "dynamic", ()) or rows.rowwise(d):
        return None
    from ember_backend_cpu.fused_sizes import Sizes

    def merged(shape, strides):
        return coalesce(tuple(shape) or (1,), [s or [0] for s in strides])

    found = Sizes(d, False, merged, 1)
    return None if found.why else found


def _grid_loop(dialect: Dialect, var: str, count: int) -> str:
    """A grid-stride loop over ``count`` items (elements or rows)."""
    start, step = dialect.gid, dialect.gsize
    return f"    for ({dialect.i64} {var} = {start}; {var} < {count}; {var} += {step}) {{"
