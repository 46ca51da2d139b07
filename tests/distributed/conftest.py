"""Fixtures of the ember.distributed tests: a clean distributed state around each in-process
test, with the collective backends given in memory."""

from __future__ import annotations

import pytest

from ember.distributed import _world
from ember.distributed._registry import Registry


@pytest.fixture
def backends():
    """Install ``{name: plugin}`` as the only collective backends; undone after the test."""
    saved = _world.STATE.registry, _world.STATE.world

    def install(plugins: dict):
        _world.STATE.registry = Registry(plugins)
        return _world.STATE.registry

    yield install
    if _world.STATE.world is not None:
        _world.destroy_process_group()
    _world.STATE.registry, _world.STATE.world = saved
    _world.GroupMember.WORLD = None
