"""What this plugin takes from the CPU plugin, all in one place, so the two cannot drift apart.

- The dtype names by ember dtype code, and which codes are floating.
- The elementwise op descriptions: the ``LOOP(name, family, out, expression)`` lines of the CPU
  plugin's ``csrc/unary.def``, ``binary.def`` and ``ternary.def``. Their C expressions are also
  OpenCL C once clc/ember.h and clc/elementwise.cl supply the helpers they call, so each op is
  written once for both backends.
- ``UNARY_PARAMS``: how an op's extra arguments become the expressions' ``p->f[0..2]``.
- ``below``: the bound ``H`` of the uniform transform (docs/random.md), computed on the host.
- The host-side shape rules of the scatter family and of searchsorted.

ember-backend-cpu is always installed with ember (and is a dependency of this distribution); none
of this loads its native library.
"""

from __future__ import annotations

import re
from importlib import resources

from ember_backend_cpu.kernels._args import DTYPE_NAMES, FLOAT_CODES
from ember_backend_cpu.kernels.elementwise import HALF_CODES, OPMATH_SCALAR, UNARY_PARAMS
from ember_backend_cpu.kernels.index import _check_index_add_shapes as check_index_add_shapes
from ember_backend_cpu.kernels.random import below
from ember_backend_cpu.kernels.sort import _check_sequence as check_sequence

__all__ = [
    "DTYPE_NAMES",
    "FLOAT_CODES",
    "FAMILIES",
    "HALF_CODES",
    "OPMATH_SCALAR",
    "UNARY_PARAMS",
    "BINARY_PARAMS",
    "below",
    "check_index_add_shapes",
    "check_sequence",
    "op_descriptions",
]

_FLOAT = ("f16", "bf16", "f32", "f64")
_SINT = ("i8", "i16", "i32", "i64")
_INT = ("u8", *_SINT)
# The dtype families of ember_cpu.h (EM_FOR_FLOAT ...), as tokens.
FAMILIES = {
    "FLOAT": _FLOAT,
    "SINT": _SINT,
    "INT": _INT,
    "INTB": ("b", *_INT),
    "NUM": (*_INT, *_FLOAT),
    "SNUM": (*_SINT, *_FLOAT),
    "ALL": ("b", *_INT, *_FLOAT),
    "b": ("b",),
}
_COMMENT = re.compile(r"/\*.*?\*/", re.S)


def _split_call(text: str, start: int) -> tuple[list[str], int]:
    """The top-level comma-separated arguments of the call whose '(' is at ``start``."""
    depth, args, begin = 0, [], start + 1
    for i in range(start, len(text)):
        ch = text[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                args.append(text[begin:i])
                return [a.strip() for a in args], i
        elif ch == "," and depth == 1:
            args.append(text[begin:i])
            begin = i + 1
    raise ValueError(f"unbalanced parentheses in an op description: {text[start : start + 80]!r}")


# The special functions' loops call the CPU plugin's special.c (em_sp_*: 3,500 lines of branchy
# double code, not in this backend's OpenCL prelude): they run here through the declared CPU
# fallback, like the LAPACK ops.
_CPU_ONLY = re.compile(r"\b(em_sp_|EM_SP_)")


def _form_param(approximate="none") -> float:
    return 1.0 if approximate == "tanh" else 0.0


# The CPU's variant loops (``gelu__tanh``: a loop per form, picked by the glue) become one
# expression here, the form a uniform parameter p->f[0] (a branch all work-items take alike).
FORM = "__"
UNARY_PARAMS = {
    **UNARY_PARAMS,
    "gelu": lambda x, approximate="none": (_form_param(approximate), 0.0, 0.0),
}
# Binary ops with a parameter: their p->f[0] from the op's extra arguments.
BINARY_PARAMS = {"gelu_backward": _form_param, "threshold_backward": float}


def _fold_forms(found: list) -> list:
    variants = {(op.split(FORM)[0], family): expr for op, family, _o, expr in found if FORM in op}
    folded = []
    for op, family, out, expression in found:
        if FORM in op:
            continue
        variant = variants.get((op, family))
        if variant is not None:
            expression = f"p->f[0] != 0 ? ({variant}) : ({expression})"
        folded.append((op, family, out, expression))
    return folded


def op_descriptions(arity: int) -> list[tuple[str, str, str, str]]:
    """``(op, family, out, expression)`` per LOOP line of the CPU plugin's .def for ``arity``,
    except the CPU-only special functions; variant loops folded into their op's."""
    name = {1: "unary.def", 2: "binary.def", 3: "ternary.def"}[arity]
    text = resources.files("ember_backend_cpu").joinpath("csrc", name).read_text()
    text = _COMMENT.sub(" ", text)
    found = []
    for match in re.finditer(r"\bLOOPW?\(", text):
        args, _end = _split_call(text, match.end() - 1)
        op, family, out = args[:3]
        expression = " ".join(",".join(args[3:]).split())
        if not _CPU_ONLY.search(expression):
            found.append((op, family, out, expression))
    return _fold_forms(found)
