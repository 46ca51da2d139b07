"""Every collective x every dtype on a real 3-rank MPI job, against numpy.

One job (jobs/collectives.py) runs them all and saves what each rank got; the tests here
compute what each rank should have from the same inputs (cases.py) and compare.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from . import cases
from .harness import mpi_or_skip, run_job

W = cases.WORLD


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    """``[(arrays, errors, objects)]`` per rank, from one run of the job."""
    mpi_or_skip()
    out = tmp_path_factory.mktemp("collectives")
    done, _seconds = run_job("collectives.py", W, out, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    results = []
    for r in range(W):
        arrays = dict(np.load(out / f"rank{r}.npz"))
        side = json.loads((out / f"rank{r}.json").read_text())
        results.append((arrays, side["errors"], side["objects"]))
    return results


def inputs(dtype, salt, ranks=range(W), shape=cases.SHAPE):
    return [cases.value(r, dtype, salt, shape) for r in ranks]


def assert_close(got, expected, dtype):
    if got.dtype.kind == "V":  # npz keeps bfloat16 as raw 2-byte records
        got = got.view(cases.NUMPY[dtype])
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    tol = cases.TOLERANCE.get(dtype)
    if tol is None:
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=tol)


@pytest.mark.parametrize("dtype", cases.DTYPES)
@pytest.mark.parametrize("op", cases.REDUCE_OPS)
def test_all_reduce(ranks, op, dtype):
    key = f"all_reduce/{op}/{dtype}"
    error = cases.error_of(op, dtype)
    expected = None if error else cases.reduce(inputs(dtype, f"all_reduce/{op}"), op, dtype)
    for arrays, errors, _ in ranks:
        if error:
            assert errors.get(key) == error
        else:
            assert key not in errors, errors.get(key)
            assert_close(arrays[f"{key}#0"], expected, dtype)


@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_reduce_and_broadcast(ranks, dtype):
    summed = cases.reduce(inputs(dtype, "reduce"), "sum", dtype)
    source = cases.value(1, dtype, "broadcast")
    for r, (arrays, errors, _) in enumerate(ranks):
        assert not [k for k in errors if k.endswith(f"/{dtype}") and "all_reduce" not in k]
        expected = summed if r == 2 else cases.value(r, dtype, "reduce")
        assert_close(arrays[f"reduce/{dtype}#0"], expected, dtype)
        assert_close(arrays[f"broadcast/{dtype}#0"], source, dtype)


@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_gathers_and_scatter(ranks, dtype):
    blocks = inputs(dtype, "gather")
    for r, (arrays, _, _) in enumerate(ranks):
        for i in range(W):
            assert_close(arrays[f"all_gather/{dtype}#{i}"], blocks[i], dtype)
            if r == 0:
                assert_close(arrays[f"gather/{dtype}#{i}"], blocks[i], dtype)
        assert_close(arrays[f"all_gather_into_tensor/{dtype}#0"], np.concatenate(blocks), dtype)
        assert_close(arrays[f"scatter/{dtype}#0"], cases.value(100 + r, dtype, "scatter"), dtype)
        if r:
            assert f"gather/{dtype}#0" not in arrays


@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_reduce_scatter(ranks, dtype):
    for r, (arrays, _, _) in enumerate(ranks):
        mine = [cases.value(s * 10 + r, dtype, "reduce_scatter") for s in range(W)]
        expected = cases.reduce(mine, "sum", dtype)
        assert_close(arrays[f"reduce_scatter/{dtype}#0"], expected, dtype)
        assert_close(arrays[f"reduce_scatter_tensor/{dtype}#0"], expected, dtype)


@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_all_to_all(ranks, dtype):
    kind = cases.NUMPY[dtype]
    for r, (arrays, _, _) in enumerate(ranks):
        rows = [np.full((cases.split_rows(s, r), 2), s * 10 + r) for s in range(W)]
        assert_close(
            arrays[f"all_to_all_single/{dtype}#0"], np.concatenate(rows).astype(kind), dtype
        )
        for s in range(W):
            expected = cases.value(s * 10 + r, dtype, "all_to_all")
            assert_close(arrays[f"all_to_all/{dtype}#{s}"], expected, dtype)


@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_send_recv_ring(ranks, dtype):
    for r, (arrays, _, _) in enumerate(ranks):
        assert_close(arrays[f"ring/{dtype}#0"], cases.value((r - 1) % W, dtype, "ring"), dtype)
        assert_close(arrays[f"batched/{dtype}#0"], cases.value((r + 1) % W, dtype, "ring"), dtype)


def test_subgroup(ranks):
    for r, (arrays, _, _) in enumerate(ranks):
        if r == 1:  # outside the group: untouched, PyTorch's warning, rank -1
            np.testing.assert_array_equal(arrays["group/all_reduce#0"], [2.0, 2.0])
            np.testing.assert_array_equal(arrays["group/rank#0"], [-1, -1])
            np.testing.assert_array_equal(arrays["group/warned#0"], [1, True])
            np.testing.assert_array_equal(arrays["group/broadcast#0"], [1.0])
        else:
            np.testing.assert_array_equal(arrays["group/all_reduce#0"], [4.0, 4.0])
            np.testing.assert_array_equal(arrays["group/rank#0"], [r // 2, 2])
            np.testing.assert_array_equal(arrays["group/broadcast#0"], [2.0])


def test_object_collectives(ranks):
    expected_all = [{"rank": r, "name": "r" * r} for r in range(W)]
    for r, (_, _, objects) in enumerate(ranks):
        assert objects["all_gather"] == expected_all
        assert objects["broadcast"] == ["from 1", 1]
        assert objects["gather"] == ([["g", s] for s in range(W)] if r == 2 else None)
        assert objects["scatter"] == [{"to": r}]
        assert objects["senders"] == ([1, 2] if r == 0 else [])


def test_async_barriers_and_strided(ranks):
    for arrays, _, objects in ranks:
        assert objects["async"] == [True, True]
        np.testing.assert_array_equal(arrays["async#0"], np.full(1000, W, dtype=np.float32))
        np.testing.assert_array_equal(arrays["strided#0"], W * np.arange(12.0).reshape(3, 4).T)


def test_xpu_tensors_go_through_mpi(ranks):
    if "xpu_skip" in ranks[0][2]:
        pytest.skip(f"no xpu device: {ranks[0][2]['xpu_skip']}")
    for arrays, _, _ in ranks:
        np.testing.assert_array_equal(arrays["xpu#0"], np.full(5, 6.0, dtype=np.float32))


def test_large_messages_and_their_order(ranks):
    for arrays, _, _ in ranks:
        np.testing.assert_array_equal(arrays["large/all_reduce#0"], [6.0, 6.0])
        np.testing.assert_array_equal(arrays["large/small#0"], [3.0, 3.0, 3.0])
        np.testing.assert_array_equal(arrays["large/broadcast#0"], [2.0, 2.0])
        np.testing.assert_array_equal(arrays["large/all_gather#0"], [0.0, 1.0, 2.0, 2.0])
        np.testing.assert_array_equal(arrays["large/avg_bf16#0"], [0.5, 0.5])
