"""``ember.jit.frontend``: the script compiler's errors under PyTorch's module name
(``torch.jit.frontend.NotSupportedError``); they live in ``jit/script/frontend.py``."""

from __future__ import annotations

from .script.frontend import (
    FrontendError,
    NotSupportedError,
    ScriptError,
    UnsupportedNodeError,
)

__all__ = ["FrontendError", "NotSupportedError", "ScriptError", "UnsupportedNodeError"]
