"""``DataLoader(pin_memory=True)``: batches copied to page-locked memory, as PyTorch does, when an
accelerator that pins is there; otherwise PyTorch's warning, once per iterator, and no pinning."""

from __future__ import annotations

import collections.abc
import warnings

from ..._pinned import pinning_runtime
from ..._tensor import Tensor
from ._collate import _rebuild_mapping, _rebuild_sequence

NO_ACCELERATOR = (
    "'pin_memory' argument is set as true but no accelerator is found, then device pinned "
    "memory won't be used."
)


def pin_device(loader):
    """The device to pin for (the loader's ``pin_memory_device`` or the current accelerator),
    "" when pinning is asked for but cannot happen (after warning why), None when not asked.
    Called by an iterator's __init__: stacklevel 6 is the user's ``iter()`` or ``for``."""
    if not loader.pin_memory:
        return None
    from ..._accelerator import current_accelerator

    device = loader.pin_memory_device or None
    if device is None and current_accelerator() is None:
        warnings.warn(NO_ACCELERATOR, UserWarning, stacklevel=6)
        return ""
    try:
        pinning_runtime(device)
    except RuntimeError as exc:
        warnings.warn(
            f"'pin_memory' argument is set as true but the accelerator cannot pin host memory "
            f"({exc}), then device pinned memory won't be used.",
            UserWarning,
            stacklevel=6,
        )
        return ""
    return device or "default"


def pin(data, device):
    """``data`` with every tensor in it pinned, containers rebuilt as PyTorch's pin_memory does
    (a batch type of the user's own pins itself through its ``pin_memory()``)."""
    if isinstance(data, Tensor):
        return data.pin_memory(None if device == "default" else device)
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: pin(data[key], device) for key in data})
    if isinstance(data, tuple):
        items = (pin(d, device) for d in data)
        return type(data)(*items) if hasattr(data, "_fields") else type(data)(items)
    if isinstance(data, collections.abc.Sequence):
        return _rebuild_sequence(data, [pin(d, device) for d in data])
    return data
