"""Where the CUDA math libraries (cuBLAS, cuSOLVER, ...) are found: one search order for all, so
a wheel, a toolkit under $CUDA_HOME and the loader's path are tried the same way for each."""

from __future__ import annotations

import ctypes.util
import glob
import importlib
import os


def _wheel_folders(stem: str) -> list[str]:
    """Where an ``nvidia-<stem>`` wheel puts its library: ``nvidia/<stem>/`` for CUDA 12's wheels;
    CUDA 13's put every library of one CUDA major in ``nvidia/cu13/`` (what PyTorch's cu130
    builds install), the newest major first."""
    try:
        nvidia = importlib.import_module("nvidia")  # a namespace package the wheels share
    except ImportError:
        return []
    folders = []
    for base in nvidia.__path__:
        majors = sorted(glob.glob(os.path.join(base, "cu[0-9]*")), reverse=True)
        folders += [os.path.join(base, stem), *majors]
    return folders


def library_paths(stem: str) -> list[str]:
    """Paths to try for lib<stem>, best first: the ``nvidia-<stem>`` wheel, $CUDA_HOME,
    $CUDA_PATH, /usr/local/cuda, then the loader's search path."""
    found = []
    for folder in _wheel_folders(stem):
        found += sorted(glob.glob(os.path.join(folder, "lib", f"lib{stem}.so*")), reverse=True)
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            found += sorted(glob.glob(os.path.join(root, "lib64", f"lib{stem}.so*")), reverse=True)
    name = ctypes.util.find_library(stem)
    if name:
        found.append(name)
    return found
