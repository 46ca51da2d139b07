"""ember's CPU backend plugin (entry point ``cpu`` in ``ember.backends``).

Registration is cheap (``ember_backend_info``); the compiled kernels and OpenBLAS are loaded only
in ``ember_backend_load``. This package never imports ember: it returns plain data, and its
kernels read the documented tensor attributes (see ember's docs/plugins.md).
"""

from __future__ import annotations

import pluggy

__version__ = "0.1.0"
hookimpl = pluggy.HookimplMarker("ember")


@hookimpl
def ember_backend_info():
    return {
        "name": "cpu",
        "device_types": ["cpu"],
        "priority": 0,
        "version": __version__,
        "description": "C kernels (cffi, OpenMP, AVX2 clones); GEMM through OpenBLAS",
    }


@hookimpl
def ember_backend_load(device_type):
    from . import _kernels
    from .kernels import build_table
    from .runtime import CpuRuntime, default_threads

    runtime = CpuRuntime(_kernels.ffi, _kernels.lib)
    threads = default_threads()
    if threads:
        runtime.set_num_threads(threads)
    return {"runtime": runtime, "kernels": build_table(_kernels.ffi, _kernels.lib)}
