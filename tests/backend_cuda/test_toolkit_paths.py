"""Where the CUDA plugin looks for cuBLAS, cuSOLVER and cuFFT (ember_backend_cuda.toolkit): the
CUDA 12 wheels' ``nvidia/<library>/lib`` and the CUDA 13 wheels' ``nvidia/cu13/lib`` (one folder
for every library, as PyTorch's cu130 builds install them), before any toolkit."""

from __future__ import annotations

import sys

from ember_backend_cuda.toolkit import library_paths


def _touch(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return str(path)


def test_both_wheel_layouts_are_searched_before_a_toolkit(tmp_path, monkeypatch):
    cuda12 = _touch(tmp_path / "nvidia" / "cublas" / "lib" / "libcublas.so.12")
    cuda13 = _touch(tmp_path / "nvidia" / "cu13" / "lib" / "libcusolver.so.12")
    toolkit = _touch(tmp_path / "toolkit" / "lib64" / "libcusolver.so.11")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "nvidia", raising=False)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "toolkit"))
    assert library_paths("cublas")[0] == cuda12
    cusolver = library_paths("cusolver")
    assert cusolver.index(cuda13) < cusolver.index(toolkit)
    assert cusolver[0] == cuda13
