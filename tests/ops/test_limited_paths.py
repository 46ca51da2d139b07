"""float8 and uint16/32/64 through the paths PyTorch 2.13's CPU takes for them, against torch:
composites whose parts decide (einsum, addbmm as one addmm per batch, inner), index_reduce
(only 'prod' over self of a 2-d input, each product rounded), and the calls that return before
any kernel (cdist and the deprecated cholesky of empty inputs, a vector norm of an empty input
or over size-1 dims). Where torch raises, ember raises the same exception type."""

from __future__ import annotations

import pytest

import ember
from ember import _dtype as dt

from .test_limited_twin_modes import _outcome

torch = pytest.importorskip("torch")


def _reduce(m, x, index, reduce, **kw):
    return m.index_reduce(x, 0, m.tensor(index, dtype=m.int64), x[: len(index)], reduce, **kw)


CALLS = {
    "einsum_mm": lambda m, x: m.einsum("ij,kj->ik", x, x),
    "einsum_outer": lambda m, x: m.einsum("i,j->ij", x[0], x[1]),
    "einsum_sum": lambda m, x: m.einsum("ij->j", x),
    "einsum_batch": lambda m, x: m.einsum("bij,bjk->bik", x[None], x.T[None]),
    "addbmm": lambda m, x: m.addbmm(x[:, :1], x[None], x.T[None].expand(1, 3, 2)),
    "addbmm_two": lambda m, x: m.addbmm(x[:1, :1], m.stack([x, x]), m.stack([x.T, x.T])),
    "addbmm_none": lambda m, x: m.addbmm(x, x[None, :, :1][:0], x[None, :1][:0]),
    "addbmm_none_beta0": lambda m, x: m.addbmm(x, x[None, :, :1][:0], x[None, :1][:0], beta=0),
    "addbmm_batches_differ": lambda m, x: m.addbmm(x, x[None, :, :1], x[None, :1][:0]),
    "inner_empty": lambda m, x: m.inner(x[:0], x),
    "inner_vectors": lambda m, x: m.inner(x[0], x[1]),
    "inner_matrix_vector": lambda m, x: m.inner(x, x[0]),
    "inner_row": lambda m, x: m.inner(x[:1], x[0]),
    "index_reduce_prod": lambda m, x: _reduce(m, x, [1, 1], "prod"),
    "index_reduce_prod_empty": lambda m, x: _reduce(m, x, [], "prod"),
    "index_reduce_mean_empty": lambda m, x: _reduce(m, x, [], "mean"),
    "index_reduce_mean": lambda m, x: _reduce(m, x, [0, 1], "mean"),
    "index_reduce_amax": lambda m, x: _reduce(m, x, [0], "amax"),
    "index_reduce_exclude": lambda m, x: _reduce(m, x, [0], "prod", include_self=False),
    "index_reduce_column": lambda m, x: _reduce(m, x[:, :1], [0, 0], "prod"),
    "index_reduce_1d": lambda m, x: _reduce(m, x[0], [0, 0], "prod"),
    "index_reduce_": lambda m, x: x.clone().index_reduce_(0, m.tensor([0, 0]), x, "prod"),
    "cdist_empty": lambda m, x: m.cdist(x, x[:0]),
    "cdist_no_features": lambda m, x: m.cdist(x[:, :0], x[:, :0]),
    "cdist": lambda m, x: m.cdist(x, x),
    "cholesky_empty": lambda m, x: m.cholesky(x[:0, :0], upper=True),
    "cholesky_empty_batch": lambda m, x: m.cholesky(x[None, :0, :0].expand(2, 0, 0)),
    "cholesky": lambda m, x: m.cholesky(x[:1, :1]),
    "norm": lambda m, x: m.norm(x),
    "norm_one": lambda m, x: m.norm(x[:1, 1:2]),
    "norm_one_p1": lambda m, x: m.norm(x[:1, :1], 1),
    "norm_one_inf": lambda m, x: m.norm(x[0, :1], float("inf")),
    "norm_size1_dim": lambda m, x: m.norm(x[:, :1], dim=1),
    "norm_empty": lambda m, x: m.norm(x[:0]),
    "norm_empty_inf": lambda m, x: m.norm(x[:0], float("inf")),
    "norm_dim": lambda m, x: m.norm(x, dim=0),
}
# mantissas a float8 rounds between products (index_reduce rounds after each one)
VALUES = [[1.375, 1.625, 3.25], [2.75, 1.125, 1.875]]


@pytest.mark.parametrize("dtype", dt.LIMITED, ids=lambda d: d.name)
@pytest.mark.parametrize("name", CALLS)
def test_limited_path_matches_torch(name, dtype):
    values = VALUES if dtype in dt.FLOAT8 else [[int(v) for v in row] for row in VALUES]
    x_torch = torch.tensor(values).to(getattr(torch, dtype.name))
    want, torch_error = _outcome(CALLS[name], torch, x_torch)
    got, error = _outcome(CALLS[name], ember, ember.tensor(values).to(dtype))
    if torch_error is not None:
        assert error is not None, f"torch raises {torch_error!r}, ember gives {got}"
        assert type(error) is type(torch_error), (error, torch_error)
    else:
        assert error is None, f"ember raises {error!r}, torch gives {want}"
        assert got == want


MEANING = {
    "norm": lambda m, d: m.norm(m.ones(2, dtype=d)),
    "norm_dim": lambda m, d: m.norm(m.ones(2, 2, dtype=d), dim=0),
    "cdist": lambda m, d: m.cdist(m.ones(2, 2, dtype=d), m.ones(2, 2, dtype=d)),
    "cdist_x2": lambda m, d: m.cdist(m.ones(2, 2), m.ones(2, 2, dtype=d)),
}


# (a float8 beside a float32 is a promotion error in ember, cdist's NotImplementedError in torch)
MEANING_CASES = [
    (name, dtype)
    for name in MEANING
    for dtype in ("int32", "bool", "uint16", "float8_e4m3fn")
    if not (name == "cdist_x2" and dtype.startswith("float8"))
]


@pytest.mark.parametrize("name, dtype", MEANING_CASES)
def test_refusals_by_meaning_match_torch(name, dtype):
    """Ops PyTorch refuses for a dtype category before any kernel: its RuntimeError and words
    (not the NotImplementedError of a kernel it lacks, which float8 gets)."""
    with pytest.raises(Exception) as want:
        MEANING[name](torch, getattr(torch, dtype))
    with pytest.raises(Exception) as got:
        MEANING[name](ember, getattr(ember, dtype))
    assert type(got.value) is type(want.value)
    if type(want.value) is RuntimeError:
        assert str(got.value) == str(want.value)
