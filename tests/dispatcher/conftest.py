from __future__ import annotations

import plugin_fakes as fakes
import pytest

from ember.dispatcher.devices import REGISTRY


@pytest.fixture
def plugins():
    """``plugins(("name", plugin), ..., policy=...)`` serves devices from in-memory plugins (the
    real CPU plugin included) for one test; ``discover=True`` scans entry points instead (tests
    patch the scanner). The normal registry comes back afterwards."""

    def install(*named, policy=None, discover=False):
        REGISTRY.reset(
            extensions=None if discover else fakes.backends(*named),
            policy=policy or fakes.policy(),
        )
        return REGISTRY

    yield install
    REGISTRY.reset()
