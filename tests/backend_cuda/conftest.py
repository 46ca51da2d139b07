"""Fixtures of the CUDA backend tests."""

from __future__ import annotations

import pytest

from ember.dispatcher.devices import REGISTRY


@pytest.fixture(scope="module")
def emulated_cuda():
    """Serve ``cuda`` with the CPU emulator (ember_backend_gpu/emulator.py) for one module."""
    patch = pytest.MonkeyPatch()
    patch.setenv("EMBER_CUDA_EMULATOR", "1")
    REGISTRY.reset()
    yield
    patch.undo()
    REGISTRY.reset()
