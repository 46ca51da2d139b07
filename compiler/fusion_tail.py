"""A row op's tail: the per-row and whole-kernel steps after a chain's last softmax,
log_softmax or layer_norm (cross-entropy's forward).

``F.cross_entropy`` is log_softmax then ``nll_loss``: per row, the target's log-probability
(``gather`` along the last dim, at an index made from the target with ``ignore_index`` masked
to 0), the mask as a weight, then the mean: two sums over every row and their quotient. After
the log_softmax these nodes have one value per row (shape ``rows`` or ``rows + (1,)``) or one
for the whole kernel (0-d). ``attach`` appends them to the chain that ends in the row op, so
its kernel computes, for each row still in cache, the log-probabilities, the picked value, the
mask and the weight, and accumulates the sums; the kernel's end divides them. ``steps`` turns
them into ``FusedStep`` records (``row`` for a value per row, ``total`` for one value) under
the description feature ``row_tail``.
"""

from __future__ import annotations

from ember.jit.types import TensorType

from .fusion_steps import (
    BINARY,
    COMPARE,
    FLOATS,
    NORMS,
    UNARY,
    _constant,
    _dtype,
    _literal,
    _name,
    _sizes,
    step_of,
)

ROW_TAIL = "row_tail"
NOT = frozenset(("bitwise_not", "logical_not"))
RESHAPES = frozenset(("unsqueeze", "squeeze", "view", "reshape"))  # rows <-> rows + (1,)
MASKS = COMPARE | NOT | {"where"}  # steps of any dtype (the target's int64, a mask's bool)


def split(nodes) -> tuple[list, list]:
    """``(body, tail)``: a chain's nodes up to its row op, and the tail after it."""
    for i, node in enumerate(nodes):
        if _name(node) in NORMS:
            return nodes[: i + 1], nodes[i + 1 :]
    return nodes, []


def attach(nodes, group: dict, users: dict, order: dict) -> None:
    """Append to each chain ending in a softmax, log_softmax or layer_norm the tail that reads
    its result, when the whole tail can run at its last node (every outside reader of the
    chain's values comes later) and takes whole chains of ``group`` only."""
    for chain in {id(c): c for c in group.values()}.values():
        last = max(chain, key=order.__getitem__)
        if _name(last) not in NORMS or not isinstance(step_of(last), tuple):
            continue
        tail = _grow(last, nodes, order)
        if not tail:
            continue
        taken = set(tail)
        others = {id(group[n]): group[n] for n in tail if n in group}.values()
        if any(not set(other) <= taken for other in others):
            continue
        members = set(chain) | taken
        end = order[max(tail, key=order.__getitem__)]
        if any(
            u not in members and order.get(u, -1) <= end
            for n in members
            for u in users.get(n.output(), ())
        ):
            continue
        chain.extend(tail)
        for node in tail:
            group[node] = chain


def _grow(last, nodes, order) -> list:
    """The tail nodes after ``last``: each reads a value of the tail (or the row op's result,
    through a ``gather``), with the nodes making its other operands from outside values
    pulled in when they are tail steps themselves (the mask of the target)."""
    shape = _sizes(last.output())
    if len(shape) < 2 or shape[-1] == 1:
        return []
    inside = {last}
    tail: list = []
    for node in nodes[order[last] + 1 :]:
        operands = _operands(node, shape, last)
        if operands is None or not any(v.node() in inside for v in operands):
            continue
        pulled: list = []
        if all(_pull(v, shape, inside, pulled) for v in operands):
            tail += [*pulled, node]
            inside.update(pulled)
            inside.add(node)
    return sorted(tail, key=order.__getitem__)


def _pull(value, shape, inside, pulled) -> bool:
    """Whether ``value`` is available to the tail: made inside, made by a tail step of outside
    values (its node added to ``pulled``), or an input of one value per row."""
    producer = value.node()
    if producer in inside or producer in pulled:
        return True
    operands = _operands(producer, shape, None) if len(producer.outputs()) == 1 else None
    if operands is not None and all(_pull(v, shape, inside, pulled) for v in operands):
        pulled.append(producer)
        return True
    return _scope(value, shape) == "row"


def _scope(value, shape) -> str | None:
    """ "row" for a value per row of ``shape``, "total" for a 0-d one, else None."""
    typ = value.type()
    if not isinstance(typ, TensorType) or not typ.is_complete():
        return None
    sizes = tuple(typ.sizes())
    if sizes in (tuple(shape[:-1]), (*shape[:-1], 1)):
        return "row"
    return "total" if sizes == () else None


def _operands(node, shape, row_op) -> list | None:
    """The tensor operands of a tail step (``row_op``: the node a ``gather`` may read), or
    None when ``node`` is not one."""
    step = tail_step(node, shape, row_op)
    if step is None:
        return None
    return [v for v in step[1] if not isinstance(v, tuple)]


def tail_step(node, shape, row_op=None):
    """``(op, operands, params, scope)`` of a tail node, or None. Operands are graph values or
    ``("scalar", number)``; ``scope`` is "row" or "total"."""
    name = _name(node)
    if name is None or len(node.outputs()) != 1:
        return None
    out = node.output()
    scope = _scope(out, shape)
    if scope is None:
        return None
    inputs = list(node.inputs())
    if name == "gather":
        source, dim, index = inputs
        if row_op is None or source.node() is not row_op or _literal(dim) not in (-1, 1):
            return None
        if _sizes(index) != (*shape[:-1], 1) or _dtype(index) != "int64":
            return None
        return name, [source, index], {}, "row"
    if name == "sum":
        if _literal(inputs[1]) is not None or _literal(inputs[2]) is not False:
            return None
        if len(inputs) > 3 and _literal(inputs[3]) is not None:
            return None
        return (name, [inputs[0]], {}, "total") if _scope(inputs[0], shape) == "row" else None
    if name == "_to_copy":
        rest = [_literal(v) for v in inputs[2:]]
        if _dtype(out) not in FLOATS or any(r not in (None, False) for r in rest[1:]):
            return None
        operands = [inputs[0]]
    elif name in RESHAPES:
        operands = [inputs[0]]
    elif name in MASKS | UNARY | BINARY:
        if name in UNARY | BINARY and _dtype(out) not in FLOATS:
            return None
        operands = []
        for value in inputs:
            if isinstance(value.type(), TensorType):
                number = _tensor_constant(value)
                operands.append(value if number is None else ("scalar", number))
            elif (number := _constant(value)) is not None:
                operands.append(("scalar", number))
            else:
                return None
    else:
        return None
    # a row step reads values per row; a total one (after every row) reads totals
    if any(_scope(v, shape) != scope for v in operands if not isinstance(v, tuple)):
        return None
    return name, operands, {}, scope


def _tensor_constant(value):
    """The number a 0-d constant tensor holds (masked_fill's fill value), else None; also
    through the copy of such a CPU constant to the chain's device (``where``'s scalar on xpu
    and CUDA is ``_to_copy`` of one, with no dtype change)."""
    node = value.node()
    if node.kind() == "ember::_to_copy" and _literal(node.inputsAt(1)) is None:
        return _tensor_constant(node.inputsAt(0))
    if node.kind() != "prim::Constant" or _sizes(value) != ():
        return None
    return node["value"].item()


def steps(tail, shape, row_op, position: dict, operand, dtype: str) -> list | str:
    """The tail's ``(op, args, dtype, params, row, total)`` in order (``shape``: the chain's
    element shape, ``row_op`` its last node); ``operand(value)`` gives a graph value's
    reference (a step, or an input read once per row). A str says why not."""
    found = []
    for node in tail:
        name, args, params, scope = tail_step(node, shape, row_op)
        out = _dtype(node.output())
        if name in UNARY | BINARY | {"gather", "sum", "_to_copy"} and out != dtype:
            return f"{node.kind()}: a {out} result in a {dtype} chain"
        refs = [a if isinstance(a, tuple) else operand(a) for a in args]
        found.append((name, tuple(refs), out, params, scope == "row", scope == "total"))
        position[node] = len(position)
    return found
