"""Smoke tests of the benchmarks that run each library in its own process (benchmarks/isolate.py):
they run end to end with tiny sizes, so they cannot rot, and every library's column is filled.
No timing is asserted: the machine is shared."""

from __future__ import annotations

import pathlib
import subprocess
import sys

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def _run(script: str, *options: str) -> list[str]:
    command = [sys.executable, str(BENCHMARKS / script), *options]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "skipped" not in done.stderr, done.stderr  # torch is installed where tests run
    return done.stdout.splitlines()


def test_unary_kernels_fill_every_column():
    lines = _run(
        "bench_unary_kernels.py", "--n", "1000", "--repeat", "1", "--only", "exp,logaddexp"
    )
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    assert set(rows) == {"exp", "logaddexp"}
    for cells in rows.values():
        assert len(cells) == 5 and "-" not in cells, cells  # 3 libraries' ms, 2 ratios


def test_autograd_prints_both_libraries_and_the_ratios():
    lines = _run("bench_autograd.py", "--repeat", "1")
    assert lines[0].split() == ["ember", "torch"]
    assert any(line.strip().startswith("backward ember / torch") for line in lines)
    assert any(line.strip().startswith("torch: recording costs") for line in lines)


def test_the_worker_pins_every_thread_pool():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import isolate
    finally:
        sys.path.remove(str(BENCHMARKS))
    env = isolate.worker_environment(3)
    assert all(env[name] == "3" for name in isolate.THREAD_VARIABLES)
    assert env["PYTHONPATH"].split(":")[0] == str(BENCHMARKS.parent)


def test_training_fills_time_memory_and_sharing_columns():
    """bench_training.py: minGPT's step in each library's process, beside PyTorch (--share), at
    one thread on the CPU clock; every cell a number and the ratios printed."""
    lines = _run(
        "bench_training.py", "--steps", "1", "--threads", "1", "--models", "mingpt",
        "--share", "--clock", "cpu",
    )  # fmt: skip
    assert lines[1].split()[0] == "model" and lines[1].split()[-1] == "shr/alone"
    cells = lines[2].split()
    assert cells[0] == "mingpt" and len(cells) == 11, cells
    ms, mib, hwm = cells[1:3] + cells[9:10], cells[4:6], cells[7:9]
    assert all(float(c) > 0 for c in ms + mib + hwm), cells
    assert all(c.endswith("x") for c in (cells[3], cells[6], cells[10])), cells
