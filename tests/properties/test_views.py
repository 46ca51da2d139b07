"""Chains of the op table's view ops, read and then written through, against numpy.

The base tensor holds its own element positions (``arange``), so each view's values are the
storage positions it reaches: numpy (each row's reference applied to the positions) says which
ones, and an in-place write through the view must change exactly those elements of the base.
PyTorch is the oracle for what numpy cannot say: which calls are refused, which results are
views rather than copies (``reshape``), their strides, and which writes are refused (a written
tensor whose elements share memory).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ember
from ember.dispatcher.opdef import Kind
from ember.dispatcher.optable import OPS

from ..ops import checks
from ..ops.sampling import Arr, build
from .strategies import (
    dim_lists,
    examples,
    layouts,
    one_dim,
    shapes,
    torch_module,
    torch_refusal,
)

# The chain follows element positions of a float32 arange; these views reinterpret the dtype
# (pairs of reals as complex numbers and back), so tests/complex/test_views.py covers them.
DTYPE_VIEWS = {"view_as_complex", "view_as_real"}
# The conjugate and negative views read their storage's values changed (complex, or negated):
# tests/complex/test_conj_bit.py covers them.
MATH_BIT_VIEWS = {"_conj", "_neg_view"}
VIEW_OPS = sorted(
    name
    for name, op in OPS.items()
    if op.kind is Kind.VIEW and name not in DTYPE_VIEWS | MATH_BIT_VIEWS
)


# ---- arguments per view op: (draw, shape, storage numel) -> args, or None when it has none ----
def _sizes_of(draw, numel: int, max_dims: int = 4) -> list:
    """A shape of ``numel`` elements: its prime factors dealt to dims, 1s and 0s mixed in."""
    factors, n, p = [], numel, 2
    while n > 1 and p * p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    if n > 1:
        factors.append(n)
    ndim = draw(st.integers(1 if numel != 1 else 0, max_dims), "dims")
    sizes = [1] * ndim
    for f in factors:
        sizes[draw(st.integers(0, ndim - 1))] *= f
    if numel == 0:
        sizes[draw(st.integers(0, ndim - 1))] = 0
        sizes = [draw(st.integers(0, 3)) if s else 0 for s in sizes]
    return sizes


def _with_inferred(draw, sizes: list) -> list:
    if sizes and draw(st.booleans(), "infer one size"):
        sizes[draw(st.integers(0, len(sizes) - 1))] = -1
    return sizes


def _new_shape(draw, shape, _numel):
    return (tuple(_with_inferred(draw, _sizes_of(draw, math.prod(shape)))),)


def _dims2(draw, shape, _numel):
    return (draw(one_dim(len(shape))), draw(one_dim(len(shape))))


def _permute(draw, shape, _numel):
    order = draw(st.permutations(range(len(shape))))
    return (tuple(draw(st.sampled_from((d, d - len(shape)))) for d in order),)


def _expand(draw, shape, _numel):
    lead = draw(st.lists(st.integers(0, 3), max_size=2), "new leading sizes")
    rest = [draw(st.sampled_from((s, -1) if s != 1 else (1, 0, 2, 3, -1))) for s in shape]
    return (tuple(lead + rest),)


def _a_dim(draw, shape):
    """A dim and its size; a 0-d tensor counts as one element along dim 0 or -1."""
    dim = draw(one_dim(len(shape)), "dim")
    return dim, shape[dim] if shape else 1


def _narrow(draw, shape, _numel):
    if not shape:
        return None
    dim, size = _a_dim(draw, shape)
    start = draw(st.integers(-size, size), "start")
    room = size - (start + size if start < 0 else start)
    return dim, start, draw(st.integers(0, room + 1), "length")  # one too many: refused


def _slice(draw, shape, _numel):
    if not shape:
        return None
    dim, size = _a_dim(draw, shape)
    bound = st.one_of(st.none(), st.integers(-size - 2, size + 2))
    return dim, draw(bound, "start"), draw(bound, "end"), draw(st.integers(1, 3), "step")


def _select(draw, shape, _numel):
    if not shape or not all(shape):
        return None
    dim, size = _a_dim(draw, shape)
    return dim, draw(st.integers(-size - 1, size), "index")  # out of range at both ends too


def _squeeze(draw, shape, _numel):
    ndim = len(shape)
    dims = draw(st.one_of(st.none(), one_dim(ndim), dim_lists(ndim).map(tuple)), "dims")
    return () if dims is None else (dims,)


def _unflatten(draw, shape, _numel):
    if not shape:
        return None
    dim, size = _a_dim(draw, shape)
    return dim, tuple(_with_inferred(draw, _sizes_of(draw, size, 3)))


def _as_strided(draw, _shape, numel):
    size = draw(st.lists(st.integers(0, 3), max_size=3), "size")
    stride = draw(st.lists(st.integers(0, 3), min_size=len(size), max_size=len(size)), "stride")
    span = sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else -1
    if span >= numel:
        return None
    return tuple(size), tuple(stride), draw(st.integers(0, numel - 1 - span), "offset")


def _diagonal(draw, shape, _numel):
    if len(shape) < 2:
        return None
    return (draw(st.integers(-3, 3), "offset"), *_dims2(draw, shape, _numel))


def _movedim(draw, shape, _numel):
    ndim = len(shape)
    source = draw(dim_lists(ndim), "source")
    destination = draw(st.permutations(range(ndim)))[: len(source)]
    return source, [draw(st.sampled_from((d, d - ndim))) for d in destination]


def _unfold(draw, shape, _numel):
    dim, size = _a_dim(draw, shape)
    return dim, draw(st.integers(0, size + 1), "size"), draw(st.integers(1, 3), "step")


def _split(draw, shape, _numel):
    if not shape:
        return None
    dim, size = _a_dim(draw, shape)
    if draw(st.booleans(), "sections"):
        cuts = sorted(draw(st.lists(st.integers(0, size), max_size=2), "cuts"))
        edges = [0, *cuts, size]
        return [b - a for a, b in itertools.pairwise(edges)], dim
    return draw(st.integers(1, size + 1), "split size"), dim


def _chunk(draw, shape, _numel):
    if not shape:
        return None
    return draw(st.integers(1, 4), "chunks"), _a_dim(draw, shape)[0]


ARGS = {
    "view": _new_shape,
    "reshape": _new_shape,
    "permute": _permute,
    "transpose": _dims2,
    "swapaxes": _dims2,
    "swapdims": _dims2,
    "t": lambda draw, shape, numel: (),
    "detach": lambda draw, shape, numel: (),
    "positive": lambda draw, shape, numel: (),
    "expand": _expand,
    "narrow": _narrow,
    "slice": _slice,
    "select": _select,
    "squeeze": _squeeze,
    "unsqueeze": lambda draw, shape, numel: (draw(st.integers(-len(shape) - 1, len(shape))),),
    "flatten": _dims2,
    "unflatten": _unflatten,
    "as_strided": _as_strided,
    "diagonal": _diagonal,
    "movedim": _movedim,
    "unfold": _unfold,
    "unbind": lambda draw, shape, numel: (draw(one_dim(len(shape))),) if shape else None,
    "split": _split,
    "chunk": _chunk,
}


# ---- numpy: the storage positions a view reaches ---------------------------------------------
def _np_split(positions, how, dim=0):
    length = positions.shape[dim]
    points = range(how, length, how) if isinstance(how, int) else np.cumsum(how)[:-1]
    return tuple(np.split(positions, list(points), axis=dim))


def _np_chunk(positions, chunks, dim=0):
    """PyTorch's chunk: pieces of ceil(length / chunks); an empty dim gives ``chunks`` pieces."""
    length = positions.shape[dim]
    if length == 0:
        return tuple(positions for _ in range(chunks))
    return _np_split(positions, -(-length // chunks), dim)


def _np_as_strided(storage, size, stride, offset):
    step = storage.itemsize
    return np.lib.stride_tricks.as_strided(storage[offset:], size, [s * step for s in stride])


def _np_flatten(positions, start_dim=0, end_dim=-1):
    """flatten with the merged size spelled out (a -1 cannot be inferred from 0 elements)."""
    if positions.ndim == 0:
        return positions.reshape(1)
    start, end = start_dim % positions.ndim, end_dim % positions.ndim
    merged = math.prod(positions.shape[start : end + 1])
    return positions.reshape(positions.shape[:start] + (merged,) + positions.shape[end + 1 :])


def _np_unflatten(positions, dim, sizes):
    """unflatten with a -1 resolved from the dim's size (numpy cannot infer it from 0 elements)."""
    known = math.prod(n for n in sizes if n != -1)
    size = positions.shape[dim]
    sizes = tuple(size // known if n == -1 and known else n for n in sizes)
    return OPS["unflatten"].defn.reference(positions, dim, sizes)


def _np_swap(positions, dim0, dim1):
    """A 0-d tensor takes dims 0 and -1 as if it were 1-d, and stays 0-d (numpy refuses)."""
    return positions if positions.ndim == 0 else np.swapaxes(positions, dim0, dim1)


def _np_squeeze(positions, dim=None):
    if positions.ndim == 0:  # dim 0 or -1 of a 0-d tensor: nothing to squeeze
        return positions
    return OPS["squeeze"].defn.reference(positions, dim)


def _np_unfold(positions, dimension, size, step):
    """A 0-d tensor unfolds into ``size`` (0 or 1) copies of its element. The dim is wrapped
    first: the table's reference slices the windows' array, which has one dim more."""
    if positions.ndim == 0:
        return np.broadcast_to(positions, (size,))
    return OPS["unfold"].defn.reference(positions, dimension % positions.ndim, size, step)


# The positions by numpy where a row has no numpy reference, or where its reference does not
# cover PyTorch's 0-d and empty cases.
NUMPY = {
    "as_strided": None,  # over the storage, not the input: see positions_after
    "split": _np_split,
    "chunk": _np_chunk,
    "flatten": _np_flatten,
    "transpose": _np_swap,
    "swapaxes": _np_swap,
    "swapdims": _np_swap,
    "squeeze": _np_squeeze,
    "unflatten": _np_unflatten,
    "unfold": _np_unfold,
}


def positions_after(name: str, positions: np.ndarray, storage: np.ndarray, args: tuple):
    """The storage positions the result(s) of view op ``name`` reach, by numpy."""
    if name == "as_strided":
        return _np_as_strided(storage, *args)
    return NUMPY.get(name, OPS[name].defn.reference)(positions, *args)


def _apply(t, name: str, args: tuple):
    """The view op on an ember or a torch tensor (torch has no ``slice`` method: an index)."""
    if name != "slice":
        return getattr(t, name)(*args)
    if isinstance(t, ember.Tensor):
        return OPS["slice"](t, *args)
    dim, start, end, step = args
    return t[(slice(None),) * (dim % t.dim()) + (slice(start, end, step),)]


# ---- the chain ---------------------------------------------------------------------------------
def _pick(result, pick):
    return result if pick is None else result[pick]


@st.composite
def view_chains(draw):
    """``(base shape, steps)``: 1 to 3 view ops, each ``(name, args, pick)``; ``pick`` chooses
    one piece of a multi-output op (unbind, split, chunk). A step PyTorch refuses ends it."""
    shape = draw(shapes(max_dims=4, max_side=4), "base shape")
    numel = math.prod(shape)
    torch = torch_module()
    current, steps = torch.arange(numel, dtype=torch.float32).reshape(shape), []
    for _ in range(draw(st.integers(1, 3), "chain length")):
        name = draw(st.sampled_from(VIEW_OPS), "op")
        args = ARGS[name](draw, tuple(current.shape), numel)
        if args is None:
            continue
        try:
            result = _apply(current, name, args)
        except Exception:  # a refusal: the last step, which ember must refuse alike
            steps.append((name, args, None))
            break
        pick = None
        if isinstance(result, tuple):
            if not result:
                break
            pick = draw(st.integers(0, len(result) - 1), "piece")
        steps.append((name, args, pick))
        current = _pick(result, pick)
    return shape, steps


class Chain:
    """One view chain applied in lockstep to an ember base, a torch base and numpy positions."""

    def __init__(self, shape, device):
        numel = math.prod(shape)
        self.storage = np.arange(numel)
        self.positions = self.storage.reshape(shape)
        self.base = ember.arange(numel, dtype=ember.float32, device=device).reshape(shape)
        torch = torch_module()
        self.torch_base = torch.arange(numel, dtype=torch.float32).reshape(shape)
        self.view, self.torch_view = self.base, self.torch_base

    def step(self, name, args, pick):
        """Applies one step; returns PyTorch's refusal of it (then ember must refuse too)."""
        refusal = torch_refusal(lambda: _apply(self.torch_view, name, args))
        if refusal is not None:
            return refusal
        self.torch_view = _pick(_apply(self.torch_view, name, args), pick)
        self.view = _pick(_apply(self.view, name, args), pick)
        positions = positions_after(name, self.positions, self.storage, args)
        self.positions = np.asarray(_pick(positions, pick))
        return None

    def torch_shares(self) -> bool:
        torch_ptr = self.torch_view.untyped_storage().data_ptr()
        return torch_ptr == self.torch_base.untyped_storage().data_ptr()


def _run(c: Chain, steps, what: str) -> bool:
    """Runs the chain; False when a step is refused (after checking ember refuses it alike)."""
    for name, args, pick in steps:
        refusal = c.step(name, args, pick)
        if refusal is not None:
            with pytest.raises(type(refusal)):
                _apply(c.view, name, args)
            return False
    return True


def _check_read(c: Chain, what: str) -> None:
    if not c.torch_view.numel():  # nothing to read; an empty result may or may not share memory
        assert tuple(c.view.shape) == c.positions.shape, f"{what}: shape {list(c.view.shape)}"
        return
    checks.assert_matches(c.view, c.positions.astype(np.float32), ember.float32, (0, 0), what)
    shares = c.torch_shares()
    assert (c.view._storage is c.base._storage) == shares, f"{what}: view or copy unlike PyTorch"
    if shares:  # the strides of size-1 dims address nothing; PyTorch's own rules for them vary
        strides = [s for s, n in zip(c.view.stride(), c.view.shape) if n > 1]
        torch_strides = [s for s, n in zip(c.torch_view.stride(), c.torch_view.shape) if n > 1]
        assert strides == torch_strides, f"{what}: strides unlike PyTorch"
        assert c.view.storage_offset() == c.torch_view.storage_offset(), f"{what}: offset"


# ---- writes through the view: (ember or torch tensor, source) -> None, and numpy's result ------
# Writes that read the view first: through a view reaching one position twice (overlapping
# unfold or as_strided windows, which PyTorch does not refuse) their result is undefined.
READ_MODIFY_WRITE = frozenset({"add_", "mul_", "neg_"})
WRITES = {
    "fill_": (lambda t, src: t.fill_(-1.0), lambda old, src: np.full_like(old, -1.0)),
    "zero_": (lambda t, src: t.zero_(), lambda old, src: np.zeros_like(old)),
    "copy_": (lambda t, src: t.copy_(src), lambda old, src: src),
    "setitem": (lambda t, src: t.__setitem__(Ellipsis, src), lambda old, src: src),
    "add_": (lambda t, src: t.add_(src), lambda old, src: old + src),
    "mul_": (lambda t, src: t.mul_(-2.0), lambda old, src: old * -2.0),
    "neg_": (lambda t, src: t.neg_(), lambda old, src: -old),
}


def _source_shape(data, shape) -> tuple:
    """A shape that may broadcast to ``shape`` (some dims 1, leading dims dropped or added)."""
    sizes = [data.draw(st.sampled_from((n, 1)), "source dim") for n in shape]
    sizes = sizes[data.draw(st.integers(0, len(sizes)), "leading dims dropped") :]
    return (1,) * data.draw(st.integers(0, 1), "leading 1s added") + tuple(sizes)


def _expected_base(c: Chain, new: np.ndarray, kind: str):
    """The base after ``new`` is written over the view's positions; None when that is undefined:
    two different values land on one position, or a position is read and written twice."""
    want = c.storage.astype(np.float32)
    if c.view._storage is c.base._storage:
        positions, values = c.positions.reshape(-1), new.reshape(-1)
        if kind in READ_MODIFY_WRITE and len(np.unique(positions)) < positions.size:
            return None
        want[positions] = values
        if not np.array_equal(want[positions], values):
            return None
    return want.reshape(tuple(c.base.shape))


def _check_write(c: Chain, data, device: str, what: str) -> None:
    kind = data.draw(st.sampled_from(sorted(WRITES)), "write")
    write, numpy_write = WRITES[kind]
    shape = _source_shape(data, c.positions.shape)
    source = np.array(-1.0 - np.arange(math.prod(shape)), dtype=np.float32).reshape(shape)
    what = f"{what}, then {kind} of a {list(shape)} source"
    refusal = torch_refusal(lambda: write(c.torch_view, torch_module().from_numpy(source.copy())))
    ember_source = build(Arr(source, data.draw(layouts(shape), "source layout")), device)
    if refusal is not None:
        with pytest.raises(type(refusal)):
            write(c.view, ember_source)
        return
    write(c.view, ember_source)
    new = numpy_write(c.positions.astype(np.float32), source)
    while new.ndim > c.positions.ndim and new.shape[0] == 1:  # PyTorch drops leading 1s
        new = new[0]
    new = np.broadcast_to(new, c.positions.shape)
    want = _expected_base(c, new, kind)
    if want is not None:
        checks.assert_matches(c.base, want, ember.float32, (0, 0), f"{what}: the base")
        if new.size:
            checks.assert_matches(c.view, new, ember.float32, (0, 0), f"{what}: the view")


@examples(60)
@given(chain=view_chains(), data=st.data())
def test_view_chain_reads_and_writes_like_numpy(device, chain, data):
    shape, steps = chain
    what = f"{steps} on a {list(shape)} base on {device}"
    c = Chain(shape, device)
    if _run(c, steps, what):
        _check_read(c, what)
        _check_write(c, data, device, what)


def test_every_view_op_has_an_argument_strategy():
    assert sorted(ARGS) == VIEW_OPS


# ---- defects the property met -------------------------------------------------------------------
def test_unfold_of_a_0d_tensor():
    assert tuple(ember.zeros(()).unfold(0, 0, 1).shape) == (0,)
    assert tuple(ember.zeros(()).unfold(-1, 1, 2).shape) == (1,)
    assert ember.tensor(1.0).unfold(0, 1, 1).tolist() == [1.0]


def test_chunk_of_an_empty_dim_gives_every_piece():
    assert [tuple(p.shape) for p in ember.zeros(0).chunk(2)] == [(0,), (0,)]
    assert [tuple(p.shape) for p in ember.zeros(3, 0).chunk(3, 1)] == [(3, 0)] * 3


def test_empty_view_at_the_end_of_its_storage_reads(device):
    view = ember.zeros(2, 0, device=device)[1]
    assert view.cpu().numpy().shape == (0,)
    assert view.tolist() == []
    assert ember.zeros(1, device=device)[::2].narrow(0, 1, 0).tolist() == []


def test_narrow_past_the_end_raises_like_torch():
    with pytest.raises(RuntimeError, match=r"start \(1\) \+ length \(1\) exceeds dimension size"):
        ember.zeros(1).narrow(0, 1, 1)
    with pytest.raises(IndexError, match=r"start out of range .* but got -4"):
        ember.zeros(3).narrow(0, -4, 1)


def test_unflatten_refuses_empty_sizes():
    with pytest.raises(RuntimeError, match="unflatten: sizes must be non-empty"):
        ember.zeros(1).unflatten(0, ())


@pytest.mark.parametrize("fill", ["fill_", "zero_"])
def test_fill_through_a_view_whose_elements_share_memory(fill, device):
    """PyTorch fills an expanded (stride-0) view: every write stores the same value."""
    base = ember.ones(1, 3, device=device)
    view = base.expand(2, 3)
    getattr(view, fill)(*((5.0,) if fill == "fill_" else ()))
    assert base.tolist() == [[5.0 if fill == "fill_" else 0.0] * 3]
