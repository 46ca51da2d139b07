"""Which nodes of a captured graph are fusion steps (fusion.py): elementwise ops, row ops over
the last dim, and the indexed steps of cross-entropy's backward, each as ``(op name, operands,
params)`` with its constant operands worked out, or a line saying why not."""

from __future__ import annotations

from ember.jit.ops import resolve
from ember.jit.types import TensorType

UNARY = frozenset(
    ("neg", "exp", "log", "tanh", "sigmoid", "relu", "gelu", "erf", "rsqrt", "sqrt", "square")
)
BINARY = frozenset(("add", "sub", "mul", "div", "maximum", "minimum", "pow"))
TERNARY = frozenset(("addcmul",))  # layer_norm's backward: a + value * b * c
COMPARE = frozenset(("gt", "lt", "ge", "le", "eq", "ne"))
FLOATS = ("float32", "float64")
# Row ops, over the last dim; the kernel then runs one row per iteration. A reduction with
# keepdim may sit anywhere in a chain (later steps read its per-row value: another pass over the
# row); softmax/log_softmax/layer_norm only at its end (their passes run over the output row).
REDUCE = frozenset(("sum", "mean", "amax"))
NORMS = frozenset(("softmax", "log_softmax", "layer_norm"))
ROW = REDUCE | NORMS
INDEXED = frozenset(("scatter_add",))


def _name(node) -> str | None:
    kind = node.kind()
    if kind.startswith("prim::"):
        return None
    op = resolve(kind)
    return None if op is None or op.mutates else op.name


def _constant(value):
    """A number known when the region is built: a constant, a size of a tensor (sizes are
    guarded), or a product of those (the backward's ``sum / (1 * size)`` of a mean)."""
    node = value.node()
    kind = node.kind()
    if kind == "prim::Constant":
        found = node["value"]
        return found if isinstance(found, (int, float)) and not isinstance(found, bool) else None
    if kind == "prim::size" and len(node.inputs()) == 2:
        typ, dim = node.inputsAt(0).type(), _constant(node.inputsAt(1))
        if isinstance(typ, TensorType) and typ.is_complete() and isinstance(dim, int):
            return typ.sizes()[dim]
    if kind == "prim::mul" and len(node.inputs()) == 2:
        a, b = (_constant(v) for v in node.inputs())
        return None if a is None or b is None else a * b
    return None


def _broadcasts(sizes, shape) -> bool:
    if len(sizes) > len(shape):
        return False
    return all(s in (1, n) for s, n in zip(reversed(sizes), reversed(shape)))


def step_of(node):
    """``(op name, [tensor or scalar per argument], params)`` for a fusible node, or a str
    saying why it is not (None: not an elementwise op at all)."""
    name = _name(node)
    if name in ROW:
        return _row_step(node, name)
    if name in INDEXED or name == "full":
        return _indexed_step(node, name)
    if name not in UNARY | BINARY | TERNARY | COMPARE | {"where"}:
        return None
    outs = node.outputs()
    typ = outs[0].type() if len(outs) == 1 else None
    if not isinstance(typ, TensorType) or not typ.is_complete():
        return "its result's type is not fully known"
    dtype = typ.dtype().name
    if dtype not in (("bool",) if name in COMPARE else FLOATS):
        return f"{dtype} (fusion takes float32/float64)"
    inputs = list(node.inputs())
    params: dict = {}
    if name == "gelu" and len(inputs) == 2:
        approximate = inputs.pop().node()
        if approximate.kind() != "prim::Constant":
            return "a non-constant approximate="
        params["approximate"] = approximate["value"]
    if name in TERNARY and len(inputs) == 4:
        value = _constant(inputs.pop())
        if value is None:
            return "a non-constant value="
        params["value"] = value
    arity = 3 if name == "where" or name in TERNARY else 1 if name in UNARY else 2
    if len(inputs) != arity:
        return f"{len(inputs)} arguments (alpha or out=)"
    args = []
    for value in inputs:
        vtyp = value.type()
        if not isinstance(vtyp, TensorType):
            scalar = _constant(value)
            if scalar is None:
                return "a non-constant scalar operand"
            args.append(("scalar", scalar))
        elif not vtyp.is_complete() or not _broadcasts(vtyp.sizes(), typ.sizes()):
            return "an operand's shape does not broadcast to the result's"
        elif vtyp.device() != typ.device():
            return "operands on several devices"
        else:
            args.append(value)
    if isinstance(args[0], tuple):
        return "a leading scalar operand"
    return name, args, params


def _dtype(value) -> str:
    return value.type().dtype().name


def _indexed_step(node, name):
    """``full`` of a constant float (a chain's start: its value in registers), and
    ``scatter_add(base, last dim, index, src)`` with one index per row (``index`` and ``src``
    of shape ``(*rows, 1)``): ``base`` plus ``src`` at the row's index."""
    typ = node.output().type()
    if (
        not isinstance(typ, TensorType)
        or not typ.is_complete()
        or _dtype(node.output()) not in FLOATS
    ):
        return "not a float result of known type"
    inputs = list(node.inputs())
    sizes = tuple(typ.sizes())
    if name == "full":
        value = _constant(inputs[1])
        return ("full", [], {"value": value}) if value is not None else "a non-constant fill"
    base, dim, index, src = inputs
    dim = _literal(dim)
    if not sizes or not isinstance(dim, int) or dim % len(sizes) != len(sizes) - 1:
        return f"scatter_add over dim {dim} (the last dim fuses)"
    row = (*sizes[:-1], 1)
    types = [v.type() for v in (base, index, src)]
    if not all(isinstance(t, TensorType) and t.is_complete() for t in types):
        return "an operand's type is not fully known"
    if (_sizes(base), _sizes(index), _sizes(src)) != (sizes, row, row) or _dtype(index) != "int64":
        return "scatter_add of more than one int64 index per row"
    return name, [base, index, src], {}


def _row_step(node, name):
    """A row op as a step: over the last dim only, no dtype=, a float input of the result's
    dtype (layer_norm: over one dim, weight and bias of that dim's size or None)."""
    inputs = list(node.inputs())
    x, typ = inputs[0], node.output().type()
    xtyp = x.type()
    if not (isinstance(xtyp, TensorType) and xtyp.is_complete() and typ.is_complete()):
        return "its operand's type is not fully known"
    sizes = tuple(xtyp.sizes())
    if not sizes or _dtype(x) not in FLOATS or xtyp.dtype() != typ.dtype():
        return f"a {_dtype(x)} row op over {list(sizes)} (a float one over a last dim wanted)"
    params: dict = {}
    args = [x]
    if name == "layer_norm":
        shape, weight, bias, eps = inputs[1:5]
        if shape.node().kind() != "prim::ListConstruct" or len(shape.node().inputs()) != 1:
            return "layer_norm over several dims"
        for value in (weight, bias):
            vtyp = value.type()
            if isinstance(vtyp, TensorType):
                if tuple(vtyp.sizes() or ()) != sizes[-1:] or vtyp.dtype() != xtyp.dtype():
                    return "a layer_norm weight or bias of another shape or dtype"
                args.append(value)
            elif _literal(value) is not None:
                return "a layer_norm weight or bias that is not a tensor"
            else:
                args.append(("scalar", None))  # absent: the kernel skips it
        if _constant(eps) is None:
            return "a non-constant eps"
        params["eps"] = float(_constant(eps))
        return name, args, params
    dim, rest = _literal(inputs[1]), [_literal(v) for v in inputs[2:]]
    dims = dim if isinstance(dim, (list, tuple)) else [dim]
    if len(dims) != 1 or not isinstance(dims[0], int) or dims[0] % len(sizes) != len(sizes) - 1:
        return f"{name} over dim {dim} (a trailing reduction is over the last dim)"
    if name in REDUCE:
        if any(v is not None for v in rest[1:]) or not isinstance(rest[0], bool):
            return f"{name} with dtype= or a non-constant keepdim"
        params["keepdim"] = rest[0]
    elif any(v is not None for v in rest):
        return f"{name} with dtype="
    return name, args, params


_MISSING = object()


def _literal(value):
    """A constant argument's Python value (an int list built of constants too), else _MISSING."""
    node = value.node()
    if node.kind() == "prim::Constant":
        return node["value"]
    if node.kind() == "prim::ListConstruct":
        items = [_literal(v) for v in node.inputs()]
        return _MISSING if _MISSING in items else items
    return _MISSING


def _sizes(value) -> tuple:
    return tuple(value.type().sizes())
