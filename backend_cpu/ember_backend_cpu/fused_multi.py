"""Multi-tensor fused kernels: one elementwise chain run over a list of tensors, in place.

A description with ``segments`` (ember's compiler/fusion.py ``FusedKernel``; a compiled
optimizer's update, compiler/optim_traced.py) describes its chain over the concatenation of
several tensors of those sizes, without the concatenation: each input whose stride is not 0
comes as one pointer per tensor (a parameter, its gradient, a state), an input of stride 0
(a 0-d number) as one pointer, and an output listed in ``writes`` is stored through the
pointers of the input it replaces (the parameter and the states are updated in place; an
element's inputs are all read before its outputs are written, so the aliasing is safe and the
pointers stay ``restrict``). The C is one loop over chunks of at most ``BLOCK`` elements
of one tensor (a table in the source; the sizes are the description's), OpenMP over the chunks
from ``PARALLEL_MIN`` elements in all, and the chain's steps computed by fused.py's own
expressions, so the results are the single-tensor kernel's bits.
"""

from __future__ import annotations

from . import fused


def kernel(description):
    """``fn(*outs, *inputs)`` for a segmented description: each output not written in place and
    each input of nonzero stride a sequence of tensors (one per segment), the others tensors;
    or None (an op or dtype the generator does not know, no C compiler)."""
    d = description
    if getattr(d, "features", ()) or any(step.op in fused.ROW for step in d.steps):
        return None
    if len(d.writes) != len(d.outputs):
        return None
    source = generate(d)
    try:
        fn = fused.load(source)
    except fused.CompileError as failed:
        fused.LOG.warning("multi-tensor kernel not built (%s); it runs op by op", failed)
        return None
    segmented = [True] * sum(w is None for w in d.writes) + [_segmented(s) for s in d.inputs]

    def run(*args):
        ptrs = []
        for per_segment, arg in zip(segmented, args):
            for t in arg if per_segment else (arg,):
                ptrs.append(t._storage.ptr + t._offset * t._dtype.itemsize)
        fn(ptrs)

    run.source = source
    run.segments = d.segments  # what the compiler checks: this kernel takes them
    return run


def _segmented(spec) -> bool:
    return any(spec.strides)


def generate(d) -> str:
    """``void ember_fused(intptr_t *ptrs)``: pointers of the outputs not written in place (one
    per segment each), then of the inputs (one per segment, or one for a stride-0 input)."""
    t = fused.C_TYPES[d.dtype]
    n = len(d.segments)
    chunks = [
        (s, lo, min(lo + fused.BLOCK, size))
        for s, size in enumerate(d.segments)
        for lo in range(0, size, fused.BLOCK)
    ]
    lines = ['#include "ember_cpu.h"', '#include "vmath.h"']
    if not chunks:
        return "\n".join([*lines, "void ember_fused(intptr_t *ptrs) { (void)ptrs; }"]) + "\n"
    lines += [
        f"static const int32_t SEG[{len(chunks)}] = {{{', '.join(str(c[0]) for c in chunks)}}};",
        f"static const int64_t LO[{len(chunks)}] = {{{', '.join(str(c[1]) for c in chunks)}}};",
        f"static const int64_t HI[{len(chunks)}] = {{{', '.join(str(c[2]) for c in chunks)}}};",
        "static void chunk(intptr_t *ptrs, int64_t s, int64_t lo, int64_t hi) {",
    ]
    written = {w: k for k, w in enumerate(d.writes) if w is not None}
    base = 0
    for k, w in enumerate(d.writes):
        if w is None:
            ct = fused.C_TYPES[d.steps[d.outputs[k]].dtype]
            lines.append(f"    {ct} *restrict o{k} = ({ct} *)ptrs[{base} + s];")
            base += n
    for k, spec in enumerate(d.inputs):
        ct = fused.C_TYPES[spec.dtype]
        const = "" if k in written else "const "
        at = f"{base} + s" if _segmented(spec) else f"{base}"
        lines.append(f"    {const}{ct} *restrict i{k} = ({const}{ct} *)ptrs[{at}];")
        lines.append(f"    const int64_t b{k} = 0;")
        base += n if _segmented(spec) else 1
    lines.append("    for (int64_t j = lo; j < hi; j++) {")
    strides = [1 if _segmented(spec) else 0 for spec in d.inputs]
    lines += fused._body(d, strides, t, len(d.steps))
    for k, index in enumerate(d.outputs):
        target = f"o{k}" if d.writes[k] is None else f"i{d.writes[k]}"
        lines.append(f"            {target}[j] = s{index};")
    lines += ["    }", "}", "void ember_fused(intptr_t *ptrs) {"]
    loop = f"    for (int64_t c = 0; c < {len(chunks)}; c++) chunk(ptrs, SEG[c], LO[c], HI[c]);"
    if sum(d.segments) >= fused.PARALLEL_MIN and len(chunks) > 1:
        lines += ["#ifdef _OPENMP", "#pragma omp parallel for schedule(static)", "#endif"]
    lines.append(loop)
    lines.append("}")
    return "\n".join(lines) + "\n"
