"""A custom ``autograd.Function`` called on BatchedTensors, as under ``torch.func.vmap``: its
``vmap`` staticmethod runs on the physical tensors with their batch dims (``in_dims``) and says
where its outputs' are; ``generate_vmap_rule=True`` maps the Function over the samples (each
call records its own node, so gradients flow through every sample)."""

from __future__ import annotations

from typing import NamedTuple

from ember._tensor import Tensor

from .batch_rules import run_per_sample
from .batched import BatchedTensor, level_of, wrap

_LINK = "For more details, please see https://pytorch.org/docs/main/notes/extending.func.html"


class VmapInfo(NamedTuple):
    batch_size: int
    randomness: str


def batched_level(args) -> int | None:
    """The innermost vmap level among the arguments (None: no BatchedTensor)."""
    found = None
    for a in args:
        if a.__class__ is BatchedTensor and (found is None or a._level > found):
            found = a._level
    return found


def apply_batched(cls, args, kwargs, level: int):
    from .function import Function

    overridden = cls.vmap is not Function.vmap
    if cls.generate_vmap_rule:
        if overridden:
            raise RuntimeError(
                f"You tried to vmap over {cls.__name__}, but it has both "
                "generate_vmap_rule=True and an overridden vmap staticmethod. Please set "
                "generate_vmap_rule=False or delete the overridden vmap staticmethod to avoid "
                f"ambiguity. {_LINK}"
            )
        return run_per_sample(_Applied(cls, kwargs), args, level)
    if not overridden:
        raise RuntimeError(
            f"You tried to vmap over {cls.__name__}, but it does not have vmap support. Please "
            f"override and implement the vmap staticmethod or set generate_vmap_rule=True. {_LINK}"
        )
    return call_vmap_rule(cls.vmap, args, kwargs, level, keywords=False)


def call_vmap_rule(vmap_fn, args, kwargs, level: int, *, keywords: bool = True):
    """Run a user's vmap rule, torch's ``vmap_fn(info, in_dims, *args, **kwargs) -> (outputs,
    out_dims)``, on the physical tensors of ``args`` (batch dim 0 where ``in_dims`` says; None
    for the unbatched) and return its outputs as BatchedTensors at their ``out_dims``. Shared by
    ``autograd.Function.vmap`` (which takes no keywords) and custom ops' ``register_vmap``."""
    state = level_of(level)
    in_dims = tuple(_in_dim(a, level) for a in args)
    physical = [_physical(a, level) for a in args]
    info = VmapInfo(state.batch_size, state.randomness)
    if keywords:
        result = vmap_fn(info, in_dims, *physical, **kwargs)
    else:
        result = vmap_fn(info, in_dims, *physical)
    if not isinstance(result, tuple) or len(result) != 2:
        got = f"{len(result)} returns" if isinstance(result, tuple) else f"a {type(result)}"
        raise RuntimeError(
            "Expected the vmap staticmethod to have two returns, an output and out_dims with "
            f"pytree structure compatible with the output. Got {got} instead"
        )
    out, out_dims = result
    if isinstance(out, (tuple, list)):
        dims = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(out)
        return type(out)(_wrap_out(o, d, level) for o, d in zip(out, dims))
    return _wrap_out(out, out_dims, level)


def _in_dim(a, level: int):
    if a.__class__ is list or a.__class__ is tuple:
        return type(a)(_in_dim(x, level) for x in a)  # torch's in_dims mirror the pytree
    return 0 if _batched(a, level) else None


def _physical(a, level: int):
    if a.__class__ is list or a.__class__ is tuple:
        return type(a)(_physical(x, level) for x in a)
    return a._value if _batched(a, level) else a


def _batched(a, level: int) -> bool:
    return a.__class__ is BatchedTensor and a._level == level


def _wrap_out(out, dim, level: int):
    if dim is None or not isinstance(out, Tensor):
        return out
    return wrap(out.movedim(dim, 0) if dim else out, level)


class _Applied:
    """``cls.apply`` dressed as an op for the per-sample loop (it reads ``mutates`` and calls)."""

    mutates = False
    name = "autograd.Function"

    def __init__(self, cls, kwargs):
        self.cls = cls
        self.kwargs = kwargs
        self.schema = None

    def __call__(self, *args):
        return self.cls.apply(*args, **self.kwargs)
