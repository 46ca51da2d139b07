"""The CPU kernels of issue 13's hot surface ops against PyTorch: scatter_reduce's folds
(csrc/index.c), median/nanmedian's selection and unique's sort-and-pass (csrc/sort.c), and
index_put_'s accumulate path. Every reduction and include_self; integer, float and half dtypes;
NaN, duplicates in the index, non-contiguous and negative-dim calls, 0-d and empty inputs, and
sizes past the OpenMP threshold."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8")
REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def both(a: np.ndarray | torch.Tensor):
    """(ember, torch) tensors of the same values."""
    t = torch.as_tensor(a) if isinstance(a, np.ndarray) else a
    if t.dtype is torch.bfloat16:
        return ember.tensor(t.float().numpy()).to(ember.bfloat16), t
    return ember.from_numpy(t.numpy().copy()), t


def to_torch(e) -> torch.Tensor:
    if e.dtype is ember.bfloat16:
        return torch.from_numpy(e.float().numpy().copy()).bfloat16()
    return torch.from_numpy(e.numpy().copy())


def values(shape, dtype: str, seed: int, nan: bool = False) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    d = getattr(torch, dtype)
    if d.is_floating_point:
        t = (torch.randn(shape, generator=g) * 3).round(decimals=1).to(d)
        if nan and t.numel() > 4:
            t.view(-1)[:: max(t.numel() // 4, 1)] = float("nan")
        return t
    low = 0 if d is torch.uint8 else -5
    return torch.randint(low, 6, shape, generator=g, dtype=d)


def close(mine, theirs, dtype: str) -> None:
    got = to_torch(mine)
    assert got.dtype == theirs.dtype and got.shape == theirs.shape
    tol = {"float16": 2e-2, "bfloat16": 8e-2, "float32": 1e-5}.get(dtype, 0.0)
    torch.testing.assert_close(got, theirs, rtol=tol, atol=tol, equal_nan=True)


# ---- scatter_reduce -----------------------------------------------------------------------------
# Products of tens of values overflow the narrow dtypes (test_scatter_reduce_narrow_dtypes).
NARROW = ("int8", "uint8", "int16", "float16", "bfloat16")
CALLS = [(d, r) for d in DTYPES for r in REDUCTIONS if not (r == "prod" and d in NARROW)]


@pytest.mark.parametrize(("dtype", "reduce"), CALLS)
@pytest.mark.parametrize("include_self", (True, False))
@pytest.mark.parametrize(
    ("shape", "index_shape", "dim"),
    [((7,), (30,), 0), ((5, 6), (9, 6), 0), ((5, 6), (4, 11), -1), ((3, 4, 5), (3, 2, 9), 2)],
)
def test_scatter_reduce(dtype, reduce, include_self, shape, index_shape, dim):
    g = torch.Generator().manual_seed(1)
    x, tx = both(values(shape, dtype, 2, nan=True))
    src, tsrc = both(values(index_shape, dtype, 3, nan=True))
    tindex = torch.randint(0, shape[dim], index_shape, generator=g)
    index, _ = both(tindex)
    want = tx.scatter_reduce(dim, tindex, tsrc, reduce, include_self=include_self)
    close(x.scatter_reduce(dim, index, src, reduce, include_self=include_self), want, dtype)


@pytest.mark.parametrize("reduce", ("prod", "amax", "amin"))
@pytest.mark.parametrize("dtype", ("int8", "uint8", "float16", "bfloat16"))
def test_scatter_reduce_narrow_dtypes(reduce, dtype):
    """Two sources per place, so products stay in range."""
    x, tx = both(values((6,), dtype, 4))
    src, tsrc = both(values((8,), dtype, 5))
    tindex = torch.tensor([0, 1, 2, 3, 0, 1, 5, 5])
    for include_self in (True, False):
        want = tx.scatter_reduce(0, tindex, tsrc, reduce, include_self=include_self)
        got = x.scatter_reduce(0, both(tindex)[0], src, reduce, include_self=include_self)
        close(got, want, dtype)


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_scatter_reduce_large_non_contiguous(reduce):
    """Past the OpenMP threshold, src and self transposed, the index broadcast (stride 0)."""
    g = torch.Generator().manual_seed(6)
    tx = torch.randn(300, 400, generator=g).t()
    tsrc = torch.randn(500, 400, generator=g).t()
    tindex = torch.randint(0, 300, (1, 500), generator=g).expand(400, 500)
    want = tx.scatter_reduce(1, tindex, tsrc, reduce)
    x = ember.from_numpy(tx.t().numpy().copy()).t()
    src = ember.from_numpy(tsrc.t().numpy().copy()).t()
    index = ember.from_numpy(tindex[:1].numpy().copy()).expand(400, 500)
    got = x.scatter_reduce(1, index, src, reduce)
    torch.testing.assert_close(to_torch(got), want, rtol=1e-5, atol=1e-5)


def test_scatter_reduce_nan_propagates():
    tx = torch.tensor([1.0, float("nan"), 3.0, 4.0])
    tsrc = torch.tensor([float("nan"), 2.0, 5.0, -1.0, 7.0])
    tindex = torch.tensor([0, 1, 2, 2, 3])
    x, src, index = both(tx)[0], both(tsrc)[0], both(tindex)[0]
    for reduce in ("amax", "amin", "sum"):
        for include_self in (True, False):
            want = tx.scatter_reduce(0, tindex, tsrc, reduce, include_self=include_self)
            got = x.scatter_reduce(0, index, src, reduce, include_self=include_self)
            close(got, want, "float32")


def test_scatter_reduce_edges():
    x = ember.arange(4.0)
    empty = ember.zeros(0, dtype=ember.int64)
    assert x.scatter_reduce(0, empty, ember.zeros(0), "amax").tolist() == [0, 1, 2, 3]
    scalar = ember.tensor(2.0)
    got = scalar.scatter_reduce(0, ember.tensor([0, 0]), ember.tensor([5.0, -1.0]), "amax")
    want = torch.tensor(2.0).scatter_reduce(
        0, torch.tensor([0, 0]), torch.tensor([5.0, -1.0]), "amax"
    )
    assert got.shape == () and got.item() == want.item()
    with pytest.raises((IndexError, RuntimeError)):
        x.scatter_reduce(0, ember.tensor([4]), ember.tensor([1.0]), "amax")
    with pytest.raises(RuntimeError, match="reduce argument"):
        x.scatter_reduce(0, ember.tensor([1]), ember.tensor([1.0]), "max")


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_scatter_reduce_gradients(reduce):
    """With grad the decomposition runs: its gradients against PyTorch's, float64."""
    g = torch.Generator().manual_seed(7)
    tx = torch.randn(4, 5, generator=g, dtype=torch.float64, requires_grad=True)
    tsrc = torch.randn(6, 5, generator=g, dtype=torch.float64, requires_grad=True)
    tindex = torch.randint(0, 4, (6, 5), generator=g)
    tx.scatter_reduce(0, tindex, tsrc, reduce).sum().backward()
    x = ember.from_numpy(tx.detach().numpy().copy()).requires_grad_()
    src = ember.from_numpy(tsrc.detach().numpy().copy()).requires_grad_()
    x.scatter_reduce(0, both(tindex)[0], src, reduce).sum().backward()
    torch.testing.assert_close(to_torch(x.grad), tx.grad)
    torch.testing.assert_close(to_torch(src.grad), tsrc.grad)


# ---- median / nanmedian -------------------------------------------------------------------------
@pytest.mark.parametrize("name", ("median", "nanmedian"))
@pytest.mark.parametrize("dtype", ("float32", "float64", "float16", "bfloat16", "int64", "uint8"))
@pytest.mark.parametrize(("shape", "dim"), [((9,), 0), ((6, 7), 1), ((6, 8), -2), ((3, 4, 5), 1)])
def test_median(name, dtype, shape, dim):
    """Values and indices equal PyTorch's: distinct values (ties are tested below), lines with
    one and two NaNs, keepdim, a transposed input."""
    n = int(np.prod(shape))
    t = torch.randperm(n, generator=torch.Generator().manual_seed(8))[:n].reshape(shape)
    t = (t % 250).to(getattr(torch, dtype)) if dtype == "uint8" else t.to(getattr(torch, dtype))
    if t.is_floating_point() and len(shape) > 1:
        t.select(dim, 0).fill_(float("nan"))  # one NaN in every line
        t.select(dim, 2).select(0, 1).fill_(float("nan"))  # and two in some
    x, t = both(t.contiguous())
    for keepdim in (False, True):
        want = getattr(torch, name)(t, dim, keepdim)
        got = getattr(ember, name)(x, dim, keepdim)
        close(got.values, want.values, dtype)
        assert got.indices.tolist() == want.indices.tolist()
    if len(shape) > 1:  # the same lines, strided: dims 0 and 1 swapped
        moved = {0: 1, 1: 0}.get(dim % len(shape), dim)
        want = getattr(torch, name)(t.transpose(0, 1), moved)
        got = getattr(ember, name)(x.transpose(0, 1), moved)
        close(got.values, want.values, dtype)
        assert got.indices.tolist() == want.indices.tolist()
    close(getattr(ember, name)(x), getattr(torch, name)(t), dtype)


@pytest.mark.parametrize("name", ("median", "nanmedian"))
def test_median_ties_pick_the_stable_rank(name):
    """With repeated values the index is the one a stable sort puts at the median's rank (the
    decomposition's choice, kept bit-identical), and the value is PyTorch's."""
    g = torch.Generator().manual_seed(9)
    t = torch.randint(0, 5, (4, 301), generator=g).double()
    t[1, ::7] = float("nan")
    x, _ = both(t)
    got = getattr(ember, name)(x, 1)
    want = getattr(torch, name)(t, 1)
    close(got.values, want.values, "float64")
    a = t.numpy()
    for row, index in enumerate(got.indices.tolist()):
        line = a[row]
        order = np.argsort(line, kind="stable")
        valid = int((~np.isnan(line)).sum())
        if name == "median":
            rank = valid if valid < line.size else (line.size - 1) // 2
        else:
            rank = max((valid - 1) // 2, 0)
        assert index == order[rank]


def test_median_large_and_edges():
    g = torch.Generator().manual_seed(10)
    t = torch.randn(1 << 20, generator=g)
    x, _ = both(t)
    assert ember.median(x).item() == torch.median(t).item()
    lines = torch.randn(64, 5000, generator=g)  # many lines: the OpenMP split
    got = ember.median(both(lines)[0], 1)
    want = torch.median(lines, 1)
    assert got.values.tolist() == want.values.tolist()
    assert got.indices.tolist() == want.indices.tolist()
    # A line all NaN: NaN, at the first NaN (the stable rank's choice; PyTorch's nth_element
    # may pick another of the NaNs).
    for name in ("median", "nanmedian"):
        got = getattr(ember, name)(ember.full((2, 7), float("nan")), 1)
        assert np.isnan(got.values.numpy()).all() and got.indices.tolist() == [0, 0]
    scalar = ember.tensor(3.5)
    assert ember.median(scalar).item() == 3.5
    assert ember.median(scalar, 0).indices.item() == 0
    assert np.isnan(ember.median(ember.zeros(0)).item())
    with pytest.raises(IndexError):
        ember.median(ember.zeros(3, 0), 1)
    assert ember.median(ember.zeros(0, 3), 1).values.shape == (0,)


def test_median_gradient():
    t = torch.randn(5, 7, dtype=torch.float64, requires_grad=True)
    torch.median(t, 1).values.sum().backward()
    x = ember.from_numpy(t.detach().numpy().copy()).requires_grad_()
    ember.median(x, 1).values.sum().backward()
    torch.testing.assert_close(to_torch(x.grad), t.grad)


# ---- index_put_ (accumulate) --------------------------------------------------------------------
def test_index_put_accumulate_one_index():
    g = torch.Generator().manual_seed(11)
    tindex = torch.randint(-1000, 1000, (1 << 18,), generator=g)  # negative ones wrap
    tv = torch.randn(1 << 18, generator=g)
    want = torch.zeros(1000).index_put_((tindex,), tv, accumulate=True)
    got = ember.zeros(1000).index_put_((both(tindex)[0],), both(tv)[0], accumulate=True)
    torch.testing.assert_close(to_torch(got), want, rtol=1e-4, atol=1e-4)


def test_index_put_accumulate_rows_and_several_indices():
    g = torch.Generator().manual_seed(12)
    tx = torch.randn(6, 5, 4, generator=g)
    rows = torch.randint(-6, 6, (10,), generator=g)
    want = tx.clone().index_put_((rows,), torch.ones(10, 5, 4), accumulate=True)
    x = both(tx)[0]
    got = x.clone().index_put_((both(rows)[0],), ember.ones(10, 5, 4), accumulate=True)
    torch.testing.assert_close(to_torch(got), want)
    a, b = torch.tensor([[0], [5], [-1]]), torch.tensor([1, 1, 3])  # broadcast to (3, 3)
    want = tx.clone().index_put_((a, b), torch.tensor(2.0), accumulate=True)
    got = x.clone().index_put_((both(a)[0], both(b)[0]), ember.tensor(2.0), accumulate=True)
    torch.testing.assert_close(to_torch(got), want)
    transposed = x.transpose(0, 2).clone().transpose(0, 2)  # non-contiguous self
    got = transposed.index_put_((both(rows)[0],), ember.ones(10, 5, 4), accumulate=True)
    torch.testing.assert_close(
        to_torch(got), tx.clone().index_put_((rows,), torch.ones(10, 5, 4), accumulate=True)
    )


def test_index_put_accumulate_out_of_range_writes_nothing():
    x = ember.zeros(5)
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 5"):
        x.index_put_((ember.tensor([0, 1, 5]),), ember.ones(3), accumulate=True)
    with pytest.raises(IndexError, match="out of bounds"):
        x.index_put_((ember.tensor([-6]),), ember.ones(1), accumulate=True)
    assert x.tolist() == [0.0] * 5


# ---- unique -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "dtype", ("float32", "float64", "float16", "int64", "int32", "uint8", "bool")
)
def test_unique(dtype):
    g = torch.Generator().manual_seed(13)
    if dtype == "bool":
        t = torch.rand(200, generator=g) < 0.5
    else:
        t = values((7, 40), dtype, 14, nan=True)
    x, t = both(t)
    got = ember.unique(x, return_inverse=True, return_counts=True)
    want = torch.unique(t, return_inverse=True, return_counts=True)
    close(got[0], want[0], dtype)
    assert got[2].tolist() == want[2].tolist()
    # Every NaN is a value of its own; PyTorch's unstable sort orders the NaNs arbitrarily, so
    # their inverse entries are compared as a set.
    nan = torch.isnan(t.float()).numpy() if t.is_floating_point() else np.zeros(t.shape, bool)
    mine, theirs = got[1].numpy(), want[1].numpy()
    assert (mine[~nan] == theirs[~nan]).all()
    assert sorted(mine[nan].tolist()) == sorted(theirs[nan].tolist())
    close(ember.unique(x), torch.unique(t), dtype)


def test_unique_large_and_edges():
    g = torch.Generator().manual_seed(15)
    t = (torch.rand(1 << 20, generator=g) * 1000).long()
    got = ember.unique(both(t)[0], return_counts=True)
    want = torch.unique(t, return_counts=True)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
    zeros = ember.tensor([0.0, -0.0, 0.0])
    assert ember.unique(zeros, return_counts=True)[1].tolist() == [3]
    empty = ember.unique(ember.zeros(0), return_inverse=True, return_counts=True)
    assert [tuple(e.shape) for e in empty] == [(0,), (0,), (0,)]
    scalar = ember.unique(ember.tensor(4), return_inverse=True)
    assert scalar[0].tolist() == [4] and scalar[1].shape == ()


# One line past the kernel's per-line threading threshold (LINE_PARALLEL, 2^16 in csrc/sort.c),
# on 1, 2 and 3 threads (the `threads` fixture). The sort and the pass (or, for integers of a short
# span, the count) then run in chunks on every thread; the result must be PyTorch's, and the same
# bits on any thread count.
LONG = (1 << 16) + 4099
INT64_MIN = torch.iinfo(torch.int64).min


def both_ends(g: torch.Generator) -> torch.Tensor:
    ends = torch.tensor([INT64_MIN, 2**63 - 300])
    return ends[torch.randint(0, 2, (LONG,), generator=g)] + torch.randint(0, 300, (LONG,))


def nan_and_zeros(g: torch.Generator) -> torch.Tensor:
    t = (torch.randn(LONG, generator=g) * 50).round()
    t[3::5] = -0.0  # both zeros, -0.0 first: one value, the first in input order
    t[11::97] = float("nan")
    return t


# kind -> the long line, from a seeded generator. Integers of a span over csrc/sort.c's
# DENSE_MAX (2^16) are sorted, shorter ones counted.
LONG_INPUTS = {
    "many distinct int64": lambda g: torch.randint(-(2**62), 2**62, (LONG,), generator=g),
    "few distinct int64": lambda g: (torch.rand(LONG, generator=g) * 1000).long() - 500,
    "int32 spread": lambda g: torch.randint(-(2**20), 2**20, (LONG,), generator=g).int(),
    "int64 near its minimum": lambda g: torch.randint(0, 300, (LONG,), generator=g) + INT64_MIN,
    "int64 at both ends": both_ends,  # the span (int64's whole range) must not wrap: sorted
    "int8": lambda g: torch.randint(-128, 128, (LONG,), generator=g, dtype=torch.int8),
    "all equal int32": lambda g: torch.full((LONG,), -7, dtype=torch.int32),
    "float32 NaN and zeros": nan_and_zeros,
    "float64 all NaN": lambda g: torch.full((LONG,), float("nan"), dtype=torch.float64),
    "float16": lambda g: torch.randn(LONG, generator=g).half(),
    "uint8": lambda g: torch.randint(0, 256, (LONG,), generator=g, dtype=torch.uint8),
    "bool": lambda g: torch.rand(LONG, generator=g) < 0.3,
}


@pytest.mark.parametrize("kind", LONG_INPUTS)
def test_unique_long_line_threads(kind, threads):
    t = LONG_INPUTS[kind](torch.Generator().manual_seed(17))
    x = both(t)[0]
    got = ember.unique(x, return_inverse=True, return_counts=True)
    want = torch.unique(t, return_inverse=True, return_counts=True)
    values = to_torch(got[0])
    torch.testing.assert_close(values, want[0], rtol=0, atol=0, equal_nan=True)
    assert got[2].tolist() == want[2].tolist()
    nan = t.isnan() if t.is_floating_point() else torch.zeros(t.shape, dtype=torch.bool)
    inverse = to_torch(got[1])
    assert torch.equal(inverse[~nan], want[1][~nan])
    assert sorted(inverse[nan].tolist()) == sorted(want[1][nan].tolist())
    # Without inverse and counts (the pass's other branch), and the same bits as one thread.
    alone = to_torch(ember.unique(x))
    ember.set_num_threads(1)
    serial = [to_torch(e) for e in ember.unique(x, return_inverse=True, return_counts=True)]
    for mine, one in zip((alone, values, inverse, to_torch(got[2])), (serial[0], *serial)):
        assert mine.dtype == one.dtype and mine.view(-1).numpy().tobytes() == one.numpy().tobytes()
    if kind == "float32 NaN and zeros":  # the zero run's value is the first zero: -0.0
        zero = values[values == 0]
        assert zero.numel() == 1 and torch.signbit(zero).item()
