"""``vmap``: run a function written for one sample over a batch, as a dispatch layer.

Layer priority 250: above autocast (200), forward AD (150) and autograd (100), below tracing
(300), as PyTorch's FuncTorchBatched key sits above its Autocast and Autograd keys. The vmap layer
takes any op with a BatchedTensor among its arguments, applies the op's batching rule at the
innermost level present (autograd/batch_rules.py) and calls ops on the physical tensors from the
top of the stack again. So autograd only ever records physical ops (``grad`` of ``vmap``
differentiates the batched computation; ``vmap`` of ``grad`` is ember.func.grad batching its
leaves), forward AD propagates tangents of physical tensors, and autocast casts physical
operands. The layer is in the stack only while a vmap runs.
"""

from __future__ import annotations

import functools

from ember._tensor import Tensor

from ..dispatcher.layers import STACK, Layer
from ..dispatcher.opdef import Kind
from . import _pytree
from .batch_random import random_rule
from .batch_rules import rule_for
from .batched import LEVELS, BatchedTensor, Level, level_of, wrap

_RANDOM = Kind.RANDOM


class VmapLayer(Layer):
    name = "vmap"
    priority = 250

    def wants(self, op, args) -> bool:
        if op.kind is _RANDOM:
            return True
        for a in args:
            cls = a.__class__
            if cls is BatchedTensor:
                return True
            if cls is list or cls is tuple:
                for item in a:
                    if item.__class__ is BatchedTensor:
                        return True
        return False

    def handle(self, op, args):
        if op.kind is _RANDOM:
            return random_rule(op, args, None)
        level = 0
        for a in args:
            if a.__class__ is BatchedTensor:
                level = max(level, a._level)
            elif a.__class__ is list or a.__class__ is tuple:
                for item in a:
                    if item.__class__ is BatchedTensor:
                        level = max(level, item._level)
        level_of(level)  # refuses a BatchedTensor that outlived its vmap
        return rule_for(op)(op, args, level)


LAYER = VmapLayer()


def _push(batch_size: int, randomness: str) -> Level:
    level = Level(batch_size, randomness)
    if not LEVELS.stack:
        STACK.install(LAYER)
    LEVELS.stack.append(level)
    return level


def _pop(level: Level) -> None:
    LEVELS.stack.remove(level)
    if not LEVELS.stack:
        STACK.remove(LAYER)


def _name(func) -> str:
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """Vectorise ``func`` over a batch dim of its inputs (``torch.func.vmap``).

    Args:
        func: a function of tensors (and other values) written for one sample.
        in_dims: the batch dim of each input: an int for all, or a (nested) tuple matching the
            inputs, None for inputs that are not batched.
        out_dims: where the batch dim goes in each output (None: the output is not batched).
        randomness: ``"error"``, ``"different"`` or ``"same"`` (see autograd/batch_random.py).
        chunk_size: map this many samples at a time (1 is a Python loop), to save memory.

    Returns:
        A function with ``func``'s signature that takes and returns batched tensors.

    Example:
        >>> dots = ember.func.vmap(ember.dot)(ember.randn(5, 3), ember.randn(5, 3))
        >>> dots.shape
        ember.Size([5])
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. Got "
            f"{randomness}"
        )
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _check_out_dims(out_dims, func)
        size, flat_in_dims, flat_args, spec = _batched_inputs(in_dims, args, func)
        if chunk_size is not None and chunk_size < size:
            return _chunked(
                func, flat_in_dims, flat_args, spec, out_dims, randomness, size, chunk_size, kwargs
            )
        return _flat_vmap(func, size, flat_in_dims, flat_args, spec, out_dims, randomness, kwargs)

    return wrapped


def _batched_inputs(in_dims, args, func):
    name = _name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
            f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}."
        )
    if not args:
        raise ValueError(
            f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
            "trying to vmap over a function with no inputs. The latter is unsupported."
        )
    flat_args, spec = _pytree.tree_flatten(args)
    flat_in_dims = _pytree.broadcast_prefix(in_dims, spec)
    if flat_in_dims is None:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
            f"structure of `inputs`. in_dims has structure {_pytree.tree_flatten(in_dims)[1]} "
            f"but inputs has structure {spec}."
        )
    for i, (arg, in_dim) in enumerate(zip(flat_args, flat_in_dims)):
        flat_in_dims[i] = _check_in_dim(name, in_dims, arg, in_dim)
    return _batch_size(flat_in_dims, flat_args), flat_in_dims, flat_args, spec


def _check_in_dim(name, in_dims, arg, in_dim):
    head = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): "
    if in_dim is None:
        return None
    if not isinstance(in_dim, int) or isinstance(in_dim, bool):
        raise ValueError(
            head + f"Got in_dim={in_dim} for an input but in_dim must be either an integer "
            "dimension or None."
        )
    if not isinstance(arg, Tensor):
        raise ValueError(
            head + f"Got in_dim={in_dim} for an input but the input is of type {type(arg)}. We "
            "cannot vmap over non-Tensor arguments, please use None as the respective in_dim"
        )
    rank = arg.dim()
    if in_dim < -rank or in_dim >= rank:
        raise ValueError(
            head + f"Got in_dim={in_dim} for some input, but that input is a Tensor of "
            f"dimensionality {rank} so expected in_dim to satisfy -{rank} <= in_dim < {rank}."
        )
    return in_dim % rank


def _batch_size(flat_in_dims, flat_args) -> int:
    sizes = [a.size(d) for d, a in zip(flat_in_dims, flat_args) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
            f"{sizes} for the mapped dimension"
        )
    return sizes[0]


def _flat_vmap(func, size, flat_in_dims, flat_args, spec, out_dims, randomness, kwargs):
    level = _push(size, randomness)
    try:
        inputs = [_input(a, d, level) for a, d in zip(flat_args, flat_in_dims)]
        outputs = func(*_pytree.tree_unflatten(inputs, spec), **kwargs)
        return _unwrap_outputs(outputs, out_dims, level, func)
    finally:
        _pop(level)


def _input(a, in_dim, level: Level):
    if in_dim is None:
        return a
    if not in_dim:
        return wrap(a, level.id)
    t = wrap(a.movedim(in_dim, 0), level.id)
    # the caller's tensor, which in-place views of ``t`` change too (ember/_inplace_view.py)
    t.__dict__["_home"] = [a, in_dim]
    return t


def _unwrap_outputs(outputs, out_dims, level: Level, func):
    flat, spec = _pytree.tree_flatten(outputs)
    name = _name(func)

    def incompatible():
        return ValueError(
            f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with "
            f"the structure of `outputs`. out_dims has structure "
            f"{_pytree.tree_flatten(out_dims)[1]} but outputs has structure {spec}."
        )

    if isinstance(outputs, Tensor):
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            flat_dims = list(out_dims)
        elif isinstance(out_dims, int) or out_dims is None:
            flat_dims = [out_dims]
        else:
            raise incompatible()
    else:
        flat_dims = _pytree.broadcast_prefix(out_dims, spec)
        if flat_dims is None:
            raise incompatible()
    unwrapped = [_remove_batch_dim(name, o, level, d) for o, d in zip(flat, flat_dims)]
    return _pytree.tree_unflatten(unwrapped, spec)


def _remove_batch_dim(name: str, output, level: Level, out_dim):
    batched = output.__class__ is BatchedTensor and output._level == level.id
    if out_dim is None:
        if batched:
            raise ValueError(
                f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None"
            )
        return output
    if not isinstance(output, Tensor):
        raise ValueError(
            f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(output)}. "
            "Did you mean to set out_dims= to None for output?"
        )
    if batched:
        value = output._value
    else:  # not batched: the same value for every sample
        value = output.unsqueeze(0).expand((level.batch_size, *output.shape))
    rank = value.dim()
    dim = out_dim % rank if -rank <= out_dim < rank else out_dim
    return value.movedim(0, dim) if dim else value


def _check_out_dims(out_dims, func) -> None:
    def check(x):
        if x is not None and not isinstance(x, int):
            raise ValueError(
                f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None "
                "or a python collection of ints representing where in the outputs the vmapped "
                "dimension should appear."
            )

    if not isinstance(out_dims, int):
        _pytree.tree_map(check, out_dims)


def _chunked(func, flat_in_dims, flat_args, spec, out_dims, randomness, size, chunk, kwargs):
    """Map ``chunk`` samples at a time and concatenate along the out dims; with "same"
    randomness every chunk starts from the same generator state."""
    from ember import cat, get_rng_state, set_rng_state

    state = get_rng_state() if randomness == "same" else None
    results = []
    for start in range(0, size, chunk):
        length = min(chunk, size - start)
        part = [
            a if d is None else a.narrow(d, start, length) for a, d in zip(flat_args, flat_in_dims)
        ]
        if state is not None:
            set_rng_state(state)
        results.append(
            _flat_vmap(func, length, flat_in_dims, part, spec, out_dims, randomness, kwargs)
        )
    flat_results = [_pytree.tree_flatten(r)[0] for r in results]
    out_spec = _pytree.tree_flatten(results[0])[1]
    flat_dims = _pytree.broadcast_prefix(out_dims, out_spec)
    merged = []
    for i, d in enumerate(flat_dims):
        pieces = [r[i] for r in flat_results]
        merged.append(pieces[0] if d is None else cat(pieces, dim=d))
    return _pytree.tree_unflatten(merged, out_spec)
