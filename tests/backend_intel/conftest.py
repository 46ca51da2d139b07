"""Fixtures for the xpu (OpenCL) backend tests.

Every test here needs a working ``xpu`` device; without one (no pyopencl, no OpenCL runtime, no
platform matching the policy) the module is skipped with the reason, visible with ``-ra``, so a
machine without OpenCL never reports these as passed.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.dispatcher.kinds.view import negative_stride_view

from ..conftest import unavailable_reason

REASON = unavailable_reason("xpu")


def pytest_collection_modifyitems(config, items):
    if REASON is None:
        return
    skip = pytest.mark.skip(reason=REASON)
    for item in items:
        if "backend_intel" in str(item.fspath):
            item.add_marker(skip)


def flipped(t):
    """A view of ``t`` (contiguous) that walks dim 0 backwards: a negative stride (as_strided
    refuses new negative strides, as in PyTorch)."""
    return negative_stride_view(t, (0,))


def _layouts(a: np.ndarray) -> dict:
    """``a``'s values on xpu in several layouts: contiguous, transposed, flipped (negative
    strides), a strided slice of a larger buffer, and broadcast (stride 0) when possible."""
    out = {"contiguous": ember.from_numpy(a.copy()).to("xpu")}
    if a.ndim >= 2:
        swapped = np.ascontiguousarray(a.swapaxes(0, 1))
        out["transposed"] = ember.from_numpy(swapped).to("xpu").transpose(0, 1)
    if a.ndim >= 1:
        out["flipped"] = flipped(ember.from_numpy(np.ascontiguousarray(a[::-1])).to("xpu"))
        wide = np.zeros((2 * a.shape[0] + 1,) + a.shape[1:], a.dtype)
        wide[1::2] = a
        out["sliced"] = ember.from_numpy(wide).to("xpu")[1::2]
        if a.shape[0] > 1 and (a == a[:1]).all():
            out["broadcast"] = ember.from_numpy(a[:1].copy()).to("xpu").expand(*a.shape)
    return out


@pytest.fixture
def layouts():
    """``layouts(array) -> {name: xpu tensor}``: the array's values in several memory layouts."""
    return _layouts
