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


# OpenMP workers that spin while waiting for work steal the cores of everything else: on a shared
# or oversubscribed machine (or next to OpenBLAS's own threads and DataLoader workers) an op then
# waits milliseconds for a descheduled worker. Sleeping waiters cost a wake-up of a few
# microseconds per parallel region instead, and only ops above the parallel threshold use one.
# libgomp reads this when the kernels load, so it is set just before; a user's choice wins.
THREAD_DEFAULTS = {"OMP_WAIT_POLICY": "passive"}


def _thread_environment() -> None:
    import os

    if "GOMP_SPINCOUNT" in os.environ:
        return
    for key, value in THREAD_DEFAULTS.items():
        os.environ.setdefault(key, value)


@hookimpl
def ember_backend_load(device_type):
    _thread_environment()
    from . import _kernels
    from .kernels import build_table
    from .runtime import CpuRuntime, default_threads

    runtime = CpuRuntime(_kernels.ffi, _kernels.lib)
    threads = default_threads()
    if threads:
        runtime.set_num_threads(threads)
    return {"runtime": runtime, "kernels": build_table(_kernels.ffi, _kernels.lib)}


@hookimpl
def ember_fused_kernel(device_type, description):
    """A fused elementwise kernel generated as C (fused.py), or None where it cannot be built."""
    if device_type != "cpu":
        return None
    from .fused import kernel

    return kernel(description)
