"""Compile kernel modules with nvcc, cached on disk by source, options, architecture and nvcc.

No pycuda here: the runtime loads the returned cubin with ``module_from_buffer``, and CI calls the
same function to compile every module without a GPU. The cache (ember_backend_gpu.diskcache) lives
in ``$EMBER_CUDA_CACHE``, else ``$XDG_CACHE_HOME/ember/cuda``, else ``~/.cache/ember/cuda``.

Options: ``-fmad=false`` keeps ``a * b + c`` two roundings, as the CPU backend compiles with
``-ffp-contract=off`` (the Philox transforms depend on it to match bit for bit); no fast math.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ember_backend_gpu.diskcache import CompileError, cache_dir, cache_key, store

__all__ = ["OPTIONS", "CompileError", "cache_dir", "cache_key", "compile_module", "find_nvcc"]

OPTIONS = ("-fmad=false", "-std=c++17")


def find_nvcc() -> str | None:
    """nvcc from $CUDA_HOME/$CUDA_PATH, the PATH, or /usr/local/cuda (None when absent)."""
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if root and os.path.isfile(os.path.join(root, "bin", "nvcc")):
            return os.path.join(root, "bin", "nvcc")
    found = shutil.which("nvcc")
    if found:
        return found
    default = "/usr/local/cuda/bin/nvcc"
    return default if os.path.isfile(default) else None


@functools.cache
def nvcc_version(nvcc: str) -> str:
    result = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False)
    return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "unknown"


def arch_flags(archs: tuple) -> list[str]:
    """``-gencode`` flags for real architectures such as ``("sm_80", "sm_90")``."""
    flags = []
    for arch in archs:
        number = arch.removeprefix("sm_")
        flags += ["-gencode", f"arch=compute_{number},code=sm_{number}"]
    return flags


def compile_module(
    source: str, archs: tuple | str, options: tuple = OPTIONS, use_cache: bool = True
) -> bytes:
    """Compile ``source`` for ``archs`` ("sm_90" or several) into a cubin (one arch) or fatbin.

    Raises:
        CompileError: nvcc is missing or rejected the source (its diagnostics in the message).
    """
    archs = (archs,) if isinstance(archs, str) else tuple(archs)
    nvcc = find_nvcc()
    if nvcc is None:
        raise CompileError(
            "nvcc not found: ember's CUDA kernels are compiled at first use by the CUDA "
            "toolkit's nvcc (set CUDA_HOME or put nvcc on the PATH)"
        )
    key = cache_key(source, archs, options, nvcc_version(nvcc))
    path = cache_dir() / f"{key}.bin"
    if use_cache and path.is_file():
        return path.read_bytes()
    kind = "-cubin" if len(archs) == 1 else "-fatbin"
    with tempfile.TemporaryDirectory(prefix="ember-nvcc-") as tmp:
        src, out = Path(tmp) / "module.cu", Path(tmp) / "module.bin"
        src.write_text(source)
        command = [nvcc, kind, *arch_flags(archs), *options, "-o", str(out), str(src)]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise CompileError(
                f"nvcc failed ({' '.join(command)}):\n{result.stderr.strip() or result.stdout}"
            )
        binary = out.read_bytes()
    if use_cache:
        store(path, binary)
    return binary
