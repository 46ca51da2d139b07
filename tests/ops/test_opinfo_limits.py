"""The OpInfo runner's limits: every sample on cpu, a spread of at most ``DEVICE_SAMPLE_LIMIT``
per record and dtype elsewhere (``EMBER_OPINFO_SAMPLES`` overrides both); an element limit on
the CUDA emulator and on xpu over an OpenCL CPU device only, samples over it not run and the
pass count saying how many. And its sample iterators never reach ``inspect.stack()``
(PyTorch's way of finding the unittest method running, 0.22 s a call under pytest)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # imported by PyTorch's test suite

from torch.testing._internal.opinfo.core import SampleInput  # noqa: E402

import ember  # noqa: E402

from .opinfo import report, runner  # noqa: E402
from .opinfo.runner import (  # noqa: E402
    DEVICE_SAMPLE_LIMIT,
    HOST_DEVICE_ELEMENT_LIMIT,
    RecordRun,
    element_limit,
    sample_elements,
    sample_limit,
    spread,
)
from .test_opinfo import RECORDS  # noqa: E402


def test_only_devices_running_on_the_host_limit_elements(monkeypatch):
    monkeypatch.delenv("EMBER_CUDA_EMULATOR", raising=False)
    monkeypatch.setattr(runner, "opencl_on_the_host", lambda device: False)
    assert [element_limit(d) for d in ("cpu", "xpu", "ref", "cuda")] == [None] * 4
    monkeypatch.setenv("EMBER_CUDA_EMULATOR", "1")
    assert element_limit("cuda") == HOST_DEVICE_ELEMENT_LIMIT
    assert element_limit("cpu") is None
    monkeypatch.setattr(runner, "opencl_on_the_host", lambda device: device == "xpu")
    assert element_limit("xpu") == HOST_DEVICE_ELEMENT_LIMIT


def test_xpu_on_pocl_runs_on_the_host():
    from ..conftest import unavailable_reason

    if unavailable_reason("xpu"):
        pytest.skip(unavailable_reason("xpu"))
    platform = ember.xpu.get_device_properties(0).platform
    assert runner.opencl_on_the_host("xpu") == ("Portable" in platform or "CPU" in platform)
    assert not runner.opencl_on_the_host("cpu")


def test_cpu_checks_every_sample_and_other_devices_a_spread(monkeypatch):
    monkeypatch.delenv("EMBER_OPINFO_SAMPLES", raising=False)
    assert sample_limit("cpu") is None
    assert [sample_limit(d) for d in ("xpu", "ref", "cuda")] == [DEVICE_SAMPLE_LIMIT] * 3
    chosen = spread(528, DEVICE_SAMPLE_LIMIT)  # unique's samples per dtype
    assert len(chosen) == DEVICE_SAMPLE_LIMIT and chosen[0] == 0 and chosen[-1] == 527
    assert chosen == sorted(set(chosen))
    monkeypatch.setenv("EMBER_OPINFO_SAMPLES", "all")
    assert [sample_limit(d) for d in ("cpu", "xpu")] == [None, None]
    monkeypatch.setenv("EMBER_OPINFO_SAMPLES", "5")
    assert [sample_limit(d) for d in ("cpu", "xpu")] == [5, 5]


def test_sample_elements_counts_every_tensor():
    sample = SampleInput(
        torch.zeros(3, 4),
        args=([torch.zeros(5), torch.zeros(2, 2)], 7),
        kwargs={"w": torch.zeros(6)},
    )
    assert sample_elements(sample) == 12 + 5 + 4 + 6


def test_the_pass_count_names_samples_not_run(monkeypatch):
    monkeypatch.setattr(report, "_SEEN", {})
    report._SEEN[("a", "cuda")] = ("passed", 10, 10, 2)
    report._SEEN[("b", "cpu")] = ("passed", 5, 5, 0)
    lines = report.summary_lines()
    assert lines == [
        "OpInfo on cpu: 1/1 records pass (100.0%), 0 xfail, 0 fail; 5/5 samples pass",
        "OpInfo on cuda: 1/1 records pass (100.0%), 0 xfail, 0 fail; 10/10 samples pass, "
        "2 over the device's size limit not run",
    ]


def test_sample_iterators_do_not_read_the_stack(monkeypatch):
    import inspect

    calls = []  # PyTorch's caller swallows any exception, so calls are counted, not refused
    monkeypatch.setattr(inspect, "stack", lambda *a, **k: calls.append(a) or [])
    record = next(r for r in RECORDS if r.name == "add")
    outcome = RecordRun(record, "cpu").run()
    assert outcome.samples > 0 and outcome.failures == []
    assert calls == [], f"inspect.stack() called {len(calls)} times while drawing samples"
