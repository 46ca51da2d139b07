"""DistributedDataParallel on a real 2-rank MPI job trains exactly as one process does on the
concatenated batch: plain, with no_sync accumulation, with gradients as bucket views over many
buckets, with unused parameters found, with a static graph, and with SyncBatchNorm."""

from __future__ import annotations

import json

import numpy as np
import pytest

from . import ddp_cases
from .harness import mpi_or_skip, run_job

WORLD = 2


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    mpi_or_skip()
    out = tmp_path_factory.mktemp("ddp")
    done, _ = run_job("ddp.py", WORLD, out, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return [
        (dict(np.load(out / f"rank{r}.npz")), json.loads((out / f"rank{r}.json").read_text()))
        for r in range(WORLD)
    ]


@pytest.mark.parametrize("kind", ddp_cases.KINDS)
def test_ddp_equals_one_process_on_the_whole_batch(ranks, kind):
    reference = ddp_cases.train(kind, WORLD)
    for arrays, _ in ranks:
        for key, expected in reference.items():
            np.testing.assert_allclose(arrays[f"{kind}/{key}"], expected, rtol=1e-10, atol=1e-12)


def test_initial_state_comes_from_rank_0(ranks):
    """Ranks start from different seeds: equality above needs the construction broadcast, and
    the reference trains rank 0's initial parameters."""
    untrained = [ddp_cases.model("plain", seed).fc1.weight.detach().numpy() for seed in (0, 1)]
    assert not np.allclose(untrained[0], untrained[1])


def test_unused_parameter_is_left_alone_with_find_unused(ranks):
    for arrays, _ in ranks:
        assert bool(arrays["unused/spare_grad_is_none"])


def test_state_dict_keys_have_the_module_prefix(ranks):
    for _, checks in ranks:
        assert "module.fc1.weight" in checks["keys"] and all(
            k.startswith("module.") for k in checks["keys"]
        )


def test_unused_parameter_without_find_unused_raises_like_torch(ranks):
    for _, checks in ranks:
        message = checks["unused_error"]
        assert "Expected to have finished reduction in the prior iteration" in message
        assert "find_unused_parameters=True" in message
        assert "did not receive grad for rank" in message


def test_different_models_are_refused_at_construction(ranks):
    for _, checks in ranks:
        assert "DDP expects same model across all ranks" in checks["mismatch_error"]
        assert "(2, 3)" in checks["mismatch_error"] and "(3, 3)" in checks["mismatch_error"]
