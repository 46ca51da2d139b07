"""Scripted code's functions on run-time numbers and strings: ``math.*``, ``str()``,
f-strings and ``str.format``, and string methods (TorchScript's ``aten::exp.float``,
``aten::format``, ``aten::upper``...), with TorchScript's results where Python's differ.

``SCALAR_PRIMS`` maps each ``prim::`` kind to its (run, code) pair for ``jit.prims``; generated
code reaches the functions as ``_rt.<name>`` (``RUNTIME``).
"""

from __future__ import annotations

import math

from . import contexts, indexing, mutation, packed
from ._paths import set_module, set_tensor
from .hashing import script_hash


def _c_math(fn):
    """``math.fn`` with C's results where Python raises (TorchScript calls libm: ``log(-1.0)``
    is nan, ``exp(1000.0)`` is inf)."""

    def run(*args):
        try:
            return fn(*args)
        except ValueError:
            return math.nan
        except OverflowError:
            return math.inf

    run.__name__ = fn.__name__
    return run


# ``math.<name>`` TorchScript runs on numbers: name -> arity.
MATH = {
    **dict.fromkeys(
        [
            "exp",
            "log",
            "log10",
            "log1p",
            "expm1",
            "sqrt",
            "sin",
            "cos",
            "tan",
            "asin",
            "acos",
            "atan",
            "sinh",
            "cosh",
            "tanh",
            "asinh",
            "acosh",
            "atanh",
            "floor",
            "ceil",
            "fabs",
            "erf",
            "erfc",
            "gamma",
            "lgamma",
            "isnan",
            "isinf",
            "isfinite",
            "degrees",
            "radians",
            "factorial",
        ],
        1,
    ),
    **dict.fromkeys(["atan2", "pow", "fmod", "copysign", "ldexp", "gcd"], 2),
}

# str methods -> result type name ("str", "bool", "int", "List[str]"): Python's own semantics.
STR_METHODS = {
    **dict.fromkeys(
        [
            "upper",
            "lower",
            "strip",
            "lstrip",
            "rstrip",
            "replace",
            "capitalize",
            "title",
            "swapcase",
            "zfill",
            "center",
            "ljust",
            "rjust",
        ],
        "str",
    ),
    **dict.fromkeys(
        [
            "startswith",
            "endswith",
            "isdigit",
            "isalpha",
            "isalnum",
            "isspace",
            "isupper",
            "islower",
            "istitle",
            "isdecimal",
            "isnumeric",
            "isidentifier",
            "isprintable",
        ],
        "bool",
    ),
    **dict.fromkeys(["find", "rfind", "count", "index", "rindex"], "int"),
    **dict.fromkeys(["split", "rsplit", "splitlines"], "List[str]"),
    "join": "str",
}


def to_str(value) -> str:
    """``str(value)`` as TorchScript prints it: floats with 17 significant digits and a point
    (``1.``, ``0.10000000000000001``), containers item by item."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        text = f"{value:.17g}"
        return text + "." if text.lstrip("-").isdigit() else text
    if isinstance(value, complex):  # c10's printing: 1.+2.j, 1.5-2.j
        imag = to_str(value.imag)
        return f"{to_str(value.real)}{'' if imag.startswith('-') else '+'}{imag}j"
    if isinstance(value, list):
        return "[" + ", ".join(to_str(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(to_str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)


def format_(fmt: str, *args) -> str:
    """``aten::format``: each ``{}`` takes the next argument, printed as ``to_str`` does."""
    return fmt.format(*(to_str(a) for a in args))


def _list_op(name: str):
    """``xs.<name>(...)`` on a copy: the new list (the graph's lists are values)."""

    def run(items, *args):
        items = list(items)
        getattr(items, name)(*args)
        return items

    return run


def _without(items, key):
    """``del items[key]`` on a copy (a list or a dict)."""
    items = items.copy()
    del items[key]
    return items


def _list_set(items, index, value):
    items = list(items)
    items[index] = value
    return items


# List prims: name -> function (lists.py in the script compiler emits them).
LISTS = {
    **{n: _list_op(n) for n in ("insert", "extend", "pop", "reverse", "sort", "remove", "clear")},
    "copy": list,
    "index": lambda items, v: items.index(v),
    "count": lambda items, v: items.count(v),
    "set": _list_set,
    "delete": _without,
    "sum": sum,
    "min": min,
    "max": max,
    "any": any,
    "all": all,
    "sorted": sorted,
}


def _interpolate(*args):
    """``prim::interpolate``: eager ``F.interpolate`` with the run-time values (its rank,
    mode and sizes are read when it runs, as TorchScript's interpolate does)."""
    from ember.nn.functional import interpolate

    return interpolate(*args)


def _new_object():
    import types

    return types.SimpleNamespace()


# prim::tolist's element codes (TorchScript's): the annotation's element type.
TOLIST_ELEMENTS = {"int": 0, "float": 1, "bool": 2, "complex": 3}
# TorchScript names a complex annotation "Bool" in its mismatch message (its name table has no
# complex entry); the words are kept so that messages compare equal
_TOLIST_NAMES = ("Long", "Float", "Bool", "Bool")
_TOLIST_DTYPES = (("Long",), ("Float", "Double"), ("Bool",), ("ComplexFloat", "ComplexDouble"))


def tolist(tensor, dim: int, element: int):
    """``Tensor.tolist()`` under an annotation: its dim and element type are checked against
    the tensor's at run time with TorchScript's messages (float16 is refused where TorchScript
    fails an internal assert)."""
    from ember._dtype import SCALAR_NAMES

    name = SCALAR_NAMES[tensor.dtype]
    if name not in _TOLIST_DTYPES[element]:
        raise RuntimeError(
            "Output annotation element type and runtime tensor element type must match for "
            f"tolist(): {_TOLIST_NAMES[element]} vs {name}"
        )
    if tensor.dim() != dim:
        raise RuntimeError(
            "Output annotation list dimension and runtime tensor dimension must match for tolist()"
        )
    return tensor.detach().tolist()


def _implicit(convert):
    """``aten::IntImplicit``/``FloatImplicit``: a 0-dim tensor assigned to a number variable
    (an int one must hold integers), with TorchScript's messages."""

    def run(tensor):
        from ember._dtype import SCALAR_NAMES

        if convert is int and (tensor.dtype.is_floating_point or tensor.dtype.is_complex):
            raise RuntimeError(
                f"Cannot input a tensor of type {SCALAR_NAMES[tensor.dtype]} as an integral "
                "argument"
            )
        if tensor.dim() != 0:
            raise RuntimeError(
                "Cannot input a tensor of dimension other than 0 as a scalar argument"
            )
        return convert(tensor.item())

    return run


class RUNTIME:
    str = staticmethod(to_str)
    tolist = staticmethod(tolist)

    @staticmethod
    def isinstance(value, names: str) -> bool:
        from .script.unions import run_isinstance

        return run_isinstance(value, names)

    format = staticmethod(format_)
    new_object = staticmethod(_new_object)
    interpolate = staticmethod(_interpolate)
    enter = staticmethod(contexts.enter)
    exit_ = staticmethod(contexts.exit_)
    index = staticmethod(indexing.index)
    index_put_ = staticmethod(indexing.index_put_)
    hash = staticmethod(script_hash)
    set_tensor = staticmethod(set_tensor)
    set_module = staticmethod(set_module)
    pack_padded = staticmethod(packed.pack)
    packed_rnn = staticmethod(packed.recurrent)
    pad_packed = staticmethod(packed.pad)
    int_implicit = staticmethod(_implicit(int))
    float_implicit = staticmethod(_implicit(float))


for _name in MATH:
    setattr(RUNTIME, _name, staticmethod(_c_math(getattr(math, _name))))
for _name, _fn in LISTS.items():
    setattr(RUNTIME, f"list_{_name}", staticmethod(_fn))
for _kind, (_fn, _outputs) in mutation.INPLACE.items():
    setattr(RUNTIME, mutation.runtime_name(_kind), staticmethod(_fn))


def rt_code(name: str):
    return lambda *args: f"_rt.{name}({', '.join(args)})"


def _method_code(name: str):
    return lambda text, *args: f"{text}.{name}({', '.join(args)})"


def _method_run(name: str):
    return lambda text, *args: getattr(text, name)(*args)


SCALAR_PRIMS = {
    **{f"prim::math_{n}": (getattr(RUNTIME, n), rt_code(n)) for n in MATH},
    **{f"prim::str_{n}": (_method_run(n), _method_code(n)) for n in STR_METHODS},
    **{f"prim::list_{n}": (fn, rt_code(f"list_{n}")) for n, fn in LISTS.items()},
    "prim::dict_delete": (_without, rt_code("list_delete")),
    "prim::str": (to_str, rt_code("str")),
    "prim::tolist": (None, rt_code("tolist")),
    "prim::isinstance": (None, rt_code("isinstance")),
    "prim::format": (format_, rt_code("format")),
    "prim::hash": (script_hash, rt_code("hash")),
    "prim::interpolate": (None, rt_code("interpolate")),
    "prim::str_contains": (lambda s, sub: sub in s, lambda s, sub: f"({sub} in {s})"),
    "prim::IntImplicit": (RUNTIME.int_implicit, rt_code("int_implicit")),
    "prim::FloatImplicit": (RUNTIME.float_implicit, rt_code("float_implicit")),
}
