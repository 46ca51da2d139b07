"""Sample generators for the complex rows (dispatcher/optable/complex.py) that take real tensors:
``view_as_complex`` needs pairs of parts (a last dim of 2, unit stride), and gives complex."""

from __future__ import annotations

import numpy as np

import ember

from .gen_elementwise import BINARY_CASES
from .sampling import Arr, Sample, arr

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


def complex_pair(op, dtype, device, rng):
    """complex(real, imag) and polar(abs, angle): two parts of one float dtype, broadcast."""
    result = dtype.to_complex() if dtype in (ember.float32, ember.float64) else None
    for case in BINARY_CASES:
        parts = (arr(dtype, shape, rng, layout) for shape, layout in case)
        yield Sample(tuple(parts), dtype=result)


def eig(op, dtype, device, rng):
    """linalg.eig: upper triangular matrices with well-separated diagonals, whose eigenvalues
    (the diagonal) and eigenvectors come out of geev the same in single and double precision
    (a general matrix's eigenvectors are defined up to a phase each: tests/ops/opinfo compares
    those with PyTorch's, aligning phases)."""
    result = dtype.to_complex() if dtype in (ember.float32, ember.float64) else None
    for shape in ((3, 3), (2, 4, 4), (0, 0)):
        n = shape[-1]
        values = np.triu(rng.uniform(-1, 1, shape)) * 0.5
        values = values + np.eye(n) * np.arange(1, n + 1) if n else values
        yield Sample((Arr(values.astype(dtype.np)),), dtype=result)


GENERATORS = {
    "complex_parts": complex_parts,
    "complex_values": complex_values,
    "complex_pair": complex_pair,
    "eig": eig,
}
