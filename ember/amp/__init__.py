"""Automatic mixed precision: ``autocast`` regions and the ``GradScaler``, as ``torch.amp``.

``autocast`` is a dispatch layer (``ember.dispatcher.autocast``) driven by a per-op policy table
(``ember.dispatcher.optable.autocast_policy``); ``GradScaler`` unscales gradients with one fused
op per device and dtype.
"""

from . import _deprecated
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]
