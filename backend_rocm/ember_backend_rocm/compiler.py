"""Compile kernel modules with hiprtc for an AMD GPU architecture, cached on disk like CUDA's.

The sources are the CUDA backend's (``ember_backend_gpu.codegen.source(name, "hip")``): hiprtc
accepts CUDA syntax, and the prelude's "hip" lines supply the warp width, shuffles and float16
conversions. hiprtc compiles without a device, so CI builds every module for gfx90a and gfx1030
with this function. The cache (ember_backend_gpu.diskcache) lives in ``$EMBER_ROCM_CACHE``, else
``$XDG_CACHE_HOME/ember/rocm``, else ``~/.cache/ember/rocm``, keyed by source, options, target
and the hiprtc/HIP versions.

hiprtc brings its own clang (statically inside libamd_comgr); a process that already has
libclang-cpp mapped (PoCL, the OpenCL runtime the xpu backend uses, loads it) aborts with
"Option ... registered more than once" when comgr loads. There the compilation runs in a spawned
helper process, which has only hiprtc's copy; the cache makes that a first-use cost.

Options: ``-ffp-contract=off`` keeps ``a * b + c`` two roundings, as nvcc's ``-fmad=false`` and
the CPU backend's build do (the Philox transforms depend on it to match bit for bit).
"""

from __future__ import annotations

import multiprocessing
import threading
from concurrent.futures import ProcessPoolExecutor

from ember_backend_gpu.diskcache import CompileError, cache_dir, cache_key, store

__all__ = ["OPTIONS", "CompileError", "compile_module"]

OPTIONS = ("-O3", "-ffp-contract=off", "-std=c++17")
_LOCK = threading.Lock()  # hiprtc programs are compiled one at a time per process


def _clang_loaded() -> bool:
    """Whether another clang is mapped into this process (see the module docstring)."""
    try:
        with open("/proc/self/maps") as maps:
            return any("libclang-cpp" in line for line in maps)
    except OSError:
        return False


def _compile_in_helper(source: str, arch: str, options: tuple) -> bytes:
    """Run in the spawned helper: a fresh interpreter with hiprtc's clang only."""
    from . import hip

    return compile_module(hip.load_hip(), source, arch, options, use_cache=False)


def _hiprtc_version(hip) -> str:
    major, minor = hip.ffi.new("int *"), hip.ffi.new("int *")
    hip.lib.hiprtcVersion(major, minor)
    return f"hiprtc {major[0]}.{minor[0]}, HIP {hip.version()}"


def _check(hip, status: int, what: str) -> None:
    if status:
        message = hip.ffi.string(hip.lib.hiprtcGetErrorString(status)).decode()
        raise CompileError(f"{what} failed: {message} ({status})")


def _log(hip, program) -> str:
    size = hip.ffi.new("size_t *")
    hip.lib.hiprtcGetProgramLogSize(program, size)
    text = hip.ffi.new("char[]", size[0] + 1)
    hip.lib.hiprtcGetProgramLog(program, text)
    return hip.ffi.string(text).decode(errors="replace").strip()


def compile_module(
    hip, source: str, arch: str, options: tuple = OPTIONS, use_cache: bool = True
) -> bytes:
    """Compile ``source`` for ``arch`` (a target ID such as "gfx90a" or "gfx90a:sramecc+:xnack-")
    into a code object that ``hipModuleLoadData`` loads.

    Raises:
        CompileError: hiprtc rejected the source (its log in the message).
    """
    key = cache_key(source, (arch,), options, _hiprtc_version(hip))
    path = cache_dir("rocm") / f"{key}.hsaco"
    if use_cache and path.is_file():
        return path.read_bytes()
    if _clang_loaded():
        # A helper per compilation, shut down at once: one kept for later calls was left
        # running at interpreter exit, where multiprocessing's exit hook waited on it forever.
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as helper:
            binary = helper.submit(_compile_in_helper, source, arch, options).result()
        if use_cache:
            store(path, binary)
        return binary
    ffi, lib = hip.ffi, hip.lib
    flags = [ffi.new("char[]", flag.encode()) for flag in (f"--offload-arch={arch}", *options)]
    box = ffi.new("hiprtcProgram *")
    with _LOCK:
        _check(hip, lib.hiprtcCreateProgram(box, source.encode(), b"ember.hip", 0, ffi.NULL,
                                            ffi.NULL), "hiprtcCreateProgram")  # fmt: skip
        try:
            status = lib.hiprtcCompileProgram(box[0], len(flags), ffi.new("char *[]", flags))
            if status:
                raise CompileError(
                    f"hiprtc failed for {arch} ({' '.join(options)}):\n{_log(hip, box[0])}"
                )
            size = ffi.new("size_t *")
            _check(hip, lib.hiprtcGetCodeSize(box[0], size), "hiprtcGetCodeSize")
            code = ffi.new("char[]", size[0])
            _check(hip, lib.hiprtcGetCode(box[0], code), "hiprtcGetCode")
            binary = ffi.buffer(code, size[0])[:]
        finally:
            lib.hiprtcDestroyProgram(box)
    if use_cache:
        store(path, binary)
    return binary
