"""ember's ROCm backend plugin (entry point ``rocm`` in ``ember.backends``): the ``cuda`` device on
AMD GPUs, as PyTorch's ROCm build serves it.

Registration is cheap (``ember_backend_info``); ``libamdhip64`` (the HIP runtime, which also
exports hiprtc) and rocBLAS are opened through cffi only in ``ember_backend_load``, so this package
imports on machines without ROCm. When the CUDA plugin is installed too, ``plugins.toml``'s
priorities decide which one serves ``cuda``: the first that initialises, highest first (cuda 100,
rocm 90), so on an AMD machine the CUDA plugin fails to find its driver and this one serves.
The kernels and the driver-independent runtime are ``ember_backend_gpu``'s, shared with CUDA;
``runtime.HipRuntime`` only supplies the driver hooks. This package never imports ember.
"""

from __future__ import annotations

import pluggy

__version__ = "0.1.0"
hookimpl = pluggy.HookimplMarker("ember")
_RUNTIMES: dict = {}  # device type -> the runtime ember_backend_load made (fused kernels use it)


@hookimpl
def ember_backend_info():
    return {
        "name": "rocm",
        "device_types": ["cuda"],
        "priority": 90,
        "version": __version__,
        "description": "AMD GPUs through HIP: the CUDA backend's kernels compiled by hiprtc; "
        "GEMM by rocBLAS",
    }


@hookimpl
def ember_backend_load(device_type):
    from ember_backend_gpu.kernels import build_table

    from .hip import load_hip
    from .runtime import HipRuntime

    runtime = HipRuntime(load_hip())
    _RUNTIMES[device_type] = runtime
    return {"runtime": runtime, "kernels": build_table(runtime)}


@hookimpl
def ember_fused_kernel(device_type, description):
    """A fused chain as one generated kernel (ember_backend_gpu.fused), or None: it then runs
    op by op."""
    from ember_backend_gpu.fused import hook

    return hook(_RUNTIMES, device_type, description)
