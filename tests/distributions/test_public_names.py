"""Every public name of torch.distributions, and its per-family modules, exists in ember's."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

torch_distributions = pytest.importorskip("torch.distributions")

import ember.distributions  # noqa: E402

TORCH_MODULES = sorted(
    info.name for info in pkgutil.iter_modules(torch_distributions.__path__) if info.name[0] != "_"
)


def test_every_top_level_name_exists():
    missing = set(torch_distributions.__all__) - set(dir(ember.distributions))
    assert not missing


@pytest.mark.parametrize("name", TORCH_MODULES)
def test_every_family_module_can_be_imported(name):
    theirs = importlib.import_module(f"torch.distributions.{name}")
    ours = importlib.import_module(f"ember.distributions.{name}")
    exported = [n for n in getattr(theirs, "__all__", []) if not n.startswith("_")]
    assert [n for n in exported if not hasattr(ours, n)] == []
