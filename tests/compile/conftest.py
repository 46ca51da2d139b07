"""Fixtures of the compiler tests."""

from __future__ import annotations

import pytest

from ember.compiler import config


@pytest.fixture
def limit():
    """Restores ``config.recompile_limit`` after a test that changes it."""
    saved = config.recompile_limit
    yield
    config.recompile_limit = saved
