"""Sample generator for dispatcher/optable/surface_unique.py: repeated values (small integers;
whole floats with both zeros), every combination of the outputs asked for, 0-d, empty and
non-contiguous inputs. NaN (each one a value of its own) is tested against PyTorch in
tests/backend_cpu/test_surface_kernels.py: PyTorch's unstable sort orders the NaNs' inverse
entries arbitrarily."""

from __future__ import annotations

import numpy as np

from .sampling import Arr, Sample, values

C, T, N = "contiguous", "transposed", "negative"


def unique(op, dtype, device, rng):
    cases = (((3, 4), C), ((4, 5), T), ((2, 3, 4), N), ((), C), ((0,), C), ((7,), C))
    for i, (shape, layout) in enumerate(cases):
        v = values(dtype, shape, rng, low=-3, high=3, zeros=0.2)
        if dtype.is_floating_point:
            v = np.round(v.astype(np.float32)).astype(dtype.np)
            v.reshape(-1)[1::5] = -0.0
        yield Sample((Arr(v, layout), True, i % 2 == 0, i % 3 != 1))


GENERATORS = {"unique": unique}
