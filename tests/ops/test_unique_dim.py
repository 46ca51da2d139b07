"""unique(dim=) on long slices, against PyTorch: the lexicographic order packs runs of column
ranks into int64 keys and ranks those again (ember/_unique.py), so these shapes take one, two
and three rounds of packing, with and without a padded last run. OpInfo's samples (slices of at
most 25 elements) reach two rounds at most."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

CASES = {
    "one run": ((300, 4), 0),  # 9 bits a rank: 7 columns a key, one key
    "two rounds, padded": ((3, 200), 0),  # 2 bits: 31 columns a key, 7 keys, then one
    "three rounds": ((2000, 50), 0),  # 11 bits: 5 columns a key, 10 keys, 2 keys, one
    "along a middle dim": ((6, 40, 7), 1),
    "one column": ((50, 1), 0),
}


@pytest.mark.parametrize("dtype", ["int64", "float32", "bool"])
@pytest.mark.parametrize("case", list(CASES))
def test_unique_dim_matches_torch(device, case, dtype):
    shape, dim = CASES[case]
    rng = np.random.default_rng(len(case))
    # two values per element: most slices repeat only when they are short
    data = rng.integers(0, 2, size=shape).astype(dtype)
    # repeat some slices so the counts and the inverse have groups to find
    data = np.concatenate([data, np.take(data, range(min(3, shape[dim])), axis=dim)], axis=dim)
    flags = {"dim": dim, "return_inverse": True, "return_counts": True}
    expected = torch.unique(torch.from_numpy(data), **flags)
    got = ember.unique(ember.tensor(data, device=device), **flags)
    for name, want, have in zip(("values", "inverse", "counts"), expected, got):
        np.testing.assert_array_equal(have.cpu().numpy(), want.numpy(), err_msg=name)
