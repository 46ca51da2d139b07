"""Smoke test of benchmarks/bench_overhead.py: it runs end to end (one process per library) with
tiny rounds, so the benchmark cannot rot. No timing is asserted: the machine is shared."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "bench_overhead.py"


def _module():
    spec = importlib.util.spec_from_file_location("bench_overhead", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_runs_each_library_in_its_own_process():
    command = [sys.executable, str(SCRIPT), "--libs", "ember,torch,numpy", "--threads", "1"]
    command += ["--repeat", "2", "--budget", "0.0002", "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = lines[1].split()
    assert header[:4] == ["case", "ember", "torch", "numpy"]
    for case in ("add 16", "chain 16", "matmul 64", "add 16 grad"):
        row = next(line for line in lines if line.startswith(case + " "))
        assert row.split()[-3 if case.endswith("grad") else -1].endswith("x"), row
    raw = json.loads(lines[-1])
    assert set(raw) == {"ember", "torch", "numpy"}
    assert set(raw["ember"]["cases"]) == {"add 16", "chain 16", "matmul 64", "add 16 grad"}
    assert "add 16 grad" not in raw["numpy"]["cases"]  # numpy records no graph
    assert all(len(times) == 2 and min(times) > 0 for times in raw["ember"]["cases"].values())


def test_the_chain_computes_the_same_in_every_library():
    """The timed calls are the same computation in each library (a typo in one would time
    something else)."""
    import numpy as np
    import torch

    import ember

    bench = _module()
    libraries = {"ember": ember, "torch": torch, "numpy": np}
    found = {name: bench.calls(name, lib) for name, lib in libraries.items()}
    for case in ("add 16", "chain 16", "matmul 64"):
        want = found["numpy"][case]()
        for name in ("ember", "torch"):
            got = np.asarray(found[name][case]())
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{name} {case}")
    got = found["ember"]["add 16 grad"]()
    assert got.requires_grad and got.grad_fn is not None
