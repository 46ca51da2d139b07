"""Smoke test of benchmarks/bench_fused_optim.py: both libraries' workers run every mode and the
table has a ratio in each row (no timing asserted: the machine is shared)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "bench_fused_optim.py"


def test_fused_optim_bench_fills_every_row():
    command = [sys.executable, str(SCRIPT), "--number", "1", "--repeat", "1", "--threads", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    optimizers = ("Adam ", "AdamW(wd=0.1) ", "SGD(momentum=0.9) ")
    rows = [line for line in lines[2:] if line.startswith(optimizers) and ":" not in line]
    assert len(rows) == 9, lines  # default, foreach and fused for each (header skipped)
    for row in rows:
        assert row.split()[-1].endswith("x"), row
    summaries = [line for line in lines if "ember fused / torch fused" in line]
    assert len(summaries) == 3, lines
