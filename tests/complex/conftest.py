"""Fixtures shared by the complex tests."""

from __future__ import annotations

import pytest

from ember.dispatcher import mathbits


@pytest.fixture
def materialized(monkeypatch):
    """How many operands the math-bits layer materializes (conj_physical/neg of the storage)."""
    count = [0]
    apply_bits = mathbits._apply_bits

    def counting(value, source):
        count[0] += 1
        return apply_bits(value, source)

    monkeypatch.setattr(mathbits, "_apply_bits", counting)
    return count
