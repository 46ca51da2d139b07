"""``python -m ember.plugins``: the report and ``--explain``, over in-memory plugins."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import plugin_fakes as fakes
import pytest
from plugin_fakes import OpLibrary, RefPlugin
from test_op_plugins import definition

import ember
from ember import plugins as cli
from ember.dispatcher import registry


@pytest.fixture
def setup(lib, plugins):
    """A ref device (CPU fallback), a GPU plugin that fails to load, a disabled plugin, a working
    op library and one whose hook raises."""
    policy = fakes.policy({"backends": {"off": {"enabled": False}}})
    return plugins(
        ("ref", RefPlugin()),
        ("gpu", RefPlugin("gpu", device_types=["gpu"], load_error=OSError("no driver"))),
        ("off", RefPlugin("off", device_types=["offdev"])),
        policy=policy,
        op_libraries=[
            ("mine", OpLibrary([definition()])),
            ("bad", OpLibrary(error=ImportError("nope"))),
        ],
    )


def _row(text: str, first: str, section: str = "") -> list[str]:
    """The cells of the table row starting with ``first`` (cells are 2+ spaces apart), in the
    part of the report after the line starting with ``section``."""
    text = text[text.index("\n" + section) :]
    for line in text.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if cells[0] == first:
            return cells
    raise AssertionError(f"no row {first!r} in:\n{text}")


def test_report_lists_backends_with_status_and_reason(setup):
    text = cli.report()
    assert _row(text, "ref") == [
        "ref",
        "0.0",
        "(in memory)",
        "ref",
        "0",
        "ref: available (1 device)",
    ]
    assert _row(text, "gpu")[-1] == "gpu: unavailable (OSError: no driver)"
    assert _row(text, "off")[-1] == "disabled by plugins.toml"
    assert _row(text, "cpu")[:2] == ["cpu", ember.__version__]


def test_report_shows_coverage_counts_and_what_falls_back(setup):
    text = cli.report()
    header = _row(text, "backend", "Op coverage")
    cells = dict(zip(header, _row(text, "ref", "Op coverage")))
    counts = [int(cells[c]) for c in ("native", "decomposition", "core", "cpu fallback", "missing")]
    assert sum(counts) == int(cells["ops"]) == len(cli.all_ops())
    assert cells["native"] == "2" and cells["missing"] == "0", text  # copy_ and fill_
    listed = re.search(r"cpu fallback on ref \((\d+)\): ([\s\S]*?)\n\n", text)
    names = [n.strip() for n in listed.group(2).split(",")]
    assert int(listed.group(1)) == len(names)
    assert {"exp", "mm", "lib::double"} <= set(names) and "exp_" not in names


def test_report_lists_op_libraries_and_their_ops(setup):
    text = cli.report()
    assert "  mine (in memory): ok" in text
    assert "  bad (in memory): broken: ImportError: nope" in text
    row = _row(text, "lib::double")
    assert row == [
        "lib::double",
        "mine",
        "yes",
        "yes",
        "native",
        "cpu fallback",
        "cpu: float32 (mine)",
    ]


def test_report_counts_fallback_calls_of_this_process(setup, monkeypatch):
    monkeypatch.setattr(registry, "FALLBACK_COUNTS", registry.Counter())
    assert "CPU fallback calls in this process:\n  none" in cli.report()
    x = ember.ones(2, device="ref")
    with pytest.warns(registry.PerformanceWarning):
        x.exp()
        x.exp()
    assert "CPU fallback calls in this process:\n  exp: 2" in cli.report()


def test_explain_native_fallback_library_and_promotion(setup):
    ops = cli.all_ops()
    assert cli.explain_call("add(cpu float32, cpu int64)", ops) == (
        "promotion: float32 + int64 -> float32\nadd(cpu float32): native cpu kernel cpu.add"
    )
    assert cli.explain_call("exp(ref:0 float)", ops) == (
        "exp(ref float32): no ref kernel; CPU fallback (plugins.toml allows it)"
    )
    assert cli.explain_call("lib::double(cpu float32)", ops).startswith(
        "lib::double(cpu float32): native mine kernel _double"
    )
    # library ops have no type promotion: the first tensor's dtype picks the kernel
    assert cli.explain_call("lib::double(cpu float32, cpu float64)", ops).count("\n") == 0


def test_explain_on_an_unavailable_device_says_why(setup):
    text = cli.explain_call("add(gpu float32, gpu float32)", cli.all_ops())
    assert text.splitlines()[1] == (
        "add(gpu float32): the device is unavailable. device type 'gpu' is unavailable:"
    )
    assert text.endswith("gpu: OSError: no driver")


@pytest.mark.parametrize(
    "call, message",
    [
        ("add", "expects"),
        ("nope(cpu float32)", "no op named 'nope'"),
        ("add(cpu)", "arguments must be"),
    ],
)
def test_explain_refuses_malformed_calls(setup, call, message):
    with pytest.raises(SystemExit, match=message):
        cli.explain_call(call, cli.all_ops())


def test_main_prints_the_report_or_an_explanation(setup, capsys):
    assert cli.main(["--explain", "lib::double(ref float32)"]) == 0
    assert capsys.readouterr().out == (
        "lib::double(ref float32): no ref kernel; CPU fallback (plugins.toml allows it)\n"
    )
    assert cli.main(["-v"]) == 0
    assert "decomposition on ref" in capsys.readouterr().out


def test_console_script_runs():
    """The ``ember.plugins`` command pyproject.toml declares (installed with ember)."""
    script = shutil.which("ember.plugins", path=os.path.dirname(sys.executable))
    if script is None:
        pytest.skip("the ember.plugins console script is not installed next to this Python")
    done = subprocess.run(
        [script, "--explain", "mul(cpu float32, cpu float32)"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("mul(cpu float32): native cpu kernel cpu.mul\n")
