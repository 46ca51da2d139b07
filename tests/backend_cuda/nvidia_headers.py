"""Where NVIDIA's headers are on this machine, for the tests that check ember's cffi declarations
against them (test_fft_abi.py, test_library_headers.py): the toolkit beside nvcc, each library's
wheel or toolkit folder (its lib/ or lib64/ sits beside its include/), and /usr/local/cuda*."""

from __future__ import annotations

import glob
import os

from ember_backend_cuda import compiler

RUNTIME_HEADER = os.path.join("crt", "host_defines.h")  # the toolkit's, not in every wheel


def include_dirs(header: str, *libraries) -> list[str] | None:
    """The folders to pass with ``-I``: the first holding ``header``, then the first holding the
    CUDA runtime's headers, which ``header`` includes (a wheel's include/ may lack them); None
    when ``header`` is nowhere. ``libraries``: binding modules with ``library_candidates()``."""
    nvcc = compiler.find_nvcc()
    roots = [os.path.join(os.path.dirname(os.path.realpath(nvcc)), "..", "include")] if nvcc else []
    roots += [os.path.join(os.path.dirname(os.path.dirname(path)), "include")
              for library in libraries for path in library.library_candidates()]  # fmt: skip
    roots += sorted(glob.glob("/usr/local/cuda*/include"))
    holding = [root for root in roots if os.path.isfile(os.path.join(root, header))]
    runtime = [root for root in roots if os.path.isfile(os.path.join(root, RUNTIME_HEADER))]
    if not holding:
        return None
    return list(dict.fromkeys(holding[:1] + runtime[:1]))
