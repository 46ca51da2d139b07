"""Which OpenCL devices serve ``xpu``: the platform policy and device discovery.

The policy is a list of substrings of OpenCL platform names. It comes from, first found wins:

1. ``EMBER_INTEL_PLATFORMS`` in the environment (comma separated), to override it for one run;
2. ``platforms`` in the plugin's table of ``plugins.toml`` (``[backends.intel]``), which ember hands
   to ``ember_backend_load`` as ``config`` (the plugin never imports ember);
3. ``DEFAULT_PLATFORMS``, the list the shipped ``plugins.toml`` holds, when the plugin is loaded
   without ember's policy (for example by its own tests).

Every device of a matching platform counts; GPUs come first, so an Intel GPU is ``xpu:0`` on a
machine that also has PoCL's CPU device.
"""

from __future__ import annotations

import os

ENV = "EMBER_INTEL_PLATFORMS"
DEFAULT_PLATFORMS = ("Intel(R) OpenCL", "Intel(R) OpenCL Graphics", "Portable Computing Language")


def platform_patterns(config: dict | None) -> tuple[list[str], str]:
    """The platform-name substrings to accept, and where they came from (for messages)."""
    from_env = os.environ.get(ENV, "").strip()
    if from_env:
        return [p.strip() for p in from_env.split(",") if p.strip()], f"{ENV}={from_env}"
    if config and config.get("platforms"):
        return [str(p) for p in config["platforms"]], "plugins.toml [backends.intel] platforms"
    return list(DEFAULT_PLATFORMS), "the plugin's default platforms"


def import_pyopencl():
    try:
        import pyopencl
    except ImportError as exc:
        # from None: ember reports the innermost exception of a chain, and this one says more.
        raise RuntimeError(
            f"pyopencl is not installed ({exc}); install it with pip install pyopencl"
        ) from None
    return pyopencl


def find_devices(config: dict | None = None) -> list:
    """The OpenCL devices that serve ``xpu``, GPUs first; raises RuntimeError saying why none."""
    cl = import_pyopencl()
    patterns, source = platform_patterns(config)
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:
        raise RuntimeError(
            f"no OpenCL runtime found ({exc}). Install one: Intel GPUs need Intel's compute "
            "runtime (apt install intel-opencl-icd); any CPU can use PoCL (apt install "
            "pocl-opencl-icd)"
        ) from None
    chosen = [p for p in platforms if any(pattern in p.name for pattern in patterns)]
    if not chosen:
        found = ", ".join(repr(p.name) for p in platforms) or "none"
        raise RuntimeError(
            f"no OpenCL platform matches {patterns} ({source}); platforms found: {found}. "
            f"List the one to use in {ENV} or in plugins.toml [backends.intel] platforms"
        )
    devices = []
    for platform in chosen:
        try:
            devices.extend(platform.get_devices())
        except cl.Error:  # a platform with no devices raises DEVICE_NOT_FOUND
            continue
    if not devices:
        names = ", ".join(repr(p.name) for p in chosen)
        raise RuntimeError(f"the OpenCL platforms {names} ({source}) have no devices")
    return sorted(devices, key=lambda d: not d.type & cl.device_type.GPU)
