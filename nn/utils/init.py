"""skip_init: build a module without initialising its parameters (torch.nn.utils.skip_init)."""

from __future__ import annotations

import inspect

from .. import init
from ..modules.module import Module


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` with its parameters and buffers allocated but not
    initialised (their values are whatever the allocation holds), for a module whose own
    initialisation is about to be overwritten. PyTorch builds it on the meta device and
    allocates with to_empty; ember allocates on ``device`` directly with nn.init's fills
    switched off while the constructor runs (the same result, no meta device needed)."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs["device"] = kwargs.pop("device", "cpu")
    with init.skipping():
        return module_cls(*args, **kwargs)
