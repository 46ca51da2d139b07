"""Dynamic dimensions for ``ember.export``: ``Dim``, the ranges an export keeps, and the guards
its module checks on every call (``torch.export.Dim`` and ``range_constraints``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import pytree


class ConstraintViolationError(RuntimeError):
    """A dimension marked dynamic that the program does not treat as dynamic (PyTorch's
    ``UserError: Constraints violated``)."""


class Dim:
    """A named dynamic dimension: ``Dim("batch", min=1, max=64)``.

    The same Dim object given for several dims says they are equal. ``Dim.STATIC`` keeps a dim
    at its example size; ``Dim.DYNAMIC`` and ``Dim.AUTO`` ask for an unnamed dynamic dim.
    """

    STATIC: Dim
    DYNAMIC: Dim
    AUTO: Dim

    def __init__(self, name: str, *, min: int | None = None, max: int | None = None):
        if min is not None and max is not None and min > max:
            raise ValueError(f"Dim {name}: min {min} is greater than max {max}")
        self.__name__ = name
        self.min = 0 if min is None else int(min)
        self.max = math.inf if max is None else int(max)

    def __repr__(self) -> str:
        if self.max == math.inf and self.min == 0:
            return f"Dim('{self.__name__}')"
        return f"Dim('{self.__name__}', min={self.min}, max={self.max})"


Dim.STATIC = Dim("STATIC")
Dim.DYNAMIC = Dim("DYNAMIC")
Dim.AUTO = Dim("AUTO")


def dims(*names: str, min: int | None = None, max: int | None = None):
    """``batch, seq = dims("batch", "seq")`` (``torch.export.dims``)."""
    return tuple(Dim(n, min=min, max=max) for n in names)


@dataclass(frozen=True)
class ValueRange:
    """``VR[lower, upper]`` (upper may be infinite)."""

    lower: int
    upper: float

    def __repr__(self) -> str:
        upper = "int_oo" if self.upper == math.inf else str(self.upper)
        return f"VR[{self.lower}, {upper}]"

    def to_json(self):
        return [self.lower, None if self.upper == math.inf else self.upper]


@dataclass
class DynamicDim:
    """Input leaf ``leaf`` dimension ``dim`` is the symbol ``symbol``."""

    leaf: int
    dim: int
    symbol: str
    path: str  # where it is, for messages: "x.size()[0]"


def resolve(dynamic_shapes, args: tuple, kwargs: dict, arg_names: list[str]):
    """``(dynamic dims, range constraints)`` from ``dynamic_shapes`` (a dict by argument name,
    or a tuple in argument order, of ``{dim: Dim}`` or lists of Dims)."""
    if dynamic_shapes is None:
        return [], {}
    leaves, spec = pytree.flatten((tuple(args), dict(kwargs)))
    per_leaf = _per_leaf(dynamic_shapes, args, kwargs, arg_names, len(leaves))
    found, ranges, symbols = [], {}, {}
    paths = pytree.leaf_paths(spec)
    for index, (leaf, marks) in enumerate(zip(leaves, per_leaf)):
        for dim, mark in marks.items():
            if mark is None or mark is Dim.STATIC:
                continue
            if not -leaf.ndim <= dim < leaf.ndim:
                raise ValueError(f"dynamic_shapes: dim {dim} of an input of rank {leaf.ndim}")
            dim %= leaf.ndim
            symbol = symbols.get(id(mark))
            if symbol is None:
                symbol = symbols[id(mark)] = f"s{len(symbols)}"
                ranges[symbol] = ValueRange(mark.min, mark.max)
                _check_example(mark, leaf.shape[dim])
            path = f"{_name(paths[index], arg_names)}.size()[{dim}]"
            found.append(DynamicDim(index, dim, symbol, path))
    _check_equal_dims(found, leaves)
    return found, ranges


def _per_leaf(dynamic_shapes, args, kwargs, arg_names, count: int) -> list[dict]:
    if isinstance(dynamic_shapes, dict):
        by_position = [dynamic_shapes.get(n) for n in arg_names[: len(args)]]
        keyword = {k: dynamic_shapes.get(k) for k in kwargs}
        unknown = set(dynamic_shapes) - set(arg_names[: len(args)]) - set(kwargs)
        if unknown:
            raise ValueError(f"dynamic_shapes names {sorted(unknown)}, which are not arguments")
        tree = (tuple(by_position), keyword)
    else:
        tree = (tuple(dynamic_shapes), {k: None for k in kwargs})
    marks: list = []
    _collect(tree, (tuple(args), dict(kwargs)), marks)
    if len(marks) != count:
        raise ValueError("dynamic_shapes does not match the structure of the inputs")
    return marks


def _collect(spec, value, out: list) -> None:
    """One ``{dim: Dim}`` per tensor leaf of ``value``, from the matching part of ``spec``."""
    from ember._tensor import Tensor

    if isinstance(value, Tensor):
        if spec is None:
            out.append({})
        elif isinstance(spec, dict):
            out.append(dict(spec))
        elif isinstance(spec, (list, tuple)):
            out.append(dict(enumerate(spec)))
        else:
            raise ValueError(f"dynamic_shapes: expected a dict or list of Dims, got {spec!r}")
        return
    items = list(value.values()) if isinstance(value, dict) else list(value)
    if spec is None:
        specs = [None] * len(items)
    else:
        specs = list(spec.values()) if isinstance(spec, dict) else list(spec)
    for sub_spec, sub_value in zip(specs, items, strict=True):
        _collect(sub_spec, sub_value, out)


def _name(path: str, arg_names: list[str]) -> str:
    group, position, *rest = path.split(".")
    head = arg_names[int(position)] if group == "0" and int(position) < len(arg_names) else position
    return "".join([head, *(f"[{r}]" for r in rest)])


def _check_example(mark: Dim, size: int) -> None:
    if not mark.min <= size <= mark.max:
        raise ConstraintViolationError(
            f"Constraints violated ({mark.__name__})! The example size {size} is outside the "
            f"range [{mark.min}, {mark.max}] given for {mark.__name__}"
        )


def _check_equal_dims(found: list, leaves: list) -> None:
    sizes: dict = {}
    for d in found:
        size = leaves[d.leaf].shape[d.dim]
        if sizes.setdefault(d.symbol, size) != size:
            raise ConstraintViolationError(
                f"Constraints violated! {d.path} shares a Dim with a dimension of another size "
                f"({size} vs {sizes[d.symbol]}) in the example inputs"
            )


def perturbed(args: tuple, kwargs: dict, found: list, ranges: dict, step: int):
    """The example inputs with every dynamic dim moved by ``step`` within its range (what a
    trace must not notice), or None when a range does not allow it."""
    leaves, spec = pytree.flatten((tuple(args), dict(kwargs)))
    new_sizes: dict = {}
    for d in found:
        size = leaves[d.leaf].shape[d.dim]
        if d.symbol not in new_sizes:
            bounds = ranges[d.symbol]
            choice = size + step
            # 0 and 1 change broadcasting, so they are no probe of a general size
            if not max(bounds.lower, 2) <= choice <= bounds.upper:
                return None
            new_sizes[d.symbol] = choice
    out = list(leaves)
    by_leaf: dict = {}
    for d in found:
        by_leaf.setdefault(d.leaf, {})[d.dim] = new_sizes[d.symbol]
    for index, changes in by_leaf.items():
        shape = list(out[index].shape)
        for dim, size in changes.items():
            shape[dim] = size
        out[index] = _resized(out[index], tuple(shape))
    return pytree.unflatten(out, spec)


def _resized(t, shape: tuple):
    """A tensor of ``shape`` with values drawn like ``t``'s kind (integers stay in range)."""
    import ember

    if t.dtype.is_floating_point:
        return ember.randn(shape, dtype=t.dtype, device=t.device)
    low = int(t.min().item()) if t.numel() else 0
    high = int(t.max().item()) + 1 if t.numel() else 1
    return ember.randint(low, high, shape, dtype=t.dtype, device=t.device)


def check_guards(leaves: list, found: list, ranges: dict, static: dict) -> None:
    """What an exported module asserts of its inputs (PyTorch's ``Guard failed`` messages)."""
    ranks: dict = {}
    for leaf, dim in static:
        ranks[leaf] = max(ranks.get(leaf, 0), dim + 1)
    for d in found:
        ranks[d.leaf] = max(ranks.get(d.leaf, 0), d.dim + 1)
    for leaf, rank in ranks.items():
        if not hasattr(leaves[leaf], "shape") or len(leaves[leaf].shape) != rank:
            raise AssertionError(f"Guard failed: input {leaf} has rank {rank}")
    seen: dict = {}
    for d in found:
        size = leaves[d.leaf].shape[d.dim]
        bounds = ranges[d.symbol]
        if size < bounds.lower:
            raise AssertionError(f"Guard failed: {d.path} >= {bounds.lower}")
        if size > bounds.upper:
            raise AssertionError(f"Guard failed: {d.path} <= {bounds.upper}")
        if seen.setdefault(d.symbol, (size, d.path))[0] != size:
            raise AssertionError(f"Guard failed: {d.path} == {seen[d.symbol][1]}")
    for (leaf, dim), (size, path) in static.items():
        if leaves[leaf].shape[dim] != size:
            raise AssertionError(f"Guard failed: {path} == {size}")
