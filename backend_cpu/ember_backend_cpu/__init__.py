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


# How the two thread pools wait between ops. A training step is a stream of parallel regions a
# few microseconds apart. OpenMP workers that sleep as soon as a region ends (a passive wait) cost a
# futex wake-up per region: 35 us on the 2-core CI machine, against a 15 us single-threaded
# multiply of 131072 floats, so every op got slower with threads. Workers that spin forever steal
# the cores of everything else on a shared or oversubscribed machine. A bounded spin (libgomp's
# GOMP_SPINCOUNT, about 10-50 us) is both: back-to-back ops find the workers awake (that multiply
# takes 8 us on two threads, PyTorch's time), an idle process sleeps. OpenBLAS starts with one
# thread: its worker started at load time stalled one GEMM in eight by a scheduler tick (4 ms);
# ember_blas_follow_threads gives it ember's count on first use. libgomp and OpenBLAS read these
# when they load, so they are set just before; a user's choice wins.
THREAD_DEFAULTS = {"GOMP_SPINCOUNT": "30000", "OPENBLAS_NUM_THREADS": "1"}


def _thread_environment() -> None:
    import os

    user_chose_wait = "OMP_WAIT_POLICY" in os.environ
    for key, value in THREAD_DEFAULTS.items():
        if key == "GOMP_SPINCOUNT" and user_chose_wait:
            continue
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
