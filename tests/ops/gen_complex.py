"""Sample generators for the complex rows (dispatcher/optable/complex.py) that take real tensors:
``view_as_complex`` needs pairs of parts (a last dim of 2, unit stride), and gives complex."""

from __future__ import annotations

import numpy as np

from .sampling import Arr, Sample

SHAPES = ((2,), (3, 2), (2, 4, 2), (0, 2))


def complex_parts(op, dtype, device, rng):
    result = dtype.to_complex() if dtype.is_floating_point and dtype.itemsize >= 4 else None
    for shape in SHAPES:
        values = rng.uniform(-2, 2, shape).astype(dtype.np)
        yield Sample((Arr(values),), dtype=result)


def complex_values(op, dtype, device, rng):
    """Complex tensors for the complex-only rows (real ones, for other dtypes, to be refused)."""
    for shape in ((3,), (2, 3), ()):
        values = rng.uniform(-2, 2, shape)
        if dtype.is_complex:
            values = values + 1j * rng.uniform(-2, 2, shape)
        yield Sample((Arr(np.asarray(values).astype(dtype.np)),))


GENERATORS = {"complex_parts": complex_parts, "complex_values": complex_values}
