"""Jacobians and Hessians from the transforms: ``jacrev`` is vmap over vjp with the standard
basis of the outputs as cotangents, ``jacfwd`` vmap over jvp with the basis of the inputs as
tangents, ``hessian`` is ``jacfwd(jacrev(f))`` (forward over reverse), as in ``torch.func``."""

from __future__ import annotations

import functools

import ember as E

# transforms.*_with_argnums are looked up at each call: ember.compile's segments wrap them
# (compiler/pending.py)
from . import _pytree, transforms
from .transforms import check_argnums, slice_argnums
from .vmap import vmap


def _basis(tensors: list) -> list:
    """The rows of the identity of size ``N = sum of numels``, split per tensor and shaped like
    it: ``[N, *t.shape]`` each."""
    numels = [t.numel() for t in tensors]
    total = sum(numels)
    out, offset = [], 0
    for t, n in zip(tensors, numels):
        chunk = E.zeros((total, n), dtype=t.dtype, device=t.device)
        if n:
            chunk.diagonal(-offset).fill_(1)
        out.append(chunk.view((total, *t.shape)))
        offset += n
    return out


def _split_rows(stacked, sizes: list, shapes: list, trailing) -> list:
    """``stacked`` ``[N, *trailing]`` cut into row blocks, block k shaped ``shapes[k]`` then
    ``trailing``."""
    out, offset = [], 0
    for n, shape in zip(sizes, shapes):
        out.append(stacked.narrow(0, offset, n).reshape((*shape, *trailing)))
        offset += n
    return out


def _check_real(tensors: list, what: str, api: str) -> None:
    """jacrev and jacfwd refuse complex tensors, as torch.func's (a complex Jacobian would
    need the conjugate too); the words are PyTorch's, "input idx" for outputs included."""
    for i, t in enumerate(tensors):
        if isinstance(t, E.Tensor) and t.dtype.is_complex:
            raise RuntimeError(
                f"{api}: Expected all {what} to be real but received complex tensor at "
                f"flattened input idx: {i}"
            )


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size=None):
    """The Jacobian of ``func`` by reverse mode (``torch.func.jacrev``): for each output, for
    each differentiated argument, a tensor of shape ``output.shape + argument.shape``.

    Args:
        func: a function of tensors returning a tensor or a tree of them.
        argnums: which argument(s) to differentiate with respect to.
        has_aux: ``func`` returns ``(output, aux)``; the result is then ``(jacobian, aux)``.
        chunk_size: how many rows of the Jacobian to compute at a time (memory).
    """
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):
        argnums_ = check_argnums(argnums, len(args))
        _check_real(_pytree.tree_flatten(slice_argnums(args, argnums_))[0], "inputs", "jacrev")
        found = transforms.vjp_with_argnums(func, args, argnums_, has_aux)
        output, vjp_fn = found[0], found[1]
        flat_out, out_spec = _pytree.tree_flatten(output)
        _check_real(flat_out, "outputs", "jacrev")
        basis = _pytree.tree_unflatten(_basis(flat_out), out_spec)
        rows = vmap(vjp_fn, chunk_size=chunk_size)(basis)
        flat_rows, in_spec = _pytree.tree_flatten(rows)
        diff = _pytree.tree_flatten(slice_argnums(args, argnums_))[0]
        sizes = [o.numel() for o in flat_out]
        shapes = [tuple(o.shape) for o in flat_out]
        per_input = [_split_rows(r, sizes, shapes, tuple(x.shape)) for r, x in zip(flat_rows, diff)]
        per_output = [
            _pytree.tree_unflatten([blocks[k] for blocks in per_input], in_spec)
            for k in range(len(flat_out))
        ]
        jacobian = _pytree.tree_unflatten(per_output, out_spec)
        return (jacobian, found[2]) if has_aux else jacobian

    return wrapper


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """The Jacobian of ``func`` by forward mode (``torch.func.jacfwd``), laid out as
    ``jacrev``'s: one JVP per input element, vectorised with vmap."""

    @functools.wraps(func)
    def wrapper(*args):
        argnums_ = check_argnums(argnums, len(args))
        diff = slice_argnums(args, argnums_)
        flat_in, in_spec = _pytree.tree_flatten(diff)
        _check_real(flat_in, "inputs", "jacfwd")
        basis = _basis(flat_in)

        def push(*columns):
            tangents = _pytree.tree_unflatten(list(columns), in_spec)
            found = transforms.jvp_with_argnums(func, args, tangents, argnums_, False, has_aux)
            return (found[1], found[2]) if has_aux else found[1]

        out_dims = (0, None) if has_aux else 0
        pushed = vmap(push, out_dims=out_dims, randomness=randomness)(*basis)
        columns, aux = pushed if has_aux else (pushed, None)
        flat_cols, out_spec = _pytree.tree_flatten(columns)
        _check_real(flat_cols, "outputs", "jacfwd")
        sizes = [x.numel() for x in flat_in]
        per_output = []
        for col in flat_cols:  # [N, *out.shape]: the input's elements along dim 0
            out_shape = tuple(col.shape[1:])
            moved = col.movedim(0, -1) if col.dim() > 1 else col
            blocks, offset = [], 0
            for n, x in zip(sizes, flat_in):
                block = moved.narrow(-1, offset, n).reshape((*out_shape, *x.shape))
                blocks.append(block)
                offset += n
            per_output.append(_pytree.tree_unflatten(blocks, in_spec))
        jacobian = _pytree.tree_unflatten(per_output, out_spec)
        return (jacobian, aux) if has_aux else jacobian

    return wrapper


def hessian(func, argnums=0):
    """The Hessian of the scalar ``func`` (``torch.func.hessian``): ``jacfwd(jacrev(func))``."""
    return jacfwd(jacrev(func, argnums), argnums)


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` gives the JVP at ``primals``
    (``torch.func.linearize``). ember evaluates it by forward AD on each call."""
    output = func(*primals)
    flat_p, p_spec = _pytree.tree_flatten(primals)

    def jvp_fn(*tangents):
        flat_t, t_spec = _pytree.tree_flatten(tangents)
        if t_spec != p_spec:
            raise RuntimeError(
                f"Expected the tangents {t_spec} to have the same argument structure as the "
                f"primals {p_spec}"
            )
        for p, t in zip(flat_p, flat_t):
            if tuple(p.shape) != tuple(t.shape) or p.dtype is not t.dtype:
                raise RuntimeError(
                    f"Mismatch in tangent shape or dtype: expected {tuple(p.shape)} "
                    f"{p.dtype}, got {tuple(t.shape)} {t.dtype}"
                )
        return transforms.jvp_with_argnums(func, primals, tangents, None, False, False)[1]

    return _pytree.tree_map(lambda t: t.detach() if isinstance(t, E.Tensor) else t, output), jvp_fn
