from __future__ import annotations

import plugin_fakes as fakes
import pytest

from ember import library
from ember.dispatcher import complex_cpu, registry
from ember.dispatcher.devices import REGISTRY


@pytest.fixture
def plugins():
    """``plugins(("name", plugin), ..., policy=...)`` serves devices from in-memory plugins (the
    real CPU plugin included) for one test, and ``op_libraries=[("name", plugin)]`` gives the
    ``ember.ops`` group; ``discover=True`` scans entry points instead (tests patch the scanner).
    The normal registry comes back afterwards."""

    def install(*named, policy=None, discover=False, op_libraries=()):
        extensions = {**fakes.backends(*named), **fakes.op_libraries(*op_libraries)}
        REGISTRY.reset(
            extensions=None if discover else extensions,
            policy=policy or fakes.policy(),
        )
        return REGISTRY

    yield install
    REGISTRY.reset()


@pytest.fixture
def lib(monkeypatch):
    """A fresh ``ember.library`` state and table of extra kernels for one test: ops it defines
    disappear afterwards, and memoised kernels are forgotten on both sides."""
    monkeypatch.setattr(library, "LIBRARY", library.Library())
    monkeypatch.setattr(registry, "EXTRA", registry.ExtraKernels())
    complex_cpu.register()  # ember's own extra CPU kernels (complex, geev) stay in the fresh table
    REGISTRY.reset(extensions=fakes.backends(), policy=fakes.policy())
    yield library
    monkeypatch.undo()
    REGISTRY.reset()
