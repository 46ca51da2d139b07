"""Symbolic shapes of a size-generic graph, from the graph at four sizes.

A dynamic region's graph holds the sizes it was captured at. The generic program
(replay_dynamic.py) needs every value's shape as an expression of the call's dynamic sizes.
The dispatching replay, traced at three other sizes (the first call at another size, and two
probes of zeros), gives the same nodes with other sizes; each dim that differs between them is
fitted, in this order, to a dynamic input dim (``_s0``), a product of two of them times a
constant (``_s0 * _s1``, a ``view(B * T, C)``), or an affine function of one (``2 * _s0 + 1``,
a ``cat``); a size that fits none leaves the region to its dispatching replay, with the reason.
"""

from __future__ import annotations

from itertools import combinations

from ember._tensor import Tensor
from ember.jit.types import TensorType

PROBE = 5  # probe k moves group n's dims by k * (PROBE + n) + k * k * n


class Shapes:
    """``of(value)``: a graph value's shape as a tuple of ints and expressions (source text
    over the symbols ``_s0``...), ``symbols``: ``[(graph input index, dim)]`` per symbol."""

    def __init__(self, symbols: list, shapes: dict, numbers: dict, constants=None):
        self.symbols = symbols
        self.shapes = shapes
        self.numbers = numbers  # int values (prim::size...) that depend on the sizes
        # constants that follow the sizes (a backward formula's ``expand(g, [17])``): source
        self.constants = constants or {}

    def constant(self, value):
        return self.constants.get(value)

    def of(self, value):
        return self.shapes.get(value)

    def number(self, value):
        return self.numbers.get(value)

    def dynamic(self, value) -> tuple:
        shape = self.shapes.get(value) or ()
        return tuple(i for i, n in enumerate(shape) if isinstance(n, str))


def moved(captured: list, call: list, dims: dict):
    """``(groups, fixed)`` for a generic program built from a call at other sizes than the
    captured ones: the dynamic ``dims`` (``{tensor index: dims}``) that changed get symbols,
    grouped by their (captured, call) sizes (dims that moved together: one symbol); the others
    (a feature dim that ``dynamic=True`` marked) are ``fixed``, ``(tensor index, dim, size)``:
    the program serves the calls where they keep their captured sizes."""
    groups, fixed = {}, []
    for k, ds in dims.items():
        for d in sorted(ds):
            if call[k][d] != captured[k][d]:
                groups[(k, d)] = (captured[k][d], call[k][d])
            else:
                fixed.append((k, d, captured[k][d]))
    return groups, fixed


def probe_sizes(call: list, groups: dict, k: int) -> list:
    """Probe ``k``'s shapes (k = 1, 2...): the call's, each dim of ``groups`` (``{(tensor
    index, dim): group}``) moved by its group's offset: dims of one group (the batch dim of
    the inputs and of the targets) together, the groups by offsets that no affine function
    maps onto each other, so that a fit never mistakes one symbol for a function of another."""
    numbers: dict = {}
    shapes = [list(shape) for shape in call]
    for (i, d), group in sorted(groups.items()):
        n = numbers.setdefault(group, len(numbers) + 1)
        shapes[i][d] += k * (PROBE + n) + k * k * n
    return [tuple(shape) for shape in shapes]


def fit(graphs: list) -> Shapes | str:
    """Shapes of ``graphs[0]``'s values from the same graph at other sizes, or why not."""
    nodes = [_ops(g) for g in graphs]
    kinds = [[n.kind() for n in ns] for ns in nodes]
    if any(k != kinds[0] for k in kinds[1:]):
        return "the replay at another size recorded other ops"
    inputs = [list(g.inputs()) for g in graphs]
    symbols, triples = [], []
    for i, values in enumerate(zip(*inputs)):
        sizes = [_sizes(v) for v in values]
        if None in sizes or len({len(s) for s in sizes}) != 1:
            return "an input's shape is unknown"
        for d, triple in enumerate(zip(*sizes)):
            if len(set(triple)) > 1 and triple not in triples:
                symbols.append((i, d))
                triples.append(triple)
    shapes: dict = {}
    numbers: dict = {}
    pairs = list(zip(*inputs)) + [
        pair for group in zip(*nodes) for pair in zip(*(n.outputs() for n in group))
    ]
    for values in pairs:
        if isinstance(values[0].type(), TensorType):
            sizes = [_sizes(v) for v in values]
            if None in sizes or len({len(s) for s in sizes}) != 1:
                return f"a value's shape is unknown ({values[0].debugName()})"
            shape = []
            for triple in zip(*sizes):
                found = _expression(triple, triples)
                if found is None:
                    return f"the size {triple[0]} of a value changes with no rule found"
                shape.append(found)
            shapes[values[0]] = tuple(shape)
    for node in graphs[0].block().nodes():  # tensor constants keep their sizes
        value = node.outputs()[0] if node.kind() == "prim::Constant" else None
        if value is not None and _sizes(value) is not None:
            shapes[value] = _sizes(value)
    for values in pairs:  # sizes read as ints: the size of a tensor with a known shape
        node = values[0].node()
        if node.kind() == "prim::size" and node.inputsAt(0) in shapes:
            dim = node.inputsAt(1).node()
            if dim.kind() == "prim::Constant" and type(dim["value"]) is int:
                found = shapes[node.inputsAt(0)][dim["value"]]
                if isinstance(found, str):
                    numbers[values[0]] = found
    constants = _constants(graphs, triples)
    if isinstance(constants, str):
        return constants
    return Shapes(symbols, shapes, numbers, constants)


def _constants(graphs: list, symbols: list):
    """``{value: source}`` for the int and int-list constants of ``graphs[0]`` that differ
    between the graphs (sizes a backward formula read as Python ints: ``expand(g, [17])``),
    each int an expression of the symbols; or why not (another constant differs)."""
    found = {}
    blocks = [list(g.block().nodes()) for g in graphs]
    if len({len(b) for b in blocks}) != 1:
        return "the graphs at other sizes hold other constants"
    for group in zip(*blocks):
        if group[0].kind() != "prim::Constant" or not group[0].hasAttribute("value"):
            continue
        values = [n["value"] for n in group]
        if isinstance(values[0], Tensor):  # made per trace: their sizes and values must agree
            if len({(v._shape, str(v.dtype)) for v in values}) > 1 or not _same_values(values):
                return "a tensor constant changes with the sizes"
            continue
        if not isinstance(values[0], (int, float, list, tuple)):
            continue
        if all(type(v) is type(values[0]) and v == values[0] for v in values[1:]):
            continue
        if all(type(v) is int for v in values):
            text = _expression(tuple(values), symbols)
        elif all(isinstance(v, (list, tuple)) for v in values) and _ints(values):
            items = [_expression(t, symbols) for t in zip(*values)]
            text = None if None in items else _sequence(values[0], items)
        else:
            text = None
        if text is None:
            return f"a constant changes with the sizes ({values[0]!r})"
        found[group[0].output()] = str(text)
    return found


def _same_values(tensors: list) -> bool:
    """Whether small tensors hold the same values (a large one is taken as made alike)."""
    if tensors[0].numel() > 64:
        return True
    first = tensors[0].detach().cpu().tolist()
    return all(t.detach().cpu().tolist() == first for t in tensors[1:])


def _ints(values: list) -> bool:
    return len({len(v) for v in values}) == 1 and all(type(n) is int for v in values for n in v)


def _sequence(like, items: list) -> str:
    body = ", ".join(str(n) for n in items)
    if isinstance(like, list):
        return f"[{body}]"
    return f"({body},)" if len(items) == 1 else f"({body})"


def _ops(graph) -> list:
    return [n for n in graph.block().nodes() if n.kind() != "prim::Constant"]


def _sizes(value):
    typ = value.type()
    return tuple(typ.sizes()) if isinstance(typ, TensorType) and typ.is_complete() else None


def _expression(sizes: tuple, symbols: list):
    """``sizes`` (a dim's size in each graph) as an int (the same in every graph) or an
    expression of the symbols."""
    if len(set(sizes)) == 1:
        return sizes[0]
    for k, s in enumerate(symbols):
        if s == sizes:
            return f"_s{k}"
    for (j, a), (k, b) in combinations(enumerate(symbols), 2):  # c * s_j * s_k
        products = [x * y for x, y in zip(a, b)]
        c = sizes[0] // products[0]
        if c and all(c * p == t for p, t in zip(products, sizes)):
            return f"_s{j} * _s{k}" if c == 1 else f"{c} * _s{j} * _s{k}"
    for k, s in enumerate(symbols):  # a * s_k + b, from the first two points that differ
        i = next(i for i in range(1, len(s)) if s[i] != s[0])
        a, rest = divmod(sizes[i] - sizes[0], s[i] - s[0])
        b = sizes[0] - a * s[0]
        if a and not rest and all(a * x + b == t for x, t in zip(s, sizes)):
            return f"({a} * _s{k} + {b})"
    return None


class _Every(dict):
    """Every symbol at one value (an expression's locals)."""

    def __init__(self, value: int):
        super().__init__()
        self.value = value

    def __missing__(self, key):
        return self.value


def above_one(size: str) -> bool:
    """Whether a fitted size is above 1 wherever its symbols are (dynamic dims are: sizes 0
    and 1 are specialised): at 2 and growing (``_s0 - 3`` is not)."""
    at = [eval(size, {"__builtins__": {}}, _Every(n)) for n in (2, 3)]
    return at[0] > 1 and at[1] >= at[0]
