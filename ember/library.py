"""Third-party ops (``ember.library``): filled in by the plugin-ops issue; loading is a no-op."""

from __future__ import annotations

REGISTERED: dict = {}  # qualified op name -> provider


def load_op_libraries() -> None:
    """Register the ops of installed ``ember.ops`` plugins (none handled yet)."""
