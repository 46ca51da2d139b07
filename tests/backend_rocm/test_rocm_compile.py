"""Every generated kernel compiles with hiprtc for gfx90a (CDNA2) and gfx1030 (RDNA2), no GPU
needed: hiprtc, exported by libamdhip64, compiles without a device.

The sources are the CUDA backend's own (``codegen.source(name, "hip")``), so this is what keeps a
kernel that nvcc accepts but HIP rejects (warp width, shuffles, float16, builtins) from reaching an
AMD machine. As for nvcc, each family ("ew", "reduce"...) is one program (modules in namespaces
after one prelude; the elementwise family in chunks), compiled at -O0: the front end and the
AMDGPU code generator see every kernel (the elementwise family, which has no wave-level code,
for gfx90a only). Programs run in worker processes
(hiprtc serialises compilations inside one process). The runtime's own path,
``compiler.compile_module`` (-O3, disk cache), is checked on one module. Skips, with the reason,
where ROCm's libraries are absent.
"""

from __future__ import annotations

import multiprocessing
import os
import re
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


# Every compilation here runs in spawned processes: hiprtc's clang (inside libamd_comgr) and
# PoCL's libclang-cpp abort a process that loads both, in either order, and the xpu tests load
# PoCL into the same pytest workers. A forked worker would inherit what this one has loaded.
SPAWN = multiprocessing.get_context("spawn")


def _in_fresh_process(fn, *args):
    with ProcessPoolExecutor(1, mp_context=SPAWN) as pool:
        return pool.submit(fn, *args).result()


# Families without wave-level code (no EM_WARP, lanes or shuffles: the wave width of gfx90a,
# 64, against gfx1030's 32 changes nothing in them) compile for the first target only. The
# elementwise family is two thirds of the source; compiling it for gfx1030 too cost about 40 of
# the matrix's 126 compiler-seconds in CI (2026-11-29).
WAVE_INDEPENDENT = ("ew",)
WAVE_CODE = re.compile(r"EM_WARP|__shfl|\blanes?\b|__ballot|warpSize")


def _archs(label: str) -> tuple[str, ...]:
    return ARCHS[:1] if label.partition("[")[0] in WAVE_INDEPENDENT else ARCHS


def test_wave_independent_families_have_no_wave_code():
    families = codegen.families()
    for family in WAVE_INDEPENDENT:
        found = {m for n in families[family] for m in WAVE_CODE.findall(codegen.body(n))}
        assert not found, f"{family} now has wave-level code {found}: compile it for {ARCHS}"


def test_every_module_compiles_for_gfx90a_and_gfx1030():
    _hip()
    jobs = [(label, arch) for label in _programs() for arch in _archs(label)]
    start = time.perf_counter()
    with ProcessPoolExecutor(os.cpu_count() or 1, mp_context=SPAWN) as pool:
        results = list(pool.map(_compile, jobs))
    wall = time.perf_counter() - start
    cpu = sum(seconds for _, _, seconds, _ in results)
    print(f"\nhiprtc matrix: {len(jobs)} programs, {wall:.0f} s wall, {cpu:.0f} s in compilers")
    failures = [f"{family} for {arch}:\n{error}" for family, arch, _, error in results if error]
    assert not failures, "\n\n".join(failures)


def _cache_round_trip(cache: str) -> list:
    """compile_module twice for one target and once for another; the cache files after each."""
    os.environ["EMBER_ROCM_CACHE"] = cache
    library = hip.load_hip()
    source = codegen.source("linalg", "hip")
    first = compiler.compile_module(library, source, "gfx90a")
    counts = [len(os.listdir(cache))]
    again = compiler.compile_module(library, source, "gfx90a")
    compiler.compile_module(library, source, "gfx1030")
    counts.append(len(os.listdir(cache)))
    return [first[:4] == b"\x7fELF" or first.startswith(b"__CLANG_OFFLOAD_BUNDLE__"),
            again == first, *counts]  # fmt: skip


def test_runtime_compile_path_caches(tmp_path):
    """compile_module (what HipRuntime calls at first use) builds a code object once, then reads
    it from the cache; the key covers source, options, target and the hiprtc version."""
    _hip()
    assert _in_fresh_process(_cache_round_trip, str(tmp_path)) == [True, True, 1, 2]


def _compile_error(cache: str) -> str:
    os.environ["EMBER_ROCM_CACHE"] = cache
    source = prelude("hip") + "EM_KERNEL k() { undefined_thing(); }"
    try:
        compiler.compile_module(hip.load_hip(), source, "gfx90a")
    except compiler.CompileError as exc:
        return str(exc)
    return "no error"


def test_compile_error_carries_the_log(tmp_path):
    _hip()
    assert "undefined_thing" in _in_fresh_process(_compile_error, str(tmp_path))


def _compile_after_pocl() -> str:
    import pyopencl as cl

    try:
        cl.create_some_context(interactive=False)
    except Exception as exc:  # no OpenCL platform: nothing loads a second clang
        return f"skip: no OpenCL platform ({exc})"
    if not compiler._clang_loaded():
        return "skip: this OpenCL runtime does not map libclang-cpp"
    binary = compiler.compile_module(hip.load_hip(), codegen.source("linalg", "hip"), "gfx90a",
                                     use_cache=False)  # fmt: skip
    return "ok" if binary[:4] == b"\x7fELF" or b"CLANG_OFFLOAD" in binary[:32] else "bad binary"


def test_compiles_in_a_process_that_loaded_pocl():
    """With PoCL's libclang-cpp loaded (the xpu backend in use), compile_module hands the work to
    its spawned helper instead of loading comgr's clang beside it, which would abort."""
    _hip()
    pytest.importorskip("pyopencl")
    outcome = _in_fresh_process(_compile_after_pocl)
    if outcome.startswith("skip: "):
        pytest.skip(outcome[6:])
    assert outcome == "ok"
