"""Where the CUDA math libraries (cuBLAS, cuSOLVER, ...) are found: one search order for all, so
a wheel, a toolkit under $CUDA_HOME and the loader's path are tried the same way for each."""

from __future__ import annotations

import ctypes.util
import glob
import importlib
import os


def library_paths(stem: str) -> list[str]:
    """Paths to try for lib<stem>, best first: the ``nvidia-<stem>`` wheel, $CUDA_HOME,
    $CUDA_PATH, /usr/local/cuda, then the loader's search path."""
    found = []
    try:
        wheel = importlib.import_module(f"nvidia.{stem}")
        for root in wheel.__path__:
            found += sorted(glob.glob(os.path.join(root, "lib", f"lib{stem}.so*")), reverse=True)
    except ImportError:
        pass
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            found += sorted(glob.glob(os.path.join(root, "lib64", f"lib{stem}.so*")), reverse=True)
    name = ctypes.util.find_library(stem)
    if name:
        found.append(name)
    return found
