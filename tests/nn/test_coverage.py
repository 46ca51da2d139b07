"""Every torch.nn Module class and nn.functional function has an ember counterpart, unless
coverage.EXCLUDED says why not (and then it really is absent)."""

from __future__ import annotations

import pytest

import ember

from . import coverage

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "names, namespace",
    [(coverage.torch_classes, ember.nn), (coverage.torch_functions, ember.nn.functional)],
    ids=["classes", "functions"],
)
def test_every_torch_nn_name_is_there(names, namespace):
    absent = coverage.missing(names(), namespace)
    assert not [n for n in absent if n not in coverage.EXCLUDED], "missing from ember.nn"
    assert not [n for n in coverage.EXCLUDED if hasattr(namespace, n)], "excluded but present"


def test_classes_are_modules():
    for name in coverage.torch_classes():
        assert issubclass(getattr(ember.nn, name), ember.nn.Module), name
