"""Fixtures of the mixed-precision tests."""

from __future__ import annotations

from ..backend_cuda.conftest import emulated_cuda  # noqa: F401 - a fixture, used by name
