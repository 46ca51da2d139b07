"""The rocm plugin without an AMD GPU: it registers for ``cuda``, imports without opening
libamdhip64, loads the HIP runtime through cffi when ROCm's libraries are installed and reports
"no AMD GPU" cleanly; plugins.toml's priorities pick between it and the CUDA plugin."""

from __future__ import annotations

import os
import subprocess
import sys
import types

import ember_backend_rocm
import pytest
from ember_backend_gpu.emulator import EmulatedRuntime
from ember_backend_gpu.kernels import build_table
from ember_backend_rocm import hip

import ember
from ember.dispatcher.devices import REGISTRY
from ember.dispatcher.plugins import BACKENDS_GROUP, extension
from ember.dispatcher.policy import Policy

CLEAN = {k: v for k, v in os.environ.items() if k != "EMBER_CUDA_EMULATOR"}


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=CLEAN,
                          check=False, timeout=300)  # fmt: skip


def _hip_or_skip() -> hip.Hip:
    try:
        return hip.load_hip()
    except RuntimeError as exc:
        pytest.skip(f"ROCm's HIP runtime is not installed ({exc}); CI installs Debian's hipcc")


def _amd_gpu() -> bool:
    try:
        return hip.load_hip().device_count() > 0
    except RuntimeError:
        return False


def test_info_is_cheap_and_serves_cuda():
    info = ember_backend_rocm.ember_backend_info()
    assert info["name"] == "rocm" and info["device_types"] == ["cuda"]
    assert info["priority"] == 90


def test_import_does_not_open_the_hip_runtime():
    code = "import ember, ember_backend_rocm, sys; print('ember_backend_rocm.hip' in sys.modules)"
    result = _run("-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_hip_runtime_loads_through_cffi_and_reports_no_device():
    library = _hip_or_skip()
    if library.device_count():
        pytest.skip("an AMD GPU is present: the no-device path cannot be observed")
    assert library.version().count(".") == 2
    with pytest.raises(RuntimeError, match="found no AMD GPU"):
        ember_backend_rocm.ember_backend_load("cuda")


def test_no_device_codes_mean_zero_devices():
    """hipErrorNoDevice and hipErrorInvalidDevice from hipGetDeviceCount are "no device", any
    other failure is an error that names itself."""

    def fake(status):
        lib = types.SimpleNamespace(
            hipGetDeviceCount=lambda box: status, hipGetErrorName=lambda s: b"hipErrorX"
        )
        ffi = types.SimpleNamespace(new=lambda kind: [0], string=lambda s: s)
        return hip.Hip(ffi, lib, "fake")

    assert fake(hip.NO_DEVICE).device_count() == 0
    assert fake(hip.INVALID_DEVICE).device_count() == 0
    with pytest.raises(hip.HipError, match="hipGetDeviceCount failed"):
        fake(999).device_count()


def test_missing_library_says_how_to_install(monkeypatch):
    monkeypatch.setattr(hip, "library_candidates", lambda stem="amdhip64": ["/nowhere/libx.so"])
    with pytest.raises(RuntimeError, match=r"no ROCm on this machine.*Install ROCm"):
        hip.load_hip()


def test_cuda_unavailable_names_the_rocm_reason():
    if _amd_gpu():
        pytest.skip("an AMD GPU is present: the unavailable path cannot be observed")
    code = "import ember\nprint(ember.cuda.is_available())\nprint(ember.cuda.unavailable_reason())"
    result = _run("-c", code)
    assert result.returncode == 0, result.stderr
    available, reason = result.stdout.split("\n", 1)
    assert available == "False"
    assert "rocm:" in reason and ("no AMD GPU" in reason or "no ROCm" in reason), reason


def test_plugins_command_lists_rocm_for_cuda():
    result = _run("-m", "ember.plugins")
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if line.strip().startswith("rocm "))
    assert "ember-backend-rocm" in row and "cuda" in row and "90" in row
    assert ("unavailable" in row) != _amd_gpu()


class _Serving:
    """A real plugin's info with a load that finds a device (the CPU emulator stands in for it),
    as when both GPU plugins are installed on a machine where both find devices."""

    def __init__(self, module):
        self.module = module

    @ember_backend_rocm.hookimpl
    def ember_backend_info(self):
        return self.module.ember_backend_info()

    @ember_backend_rocm.hookimpl
    def ember_backend_load(self, device_type):
        runtime = EmulatedRuntime()
        return {"runtime": runtime, "kernels": build_table(runtime)}


@pytest.mark.parametrize(
    ("override", "serving"),
    [({}, "cuda"), ({"backends": {"rocm": {"priority": 110}}}, "rocm")],
)
def test_plugins_toml_priority_picks_the_cuda_server(override, serving):
    import ember_backend_cpu
    import tomllib

    ember_backend_cuda = pytest.importorskip("ember_backend_cuda")

    from ember.dispatcher.policy import DEFAULT_FILE, _merge

    data = _merge(tomllib.loads(DEFAULT_FILE.read_text()), override)
    extensions = [extension("cpu", ember_backend_cpu)]
    extensions += [
        extension(name, _Serving(module))
        for name, module in (("rocm", ember_backend_rocm), ("cuda", ember_backend_cuda))
    ]
    try:
        REGISTRY.reset({BACKENDS_GROUP: extensions}, Policy(data, (str(DEFAULT_FILE),)))
        assert REGISTRY.backend("cuda").name == serving
        assert ember.ones(2, device="cuda").device.type == "cuda"
    finally:
        REGISTRY.reset()
