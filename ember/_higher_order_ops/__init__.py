"""``ember._higher_order_ops``: PyTorch's ``torch._higher_order_ops`` names for structured control
flow (``cond``, ``while_loop``, ``map``); the implementation is ``ember.compiler.control_flow``."""

from __future__ import annotations

from ember.compiler.control_flow import cond, map, while_loop

__all__ = ["cond", "map", "while_loop"]
