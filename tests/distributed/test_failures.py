"""Failing jobs end cleanly and quickly: a raising rank, a killed rank, a hung rank, a late
rank at a monitored barrier, mismatched collectives; the direct launcher's teardown and
restarts. Each job runs on this machine with a bound on its time."""

from __future__ import annotations

import re

import pytest

from .harness import mpi_or_skip, run_job

LIMIT = 90  # seconds a failing job may take, startup included (the collectives time out at 3)


@pytest.fixture(autouse=True)
def _mpi():
    mpi_or_skip()


def test_raising_rank_fails_the_job_with_its_traceback():
    done, seconds = run_job("failures.py", 2, "raise")
    assert done.returncode != 0
    assert "ValueError: rank 1 fails on purpose" in done.stderr
    assert "Root Cause (first observed failure)" in done.stderr
    assert "rank      : 1 (local_rank: 1)" in done.stderr
    assert "passed the collective" not in done.stdout
    assert seconds < LIMIT


def test_killed_rank_ends_the_job():
    done, seconds = run_job("failures.py", 2, "kill")
    assert done.returncode != 0 and seconds < LIMIT
    assert "passed the collective" not in done.stdout


@pytest.mark.parametrize("scenario", ["hang", "hang_large"])
def test_hung_peer_times_out_with_an_error(scenario):
    done, seconds = run_job("failures.py", 2, scenario)
    assert done.returncode != 0 and seconds < LIMIT
    assert "DistBackendError" in done.stderr
    assert "collective operation timeout" in done.stderr and "ALL_REDUCE" in done.stderr


def test_monitored_barrier_names_the_late_rank():
    done, seconds = run_job("failures.py", 3, "monitored")
    assert done.returncode != 0 and seconds < LIMIT
    # rank 1 arrives with rank 0 (a machine so loaded that it lags 2 s may name it too)
    assert re.search(r"Ranks (1, )?2 failed to pass monitoredBarrier in 2000 ms", done.stderr)


def test_mismatched_collectives_are_reported_in_detail_mode():
    done, seconds = run_job("failures.py", 2, "mismatch", env={"EMBER_DISTRIBUTED_DEBUG": "DETAIL"})
    assert done.returncode != 0 and seconds < LIMIT
    assert "Detected mismatch between collectives on ranks" in done.stderr
    assert "TensorShape=[2]" in done.stderr and "TensorShape=[3]" in done.stderr


def test_direct_launcher_stops_the_others_when_a_rank_fails():
    done, seconds = run_job("failures.py", 2, "direct_raise", launcher="direct")
    assert done.returncode == 1 and seconds < LIMIT  # rank 0 would sleep 600 s
    assert "RuntimeError: rank 1 fails on attempt 0" in done.stderr
    assert "FAILED" in done.stderr


def test_direct_launcher_restarts_the_job():
    done, _ = run_job(
        "failures.py", 2, "direct_restart", launcher="direct", launcher_args=["--max-restarts", "1"]
    )
    assert done.returncode == 0, done.stderr
    assert "restarting the job (1/1)" in done.stderr
    assert "rank 0 finished attempt 1" in done.stdout and "rank 1 finished attempt 1" in done.stdout


def test_mpi_backend_explains_ranks_it_did_not_start():
    done, seconds = run_job("failures.py", 2, "direct_mpi", launcher="direct")
    assert done.returncode == 1 and seconds < LIMIT
    assert "backend 'mpi': it sees this process alone" in done.stderr
    assert "emberrun --launcher mpi --nproc-per-node 2" in done.stderr
