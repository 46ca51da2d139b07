"""Batching rules: how an op on BatchedTensors becomes one op on physical tensors.

Most rules are derived from the op's row in the table, so a new op batches without code here:

- elementwise ops broadcast: each batched operand has its batch dim in front and size-1 dims
  padded up to the highest logical rank, so broadcasting lines up per sample;
- composites decompose (their parts are batched), as autograd differentiates them;
- an op whose one tensor argument is the first, of a kind that works per sample along named
  dims (reductions, scans, sorts, views, flips, copies, padding), runs on the physical tensor
  with its dim arguments (schema names in ``DIM_ARGS``) shifted past the batch dim;
- the rest have explicit rules (autograd/batch_rules_ops.py), or run once per sample and stack
  (the loop fallback, which warns once per op, as PyTorch's does).

A rule is ``rule(op, args, level) -> result``: ``args`` as the op received them, with tensors
batched at vmap level ``level`` among them. Rules call ops from the top of the stack on
physical tensors, so other levels and other layers (forward AD, autograd) see those calls.
"""

from __future__ import annotations

import warnings

from ember._tensor import Tensor

from ..dispatcher.kinds.functional import call_decomposition, runs_decomposition
from ..dispatcher.opdef import Kind
from ..dispatcher.promotion import result_type
from .batched import BatchedTensor, level_of, peel, wrap

DIM_ARGS = frozenset(
    {
        "dim",
        "dims",
        "dim0",
        "dim1",
        "dim2",
        "start_dim",
        "end_dim",
        "source",
        "destination",
        "dimension",
        "axis0",
        "axis1",
    }
)
# Kinds whose single-tensor ops work per sample along their dim arguments.
PER_SAMPLE_KINDS = frozenset(
    {Kind.REDUCTION, Kind.SCAN, Kind.SORT, Kind.VIEW, Kind.SHAPE, Kind.NN, Kind.COPY}
)


class DataDependentError(RuntimeError):
    """A value of a BatchedTensor was read (``item``, ``bool``): composites that do so fall
    back to running once per sample."""


class InplaceUnbatchedError(RuntimeError):
    """An in-place op would write per-sample values into a tensor that is not batched (a
    composite filling a fresh ``zeros`` does): composites fall back to one run per sample."""


# ---- helpers --------------------------------------------------------------------------------
def batch_size(level: int) -> int:
    return level_of(level).batch_size


def wrap_result(out, level: int):
    """Outputs of a physical call (batch dim 0) as BatchedTensors at ``level``."""
    if isinstance(out, Tensor):
        return wrap(out, level)
    if isinstance(out, tuple):
        return (
            type(out)(*(wrap_result(o, level) for o in out))
            if hasattr(out, "_fields")
            else (tuple(wrap_result(o, level) for o in out))
        )
    if isinstance(out, list):
        return [wrap_result(o, level) for o in out]
    return out


def expand_batch(t: Tensor, size: int) -> Tensor:
    """An unbatched tensor given a (stride-0) batch dim in front."""
    return t.unsqueeze(0).expand((size, *t._shape))


def physical(t, level: int, size: int) -> Tensor:
    """The physical tensor of ``t`` at ``level``, batched (expanded) if it was not."""
    value, batched = peel(t, level)
    return value if batched else expand_batch(value, size)


def wrap_dim(dim: int, rank: int, op) -> int:
    bound = max(rank, 1)
    if not -bound <= dim < bound:
        raise IndexError(
            f"{op.name}(): Dimension out of range (expected to be in range of [{-bound}, "
            f"{bound - 1}], but got {dim})"
        )
    return dim + bound if dim < 0 else dim


def shift(dim, rank: int, op):
    """A logical dim (or list of dims) as the physical one, past the batch dim."""
    if isinstance(dim, (list, tuple)):
        return [wrap_dim(d, rank, op) + 1 for d in dim]
    return wrap_dim(dim, rank, op) + 1


def full_args(op, args) -> list:
    """``args`` padded with the schema's defaults (internal calls may leave some out)."""
    schema_args = op.schema.args
    out = list(args)
    for a in schema_args[len(out) :]:
        out.append(a.default if a.has_default else None)
    return out


def inplace_unbatched(op, name: str) -> RuntimeError:
    return InplaceUnbatchedError(
        f"vmap: {op.name}(self, *extra_args) is not possible because there exists a Tensor "
        f"`{name}` in extra_args that has more elements than `self`. This happened due to "
        f"`{name}` being vmapped over but `self` not being vmapped over in a vmap. Please try to "
        f"use out-of-place operators instead of {op.name}."
    )


def check_inplace(op, args, level: int) -> None:
    """In-place ops cannot write per-sample results into a tensor that is not batched."""
    if not op.mutates or peel(args[0], level)[1]:
        return
    for i, a in enumerate(args[1:], 1):
        if peel(a, level)[1]:
            raise inplace_unbatched(op, op.schema.args[i].name)


# ---- elementwise ----------------------------------------------------------------------------
def elementwise(op, args, level: int):
    check_inplace(op, args, level)
    rank = 0
    for a in args:
        if isinstance(a, Tensor) and len(a._shape) > rank:
            rank = len(a._shape)
    common = None
    out = list(args)
    for i, a in enumerate(args):
        if a.__class__ is not BatchedTensor or a._level != level:
            continue
        value = a._value
        logical = len(a._shape)
        if logical == 0 and not (i == 0 and op.mutates):
            # A logical 0-d operand is dimensioned physically: cast it to the logical result
            # type, or it would win type promotion against the dimensioned operands.
            if common is None:
                common = result_type([x for x in args if x is not None], Tensor)
            if value._dtype is not common:
                value = value.to(common)
        for _ in range(rank - logical):
            value = value.unsqueeze(1)
        out[i] = value
    result = op(*out)
    return args[0] if op.mutates else wrap_result(result, level)


# ---- per-sample ops along named dims ----------------------------------------------------------
class DimRule:
    """Single-tensor ops of per-sample kinds: shift the dim arguments past the batch dim.

    ``int[]? dim=None`` means every dim (and so does ``[]`` for reductions); a logical 0-d
    input runs as ``[B, 1]`` along dim 1 and its outputs are reshaped back to ``[B]``.
    """

    __slots__ = ("all_dims", "dims")

    def __init__(self, op):
        args = op.schema.args
        self.dims = tuple(i for i, a in enumerate(args) if a.name in DIM_ARGS and a.type == "int")
        reduction = op.kind is Kind.REDUCTION
        self.all_dims = tuple(
            i for i in self.dims if reduction and args[i].is_list and args[i].optional
        )

    def __call__(self, op, args, level: int):
        original = args[0]
        x, _ = peel(original, level)
        rank = len(args[0]._shape)
        scalar = rank == 0 and self.dims
        if scalar:
            x = x.unsqueeze(1)
        args = full_args(op, args) if self.dims else list(args)
        args[0] = x
        for i in self.dims:
            args[i] = self._dim(op, args[i], i, max(rank, 1))
        out = op(*args)
        if op.mutates:
            return original
        if scalar:
            out = _reshape_scalar(out)
        return wrap_result(out, level)

    def _dim(self, op, value, position: int, rank: int):
        if position in self.all_dims and (value is None or value == [] or value == ()):
            return list(range(1, rank + 1))
        if value is None:
            return None
        return shift(value, rank, op)


def _reshape_scalar(out):
    if isinstance(out, Tensor):
        return out.reshape(out._shape[:1])
    if isinstance(out, tuple):
        return (
            type(out)(*(_reshape_scalar(o) for o in out))
            if hasattr(out, "_fields")
            else (tuple(_reshape_scalar(o) for o in out))
        )
    return out


# ---- composites and the fallback ----------------------------------------------------------------
def decompose(op, args, level: int):
    try:
        return call_decomposition(op, args)
    except (DataDependentError, InplaceUnbatchedError):
        if op.mutates:
            raise
        return loop(op, args, level)


def no_fallback(op, args, level: int):
    raise RuntimeError(
        f"Batching rule not implemented for aten::{op.name}. We could not generate a fallback."
    )


_WARNED: set = set()


def loop(op, args, level: int):
    """Run the op once per sample and stack the results (PyTorch's slow fallback)."""
    if op.name not in _WARNED:
        _WARNED.add(op.name)
        warnings.warn(
            f"There is a performance drop because we have not yet implemented the batching rule "
            f"for {op.name}. Please file us an issue on GitHub so that we can prioritize its "
            "implementation.",
            UserWarning,
            stacklevel=4,
        )
    return run_per_sample(op, args, level)


def run_per_sample(op, args, level: int, before_each=None):
    check_inplace(op, args, level)
    results = []
    for b in range(batch_size(level)):
        if before_each is not None:
            before_each()
        results.append(op(*[_sample(a, level, b) for a in args]))
    if op.mutates:
        return args[0]
    return stack_results(results, level)


def _sample(a, level: int, b: int):
    if a.__class__ is BatchedTensor:
        return a._value.select(0, b) if a._level == level else a
    if a.__class__ is list or a.__class__ is tuple:
        return type(a)(_sample(x, level, b) for x in a)
    return a


def stack_results(results: list, level: int):
    from ember.dispatcher.optable import OPS

    first = results[0]
    if isinstance(first, Tensor):
        return wrap(OPS["stack"](results, 0), level)
    if isinstance(first, (tuple, list)):
        parts = [stack_results([r[i] for r in results], level) for i in range(len(first))]
        if hasattr(first, "_fields"):
            return type(first)(*parts)
        return type(first)(parts)
    raise RuntimeError(f"vmap: the fallback cannot batch results of type {type(first).__name__}")


# ---- derivation ---------------------------------------------------------------------------------
def derive(op):
    """The rule of ``op``: explicit, else derived from its row (see the module docstring)."""
    from .batch_random import random_rule
    from .batch_rules_ops import EXPLICIT

    name = op.name
    if name in EXPLICIT:
        return EXPLICIT[name]
    if op.inplace_of is not None and op.inplace_of.name in EXPLICIT:
        return EXPLICIT[op.inplace_of.name]
    if op.kind is Kind.RANDOM:
        return random_rule
    if not op.schema.returns:
        return no_fallback  # writes its arguments and returns nothing: no loop can stack it
    if op.kind is Kind.ELEMENTWISE:
        return elementwise
    if runs_decomposition(op):
        return decompose  # a composite (one with another runner may take other arguments)
    positions = op.schema.tensor_positions
    if positions == (0,) and not op.schema.args[0].is_list and op.kind in PER_SAMPLE_KINDS:
        return DimRule(op)
    return loop


_RULES: dict = {}


def rule_for(op):
    found = _RULES.get(op)
    if found is None:
        found = derive(op)
        _RULES[op] = found
    return found


def set_rule(op, rule) -> None:
    """Make ``rule(op, args, level)`` the batching rule of ``op`` (a custom op's registered
    vmap function), replacing the derived one."""
    _RULES[op] = rule
