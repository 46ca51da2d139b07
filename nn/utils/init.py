"""skip_init: build a module without initialising its parameters (torch.nn.utils.skip_init)."""

from __future__ import annotations

import inspect

from ..modules.module import Module


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` with its parameters and buffers allocated on ``device``
    but not initialised (their values are whatever the allocation holds), for a module whose
    own initialisation is about to be overwritten: built on the meta device (no memory, no
    work), then given memory with ``to_empty``, as PyTorch does."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
