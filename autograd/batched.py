"""BatchedTensor: what a function mapped by ``vmap`` sees of a batched input.

A BatchedTensor wraps a *physical* tensor whose dim 0 is the batch dim of one vmap level and
presents the per-sample (*logical*) shape: ``_shape`` and ``_stride`` are the physical ones
without dim 0. The physical tensor may itself be a BatchedTensor of an outer (lower) level, so
nested vmaps nest wrappers, innermost level outside. The batch dim is always dim 0 (inputs are
moved there on entry, outputs moved to ``out_dims`` on exit), which keeps the batching rules
simple. Ops on BatchedTensors never reach a kernel: the vmap layer (autograd/vmap.py) unwraps
them first; reading a BatchedTensor's memory directly (``numpy``, ``item``) is refused with
PyTorch's messages.
"""

from __future__ import annotations

import itertools
import threading

from ember._tensor import Tensor, is_contiguous

_LEVEL_IDS = itertools.count(1)


class Level:
    """One active vmap: its id (inner vmaps have larger ids), batch size and randomness mode."""

    __slots__ = ("batch_size", "id", "randomness")

    def __init__(self, batch_size: int, randomness: str):
        self.id = next(_LEVEL_IDS)
        self.batch_size = batch_size
        self.randomness = randomness


class _Levels(threading.local):
    def __init__(self):
        self.stack: list = []


LEVELS = _Levels()


def active_levels() -> list:
    """The vmap levels active in this thread, outermost first."""
    return LEVELS.stack


def level_of(level_id: int) -> Level:
    for level in LEVELS.stack:
        if level.id == level_id:
            return level
    raise RuntimeError(
        "vmap: a BatchedTensor escaped the vmap that created it (it was stored during the call "
        "and used after it returned); return it from the mapped function instead"
    )


class BatchedTensor(Tensor):
    """The logical view of ``_value`` (batch dim 0) at vmap level ``_level``."""

    __slots__ = ("_level", "_value")

    @property
    def requires_grad(self) -> bool:
        return self._value.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._value.requires_grad = value

    @property
    def data(self) -> Tensor:
        return wrap(self._value.data, self._level)

    def numpy(self, *, force: bool = False):
        raise _data_dependent(_ITEM)

    def __array__(self, dtype=None, copy=None):
        raise _data_dependent(_ITEM)

    def item(self):
        raise _data_dependent(_ITEM)

    def tolist(self):
        raise _data_dependent(_ITEM)

    def data_ptr(self) -> int:
        raise RuntimeError("vmap: data_ptr of a BatchedTensor has no meaning (one per sample)")

    def __bool__(self) -> bool:
        raise _data_dependent(_CONTROL_FLOW)

    def __repr__(self) -> str:
        value = repr(self._value).replace("\n", "\n    ")
        return f"BatchedTensor(lvl={self._level}, bdim=0, value=\n    {value}\n)"

    # new_* build a batched tensor, so that formulas writing into ``g.new_zeros(...)`` in place
    # work when ``g`` is batched (jacrev runs backward formulas on batched gradients).
    def new_zeros(self, *size, **kwargs) -> Tensor:
        return _new_like(self, "new_zeros", size, kwargs)

    def new_ones(self, *size, **kwargs) -> Tensor:
        return _new_like(self, "new_ones", size, kwargs)

    def new_empty(self, *size, **kwargs) -> Tensor:
        return _new_like(self, "new_empty", size, kwargs)

    def new_full(self, size, fill_value, **kwargs) -> Tensor:
        value = self._value
        batch = (value._shape[0],)
        return wrap(value.new_full(batch + tuple(size), fill_value, **kwargs), self._level)


_ITEM = (
    "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
    "calling .item() on a Tensor, please try to rewrite what you're doing with other "
    "operations. If error is occurring somewhere inside PyTorch internals, please file a bug "
    "report."
)
_CONTROL_FLOW = (
    "vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. "
    "We don't support that yet, please file an issue at https://github.com/pytorch/pytorch/"
    "issues ."
)


def _data_dependent(message: str) -> RuntimeError:
    from .batch_rules import DataDependentError

    return DataDependentError(message)


def _new_like(t: BatchedTensor, method: str, size, kwargs) -> Tensor:
    if "size" in kwargs:  # x.new_ones(size=(), ...), as flex_attention's noop_mask writes it
        if size:
            raise TypeError(f"{method}() got multiple values for argument 'size'")
        size = (kwargs.pop("size"),)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    value = t._value
    made = getattr(value, method)((value._shape[0], *size), **kwargs)
    return wrap(made, t._level)


def wrap(value: Tensor, level: int) -> BatchedTensor:
    """``value`` (its dim 0 the batch dim of ``level``) as a BatchedTensor."""
    t = object.__new__(BatchedTensor)
    t._value = value
    t._level = level
    t._storage = value._storage
    t._dtype = value._dtype
    refresh(t)
    t._requires_grad = False  # autograd never sees wrappers: it works on physical tensors
    t._grad = None
    t._grad_fn = None
    t._base = None
    return t


def refresh(t: BatchedTensor) -> None:
    """``t``'s logical geometry read off its physical tensor (also after an in-place view
    changed that one)."""
    value = t._value
    t._shape = value._shape[1:]
    t._stride = value._stride[1:]
    t._offset = value._offset
    t._contig = is_contiguous(t._shape, t._stride)


def is_batched(t) -> bool:
    return t.__class__ is BatchedTensor


def peel(t, level: int):
    """``(physical, True)`` for a tensor batched at ``level``, else ``(t, False)``."""
    if t.__class__ is BatchedTensor and t._level == level:
        return t._value, True
    return t, False


def unwrap_all(t) -> tuple[Tensor, list]:
    """The innermost physical tensor under every wrapper, and the level ids it is batched at,
    outermost (lowest) first; the physical dims are those levels' batch dims in that order."""
    levels = []
    while t.__class__ is BatchedTensor:
        levels.append(t._level)
        t = t._value
    levels.reverse()
    return t, levels


def wrap_all(physical: Tensor, level_ids: list) -> Tensor:
    """Inverse of ``unwrap_all``: the leading dims of ``physical`` are the batch dims of
    ``level_ids`` (outermost first)."""
    t = physical
    for level in level_ids:  # the outermost level wraps the physical tensor directly
        t = wrap(t, level)
    return t


def wrap_at(t: Tensor, level: int) -> Tensor:
    """``t`` (its logical dim 0 the batch dim of ``level``) batched at ``level``, also when
    ``t`` is batched at inner levels: their wrappers stay outside, as nesting requires."""
    if t.__class__ is not BatchedTensor or t._level < level:
        return wrap(t, level)
    outer = t._level
    inner = t._value  # dim 0: the outer level's batch; dim 1: ``level``'s
    return wrap(wrap_at(inner.movedim(1, 0), level), outer)


def to_physical(t: Tensor, level: int, size: int) -> Tensor:
    """The tensor that stands for ``t`` under a wrapper of ``level``: its batch dim at
    ``level`` as logical dim 0 (expanded when ``t`` is not batched there)."""
    if t.__class__ is not BatchedTensor or t._level < level:
        return t.unsqueeze(0).expand((size, *t.shape))
    if t._level == level:
        return t._value
    inner = to_physical(t._value, level, size)  # [level's batch, t's outer level's batch, ...]
    return wrap(inner.movedim(0, 1), t._level)


def expand_to_levels(t: Tensor, levels: list) -> Tensor:
    """The physical tensor of ``t`` batched at every one of ``levels`` (outermost first):
    levels ``t`` is not batched at get an expanded (stride-0) batch dim."""
    physical, have = unwrap_all(t)
    ids = [lv.id for lv in levels]
    if have == ids:
        return physical
    if any(level not in ids for level in have):
        raise RuntimeError("vmap: a tensor is batched at a level that is not active")
    rank = len(physical._shape)
    order = [have.index(i) for i in ids if i in have] + list(range(len(have), rank))
    if order != list(range(rank)):
        physical = physical.permute(order)
    for i, level in enumerate(ids):
        if level not in have:
            physical = physical.unsqueeze(i)
    return physical.expand(tuple(lv.batch_size for lv in levels) + physical._shape[len(ids) :])


def debug_unwrap(tensor, *, recurse: bool = True):
    """The tensor a BatchedTensor wraps (every level's, with ``recurse``), for printing inside
    a vmapped function (``torch.func.debug_unwrap``); other values come back as they are."""
    if tensor.__class__ is not BatchedTensor:
        return tensor
    return unwrap_all(tensor)[0] if recurse else tensor._value
