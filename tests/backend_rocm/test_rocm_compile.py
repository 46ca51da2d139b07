"""Every generated kernel compiles with hiprtc for gfx90a (CDNA2) and gfx1030 (RDNA2), no GPU
needed: hiprtc, exported by libamdhip64, compiles without a device.

The sources are the CUDA backend's own (``codegen.source(name, "hip")``), so this is what keeps a
kernel that nvcc accepts but HIP rejects (warp width, shuffles, float16, builtins) from reaching an
AMD machine. As for nvcc, each family ("ew", "reduce"...) is one program (modules in namespaces
after one prelude; the elementwise family in chunks), compiled at -O0: the front end and the
AMDGPU code generator see every kernel for both targets. Programs run in worker processes
(hiprtc serialises compilations inside one process). The runtime's own path,
``compiler.compile_module`` (-O3, disk cache), is checked on one module. Skips, with the reason,
where ROCm's libraries are absent.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor

import pytest
from ember_backend_gpu import codegen
from ember_backend_gpu.codegen.prelude import prelude
from ember_backend_rocm import compiler, hip

ARCHS = ("gfx90a", "gfx1030")
CHUNK = 24  # modules per program: the 93 elementwise modules would be one 100 s job
CHECK_OPTIONS = ("-O0", "-ffp-contract=off", "-std=c++17")


def _hip():
    try:
        return hip.load_hip()
    except RuntimeError as exc:
        pytest.skip(f"hiprtc is not installed ({exc}); CI installs Debian's hipcc")


def _programs() -> dict[str, list[str]]:
    """``{label: module names}``: each family, large ones in chunks, largest first."""
    found = {}
    for family, names in codegen.families().items():
        for start in range(0, len(names), CHUNK):
            found[f"{family}[{start}:]"] = names[start : start + CHUNK]
    return dict(sorted(found.items(), key=lambda kv: -sum(len(codegen.body(n)) for n in kv[1])))


def _compile(job: tuple[str, str]) -> tuple[str, str, float, str | None]:
    """One program for one target, in a worker process: (label, arch, seconds, error or None)."""
    family, arch = job
    start = time.perf_counter()
    try:
        source = codegen.family_source(_programs()[family], "hip")
        compiler.compile_module(hip.load_hip(), source, arch, CHECK_OPTIONS, use_cache=False)
        error = None
    except compiler.CompileError as exc:
        error = str(exc)[-4000:]
    return family, arch, time.perf_counter() - start, error


def test_every_module_compiles_for_gfx90a_and_gfx1030():
    _hip()
    jobs = [(label, arch) for label in _programs() for arch in ARCHS]
    start = time.perf_counter()
    with ProcessPoolExecutor(os.cpu_count() or 1) as pool:
        results = list(pool.map(_compile, jobs))
    wall = time.perf_counter() - start
    cpu = sum(seconds for _, _, seconds, _ in results)
    print(f"\nhiprtc matrix: {len(jobs)} programs, {wall:.0f} s wall, {cpu:.0f} s in compilers")
    failures = [f"{family} for {arch}:\n{error}" for family, arch, _, error in results if error]
    assert not failures, "\n\n".join(failures)


def test_runtime_compile_path_caches(tmp_path, monkeypatch):
    """compile_module (what HipRuntime calls at first use) builds a code object once, then reads
    it from the cache; the key covers source, options, target and the hiprtc version."""
    library = _hip()
    monkeypatch.setenv("EMBER_ROCM_CACHE", str(tmp_path))
    source = codegen.source("linalg", "hip")
    first = compiler.compile_module(library, source, "gfx90a")
    assert first[:4] == b"\x7fELF" or first.startswith(b"__CLANG_OFFLOAD_BUNDLE__")
    assert len(list(tmp_path.iterdir())) == 1
    assert compiler.compile_module(library, source, "gfx90a") == first
    compiler.compile_module(library, source, "gfx1030")
    assert len(list(tmp_path.iterdir())) == 2


def test_compile_error_carries_the_log(tmp_path, monkeypatch):
    library = _hip()
    monkeypatch.setenv("EMBER_ROCM_CACHE", str(tmp_path))
    source = prelude("hip") + "EM_KERNEL k() { undefined_thing(); }"
    with pytest.raises(compiler.CompileError, match="undefined_thing"):
        compiler.compile_module(library, source, "gfx90a")
