"""The on-disk cache of compiled kernel modules, shared by nvcc (CUDA), hiprtc (ROCm) and the
emulator's host builds.

One directory per compiler family: ``$EMBER_<KIND>_CACHE`` (``EMBER_CUDA_CACHE``,
``EMBER_ROCM_CACHE``), else ``$XDG_CACHE_HOME/ember/<kind>``, else ``~/.cache/ember/<kind>``.
Entries are named by a hash of everything that changes the binary (source, architectures,
options, compiler version) and written to a temporary name then renamed, so concurrent
processes (pytest-xdist workers) never read half a file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


class CompileError(RuntimeError):
    """A compiler rejected a kernel module (or is missing); the message holds its diagnostics."""


def cache_dir(kind: str = "cuda") -> Path:
    explicit = os.environ.get(f"EMBER_{kind.upper()}_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ember" / kind


def cache_key(source: str, archs: tuple, options: tuple, version: str) -> str:
    digest = hashlib.sha256()
    for part in (source, " ".join(archs), " ".join(options), version):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def store(path: Path, binary: bytes) -> None:
    """Write ``binary`` at ``path`` atomically; an unwritable cache only costs a recompile."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as handle:
            handle.write(binary)
        os.replace(tmp, path)
    except OSError:
        pass
