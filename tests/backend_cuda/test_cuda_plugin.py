"""The cuda plugin on a machine without a GPU: it registers, imports without pycuda or a driver,
and reports why ``cuda`` is unavailable instead of breaking ``import ember``."""

from __future__ import annotations

import os
import subprocess
import sys

import ember_backend_cuda
import pytest

NO_EMULATOR = {k: v for k, v in os.environ.items() if k != "EMBER_CUDA_EMULATOR"}


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=NO_EMULATOR, check=False, timeout=300)  # fmt: skip


def _real_gpu() -> bool:
    result = _run("import ember; print(ember.cuda.is_available())")
    return result.stdout.strip().endswith("True")


def test_info_is_cheap_and_names_the_device():
    info = ember_backend_cuda.ember_backend_info()
    assert info["name"] == "cuda" and info["device_types"] == ["cuda"]
    assert info["priority"] == 100


def test_import_does_not_load_pycuda():
    result = _run("import ember, ember_backend_cuda, sys; print('pycuda' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_unavailable_with_a_reason_without_a_gpu():
    if _real_gpu():
        pytest.skip("a CUDA GPU is present: the unavailable path cannot be observed")
    code = (
        "import ember\n"
        "print(ember.cuda.is_available())\n"
        "print(ember.cuda.device_count())\n"
        "print(ember.cuda.unavailable_reason())\n"
        "try:\n"
        "    ember.zeros(2, device='cuda')\n"
        "except Exception as exc:\n"
        "    print('raised', type(exc).__name__)\n"
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "False" and lines[1] == "0"
    reason = "\n".join(lines[2:-1])
    assert "cuda" in reason and any(
        word in reason for word in ("pycuda", "driver", "libcuda", "CUDA", "device")
    ), reason
    assert lines[-1].startswith("raised")


def test_plugins_command_lists_the_backend():
    result = subprocess.run([sys.executable, "-m", "ember.plugins"], capture_output=True,
                            text=True, env=NO_EMULATOR, check=False, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if line.strip().startswith("cuda "))
    assert "ember-backend-cuda" in row and "100" in row
    assert ("unavailable" in row) != _real_gpu()


def test_missing_pycuda_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "pycuda", None)
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    with pytest.raises(RuntimeError, match="pycuda"):
        ember_backend_cuda.load_driver()


def test_backend_switches_reach_the_runtime():
    import ember
    from ember.backends import FLAGS, flags

    assert ember.backends.cuda.matmul.allow_tf32 is False
    ember.backends.cuda.matmul.allow_tf32 = True
    try:
        assert flags("cuda")["matmul.allow_tf32"] is True
        assert ember.backends.cuda.matmul.allow_tf32 is True
    finally:
        FLAGS["cuda"].pop("matmul.allow_tf32")
    with pytest.raises(AttributeError, match="no switch"):
        ember.backends.cuda.matmul.allow_everything = True
    ember.backends.cudnn.benchmark = True  # accepted, as PyTorch scripts set it
    FLAGS["cuda"].pop("cudnn.benchmark")
