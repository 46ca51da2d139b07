"""Every generated CUDA kernel module compiles with nvcc for sm_80 and sm_90 (no GPU needed).

This is what keeps a syntax or type error in a kernel from reaching a GPU machine: CI has nvcc
but no GPU. Each kernel family ("ew", "reduce", "copy"...) is one translation unit (each module's
text in its own namespace after one prelude), and the families compile in parallel. The matrix
stops at PTX (``code=compute_80``/``compute_90``) with NVVM's optimiser off: the front end and
code generation see every kernel for both architectures, which is where source errors show,
while ptxas and -O3, which cost ten times more, run for one module through the runtime's own
``compiler.compile_module`` below. Skips, with the reason, where nvcc is absent.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from ember_backend_cuda import compiler
from ember_backend_gpu import codegen
from ember_backend_gpu.codegen.prelude import prelude

NVCC = compiler.find_nvcc()
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA toolkit) is not installed")
ARCHS = ("80", "90")
CHECK_OPTIONS = ("-Xcicc", "-O0")


def _nvcc(family: str, names: list[str], tmp: str) -> subprocess.CompletedProcess:
    src = Path(tmp) / f"{family}.cu"
    src.write_text(codegen.family_source(names, "cuda"))
    gencode = [f"-gencode=arch=compute_{a},code=compute_{a}" for a in ARCHS]
    command = [NVCC, "-fatbin", *gencode, *compiler.OPTIONS, *CHECK_OPTIONS,
               "-o", str(src.with_suffix(".fatbin")), str(src)]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, check=False)


def test_every_module_compiles_for_sm80_and_sm90():
    families = codegen.families()
    # Largest first, so the long translation unit starts at once.
    order = sorted(families, key=lambda f: -sum(len(codegen.body(n)) for n in families[f]))
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        results = dict(zip(order, pool.map(lambda f: _nvcc(f, families[f], tmp), order)))
    failures = [
        f"family {family} ({len(families[family])} modules):\n{result.stderr[-4000:]}"
        for family, result in results.items()
        if result.returncode != 0
    ]
    assert not failures, "\n\n".join(failures)


def test_families_cover_every_kernel():
    """The families hold every module, and every kernel the glue can name is in one of them."""
    bundled = {name for names in codegen.families().values() for name in names}
    assert bundled == set(codegen.module_names())
    for name in bundled:
        for kernel, _ in codegen.kernels(name):
            assert f"EM_KERNEL {kernel}(" in codegen.body(name)


def test_runtime_compile_path_caches(tmp_path, monkeypatch):
    """compile_module (what the runtime calls at first use) builds a cubin once, then reads it
    from the cache: the key covers source, options, architecture and nvcc version."""
    monkeypatch.setenv("EMBER_CUDA_CACHE", str(tmp_path))
    source = codegen.source("ew.add", "cuda")
    first = compiler.compile_module(source, "sm_80")
    assert first[:4] == b"\x7fELF"  # a cubin is an ELF image
    cached = list(tmp_path.iterdir())
    assert len(cached) == 1
    assert compiler.compile_module(source, "sm_80") == first
    compiler.compile_module(source, "sm_90")
    assert len(list(tmp_path.iterdir())) == 2


def test_compile_error_carries_diagnostics(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CUDA_CACHE", str(tmp_path))
    with pytest.raises(compiler.CompileError, match="undefined_thing"):
        compiler.compile_module(prelude("cuda") + "EM_KERNEL k() { undefined_thing(); }", "sm_80")
