"""Writes into memory an input also occupies, against PyTorch (aten's MemoryOverlap rules).

Each case runs the same code on ``torch`` and on ``ember``: both must refuse it (RuntimeError
naming the shared memory) or both must accept it, with the same values where PyTorch's are
well defined. The classes: in-place elementwise ops, ``copy_``, basic and advanced assignment,
``index_put_``, the scatter/put family, and ``out=``. Then the helper's rules on layouts, the
fast path for ``x.add_(x)``, and index tensors of the wrong dtype.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.dispatcher.kinds import elementwise
from ember.dispatcher.optable import OPS
from ember.dispatcher.overlap import FULL, NO, PARTIAL, TOO_HARD, status

torch = pytest.importorskip("torch")

SHARED = "some elements of the input tensor and the written-to tensor refer to a single memory"
INTERNAL = "more than one element of the written-to tensor refers to a single memory location"


def _floats(lib):
    return lib.arange(5.0)


def _six(lib):
    return lib.arange(6.0)


def _ten(lib):
    return lib.arange(10.0)


def _grid(lib):
    return lib.arange(9.0).reshape(3, 3)


def _ints(lib):
    return lib.arange(5)


def _mask(lib):
    return lib.tensor([True, False, True, True])


def _long(lib, *values):
    return lib.tensor(list(values), dtype=lib.int64)


def _setitem(target, index, value):
    target[index] = value


def _iadd(x):
    view = x[1:]
    view += x[:-1]


# (id, make x, write into x's memory, values_defined). values_defined is False where PyTorch lets
# a racy write through (layouts too hard to judge, ops it does not check): only the outcome,
# not the numbers, can be compared.
CASES = [
    # in-place elementwise
    ("add_-transpose", _grid, lambda lib, a: a.add_(a.t()), True),
    ("add_-self", _grid, lambda lib, a: a.add_(a), True),
    ("mul_-self", _floats, lambda lib, x: x.mul_(x), True),
    ("addcmul_-self", _floats, lambda lib, x: x.addcmul_(x, x), True),
    ("iadd-shifted", _floats, lambda lib, x: _iadd(x), True),
    ("add_-0dim-inside", _floats, lambda lib, x: x.add_(x[0]), True),
    ("add_-0dim-outside", _floats, lambda lib, x: x[1:].add_(x[0]), True),
    ("clamp_-0dim-bounds", _floats, lambda lib, x: x.clamp_(x[0], x[4]), True),
    ("add_-disjoint-rows", _grid, lambda lib, a: a[0].add_(a[1]), True),
    ("add_-expanded-self", _floats, lambda lib, x: x.add_(x.expand(5)), True),
    ("add_-other-layout", _six, lambda lib, y: y.view(2, 3).add_(y.view(3, 2).t()), True),
    ("add_-interleaved", _ten, lambda lib, y: y[0:5:2].add_(y[1:6:2]), True),
    ("add_-broadcast-target", _floats, lambda lib, x: x[:1].expand(3).add_(1), True),
    # copy_ and basic assignment
    ("copy_-shifted", _floats, lambda lib, x: x[1:].copy_(x[:-1]), True),
    ("copy_-self", _floats, lambda lib, x: x.copy_(x), True),
    ("copy_-disjoint", _floats, lambda lib, x: x[:2].copy_(x[3:]), True),
    ("copy_-0dim-inside", _floats, lambda lib, x: x.copy_(x[0]), True),
    ("copy_-other-layout", _six, lambda lib, y: y.view(2, 3).copy_(y.view(3, 2).t()), True),
    ("setitem-shifted", _floats, lambda lib, x: _setitem(x, slice(1, None), x[:-1]), True),
    ("setitem-0dim", _floats, lambda lib, x: _setitem(x, slice(None), x[0]), True),
    ("setitem-self", _floats, lambda lib, x: _setitem(x, Ellipsis, x), True),
    ("setitem-broadcast-row", _floats, lambda lib, x: _setitem(x, slice(None), x[0:1]), True),
    (
        "setitem-too-hard",
        _six,
        lambda lib, y: _setitem(y.view(2, 3), (slice(None), slice(0, 2)), y.view(2, 3)[:, 1:]),
        False,
    ),
    # advanced assignment and index_put_: no overlap at all with the indexed tensor
    (
        "setitem-index-shifted",
        _floats,
        lambda lib, x: _setitem(x, _long(lib, 1, 2, 3), x[:3]),
        True,
    ),
    ("setitem-index-0dim", _floats, lambda lib, x: _setitem(x, _long(lib, 1, 2), x[0]), True),
    ("setitem-index-disjoint-view", _floats, lambda lib, x: _setitem(x, [0, 1], x[3:]), True),
    ("setitem-index-of-a-view", _floats, lambda lib, x: _setitem(x[:2], [0, 1], x[3:]), True),
    ("setitem-index-is-self", _ints, lambda lib, x: _setitem(x, x[:2], _long(lib, 9, 9)), True),
    ("setitem-mask", _floats, lambda lib, x: _setitem(x, x > 2, x[:2]), True),
    ("index_put_-shifted", _floats, lambda lib, x: x.index_put_((_long(lib, 1, 2),), x[:2]), True),
    ("index_put_-self", _floats, lambda lib, x: x.index_put_((_long(lib, *range(5)),), x), True),
    (
        "index_put_-accumulate",
        _floats,
        lambda lib, x: x.index_put_((_long(lib, 0, 1),), x[:2], accumulate=True),
        True,
    ),
    ("index_put-copy", _floats, lambda lib, x: lib.index_put(x, (_long(lib, 1, 2),), x[:2]), True),
    # scatter, index_add, put_: source and index tensors may not share self's memory
    ("scatter_-src", _floats, lambda lib, x: x.scatter_(0, _long(lib, 0, 1), x[1:3]), True),
    ("scatter_add_-src", _floats, lambda lib, x: x.scatter_add_(0, _long(lib, 0, 1), x[3:]), True),
    ("scatter_-index", _ints, lambda lib, x: x.scatter_(0, x[:2], _long(lib, 9, 9)), True),
    ("scatter_-other-src", _floats, lambda lib, x: x.scatter_(0, _long(lib, 0), lib.ones(1)), True),
    ("index_add_-src", _floats, lambda lib, x: x.index_add_(0, _long(lib, 0, 1), x[1:3]), True),
    ("index_add_-index", _ints, lambda lib, x: x.index_add_(0, x[:2], _long(lib, 9, 9)), True),
    ("put_-src", _floats, lambda lib, x: x.put_(_long(lib, 0, 1), x[1:3]), True),
    ("put_-index", _ints, lambda lib, x: x.put_(x[:2], _long(lib, 9, 9)), True),
    ("masked_fill_-mask-shifted", _mask, lambda lib, m: m[1:].masked_fill_(m[:3], False), True),
    ("masked_fill_-mask-self", _mask, lambda lib, m: m.masked_fill_(m, False), True),
    # out=
    ("add-out-shifted", _floats, lambda lib, x: lib.add(x[:-1], 1, out=x[1:]), True),
    ("add-out-self", _floats, lambda lib, x: lib.add(x, 1, out=x), True),
    ("sin-out-self", _floats, lambda lib, x: lib.sin(x, out=x), True),
    ("cumsum-out-self", _floats, lambda lib, x: lib.cumsum(x, 0, out=x), True),
    ("cumsum-out-shifted", _floats, lambda lib, x: lib.cumsum(x[:4], 0, out=x[1:]), True),
    ("cat-out-self", _floats, lambda lib, x: lib.cat([x[:2]], out=x[:2]), True),
    (
        "gather-out-self",
        _floats,
        lambda lib, x: lib.gather(x, 0, _long(lib, 1, 0, 3, 2, 4), out=x),
        True,
    ),
    (
        "index_select-out-disjoint",
        _floats,
        lambda lib, x: lib.index_select(x[:2], 0, _long(lib, 1, 0), out=x[3:]),
        True,
    ),
    ("mm-out-self", _grid, lambda lib, a: lib.mm(a, a, out=a), False),
    ("sum-out-overlapping", _floats, lambda lib, x: lib.sum(x[:4].view(2, 2), 0, out=x[:2]), False),
    (
        "sort-out-self",
        _floats,
        lambda lib, x: lib.sort(x.flip(0), out=(x, lib.empty(5, dtype=lib.int64))),
        True,
    ),
    ("mul-out-broadcast", _floats, lambda lib, x: lib.mul(x[:3], 2, out=x[:1].expand(3)), True),
]


def _outcome(lib, make, write):
    """("refused", whether the overlap is internal) or ("accepted", the values of x and of what
    the call returned)."""
    x = make(lib)
    try:
        result = write(lib, x)
    except RuntimeError as exc:
        message = str(exc)
        assert SHARED in message or INTERNAL in message, message
        return ("refused", INTERNAL in message)
    results = result if isinstance(result, tuple) else (result,)
    tensors = [r for r in results if r is not None]
    return ("accepted", [np.asarray(t.tolist()) for t in (x, *tensors)])


@pytest.mark.parametrize("name, make, write, defined", CASES, ids=[c[0] for c in CASES])
def test_overlap_matches_pytorch(name, make, write, defined):
    want, got = _outcome(torch, make, write), _outcome(ember, make, write)
    assert got[0] == want[0], f"{name}: PyTorch {want[0]} it, ember {got[0]} it"
    if want[0] == "refused":
        assert got[1] == want[1], f"{name}: internal vs shared overlap"
    elif defined:
        for g, w in zip(got[1], want[1]):
            np.testing.assert_array_equal(g, w, err_msg=name)


def test_error_names_the_op_and_both_layouts():
    a = ember.arange(9.0).reshape(3, 3)
    with pytest.raises(RuntimeError) as info:
        a.add_(a.t())
    message = str(info.value)
    assert message.startswith("add_: unsupported operation: " + SHARED)
    assert "written-to tensor: shape [3, 3], strides [3, 1]" in message
    assert "input: shape [3, 3], strides [1, 3]" in message


# ---- the helper's rules ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda x: (x, x), FULL),
        (lambda x: (x, x[:]), FULL),
        (lambda x: (x[1:], x[:-1]), PARTIAL),
        (lambda x: (x[:3], x[3:]), NO),
        (lambda x: (x.view(3, 4), x.view(4, 3).t()), PARTIAL),
        (lambda x: (x.view(3, 4).t(), x.view(3, 4).t()), FULL),
        (lambda x: (x[0:12:2], x[1:12:2]), TOO_HARD),
        (lambda x: (x[:4], x[:1].expand(4)), TOO_HARD),
        (lambda x: (x[:0], x), NO),
        (lambda x: (x, ember.arange(12.0)), NO),
        (lambda x: (x[4:8], x.view(3, 4)[1]), FULL),
    ],
    ids=[
        "same",
        "view",
        "shifted",
        "disjoint",
        "permuted",
        "same-permutation",
        "interleaved",
        "broadcast",
        "empty",
        "other-storage",
        "row",
    ],
)
def test_status(make, expected):
    out, other = make(ember.arange(12.0))
    assert status(out, other) == expected


def test_negative_strides_count_as_dense():
    flipped = ember.from_numpy(np.arange(6.0)[::-1])
    whole = ember.from_numpy(np.asarray(flipped.numpy()[::-1]))
    assert status(flipped, flipped[:]) == FULL
    assert status(flipped[1:], flipped[:-1]) == PARTIAL
    del whole


def test_aliasing_in_place_op_stays_on_the_fast_path():
    """``p.mul_(p)``-style calls keep ``_inplace_fast``; another view of the same storage leaves
    it for the full path, which checks the overlap."""
    op = OPS["add_"]
    x = ember.ones(8)
    x.add_(ember.ones(8))  # validates (float32, cpu) for the fast path
    assert elementwise._inplace_fast(op, x, (x,)) is x
    assert x.tolist() == [4.0] * 8
    assert elementwise._inplace_fast(op, x[1:], (x[:-1],)) is None


# ---- index tensors of the wrong dtype -------------------------------------------------------
INDEX_DTYPES = ["float32", "float64", "int16", "int8", "int32", "int64", "uint8", "bool"]


def _index(lib, dtype_name, values=(1, 0)):
    return lib.tensor(list(values)).to(getattr(lib, dtype_name))


def _index_outcome(lib, call):
    try:
        result = call(lib)
    except (IndexError, RuntimeError) as exc:
        return type(exc).__name__, str(exc).split(" (")[0].split(", but got")[0]
    return "ok", result.tolist()


def _assign(lib, d):
    x = lib.arange(6.0)
    x[_index(lib, d, [1, 0, 1, 0, 1, 0] if d in ("uint8", "bool") else [1, 0])] = 5.0
    return x


INDEX_CALLS = {
    "getitem": lambda lib, d: lib.arange(6.0)[
        _index(lib, d, [1, 0, 1, 0, 1, 0] if d in ("uint8", "bool") else [1, 0])
    ],
    "setitem": _assign,
    "index_select": lambda lib, d: lib.index_select(lib.arange(6.0), 0, _index(lib, d)),
    "gather": lambda lib, d: lib.gather(lib.arange(6.0), 0, _index(lib, d)),
    "scatter": lambda lib, d: lib.scatter(lib.arange(6.0), 0, _index(lib, d), lib.ones(2)),
    "index_add": lambda lib, d: lib.index_add(lib.arange(6.0), 0, _index(lib, d), lib.ones(2)),
    "take": lambda lib, d: lib.take(lib.arange(6.0), _index(lib, d)),
    "put_": lambda lib, d: lib.arange(6.0).put_(_index(lib, d), lib.ones(2)),
}


# Deliberate differences, as data: (where, dtype) -> why.
INDEX_DIFFERENCES = {
    ("setitem", "uint8"): "PyTorch's x[mask] = v sends a uint8 mask to masked_fill_, which "
    "refuses it (uint8 masks are deprecated); ember treats it as x[mask] does, as a mask",
}


@pytest.mark.parametrize("dtype_name", INDEX_DTYPES)
@pytest.mark.parametrize("where", sorted(INDEX_CALLS))
def test_index_dtypes_match_pytorch(where, dtype_name):
    """Float indices are refused everywhere; int32 only where PyTorch takes it; with PyTorch's
    error type and wording."""
    if (where, dtype_name) in INDEX_DIFFERENCES:
        pytest.skip(INDEX_DIFFERENCES[where, dtype_name])
    call = INDEX_CALLS[where]
    want = _index_outcome(torch, lambda lib: call(lib, dtype_name))
    got = _index_outcome(ember, lambda lib: call(lib, dtype_name))
    if want[0] == "ok" or got[0] == "ok":
        assert got == want
    else:
        assert got[0] == want[0], f"{where}[{dtype_name}]: {got[1]} vs {want[1]}"
        assert want[1].split(": ", 1)[-1] in got[1], f"{where}[{dtype_name}]"
