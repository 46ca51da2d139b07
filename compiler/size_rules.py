"""Which nodes of a size-generic program keep their fitted shapes at every size.

sizes.py fits each value's shape from the graph traced at four sizes. The fit is exact where
an op's output sizes are a polynomial of its inputs' (broadcasting of equal sizes, a matrix
product, a reduction, a transpose, a view to sizes read from the inputs): such a node is
*trusted* when its rule, applied to its inputs' fitted shapes, gives its own fitted shape
(texts compare: sizes.py writes one text per polynomial). Any other node may follow another
rule at other sizes: ``x[:100]`` is ``x`` below 100 rows and 100 rows above, ``x[2:-1]`` is
empty below 3, ``narrow``, ``select``, ``topk``, ``unfold`` and ``pad`` raise. So unknown ops
and every op not listed here are *checked*: the program compares the shape the node's runner
gave with the fitted one at each call and leaves the call to the dispatching code where they
differ (replay_dynamic.py), as PyTorch's guards on a slice's clamp do.
"""

from __future__ import annotations

from ember.dispatcher.opdef import Kind
from ember.jit.ops import resolve
from ember.jit.prims import PRIMS
from ember.jit.types import TensorType

from . import sizes
from .fusion_steps import _MISSING, _literal
from .size_guards import ARITHMETIC as _ARITHMETIC

# ops whose output has their first input's shape (masked_fill: when the mask broadcasts to it)
_SAME = frozenset(
    ("softmax", "log_softmax", "layer_norm", "contiguous", "clone", "detach", "masked_fill")
)

_EMPTY_RAISES = frozenset(("ember::amax", "ember::amin"))  # no identity: an empty dim raises


def trusted(op, node, shapes) -> bool:
    """Whether ``node``'s fitted output shapes follow from its inputs' at every size."""
    outputs = [v for v in node.outputs() if isinstance(v.type(), TensorType)]
    if len(outputs) != 1 or op is None:
        return False
    got = shapes.of(outputs[0])
    inputs = _input_shapes(node, shapes)
    if got is None or inputs is None:
        return False
    rule = _RULES.get(op.name) or _KINDS.get(op.kind)
    try:
        return rule is not None and tuple(rule(node, inputs, shapes)) == tuple(got)
    except (TypeError, ValueError, IndexError):  # an argument the rule cannot read: checked
        return False


def _input_shapes(node, shapes):
    """Each input's shape (None for a non-tensor), or None when the node has no input or a
    tensor input whose shape is not known."""
    tensors = [isinstance(v.type(), TensorType) for v in node.inputs()]
    inputs = [shapes.of(v) if t else None for v, t in zip(node.inputs(), tensors)]
    if not inputs or any(t and s is None for t, s in zip(tensors, inputs)):
        return None
    return inputs


def _broadcast(*shapes):
    rank = max(len(s) for s in shapes)
    out = []
    for at in range(rank):
        sizes = {s[len(s) - rank + at] for s in shapes if len(s) - rank + at >= 0} - {1}
        if len(sizes) > 1:
            raise ValueError("sizes agree only at some calls")
        out.append(sizes.pop() if sizes else 1)
    return out


def _elementwise(node, inputs, shapes):
    return _broadcast(*(s for s in inputs if s is not None))


def _same(node, inputs, shapes):
    if node.kind() == "ember::masked_fill" and _broadcast(inputs[0], inputs[1]) != list(inputs[0]):
        raise ValueError("the mask changes the shape")
    return inputs[0]


def _dims(value, rank) -> list:
    found = _literal(value)
    found = [found] if type(found) is int else found
    if not isinstance(found, list) or not all(type(d) is int for d in found):
        raise TypeError("dims not constant")
    return [d % rank for d in found]


def _reduction(node, inputs, shapes):
    x, rank = inputs[0], len(inputs[0])
    if len(inputs) < 3:
        raise TypeError("a reduction without keepdim")
    every = _literal(node.inputsAt(1)) in (None, [])
    dims = list(range(rank)) if every else _dims(node.inputsAt(1), rank)
    keep = _literal(node.inputsAt(2))
    if type(keep) is not bool:
        raise TypeError("keepdim not constant")
    if node.kind() in _EMPTY_RAISES and not all(_non_empty(x[d]) for d in dims):
        raise ValueError("a reduced size may be 0, where eager raises")
    if keep:
        return [1 if d in dims else n for d, n in enumerate(x)]
    return [n for d, n in enumerate(x) if d not in dims]


def _non_empty(size) -> bool:
    return size > 0 if type(size) is int else sizes.above_one(size)


def _mm(node, inputs, shapes):
    a, b = inputs[0], inputs[1]
    if len(a) != 2 or len(b) != 2 or a[1] != b[0]:
        raise ValueError("not a product of matrices")
    return [a[0], b[1]]


def _bmm(node, inputs, shapes):
    a, b = inputs[0], inputs[1]
    if len(a) != 3 or len(b) != 3 or a[0] != b[0] or a[2] != b[1]:
        raise ValueError("not a batch of products")
    return [a[0], a[1], b[2]]


def _matmul(node, inputs, shapes):
    a, b = inputs[0], inputs[1]
    if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
        raise ValueError("a vector operand or inner sizes that differ")
    return [*_broadcast(a[:-2], b[:-2]), a[-2], b[-1]]


def _linear(node, inputs, shapes):
    x, w = inputs[0], inputs[1]
    if len(w) != 2 or x[-1] != w[1]:
        raise ValueError("inner sizes differ")
    out = [*x[:-1], w[0]]
    if len(inputs) > 2 and inputs[2] is not None and _broadcast(out, inputs[2]) != out:
        raise ValueError("the bias changes the shape")
    return out


def _addmm(node, inputs, shapes):
    out = _mm(node, inputs[1:], shapes)
    if _broadcast(out, inputs[0]) != out:
        raise ValueError("the added tensor changes the shape")
    return out


def _transpose(node, inputs, shapes):
    x = list(inputs[0])
    if node.kind() == "ember::t":
        return x[::-1]
    a, b = _dims(node.inputsAt(1), len(x)) + _dims(node.inputsAt(2), len(x))
    x[a], x[b] = x[b], x[a]
    return x


def _permute(node, inputs, shapes):
    return [inputs[0][d] for d in _dims(node.inputsAt(1), len(inputs[0]))]


def _unsqueeze(node, inputs, shapes):
    x = list(inputs[0])
    x.insert(_dims(node.inputsAt(1), len(x) + 1)[0], 1)
    return x


def _view(node, inputs, shapes):
    """A view to sizes that are constants or sizes of fitted values (not -1: inferring it
    divides, which the fit does not check)."""
    sizes = node.inputsAt(1).node()
    if sizes.kind() != "prim::ListConstruct":
        raise TypeError("sizes not a list")
    out = []
    for value in sizes.inputs():
        found = _size(value, shapes)
        if found is _MISSING or found == -1 or not isinstance(found, (int, str)):
            raise TypeError("a size the fit does not know")
        out.append(found)
    if not _same_count(inputs[0], out):
        raise ValueError("the element counts may differ")
    return out


def _same_count(a, b) -> bool:
    """Whether two shapes hold the same number of elements at every size: the same sizes
    that change (as factors) and the same product of the others (a sufficient test)."""
    ints = [1, 1]
    for k, shape in enumerate((a, b)):
        for n in shape:
            ints[k] *= n if type(n) is int else 1
    key = sorted(n for n in a if type(n) is not int)
    return ints[0] == ints[1] and key == sorted(n for n in b if type(n) is not int)


def _size(value, shapes):
    """An int argument as the fit knows it: a constant, a fitted value's size (an expression
    or, for a static dim, its int), int arithmetic on static sizes (``C // heads``)."""
    found = shapes.number(value)
    if found is not None:
        return found
    node = value.node()
    if node.kind() == "prim::size" and shapes.of(node.inputsAt(0)) is not None:
        dim = _literal(node.inputsAt(1))
        return shapes.of(node.inputsAt(0))[dim] if type(dim) is int else _MISSING
    if node.kind() in _ARITHMETIC:
        operands = [_size(v, shapes) for v in node.inputs()]
        if all(type(n) is int for n in operands):
            return PRIMS[node.kind()].run(*operands)
        return _MISSING
    return _literal(value)


_KINDS = {Kind.ELEMENTWISE: _elementwise}
_RULES = {
    **dict.fromkeys(_SAME, _same),
    **dict.fromkeys(("sum", "mean", "amax", "amin", "prod"), _reduction),
    "mm": _mm, "bmm": _bmm, "matmul": _matmul, "linear": _linear, "addmm": _addmm,
    "transpose": _transpose, "t": _transpose, "permute": _permute, "unsqueeze": _unsqueeze,
    "view": _view, "reshape": _view,
}  # fmt: skip


class _Symbolic:
    """Shapes at capture with each dynamic input dim a name of its own (``_d0_0``), carried
    through the nodes the rules know; a node they do not know has every dim unknown."""

    def __init__(self, graph, dims: dict):
        self.shapes: dict = {}
        self.names: dict = {}  # a dynamic input dim's name -> (input index, dim)
        for k, value in enumerate(graph.inputs()):
            if isinstance(value.type(), TensorType) and value.type().is_complete():
                sizes = value.type().sizes()
                self.shapes[value] = tuple(
                    f"_d{k}_{d}" if d in dims.get(k, ()) else n for d, n in enumerate(sizes)
                )
                self.names.update({f"_d{k}_{d}": (k, d) for d in dims.get(k, ())})

    def of(self, value):
        return self.shapes.get(value)

    def number(self, value):
        node = value.node()
        if node.kind() == "prim::size" and self.of(node.inputsAt(0)) is not None:
            dim = _literal(node.inputsAt(1))
            if type(dim) is int:
                return self.of(node.inputsAt(0))[dim]
        return None

    def run(self, node) -> None:
        kind = node.kind()
        if kind in ("prim::Constant", "prim::GetAttr"):  # parameters and constants keep sizes
            for value in node.outputs():
                typ = value.type()
                if isinstance(typ, TensorType) and typ.is_complete():
                    self.shapes[value] = tuple(typ.sizes())
            return
        op = None if kind.startswith("prim::") else resolve(kind)
        inputs = _input_shapes(node, self)
        rule = None if op is None else _RULES.get(op.name) or _KINDS.get(op.kind)
        shape = None
        if rule is not None and len(node.outputs()) == 1 and inputs is not None:
            try:
                shape = tuple(rule(node, inputs, self))
            except (TypeError, ValueError, IndexError):
                shape = None
        for value in node.outputs():
            typ = value.type()
            if isinstance(typ, TensorType) and typ.is_complete():
                unknown = tuple(f"_u{id(value)}_{d}" for d in range(len(typ.sizes())))
                self.shapes[value] = shape if shape is not None else unknown


def counted(graph, dims: dict):
    """``(counts, why)`` for the ops whose number of outputs follows the size of the dim they
    split (``split``, ``chunk``, ``unbind``), ``dims``: ``{graph input index: dynamic dims}``.
    ``counts``: ``(input index, dim, op, constant arguments, count, where)`` for each such op
    on a dynamic input dim (carried by the rules), which a guard on the count serves (PyTorch
    guards the same); ``why``: such an op on a dim that may be dynamic otherwise (through an
    op the rules do not know), where no guard can say the count before the call: the graph
    then specialises its sizes. The dispatching code holds one count and cannot run another."""
    symbolic = _Symbolic(graph, dims)
    counts = []
    for node in graph.nodes():
        op = None if node.kind().startswith("prim::") else resolve(node.kind())
        if op is not None and op.schema.returns and op.schema.returns[0][0] == "Tensor[]":
            where = f"{op.name} at {node.sourceRange() or '?'}"
            found = _count(node, op, symbolic)
            if isinstance(found, str):
                return counts, f"the number of outputs of {where} {found}"
            if found is not None:
                counts.append((*found, len(node.outputs()), where))
        symbolic.run(node)
    return counts, None


def _count(node, op, symbolic):
    """None (a static dim), ``(input index, dim, op, arguments)``, or why not guardable."""
    names = [a.name for a in op.schema.args]
    at = names.index("dim") if "dim" in names else None
    dim = _literal(node.inputsAt(at)) if at is not None and at < len(node.inputs()) else 0
    shape = symbolic.of(node.inputsAt(0))
    if shape is None or type(dim) is not int:
        return "follows a size the rules cannot follow"
    size = shape[dim]
    if type(size) is int:
        return None
    args = [_literal(v) for v in list(node.inputs())[1:]]
    if size not in symbolic.names or _MISSING in args:
        return "follows a dynamic size the rules cannot follow"
    if at is not None and at < len(node.inputs()):
        args[at - 1] = 0  # the guard splits a 1-d tensor of the call's size
    return (*symbolic.names[size], op, tuple(args))
