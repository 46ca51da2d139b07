"""Random ops under vmap: PyTorch's three ``randomness`` modes.

- ``"error"``: any random op inside the mapped function raises;
- ``"different"``: each sample draws its own numbers (a random factory such as ``randn(3)``
  returns a batched tensor; an in-place fill of an unbatched tensor is refused, since it could
  only look like the same randomness);
- ``"same"``: every sample draws the same numbers (the generator is rewound before each sample).

Levels are processed innermost first; while one level's rule runs, the random ops it calls see
only the levels outside it (``_SCOPE``), so that each level is handled once.
"""

from __future__ import annotations

import threading

from ember._random import generator_for
from ember._tensor import Tensor

from .batch_rules import check_inplace, run_per_sample, wrap_result
from .batched import BatchedTensor, active_levels, peel, wrap_all

ERROR = (
    "vmap: called random operation while in randomness error mode. Please either use the "
    "'same' or 'different' randomness flags on vmap or perform the randomness operation out of "
    "vmap"
)
INPLACE_UNBATCHED = (
    "vmap: Cannot ask for different inplace randomness on an unbatched tensor. This will appear "
    "like same randomness. If this is necessary for your usage, please file an issue with "
    "functorch."
)
# In-place fills whose physical call on a batched tensor draws independently per element.
_VECTORISED = frozenset({"uniform_", "normal_", "random_", "bernoulli_", "bernoulli"})


class _Scope(threading.local):
    def __init__(self):
        self.below = None  # only levels with smaller ids are left to handle


_SCOPE = _Scope()


def _candidates() -> list:
    below = _SCOPE.below
    levels = active_levels()
    return levels if below is None else [lv for lv in levels if lv.id < below]


def check_error_mode() -> None:
    if any(lv.randomness == "error" for lv in active_levels()):
        raise RuntimeError(ERROR)


def random_rule(op, args, level_hint: int):
    """The rule for random-kind ops (the vmap layer takes every one while vmap is active)."""
    check_error_mode()
    levels = _candidates()
    if not levels:
        from .vmap import LAYER

        return op.redispatch(LAYER, args)
    level = levels[-1]
    previous = _SCOPE.below
    _SCOPE.below = level.id
    try:
        return _at_level(op, args, level)
    finally:
        _SCOPE.below = previous


def _at_level(op, args, level):
    batched = any(a.__class__ is BatchedTensor and a._level == level.id for a in args)
    different = level.randomness == "different"
    if not batched:
        if not different:
            return op(*args)
        if op.mutates:
            raise RuntimeError(INPLACE_UNBATCHED)
        return run_per_sample(op, args, level.id)  # unbatched inputs, a draw per sample
    check_inplace(op, args, level.id)
    if different and op.name in _VECTORISED:
        values = [peel(a, level.id)[0] for a in args]
        out = op(*values)
        return args[0] if op.mutates else wrap_result(out, level.id)
    if different:
        return run_per_sample(op, args, level.id)
    return _same(op, args, level)


def _same(op, args, level):
    """Every sample draws from the same generator state; the state then moves on once."""
    generator = _generator(op, args)
    start = generator.get_state()
    return run_per_sample(op, args, level.id, before_each=lambda: generator.set_state(start))


def _generator(op, args):
    names = [a.name for a in op.schema.args]
    if "generator" in names:
        position = names.index("generator")
        if position < len(args) and args[position] is not None:
            return args[position]
    for a in args:
        if isinstance(a, Tensor):
            return generator_for(a.device)
    from ember._random import default_generator

    return default_generator


def factory_target(shape, dtype, device):
    """What a random factory (``randn``, ``rand``...) fills inside vmap: None (an ordinary new
    tensor) unless a level asks for different randomness, then a tensor batched at those
    levels. Raises in error mode. ``ember._factories`` calls this for every random factory."""
    levels = active_levels()
    if not levels:
        return None
    check_error_mode()
    below = _SCOPE.below
    different = [
        lv for lv in levels if lv.randomness == "different" and (below is None or lv.id < below)
    ]
    if not different:
        return None
    from ember.dispatcher.optable import OPS

    sizes = [lv.batch_size for lv in different]
    physical = OPS["empty"](sizes + list(shape), dtype, device)
    return wrap_all(physical, [lv.id for lv in different])
