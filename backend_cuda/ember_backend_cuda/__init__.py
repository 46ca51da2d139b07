"""ember's CUDA backend plugin (entry point ``cuda`` in ``ember.backends``): the ``cuda`` device.

Registration is cheap (``ember_backend_info``); pycuda, the driver and cuBLAS are loaded only in
``ember_backend_load``, so this package imports on machines without them. The kernels, their glue
and the driver-independent runtime are the ``ember_backend_gpu`` package, shared with ROCm.
This package never imports ember: it returns plain data.

``EMBER_CUDA_EMULATOR=1`` serves ``cuda`` with a CPU emulator of the same kernels instead
(ember_backend_gpu/emulator.py): slow, for testing on machines without a GPU.
``EMBER_CUDA_EMULATOR=driver`` runs this plugin's own runtime over an emulated pycuda that
counts driver calls (ember_backend_gpu/emulated_pycuda.py).
"""

from __future__ import annotations

import os
import warnings

import pluggy

__version__ = "0.1.0"
hookimpl = pluggy.HookimplMarker("ember")
_RUNTIMES: dict = {}  # device type -> the runtime ember_backend_load made (fused kernels use it)


@hookimpl
def ember_backend_info():
    return {
        "name": "cuda",
        "device_types": ["cuda"],
        "priority": 100,
        "version": __version__,
        "description": "CUDA kernels compiled at first use (nvcc, through pycuda); GEMM by cuBLAS",
    }


def load_driver():
    """pycuda's driver module, or an error that says what is missing."""
    try:
        with warnings.catch_warnings():  # pycuda warns before failing; the error says it all
            warnings.simplefilter("ignore")
            import pycuda.driver as driver
    except ImportError as exc:
        # Without a driver, pycuda fails to find libcuda, or finds the toolkit's stub of it
        # (symbols such as cuArrayCreate_v2 undefined).
        if "libcuda" in str(exc) or "undefined symbol: cu" in str(exc):
            raise RuntimeError(
                f"no NVIDIA GPU driver on this machine (pycuda could not load libcuda: {exc})"
            ) from exc
        raise RuntimeError(
            f"pycuda is not importable ({exc}); install it with `pip install pycuda` on a "
            "machine with the CUDA toolkit"
        ) from exc
    return driver


@hookimpl
def ember_backend_load(device_type):
    from ember_backend_gpu.kernels import build_table

    emulated = os.environ.get("EMBER_CUDA_EMULATOR", "")
    if emulated == "driver":  # this plugin's CudaRuntime over an emulated, counting pycuda
        from ember_backend_gpu import emulated_pycuda

        from .runtime import CudaRuntime

        runtime = _RUNTIMES[device_type] = CudaRuntime(
            emulated_pycuda, emulated_pycuda.compile_module
        )
        return {"runtime": runtime, "kernels": build_table(runtime)}
    if emulated not in ("", "0"):
        from ember_backend_gpu.emulator import EmulatedRuntime

        runtime = _RUNTIMES[device_type] = EmulatedRuntime()
        return {"runtime": runtime, "kernels": build_table(runtime)}
    from .runtime import CudaRuntime

    driver = load_driver()
    try:
        runtime = CudaRuntime(driver)
    except driver.Error as exc:
        raise RuntimeError(f"CUDA initialisation failed: {exc}") from exc
    _RUNTIMES[device_type] = runtime
    return {"runtime": runtime, "kernels": build_table(runtime)}


@hookimpl
def ember_fused_kernel(device_type, description):
    """A fused chain as one generated kernel (ember_backend_gpu.fused), or None: it then runs
    op by op."""
    from ember_backend_gpu.fused import hook

    return hook(_RUNTIMES, device_type, description)
