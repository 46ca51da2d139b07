"""Fused elementwise kernels: C generated from a description, compiled through cffi, cached on disk.

ember's compiler hands ``ember_fused_kernel`` a description of a chain of elementwise ops (its
``compiler/fusion.py``: inputs with their broadcast strides, steps named as op-table rows,
outputs). This module writes one C function for it, a loop over the output that computes every
step in registers (one memory pass instead of one per op), with the same expressions as the
eager loops (unary.def, binary.def through vmath.h, -ffp-contract=off), so a fused float64
chain gives the eager bits.

The module is compiled once per machine: ``$EMBER_CPU_CACHE``, else
``$XDG_CACHE_HOME/ember/cpu``, else ``~/.cache/ember/cpu``, one file per hash of the source, the
flags and the compiler's version (as the GPU backends cache their kernels), and loaded once per
process. Without a C compiler the hook returns None and the chain replays op by op.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import os
import platform
import shutil
import subprocess
import sysconfig
import tempfile
import threading
from pathlib import Path

from . import fused_sizes, fused_tail
from ._toolchain import BASE_FLAGS, compiler, has_openmp

LOG = logging.getLogger("ember_backend_cpu.fused")
PARALLEL_MIN = 1 << 15  # elements below which the OpenMP fork costs more than the loop
BLOCK = 1 << 13  # a 1-D loop is cut into rows of this many elements, for the threads
# Built on the machine that runs it, so for that CPU (one build; the eager kernels' wheel needs
# target_clones instead). vmath.h gives the same bits at every width and -ffp-contract=off
# forbids FMA, so the fused results equal the eager ones.
NATIVE = ["-march=native"]
_LOADED: dict = {}  # cache key -> the loaded function
_OPENED: dict = {}  # the same keys -> their libraries (held open)
_LOCK = threading.Lock()

C_TYPES = {"float32": "float", "float64": "double", "bool": "uint8_t", "int64": "int64_t"}
_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
COMPARE = {"gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==", "ne": "!="}
_UNARY = {  # the eager expressions of unary.def
    "neg": "-{0}",
    "exp": "em_exp({0})",
    "log": "em_log({0})",
    "tanh": "em_tanh({0})",
    "sigmoid": "em_sigmoid({0})",
    "relu": "(({0} > 0 || {0} != {0}) ? {0} : 0)",
    "erf": "em_erf({0})",
    "rsqrt": "(1 / sqrt({0}))",
    "sqrt": "sqrt({0})",
    "square": "({0} * {0})",
}
_BINARY = {  # binary.def's
    "maximum": "({0} != {0} ? {0} : ({1} != {1} ? {1} : ({0} > {1} ? {0} : {1})))",
    "minimum": "({0} != {0} ? {0} : ({1} != {1} ? {1} : ({0} < {1} ? {0} : {1})))",
    "pow": "pow({0}, {1})",
}
OPS = frozenset(_INFIX) | frozenset(COMPARE) | frozenset(_UNARY) | frozenset(_BINARY)
OPS |= {"gelu", "where", "addcmul", "full", "scatter_add"}
REDUCE = frozenset(("sum", "mean", "amax"))  # anywhere in a chain, as row steps (fused_rows.py)
ROW = REDUCE | {"softmax", "log_softmax", "layer_norm"}  # these three as the last step only
# the description features it knows (row_tail: fused_tail.py)
FEATURES = frozenset(("row_steps", "row_index", "row_tail"))


def kernel(description):
    """``fn(*outs, *inputs)`` running ``description``, or None (an op or dtype this generator
    does not know, or no C compiler: the caller replays the chain op by op)."""
    if not _supported(description):
        return None
    if getattr(description, "segments", ()):  # a list of tensors (an optimizer's update)
        from .fused_multi import kernel as multi

        return multi(description)
    sizes = None
    if getattr(description, "dynamic", ()):
        sizes = fused_sizes.Sizes(description, _row_kernel(description), _collapse, BLOCK)
        if sizes.why:
            LOG.info("no size-generic kernel: %s", sizes.why)
            return None
    source = generate(description, sizes)
    try:
        fn = load(source)
    except CompileError as failed:
        LOG.warning("fused kernel not built (%s); the chain runs op by op", failed)
        return None
    if _indexed(description):
        return _checked(fn, source, description, sizes)
    if sizes is not None:
        return _sized(fn, source, sizes)
    numel = math.prod(description.shape)

    def run(*tensors):
        ptrs = [t._storage.ptr + t._offset * t._dtype.itemsize for t in tensors]
        if numel:
            fn(ptrs)

    run.source = source
    return run


def _sized(fn, source, sizes):
    """``run`` for a kernel whose dynamic sizes come with each call (fused_sizes.py)."""

    def run(*tensors):
        numel, values = sizes.values(tensors)
        if numel:
            fn([*(t._storage.ptr + t._offset * t._dtype.itemsize for t in tensors), values])

    run.source = source
    run.dynamic = sizes.dims  # what the compiler checks: this kernel takes them
    return run


def _indexed(d) -> bool:
    return bool({"row_index", "row_tail"} & set(getattr(d, "features", ())))


def _checked(fn, source, d, sizes=None):
    """``run`` for a kernel that reads int64 indices: the kernel writes an index out of range
    into a flag (it cannot raise), and the call raises the op's IndexError (scatter_add's, or
    a row tail's gather). ``sizes``: the dynamic sizes passed after the flag."""
    import numpy as np

    size, dim = d.shape[-1], len(d.shape) - 1
    op = "gather" if any(s.op == "gather" for s in d.steps) else "scatter_add"

    def run(*tensors):
        flag = np.zeros(2, np.int64)
        ptrs = [t._storage.ptr + t._offset * t._dtype.itemsize for t in tensors]
        values = ()
        if sizes is not None:
            numel, at = sizes.values(tensors)
            if not numel:
                return
            values = (at,)
        fn([*ptrs, flag.ctypes.data, *values])
        if flag[0]:
            raise IndexError(
                f"{op}: index out of range: index {flag[1]} is out of bounds for dim {dim} "
                f"with size {size}"
            )

    run.source = source
    return run


def _supported(description) -> bool:
    if description.dtype not in ("float32", "float64"):
        return False
    if any(i.dtype not in C_TYPES for i in description.inputs):
        return False
    if set(getattr(description, "features", ())) - FEATURES:
        return False
    if not fused_tail.supported(description):
        return False
    *body, last = description.steps[: fused_tail.body_end(description) + 1]
    mid = OPS | REDUCE
    return all(step.op in mid for step in body) and (last.op in OPS or last.op in ROW)


# ---- C source ------------------------------------------------------------------------------------
def generate(d, sizes_at=None) -> str:
    """The C source of description ``d``: ``void ember_fused(intptr_t *ptrs)``, outputs first.
    A chain with row steps or ending in a row op (ROW) runs a row of the last dim per iteration
    (fused_rows.py); an elementwise one, rows of the collapsed output. ``sizes_at``: a
    ``fused_sizes.Sizes`` for a description with dynamic dims (their numbers read per call from
    an int64 array passed last)."""
    t = C_TYPES[d.dtype]
    lines = [
        '#include "ember_cpu.h"',
        '#include "vmath.h"',
        "#include <stdlib.h>",
        "#ifdef _OPENMP",
        "#include <omp.h>",
        "#endif",
        _ROWS,
    ]
    for k, index in enumerate(d.outputs):
        ct = C_TYPES[d.steps[index].dtype]
        lines.append(f"    {ct} *restrict o{k} = ({ct} *)ptrs[{k}];")
    for k, spec in enumerate(d.inputs):
        ct = C_TYPES[spec.dtype]
        lines.append(f"    const {ct} *restrict i{k} = (const {ct} *)ptrs[{len(d.outputs) + k}];")
    extra = len(d.outputs) + len(d.inputs)
    if _indexed(d):
        lines.append(f"    int64_t *restrict flag = (int64_t *)ptrs[{extra}];")
        extra += 1
    row = _row_kernel(d)
    decl = []
    if sizes_at is None:
        numel, rows, sizes, strides = _layout(d, row)
    else:
        numel, rows, sizes, strides, decl = sizes_at.named()
        decl = [f"    const int64_t *restrict em_v = (const int64_t *)ptrs[{extra}];", *decl]
    lines += decl
    if row:
        from .fused_rows import helpers, row_kernel

        at = lines.index(_ROWS)
        lines[at:at] = helpers(d)
        lines += fused_tail.prologue(d, t)
        lines.append("    for (int64_t r = r0; r < r1; r++) {")
        lines += _row_bases(sizes, strides, len(d.inputs), numel)
        lines += row_kernel(d, [s[-1] for s in strides], t)
        lines.append("    }")
        lines += fused_tail.epilogue(d)
    else:
        lines.append("    for (int64_t r = r0; r < r1; r++) {")
        lines += _row_bases(sizes, strides, len(d.inputs), numel)
        lines.append("        for (int64_t j = lo; j < hi; j++) {")
        lines += _body(d, [s[-1] for s in strides], t, len(d.steps))
        lines += [f"            o{k}[ob + j] = s{index};" for k, index in enumerate(d.outputs)]
        lines += ["        }", "    }"]
    lines += ["}", "void ember_fused(intptr_t *ptrs) {", *fused_tail.enter(d), *decl]
    serial = f"    rows(ptrs, 0, {rows}, part);"
    parallel = [
        "#ifdef _OPENMP",
        "#pragma omp parallel",
        "    {",
        "        int64_t n = omp_get_num_threads(), t = omp_get_thread_num();",
        f"        int64_t per = ({rows} + n - 1) / n, lo = t * per;",
        f"        int64_t hi = lo + per < {rows} ? lo + per : {rows};",
        f"        if (lo < hi) rows(ptrs, lo, hi, {fused_tail.part(d)});",
        "    }",
        "#else",
        serial,
        "#endif",
    ]
    if sizes_at is not None:  # the sizes are known per call: so is the choice of threads
        lines += [f"    if ({numel} >= {PARALLEL_MIN} && {rows} > 1) {{", *parallel, "    } else {"]
        lines += [serial, "    }"]
    elif numel >= PARALLEL_MIN and rows > 1:
        lines += parallel
    else:
        lines.append(serial)
    lines += [*fused_tail.leave(d, t), "}"]
    return "\n".join(lines) + "\n"


def _row_kernel(d) -> bool:
    """Whether ``d`` runs a row per iteration (fused_rows.py)."""
    return d.steps[-1].op in ROW or _indexed(d) or any(getattr(s, "row", False) for s in d.steps)


def _layout(d, row: bool) -> tuple:
    """``(numel, rows, sizes, strides per input)`` of the loop nest at ``d``'s sizes."""
    strides = [tuple(spec.strides) for spec in d.inputs]
    return fused_sizes.layout(d.shape, strides, row, _collapse, BLOCK)


# a thread's range of rows; ``part``: its partial sums of a row tail (fused_tail.py), or NULL
_ROWS = "static void rows(intptr_t *ptrs, int64_t r0, int64_t r1, double *part) {"


def _collapse(shape: tuple, strides: list) -> tuple:
    """Merge the output's dimensions that every input walks as one (and drop size-1 ones):
    ``(sizes, [strides per input])``, at least one dimension."""
    dims = [i for i, n in enumerate(shape) if n != 1]
    sizes: list = []
    out: list = [[] for _ in strides]
    for i in dims:
        if sizes and all(s[i] * shape[i] == o[-1] for s, o in zip(strides, out)):
            sizes[-1] *= shape[i]
            for s, o in zip(strides, out):
                o[-1] = s[i]
            continue
        sizes.append(shape[i])
        for s, o in zip(strides, out):
            o.append(s[i])
    if not sizes:
        return [1], [[0] for _ in strides]
    return sizes, out


def _row_bases(sizes, strides, n_inputs, numel) -> list:
    """Lines setting ``lo``, ``hi`` (the inner range) and ``b<k>`` (input k's row offset)."""
    if len(sizes) == 1:
        lines = [
            f"        int64_t lo = r * {BLOCK}, hi = lo + {BLOCK} < {numel} ? lo + {BLOCK} : "
            f"{numel};",
            "        int64_t ob = 0;",
        ]
        return lines + [f"        int64_t b{k} = 0;" for k in range(n_inputs)]
    inner = sizes[-1]
    lines = [f"        int64_t lo = 0, hi = {inner}, ob = r * {inner}, rem = r, q;"]
    lines += [f"        int64_t b{k} = 0;" for k in range(n_inputs)]
    for dim in range(len(sizes) - 2, -1, -1):  # the outer dimensions, innermost first
        lines.append(f"        q = rem % {sizes[dim]}; rem /= {sizes[dim]};")
        for k in range(n_inputs):
            if strides[k][dim]:
                lines.append(f"        b{k} += q * {strides[k][dim]};")
    return lines


def _body(d, inner_strides, t, count) -> list:
    """Lines loading the inputs and computing the first ``count`` steps as ``s<n>``."""
    lines = ["            " + load_input(k, spec, inner_strides[k], t) for k, spec in
             enumerate(d.inputs)]  # fmt: skip
    return lines + ["            " + compute(n, s, t) for n, s in enumerate(d.steps[:count])]


def load_input(k: int, spec, stride: int, t: str) -> str:
    """``v<k> = `` input k's element ``j`` of the row (``b<k>``: the row's offset)."""
    ct = {"bool": "int", "int64": "int64_t"}.get(spec.dtype, t)
    index = f"b{k} + j * {stride}" if stride else f"b{k}"
    load = f"i{k}[{index}] != 0" if spec.dtype == "bool" else f"i{k}[{index}]"
    return f"{ct} v{k} = {load};"


def compute(n: int, step, t: str) -> str:
    """``s<n> = `` step n's expression."""
    ct = "int" if step.dtype == "bool" else t
    return f"{ct} s{n} = {_expression(step, t)};"


def operand(arg, t) -> str:
    kind, value = arg
    if kind == "input":
        return f"v{value}"
    if kind == "step":
        return f"s{value}"
    return f"(({t}){_c_double(value)})"  # a scalar, as the eager loops' (ct)p->f[3]


def _c_double(value) -> str:
    """A C double constant with ``value``'s exact bits: a hex float, or math.h's INFINITY/NAN
    (a masked softmax's ``where(keep, x, -inf)``), which hex floats cannot spell."""
    value = float(value)
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    return value.hex()


def _expression(step, t) -> str:
    args = [operand(a, t) for a in step.args]
    op = step.op
    if op in _INFIX:
        return f"({args[0]} {_INFIX[op]} {args[1]})"
    if op in COMPARE:
        return f"({args[0]} {COMPARE[op]} {args[1]})"
    if op in _UNARY:
        return _UNARY[op].format(*args)
    if op in _BINARY:
        return _BINARY[op].format(*args)
    if op == "addcmul":  # ternary.def's a + (ct)value * b * c
        value = operand(("scalar", step.params["value"]), t)
        return f"({args[0]} + {value} * {args[1]} * {args[2]})"
    if op == "full":
        return operand(("scalar", step.params["value"]), t)
    if op == "scatter_add":  # base + src at the row's index (j: the position in the row)
        return f"em_sel(j == {args[1]}, {args[0]} + {args[2]}, {args[0]})"
    if op == "gelu":
        form = "tanh" if step.params.get("approximate") == "tanh" else "erf"
        return f"em_gelu_{form}({args[0]})"
    return f"em_sel({args[0]}, {args[1]}, {args[2]})"  # where: a blend, as the eager loop


# ---- building and loading ------------------------------------------------------------------------
class CompileError(RuntimeError):
    """No C compiler, or it rejected the generated source."""


def cache_dir() -> Path:
    explicit = os.environ.get("EMBER_CPU_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ember" / "cpu"


@functools.cache
def _toolchain() -> tuple:
    """``(flags, compiler version)``: part of every cache key."""
    cc = compiler()
    if shutil.which(cc[0]) is None:
        raise CompileError(f"no C compiler found ({cc[0]!r}; set CC)")
    try:
        version = subprocess.run([*cc, "--version"], capture_output=True, text=True, check=False)
    except OSError as exc:
        raise CompileError(f"C compiler {cc[0]!r} does not run: {exc}") from exc
    openmp = ["-fopenmp"] if has_openmp() else []
    first = (version.stdout.splitlines() or [""])[0]
    return tuple(BASE_FLAGS + NATIVE + openmp), f"{' '.join(cc)} {first} {_cpu()}"


def _cpu() -> str:
    """What -march=native compiles for (a cache shared by several machines keeps one build
    per CPU model)."""
    try:
        with open("/proc/cpuinfo") as handle:
            lines = [line for line in handle if line.startswith(("model name", "flags"))]
        return "".join(sorted(set(lines)))
    except OSError:
        return platform.machine() + platform.processor()


def cache_key(source: str) -> str:
    flags, version = _toolchain()
    digest = hashlib.sha256()
    abi = sysconfig.get_config_var("EXT_SUFFIX") or ""
    for part in (source, " ".join(flags), version, abi):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def load(source: str):
    """The compiled ``ember_fused`` of ``source``: from this process, the disk cache, or a
    build (written to a temporary name and renamed, so parallel processes never read half a
    file). cffi's ABI mode loads it: a plain shared library, no Python headers to compile."""
    key = cache_key(source)
    found = _LOADED.get(key)
    if found is not None:
        return found
    with _LOCK:
        if key not in _LOADED:
            from cffi import FFI

            path = cache_dir() / f"fused-{key}.so"
            if not path.is_file():
                _compile_library(source, path)
            ffi = FFI()
            ffi.cdef("void ember_fused(intptr_t *ptrs);")
            lib = ffi.dlopen(str(path))
            # called with a list of addresses: cffi passes it as a temporary intptr_t array,
            # without the Python frame and type lookup of ffi.new (~0.7 us a call). The
            # library is held: collecting it would dlclose the code the function points into
            _OPENED[key] = lib
            _LOADED[key] = lib.ember_fused
    return _LOADED[key]


def _compile_library(source: str, path: Path) -> None:
    flags, _version = _toolchain()
    csrc = Path(__file__).resolve().parent / "csrc"
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ember-fused-") as tmp:
        src, built = Path(tmp) / "fused.c", Path(tmp) / "fused.so"
        src.write_text(source)
        command = [*compiler(), *flags, "-shared", "-fPIC", f"-I{csrc}", str(src), "-o",
                   str(built), "-lm"]  # fmt: skip
        try:
            done = subprocess.run(command, capture_output=True, text=True, check=False)
        except OSError as exc:
            raise CompileError(f"{command[0]}: {exc}") from exc
        if done.returncode:
            raise CompileError(f"{' '.join(command)} failed:\n{done.stderr[-4000:]}")
        fd, staged = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        os.close(fd)
        shutil.copyfile(built, staged)
        os.replace(staged, path)
    LOG.info("compiled fused kernel %s", path)
