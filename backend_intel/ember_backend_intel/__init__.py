"""ember's ``xpu`` backend plugin (entry point ``intel`` in ``ember.backends``): OpenCL kernels
through pyopencl, GEMM through CLBlast.

Registration is cheap (``ember_backend_info``); pyopencl, the OpenCL runtime and CLBlast are
touched only in ``ember_backend_load``, the first time ``xpu`` is used. Which OpenCL platforms
count as ``xpu`` is ``platforms`` of this plugin's table in ``plugins.toml`` (see platforms.py).
This package never imports ember: it returns plain data, and its kernels read the documented
tensor attributes.
"""

from __future__ import annotations

import pluggy

__version__ = "0.1.0"
hookimpl = pluggy.HookimplMarker("ember")
_RUNTIMES: dict = {}  # device type -> the runtime ember_backend_load made (fused kernels use it)


@hookimpl
def ember_backend_info():
    return {
        "name": "intel",
        "device_types": ["xpu"],
        "priority": 50,
        "version": __version__,
        "description": "OpenCL kernels through pyopencl (Intel GPUs, PoCL); GEMM through CLBlast",
    }


@hookimpl
def ember_backend_load(device_type, config):
    from .kernels import build_table
    from .platforms import find_devices, import_pyopencl
    from .runtime import OpenCLRuntime

    runtime = OpenCLRuntime(import_pyopencl(), find_devices(config))
    _RUNTIMES[device_type] = runtime
    return {"runtime": runtime, "kernels": build_table(runtime)}


@hookimpl
def ember_fused_kernel(device_type, description):
    """A fused chain as one OpenCL kernel (fused.py), or None: it then runs op by op."""
    runtime = _RUNTIMES.get(device_type)
    if runtime is None:
        return None
    from .fused import kernel

    return kernel(runtime, description)
