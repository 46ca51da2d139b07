"""A minimal ember backend plugin: the device type ``ref``, memory and kernels in numpy.

Found through the entry point ``ref`` in the group ``ember.backends`` (see pyproject.toml), the
way ember's own backends are. It implements the two hooks of ``ember.dispatcher.hookspecs``,
never imports ember, and provides few kernels: ``copy_`` and ``fill_`` (which every device
needs) plus a table of elementwise ops. Every other op runs its decomposition or, as
``plugins.toml`` allows by default, the CPU kernel with copies in and out;
``python -m ember.plugins`` lists which.
"""

from __future__ import annotations

import pluggy

__version__ = "0.1.0"
hookimpl = pluggy.HookimplMarker("ember")


@hookimpl
def ember_backend_info():
    # Cheap on purpose: no memory, no kernels until the device is first used.
    return {
        "name": "ref",
        "device_types": ["ref"],
        "priority": 0,
        "version": __version__,
        "description": "numpy reference device: a template for backend plugins",
    }


@hookimpl
def ember_backend_load(device_type):
    from .kernels import KERNELS
    from .runtime import RefRuntime

    return {"runtime": RefRuntime(), "kernels": KERNELS}
