"""Which OpenCL platforms serve xpu, and the errors when none does: ``import ember`` keeps
working and asking for xpu says why it is unavailable."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from ember_backend_intel import platforms

PROBE = textwrap.dedent(
    """
    import ember
    assert (ember.ones(2) + 1).tolist() == [2.0, 2.0]
    print("available", ember.xpu.is_available())
    print("reason", ember.xpu.unavailable_reason())
    try:
        ember.zeros(1, device="xpu")
    except Exception as exc:
        print("raised", type(exc).__name__)
    """
)


def _probe(**env) -> str:
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_patterns_come_from_env_then_config_then_defaults(monkeypatch):
    monkeypatch.delenv(platforms.ENV, raising=False)
    assert platforms.platform_patterns(None)[0] == list(platforms.DEFAULT_PLATFORMS)
    assert platforms.platform_patterns({"platforms": ["Acme"]})[0] == ["Acme"]
    monkeypatch.setenv(platforms.ENV, "One, Two")
    patterns, source = platforms.platform_patterns({"platforms": ["Acme"]})
    assert patterns == ["One", "Two"] and platforms.ENV in source


def test_no_matching_platform_is_reported():
    out = _probe(EMBER_INTEL_PLATFORMS="No Such Platform")
    assert "available False" in out
    assert "no OpenCL platform matches ['No Such Platform']" in out
    assert "raised DeviceUnavailableError" in out


def test_policy_file_chooses_the_platforms(tmp_path):
    policy = tmp_path / "plugins.toml"
    policy.write_text('[backends.intel]\nplatforms = ["Nothing Like It"]\n')
    out = _probe(EMBER_PLUGINS_CONFIG=str(policy))
    assert "available False" in out and "'Nothing Like It'" in out
    assert "plugins.toml [backends.intel] platforms" in out


def test_no_opencl_runtime_is_reported(tmp_path):
    # ocl-icd finds vendors through OCL_ICD_VENDORS: an empty directory means no runtime at all.
    out = _probe(OCL_ICD_VENDORS=str(tmp_path), OPENCL_VENDOR_PATH=str(tmp_path))
    assert "available False" in out
    assert "no OpenCL runtime found" in out or "no OpenCL platform matches" in out


def test_missing_pyopencl_is_reported(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyopencl", None)
    with pytest.raises(RuntimeError, match="pip install pyopencl"):
        platforms.find_devices()
