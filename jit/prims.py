"""The ``prim::`` vocabulary: what graph nodes that are not op-table ops mean.

One record per kind says how to evaluate it (constant folding), how to write it in generated
Python (``jit.codegen``), which attributes it carries (the serializer checks them) and whether it
has effects. Control flow (``prim::If``, ``prim::Loop``) and attribute reads (``prim::GetAttr``)
are written by the code generator itself; their records only describe them.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field

from . import contexts, indexing, mutation, packed
from .scalars import SCALAR_PRIMS, rt_code


@dataclass(frozen=True)
class Prim:
    """One ``prim::`` kind.

    Attributes:
        run: evaluates the node from its input values (None: not foldable).
        code: the Python expression, given the input expressions (None: codegen special-cases).
        attrs: attribute names the node must carry.
        effects: kept by dead-code elimination even when unused.
        outputs: the fixed number of outputs, or None when it varies (unpacks, If, Loop).
        writes: writes into its first input, a tensor or a container (alias analysis:
            jit/passes/alias.py).
    """

    run: Callable | None
    code: Callable | None
    attrs: tuple = ()
    effects: bool = False
    outputs: int | None = 1
    writes: bool = False
    doc: str = ""
    extra: dict = field(default_factory=dict)


def _infix(symbol: str):
    return lambda a, b: f"({a} {symbol} {b})"


def _call(name: str):
    return lambda *args: f"{name}({', '.join(args)})"


def _sequence(open_: str, close: str):
    def code(*items):
        if open_ == "(" and len(items) == 1:
            return f"({items[0]},)"
        return f"{open_}{', '.join(items)}{close}"

    return code


def _dict_pairs(*items):
    pairs = ", ".join(f"{k}: {v}" for k, v in zip(items[::2], items[1::2]))
    return "{" + pairs + "}"


def _raise(message):
    raise RuntimeError(message)


_BINARY = {
    "add": (operator.add, "+"),
    "sub": (operator.sub, "-"),
    "mul": (operator.mul, "*"),
    "floordiv": (operator.floordiv, "//"),
    "truediv": (operator.truediv, "/"),
    "mod": (operator.mod, "%"),
    "pow": (operator.pow, "**"),
    "eq": (operator.eq, "=="),
    "ne": (operator.ne, "!="),
    "lt": (operator.lt, "<"),
    "le": (operator.le, "<="),
    "gt": (operator.gt, ">"),
    "ge": (operator.ge, ">="),
    "and": (lambda a, b: a and b, "and"),
    "or": (lambda a, b: a or b, "or"),
}

PRIMS: dict[str, Prim] = {
    "prim::Constant": Prim(None, None, attrs=("value",), doc="a constant value"),
    "prim::GetAttr": Prim(None, None, attrs=("name",), doc="a parameter or buffer, by its name"),
    # Objects of user classes (jit/script/classes.py): run-time namespaces.
    "prim::CreateObject": Prim(None, lambda: "_rt.new_object()", effects=True),
    "prim::GetObjAttr": Prim(None, None, attrs=("name",), effects=True, doc="obj.<name>"),
    "prim::SetObjAttr": Prim(
        None, None, attrs=("name",), effects=True, outputs=0, doc="obj.<name> = value"
    ),
    # Non-tensor module state read and written where the code runs (jit/script/attributes.py).
    "prim::ModuleAttr": Prim(None, None, attrs=("name",), effects=True, doc="self.<name>"),
    "prim::SetModuleAttr": Prim(
        None, None, attrs=("name",), effects=True, outputs=0, doc="self.<name> = value"
    ),
    # A parameter or buffer slot assigned by a scripted method (jit/script/attributes.py).
    "prim::SetTensorAttr": Prim(
        None, None, attrs=("name",), effects=True, outputs=0, doc="self.<name> = tensor"
    ),
    # A submodule slot a scripted method reassigns (self.lin = self.other; see
    # jit/script/attributes.py): the module read as a value, then stored into the slot; calls
    # through the slot read its parameters where the code runs.
    "prim::GetModule": Prim(None, None, attrs=("name",), effects=True, doc="self.<name>"),
    # A call through a submodule slot typed by an interface (jit/script/interfaces.py): the
    # slot's own compiled method runs, whichever module the slot holds then.
    "prim::CallInterface": Prim(
        None, None, attrs=("name", "method"), effects=True, doc="self.<name>.<method>(...)"
    ),
    "prim::SetModule": Prim(
        None, None, attrs=("name",), effects=True, outputs=0, doc="self.<name> = module"
    ),
    "prim::ListConstruct": Prim(lambda *xs: list(xs), _sequence("[", "]")),
    "prim::TupleConstruct": Prim(lambda *xs: tuple(xs), _sequence("(", ")")),
    "prim::DictConstruct": Prim(lambda *xs: dict(zip(xs[::2], xs[1::2])), _dict_pairs),
    "prim::ListUnpack": Prim(lambda x: tuple(x), None, outputs=None),
    "prim::TupleUnpack": Prim(lambda x: tuple(x), None, outputs=None),
    "prim::TupleIndex": Prim(operator.getitem, lambda x, i: f"{x}[{i}]"),
    "prim::ListIndex": Prim(operator.getitem, lambda x, i: f"{x}[{i}]"),
    "prim::DictIndex": Prim(operator.getitem, lambda x, k: f"{x}[{k}]"),
    "prim::size": Prim(lambda t, d: t.size(d), lambda t, d: f"{t}.size({d})"),
    "prim::dim": Prim(lambda t: t.dim(), lambda t: f"{t}.dim()"),
    "prim::numel": Prim(lambda t: t.numel(), lambda t: f"{t}.numel()"),
    "prim::is_floating_point": Prim(
        lambda t: t.is_floating_point(), lambda t: f"{t}.is_floating_point()"
    ),
    "prim::is_complex": Prim(lambda t: t.is_complex(), lambda t: f"{t}.is_complex()"),
    "prim::real": Prim(lambda t: t.real, lambda t: f"{t}.real"),  # Tensor.real / .imag
    "prim::imag": Prim(lambda t: t.imag, lambda t: f"{t}.imag"),
    "prim::dtype": Prim(lambda t: t.dtype, lambda t: f"{t}.dtype"),
    "prim::device": Prim(lambda t: t.device, lambda t: f"{t}.device"),
    "prim::Device": Prim(None, _call("ember.device")),  # ember.device(name[, index])
    "prim::neg": Prim(operator.neg, lambda a: f"(-{a})"),
    "prim::not": Prim(operator.not_, lambda a: f"(not {a})"),
    "prim::int": Prim(int, _call("int")),
    "prim::float": Prim(float, _call("float")),
    "prim::complex": Prim(complex, _call("complex")),
    "prim::bool": Prim(bool, _call("bool")),
    "prim::min": Prim(min, _call("min")),
    "prim::abs": Prim(abs, _call("abs")),
    "prim::max": Prim(max, _call("max")),
    "prim::If": Prim(None, None, outputs=None, doc="if cond: block0 else: block1"),
    "prim::Loop": Prim(None, None, outputs=None, doc="for i < max_trip while cond: block0"),
    "prim::len": Prim(len, _call("len")),
    "prim::ListSlice": Prim(
        lambda xs, a, b, s: xs[a:b:s], lambda xs, a, b, s: f"{xs}[{a}:{b}:{s}]"
    ),
    "prim::sqrt": Prim(math.sqrt, lambda x: f"({x} ** 0.5)"),  # archives from before prim::math_*
    "prim::requires_grad": Prim(None, lambda t: f"{t}.requires_grad"),
    "prim::item": Prim(lambda t: t.item(), lambda t: f"{t}.item()"),
    "prim::contains": Prim(lambda items, key: key in items, lambda c, k: f"({k} in {c})"),
    "prim::DictKeys": Prim(lambda d: list(d), lambda d: f"list({d}.keys())"),
    "prim::DictValues": Prim(lambda d: list(d.values()), lambda d: f"list({d}.values())"),
    "prim::DictItems": Prim(lambda d: list(d.items()), lambda d: f"list({d}.items())"),
    # d[k] = v on a scripted dict: a new dict (values are immutable in the graph, as lists).
    "prim::DictSet": Prim(lambda d, k, v: {**d, k: v}, lambda d, k, v: f"{{**{d}, {k}: {v}}}"),
    # Optional refinement (``if x is not None``): the same object under a narrower type.
    "prim::unchecked_cast": Prim(lambda x: x, lambda x: x),
    # The value of a variable on a path that raised (never read).
    "prim::Uninitialized": Prim(None, lambda: "None"),
    "prim::shape": Prim(lambda t: list(t.shape), lambda t: f"list({t}.shape)"),
    "prim::is": Prim(operator.is_, _infix("is")),
    "prim::isnot": Prim(operator.is_not, _infix("is not")),
    # A call into Python (``@ember.jit.ignore``): the callable is a constant, so a graph holding
    # one runs in-process but cannot be saved (the archive writer refuses the constant).
    "prim::PythonOp": Prim(
        None,
        lambda fn, *args: f"{fn}({', '.join(args)})",
        effects=True,
        outputs=None,
        extra={"in_process": True},
    ),
    # Grad mode around a ``with ember.no_grad()`` / ``enable_grad()`` block of scripted code.
    "prim::is_grad_enabled": Prim(None, lambda: "ember.is_grad_enabled()", effects=True),
    "prim::set_grad_enabled": Prim(
        None, lambda flag: f"ember.set_grad_enabled({flag})", effects=True, outputs=0
    ),
    "prim::Print": Prim(None, _call("print"), effects=True, outputs=0),
    # Advanced indexing of tensors in scripted code (jit/indexing.py): x[idx], x[idx] = v.
    "prim::index": Prim(indexing.index, lambda *args: f"_rt.index({', '.join(args)})"),
    # ember.autocast / record_function around a block of scripted code (jit/contexts.py).
    "prim::enter": Prim(
        contexts.enter, lambda *args: f"_rt.enter({', '.join(args)})", effects=True
    ),
    "prim::exit": Prim(
        contexts.exit_, lambda manager: f"_rt.exit_({manager})", effects=True, outputs=0
    ),
    "prim::index_put_": Prim(
        indexing.index_put_,
        lambda *args: f"_rt.index_put_({', '.join(args)})",
        effects=True,
        outputs=0,
        writes=True,
    ),
    "prim::RaiseException": Prim(
        None, lambda msg: f"_raise({msg})", effects=True, outputs=0, extra={"run": _raise}
    ),
}
for _name, (_fn, _symbol) in _BINARY.items():
    PRIMS[f"prim::{_name}"] = Prim(_fn, _infix(_symbol))


# math.* and str methods on run-time values (jit/scalars.py): generated code calls ``_rt.<name>``.
for _kind, (_run, _code) in SCALAR_PRIMS.items():
    PRIMS[_kind] = Prim(_run, _code)

# In-place list and dict updates (jit/mutation.py): lists and dicts are references, as in Python.
for _kind, (_run, _outputs) in mutation.INPLACE.items():
    PRIMS[_kind] = Prim(
        _run, rt_code(mutation.runtime_name(_kind)), effects=True, outputs=_outputs, writes=True
    )

# A PackedSequence through a trace (jit/packed.py): several outputs each.
for _kind, _run, _name, _outputs in (
    ("prim::PackPadded", packed.pack, "pack_padded", 2),
    ("prim::PackedRNN", packed.recurrent, "packed_rnn", None),  # (rows, h_n[, c_n])
    ("prim::PadPacked", packed.pad, "pad_packed", 2),
):
    PRIMS[_kind] = Prim(_run, rt_code(_name), outputs=_outputs)

# Python operators -> prim kinds, for recording arithmetic on traced sizes (jit.symbolic).
OPERATORS = {fn: f"prim::{name}" for name, (fn, _symbol) in _BINARY.items()}
OPERATORS[operator.neg] = "prim::neg"
