"""The cuFFT binding (ember_backend_cuda.cufft) runs its real cffi calls without a GPU, against a
stub library built from its own declarations (as test_solver_abi.py does for cuSOLVER), and its
declarations compile against NVIDIA's ``cufft.h`` with nvcc where the header is installed.

The emulator replaces the Cufft class with numpy (tests/fft on ``EMBER_CUDA_EMULATOR=1``), so
only this test executes cufft.py's plan cache, stream binding and exec calls in CI.
"""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest
from ember_backend_cuda import compiler, cufft
from nvidia_headers import include_dirs
from test_solver_abi import _build

FUNCTION = re.compile(r"cufftResult\s+\w+\([^;]*\);", re.S)


class _Runtime:
    def __init__(self):
        self.stream = 32

    def activate(self, index):
        pass

    def synchronize(self, index=None):
        pass

    def current_stream(self, index):
        return SimpleNamespace(cuda_stream=self.stream)


@pytest.fixture()
def binding(tmp_path, monkeypatch):
    if shutil.which("gcc") is None:
        pytest.skip("gcc builds the stub library")
    path = _build(cufft.CDEF, tmp_path, "cufft")
    monkeypatch.setattr(cufft, "library_candidates", lambda: [path])
    fft = cufft.Cufft(_Runtime())
    library = ctypes.CDLL(fft.path)  # the loaded stub: the same handle as cffi's
    library.ember_stub_log.restype = ctypes.c_char_p
    library.ember_stub_clear()
    return fft, library


BUFFER = np.zeros(64)
A = BUFFER.ctypes.data


@pytest.mark.parametrize(
    "kind,dtype,routine",
    [
        ("r2c", "float32", "cufftExecR2C"),
        ("c2r", "float32", "cufftExecC2R"),
        ("c2c", "float32", "cufftExecC2C"),
        ("r2c", "float64", "cufftExecD2Z"),
        ("c2r", "float64", "cufftExecZ2D"),
        ("c2c", "float64", "cufftExecZ2Z"),
    ],
)
def test_plans_are_cached_and_streams_bound(binding, kind, dtype, routine):
    fft, library = binding
    layout = (kind, dtype, (4, 6), (4, 6), 1, 24, (4, 4), 1, 16, 3, A, A, -1)
    fft.execute(0, *layout)
    fft.execute(0, *layout)  # the same layout: the cached plan, the stream already bound
    fft.runtime.stream = 48
    fft.execute(0, *layout)  # a new current stream: bound again before executing
    calls = library.ember_stub_log().decode().split()
    assert calls == [
        "cufftCreate",
        "cufftMakePlanMany64",
        "cufftSetStream",
        routine,
        routine,
        "cufftSetStream",
        routine,
    ]


def test_plan_cache_is_bounded(binding):
    fft, library = binding
    for n in range(2, cufft.MAX_PLANS + 4):
        fft.execute(0, "c2c", "float32", (n,), (n,), 1, n, (n,), 1, n, 1, A, A, -1)
    assert len(fft._plans) == cufft.MAX_PLANS
    assert library.ember_stub_log().decode().split().count("cufftDestroy") == 2


def test_declarations_match_nvidias_header(tmp_path):
    """Each declared function, redeclared after ``#include <cufft.h>``: a different signature is
    a compile error."""
    nvcc, includes = compiler.find_nvcc(), include_dirs("cufft.h", cufft)
    if nvcc is None or includes is None:
        pytest.skip("nvcc and cufft.h (the CUDA toolkit's cuFFT) are not installed")
    source = tmp_path / "decls.cu"
    source.write_text("#include <cufft.h>\n" + "\n".join(FUNCTION.findall(cufft.CDEF)) + "\n")
    flags = [f"-I{include}" for include in includes]
    done = subprocess.run([nvcc, "-c", *flags, "-o", str(tmp_path / "decls.o"), str(source)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
