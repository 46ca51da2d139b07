"""``ember.autograd.profiler``: the legacy profiler names, aliases of ``ember.profiler``'s."""

from __future__ import annotations

from ember.profiler import EventList, profile, record_function

__all__ = ["EventList", "profile", "record_function"]
