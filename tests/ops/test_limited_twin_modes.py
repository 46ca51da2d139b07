"""The twin modes of kinds/twin.py that run only some calls of a row, against torch 2.13's CPU:
a reduction given a non-limited ``dtype=`` casts its limited input first and runs (PyTorch's
make_reduction), max/min/kthvalue/aminmax along a dim, cumsum and cumprod run on a 0-dim input
only, index_add with an empty index only, reductions and scans of an empty input only. The other
calls of those rows must be refused with torch's exception type, naming the dtype."""

from __future__ import annotations

import pytest

import ember
from ember import _dtype as dt

torch = pytest.importorskip("torch")

CALLS = {
    "sum_dim_f64": lambda m, x: m.sum(x, 0, dtype=m.float64),
    "sum_all_i32": lambda m, x: m.sum(x, dtype=m.int32),
    "sum_own_dtype": lambda m, x: m.sum(x, dtype=x.dtype),
    "sum_widened": lambda m, x: m.sum(x),
    "prod_f64": lambda m, x: m.prod(x, 0, dtype=m.float64),
    "nansum_f32": lambda m, x: m.nansum(x, 0, dtype=m.float32),
    "mean_f64": lambda m, x: m.mean(x, 0, dtype=m.float64),
    "nanmean_f64": lambda m, x: m.nanmean(x, 0, dtype=m.float64),
    "cumsum": lambda m, x: m.cumsum(x, 0),
    "cumsum_f64": lambda m, x: m.cumsum(x, 0, dtype=m.float64),
    "cumprod": lambda m, x: m.cumprod(x, 0),
    "max_dim": lambda m, x: m.max(x, 0),
    "min_dim": lambda m, x: m.min(x, -1, keepdim=True),
    "max_all": lambda m, x: m.max(x),
    "kthvalue": lambda m, x: m.kthvalue(x, 1, 0),
    "aminmax_dim": lambda m, x: m.aminmax(x, dim=0),
    "aminmax_all": lambda m, x: m.aminmax(x),
    "index_add_empty": lambda m, x: m.index_add(x, 0, m.tensor([], dtype=m.int64), x[:0], alpha=2),
    "index_add_": lambda m, x: x.clone().index_add_(-1, m.tensor([], dtype=m.int64), x[..., :0]),
    "index_add": lambda m, x: m.index_add(x, 0, m.tensor([0]), x[:1]),
    "sum_empty": lambda m, x: m.sum(x[:0], 0),
    "prod_empty": lambda m, x: m.prod(x[:0]),
    "amax_empty": lambda m, x: m.amax(x[:0], -1),
    "amin_empty_dim": lambda m, x: m.amin(x[:0], 0),
    "cumsum_empty": lambda m, x: m.cumsum(x[:0], 0),
    "max_empty": lambda m, x: m.max(x[:0], -1),
    "amax": lambda m, x: m.amax(x, -1),
    # rows of the plain twin table that share these rows' samples here
    "addmm": lambda m, x: m.addmm(x[:, :1].T, x, x.T, beta=0.5, alpha=2.0),
    "as_strided_scatter": lambda m, x: m.as_strided_scatter(x, x.flatten()[:2], (2,), (2,)),
}
VALUES = [[1.0, 2.0, 3.0], [2.0, 1.0, 4.0]]


def _outcome(call, lib, x):
    try:
        result = call(lib, x)
    except Exception as error:  # the comparison is of exception types
        return None, error
    items = result if isinstance(result, tuple) else (result,)
    return [(str(r.dtype).split(".")[-1], r.to(lib.float64).tolist()) for r in items], None


@pytest.mark.parametrize("shape", [(), (2, 3)], ids=["0d", "2d"])
@pytest.mark.parametrize("dtype", dt.LIMITED, ids=lambda d: d.name)
@pytest.mark.parametrize("name", CALLS)
def test_twin_mode_matches_torch(name, dtype, shape):
    values = VALUES[0][0] if not shape else VALUES
    want, torch_error = _outcome(
        CALLS[name], torch, torch.tensor(values).to(getattr(torch, dtype.name))
    )
    got, error = _outcome(CALLS[name], ember, ember.tensor(values).to(dtype))
    if torch_error is not None:
        assert error is not None, f"torch raises {torch_error!r}, ember gives {got}"
        assert type(error) is type(torch_error), (error, torch_error)
        if "not implemented" in str(torch_error):  # the dtype's refusal, naming it
            # (index_add's kernel lookup names it as ember spells it)
            assert dt.SCALAR_NAMES[dtype] in str(error) or dtype.name in str(error), error
    else:
        assert error is None, f"ember raises {error!r}, torch gives {want}"
        assert got == want
