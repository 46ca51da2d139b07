"""Property-based tests (hypothesis) of the rules every op shares: broadcasting, type promotion
and indexing (``t[idx]``, ``t[idx] = v``), against numpy and, for promotion, PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from ember import _dtype as dt

# ---- broadcasting ---------------------------------------------------------------------------


@given(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=4, max_side=4))
def test_broadcast_shapes_match_numpy(shapes):
    want = np.broadcast_shapes(*shapes.input_shapes)
    assert tuple(ember.broadcast_shapes(*shapes.input_shapes)) == want


@given(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=4), st.data())
def test_binary_op_broadcasts_like_numpy(shapes, data):
    a_shape, b_shape = shapes.input_shapes
    a = np.arange(int(np.prod(a_shape)), dtype=np.int64).reshape(a_shape)
    b = np.arange(int(np.prod(b_shape)), dtype=np.int64).reshape(b_shape) * np.int64(7)
    b = np.asarray(b)
    if data.draw(st.booleans(), "transpose b") and b.ndim >= 2:  # a non-contiguous operand
        b = np.ascontiguousarray(b.swapaxes(0, -1)).swapaxes(0, -1)
    got = ember.add(ember.from_numpy(a), ember.from_numpy(b))
    assert tuple(got.shape) == shapes.result_shape
    np.testing.assert_array_equal(got.numpy(), a + b)


@st.composite
def incompatible_shapes(draw):
    """Two shapes that do not broadcast: one aligned dim has sizes n and m, both > 1, n != m."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4))
    other = list(draw(hnp.broadcastable_shapes(shape, min_dims=len(shape), max_dims=len(shape))))
    axis = draw(st.integers(0, len(shape) - 1))
    sizes = draw(st.lists(st.integers(2, 5), min_size=2, max_size=2, unique=True))
    first = list(shape)
    first[axis], other[axis] = sizes
    return tuple(first), tuple(other)


@given(incompatible_shapes())
def test_incompatible_shapes_raise_naming_op_and_shapes(shapes):
    a, b = (ember.zeros(s) for s in shapes)
    with pytest.raises(RuntimeError) as info:
        ember.mul(a, b)
    message = str(info.value)
    assert "mul" in message
    for shape in shapes:
        assert str(list(shape)) in message, f"{message!r} does not name {list(shape)}"


# ---- type promotion (against PyTorch) -------------------------------------------------------
DTYPES = st.sampled_from(dt.ALL)
# Values every dtype holds: out-of-range scalars are an overflow question (PyTorch refuses them
# in where/fill_/clamp but wraps them in add), not a promotion one.
SCALARS = st.one_of(
    st.booleans(),
    st.integers(-100, 100),
    st.floats(-100, 100, allow_nan=False, allow_infinity=False),
)


@st.composite
def operands(draw):
    """An operand description: ("tensor", dtype), ("0-dim", dtype) or ("scalar", value)."""
    kind = draw(st.sampled_from(("tensor", "0-dim", "scalar")))
    return (kind, draw(SCALARS)) if kind == "scalar" else (kind, draw(DTYPES))


def _build(operand, lib):
    kind, value = operand
    if kind == "scalar":
        return value
    shape = (3,) if kind == "tensor" else ()
    if lib is ember:
        return ember.ones(shape, dtype=value)
    return lib.ones(shape, dtype=getattr(lib, value.name))


def _dtype_or_error(fn):
    try:
        return str(fn().dtype).split(".")[-1]
    except (RuntimeError, TypeError):
        return "error"


@given(st.lists(operands(), min_size=2, max_size=4).filter(lambda ops: ops[0][0] != "scalar"))
def test_promotion_matches_torch(ops):
    """add over several operands, and cat/where, promote like PyTorch (or both refuse)."""
    torch = pytest.importorskip("torch")
    e = [_build(o, ember) for o in ops]
    t = [_build(o, torch) for o in ops]

    def chain(args, first):
        out = first
        for x in args[1:]:
            out = out + x
        return out

    assert _dtype_or_error(lambda: chain(e, e[0])) == _dtype_or_error(lambda: chain(t, t[0]))
    tensors = [(a, b) for a, b, o in zip(e, t, ops) if o[0] == "tensor"]
    if len(tensors) >= 2:
        got = _dtype_or_error(lambda: ember.cat([a for a, _ in tensors]))
        assert got == _dtype_or_error(lambda: torch.cat([b for _, b in tensors]))
    ec, tc = ember.ones((3,), dtype=ember.bool), torch.ones((3,), dtype=torch.bool)
    got = _dtype_or_error(lambda: ember.where(ec, e[0], e[1]))
    assert got == _dtype_or_error(lambda: torch.where(tc, t[0], t[1]))


# ---- indexing (against numpy) ---------------------------------------------------------------
@st.composite
def index_expressions(draw, shape, unique=False):
    """A random index for an array of ``shape``: ints, slices (positive steps, as PyTorch
    allows), None and an Ellipsis, with integer-array or boolean-mask indices on some dims.

    Integer scalars are left out once an advanced index is present: PyTorch (and ember) apply
    them first, as a basic select, where numpy treats them as advanced indices too. ``unique``
    keeps the positions an advanced index reaches distinct (for setitem).
    """
    advanced = draw(st.sampled_from(("none", "ints", "mask")))
    count = draw(st.integers(1, 3))
    skip_dims = draw(st.integers(0, len(shape))) if draw(st.booleans()) else None
    items, mask_used, dim = [], False, 0
    while dim < len(shape):
        if skip_dims is not None and dim == skip_dims:
            items.append(Ellipsis)
            skip_dims = None
            dim = len(shape) - draw(st.integers(0, len(shape) - dim))
            continue
        size = shape[dim]
        choices = ["slice", "none"]
        if advanced == "none" and size:
            choices.append("int")
        if advanced == "ints" and size:
            choices.append("array")
        if advanced == "mask" and not mask_used:
            choices.append("mask")
        kind = draw(st.sampled_from(choices))
        if kind == "none":
            items.append(None)
            continue
        if kind == "int":
            items.append(draw(st.integers(-size, size - 1)))
        elif kind == "slice":
            bound = st.one_of(st.none(), st.integers(-size - 2, size + 2))
            items.append(slice(draw(bound), draw(bound), draw(st.sampled_from((None, 1, 2, 3)))))
        elif kind == "array":
            if unique:
                count = min(count, size)
                picks = np.array(draw(st.permutations(range(size)))[:count], dtype=np.int64)
            else:
                picks = np.array(
                    draw(st.lists(st.integers(0, size - 1), min_size=count, max_size=count)),
                    dtype=np.int64,
                )
            flip = np.array(
                draw(st.lists(st.booleans(), min_size=len(picks), max_size=len(picks))), dtype=bool
            )
            picks = np.where(flip, picks - size, picks)  # negative aliases of the same position
            items.append(picks.tolist() if draw(st.booleans()) else picks)
        else:
            mask = draw(st.lists(st.booleans(), min_size=size, max_size=size))
            items.append(np.array(mask, dtype=bool))
            mask_used = True
        dim += 1
    if draw(st.booleans()) and items:
        items.insert(draw(st.integers(0, len(items))), None)
    return tuple(items) if len(items) != 1 or draw(st.booleans()) else items[0]


def _ember_index(index):
    """numpy arrays in the index become ember tensors (lists stay lists: both are allowed)."""
    if isinstance(index, tuple):
        return tuple(_ember_index(i) for i in index)
    if isinstance(index, np.ndarray):
        return ember.from_numpy(index.copy())
    return index


def _numpy_index(index):
    if isinstance(index, tuple):
        return tuple(_numpy_index(i) for i in index)
    return np.array(index) if isinstance(index, list) else index


def _without_empty_ellipsis(index, ndim: int):
    """The index as PyTorch reads it, for numpy: an Ellipsis that stands for no dims is dropped.
    numpy still counts it as separating advanced indices around it (their dims then go first);
    PyTorch, whose rule ember follows, does not: x[:, :, [0], ..., [0]] on 4 dims has shape
    (2, 3, 1) in PyTorch and (1, 2, 3) in numpy."""
    if not isinstance(index, tuple) or not any(i is Ellipsis for i in index):
        return index
    used = sum(
        i.ndim if isinstance(i, np.ndarray) and i.dtype == bool else 1
        for i in index
        if i is not None and i is not Ellipsis
    )
    return tuple(i for i in index if i is not Ellipsis) if used == ndim else index


def _numpy_or_error(fn):
    try:
        return fn()
    except IndexError as exc:  # integer arrays that do not broadcast together
        return exc


SHAPES = hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=5)


@given(SHAPES.flatmap(lambda s: st.tuples(st.just(s), index_expressions(s))))
def test_getitem_matches_numpy(case):
    shape, index = case
    a = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    want = _numpy_or_error(lambda: a[_numpy_index(_without_empty_ellipsis(index, a.ndim))])
    t = ember.from_numpy(a.copy())
    if isinstance(want, IndexError):
        with pytest.raises((IndexError, RuntimeError)):
            t[_ember_index(index)]
        return
    got = t[_ember_index(index)]
    assert tuple(got.shape) == want.shape, f"index {index!r}"
    np.testing.assert_array_equal(got.numpy(), want, f"index {index!r}")


@given(
    SHAPES.flatmap(lambda s: st.tuples(st.just(s), index_expressions(s, unique=True))),
    st.booleans(),
)
def test_setitem_matches_numpy(case, scalar_value):
    shape, index = case
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    target = _numpy_or_error(lambda: a[_numpy_index(index)])
    if isinstance(target, IndexError):
        return  # test_getitem_matches_numpy checks that ember refuses these too
    target_shape = target.shape
    count = int(np.prod(target_shape))
    value = -1.5 if scalar_value else np.asarray(-np.arange(count).reshape(target_shape) - 0.5)
    t = ember.from_numpy(a.copy())
    t[_ember_index(index)] = value if scalar_value else ember.from_numpy(value)
    a[_numpy_index(index)] = value
    np.testing.assert_array_equal(t.numpy(), a, f"index {index!r}")


def test_out_of_range_index_raises_index_error():
    t = ember.zeros(3, 4)
    for index in (3, (0, 4), ([0, 5],), (slice(None), [-5])):
        with pytest.raises(IndexError, match="out of"):
            t[index]
