"""In-place views (``t_``, ``transpose_``, ``swapdims_``, ``squeeze_``, ``unsqueeze_``,
``as_strided_``): self takes the view's shape, strides and offset.

Each is its out-of-place view (which checks the arguments and computes the geometry), then
self adopts that geometry, everywhere self has a meaning of its own:

- autograd: self's history becomes the view's node under PyTorch's name for the in-place op
  (TBackward1...) and its version is bumped, as PyTorch's in-place ops do;
- forward AD: each tangent of self gets the same view, so ``unpack_dual`` sees the new shape;
- vmap: a BatchedTensor's physical tensor takes the op at the physical dims (the batch dim
  skipped), as functorch's in-place batching rules do, so nested levels, the tensors the
  caller passed in and their autograd and tangents follow; the wrapper then reads its new
  logical geometry off the physical one.
"""

from __future__ import annotations

from ._tensor import Tensor

# PyTorch's nodes of the in-place views (each op's out-of-place node is its Backward0); squeeze
# by the form of its dim argument (none, an int, a tuple).
NODES = {
    "transpose": "TransposeBackward1",
    "t": "TBackward1",
    "unsqueeze": "UnsqueezeBackward1",
    "as_strided": "AsStridedBackward1",
}
SQUEEZE_NODES = {type(None): "SqueezeBackward3", int: "SqueezeBackward4"}

# method -> the out-of-place view it applies in place
VIEW_OF = {
    "t_": "t",
    "transpose_": "transpose",
    "swapdims_": "transpose",
    "swapaxes_": "transpose",
    "squeeze_": "squeeze",
    "unsqueeze_": "unsqueeze",
    "as_strided_": "as_strided",
}


def _node(name: str, args, kwargs) -> str:
    if name != "squeeze":
        return NODES[name]
    dim = args[0] if args else kwargs.get("dim")
    return SQUEEZE_NODES.get(type(dim), "SqueezeBackward5")


def _trace_as(t, view) -> None:
    """Under a trace (jit.trace, ember.compile's capture), ``t`` is the view's value from now
    on: the later ops that read it were recorded over its old one, and replays gave them the
    shape before the in-place view."""
    from .jit.tracer import current

    state = current()
    if state is not None and id(view) in state.env:
        state.bind(t, state.env[id(view)])


def _method(method_name: str):
    name = VIEW_OF[method_name]

    def method(self, *args, **kwargs):
        from .compiler.pending import eager_piece

        # In a segmented ember.compile call the segment runs first and the view eagerly: the
        # segment's replay gives its live tensors the geometry its ops recorded, not this one.
        with eager_piece(self):
            return apply(self, method_name, name, args, kwargs)

    method.__name__ = method.__qualname__ = method_name
    return method


def apply(self: Tensor, method_name: str, name: str, args, kwargs) -> Tensor:
    """``self.<name>(*args, **kwargs)``'s geometry given to self."""
    from .autograd.batched import BatchedTensor

    if self.__class__ is BatchedTensor:
        return _batched(self, method_name, name, args, kwargs)
    from .autograd.grad_mode import is_grad_enabled

    recording = self._requires_grad and is_grad_enabled()
    if recording:  # PyTorch's checks of an in-place op
        base = self._base
        if self._grad_fn is None or (base is not None and base._grad_fn is None):
            what = "a leaf" if self._grad_fn is None else "a view of a leaf"
            raise RuntimeError(
                f"{method_name}(): {what} Variable that requires grad is being used in an "
                "in-place operation."
            )
    view = getattr(self, name)(*args, **kwargs)
    _adopt(self, view)
    _trace_as(self, view)
    _view_tangents(self, name, args, kwargs)
    if recording:
        # self's history becomes the view's node (PyTorch's ...Backward1) over its old one,
        # and the write shows to the tensors saved before it, as PyTorch's version bump does
        from .autograd.graph_names import rename
        from .autograd.layer import _set_history

        rename(view, _node(name, args, kwargs))
        _set_history(self, view._grad_fn, view._output_nr)
        self._storage.version += 1
    return self


def _adopt(t: Tensor, view: Tensor) -> None:
    t._shape, t._stride, t._offset = view._shape, view._stride, view._offset
    t._contig = view._contig  # copies and kernels trust the flag over the strides


def _view_tangents(t: Tensor, name: str, args, kwargs) -> None:
    """Every tangent of ``t`` viewed as ``t`` was (PyTorch's forward formula of an in-place
    view: the tangent takes the same view). The view is a new tensor over the tangent's memory
    rather than the tangent changed in place: another dual tensor may hold the same tangent."""
    tangents = t.__dict__.get("_fw")
    if not tangents:
        return
    from .autograd.forward_ad import suspended

    for level, tangent in list(tangents.items()):
        with suspended(level):
            tangents[level] = getattr(tangent, name)(*args, **kwargs)


def _batched(self, method_name: str, name: str, args, kwargs) -> Tensor:
    """The in-place view of a BatchedTensor: its physical tensor (or the wrapper of an outer
    level) takes the same op at the physical dims, then the wrapper reads its geometry. The
    tensor the caller mapped along a dim other than 0 (``_home``: it and its batch dim) takes
    it too, its batch dim moving as functorch's in-place rules move it."""
    from .autograd.batched import refresh

    view = getattr(self, name)(*args, **kwargs)  # checks the arguments against logical dims
    if name == "as_strided":  # the batch rule's geometry of the view, batch dim included
        # (functorch has no in-place rule for it to follow: the caller's tensor stays)
        value = view._value
        apply(self._value, method_name, name, (value._shape, value._stride, value._offset), {})
        refresh(self)
        return self
    home = self.__dict__.get("_home")
    if home is not None:  # first: a leaf that requires grad is refused as itself, as in PyTorch
        caller = _at_batch_dim(self, name, args, kwargs, home[1])
        if caller is not None:
            apply(home[0], method_name, caller[0], caller[1], {})
            home[1] = caller[2]
    physical = _at_batch_dim(self, name, args, kwargs, 0)
    if physical is not None:
        apply(self._value, method_name, physical[0], physical[1], {})
    refresh(self)
    return self


def _at_batch_dim(self, name: str, args, kwargs, batch_dim: int):
    """``(op, args, batch dim after)``: what does to a tensor holding ``self``'s samples along
    ``batch_dim`` what ``name`` does to ``self`` (the batch dim stays where it is among the
    other dims, as functorch's in-place rules keep it); None where nothing changes. Read
    before the op: it needs ``self``'s logical sizes."""
    rank = len(self._shape)

    def up(dim: int) -> int:
        return dim if dim < batch_dim else dim + 1

    if name == "t":
        return ("transpose", (up(0), up(1)), batch_dim) if rank == 2 else None
    if name == "transpose":
        dims = _arguments(args, kwargs, ("dim0", "dim1"))
        return ("transpose", tuple(up(_wrap(d, rank)) for d in dims), batch_dim) if rank else None
    if name == "unsqueeze":
        (dim,) = _arguments(args, kwargs, ("dim",))
        dim = _wrap(dim, rank + 1)
        return (name, (dim,), batch_dim + 1) if dim < batch_dim else (name, (dim + 1,), batch_dim)
    dim = _arguments(args, kwargs, ("dim",), None)[0]  # squeeze
    if dim is None:
        dims = range(rank)
    else:
        dims = [_wrap(d, rank) for d in (dim if isinstance(dim, (tuple, list)) else (dim,))]
    gone = sorted({d for d in dims if self._shape[d] == 1}) if rank else []
    if not gone:
        return None
    after = batch_dim - sum(d < batch_dim for d in gone)
    return name, (tuple(up(d) for d in gone),), after


def _arguments(args, kwargs, names: tuple, default=...) -> tuple:
    values = list(args) + [kwargs.get(n, default) for n in names[len(args) :]]
    return tuple(values)


def _wrap(dim: int, rank: int) -> int:
    return dim % rank if rank else 0


METHODS = {method_name: _method(method_name) for method_name in VIEW_OF}
