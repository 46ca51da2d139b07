"""A Python scalar beside a float16/bfloat16 tensor keeps PyTorch's precision: mul and the
divisions read it unrounded in float32 (PyTorch's opmath scalar), add, sub, remainder and the
rest round it to the tensor's dtype first. Compared bit for bit with torch, on every device."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

# name: (ember call, torch call); the scalar is the second operand
CASES = {
    "mul": (lambda x, s: x * s, lambda x, s: x * s),
    "div": (lambda x, s: x / s, lambda x, s: x / s),
    "div_trunc": (
        lambda x, s: ember.div(x, s, rounding_mode="trunc"),
        lambda x, s: torch.div(x, s, rounding_mode="trunc"),
    ),
    "div_floor": (
        lambda x, s: ember.div(x, s, rounding_mode="floor"),
        lambda x, s: torch.div(x, s, rounding_mode="floor"),
    ),
    "floor_divide": (ember.floor_divide, torch.floor_divide),
    "add": (lambda x, s: x + s, lambda x, s: x + s),
    "sub": (lambda x, s: x - s, lambda x, s: x - s),
    "remainder": (ember.remainder, torch.remainder),
}
SCALARS = (0.1234567, 0.422, 1.2345678, -3.3333)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", CASES)
def test_python_scalar_precision_matches_torch(name, dtype, device):
    ours_fn, theirs_fn = CASES[name]
    values = (np.random.default_rng(3).standard_normal(4096) * 4).astype(np.float32)
    theirs = torch.from_numpy(values).to(getattr(torch, dtype))
    ours = ember.tensor(values, device=device).to(getattr(ember, dtype))
    strided = (ours[::2], theirs[::2])  # the strided loops read the scalar the same way
    for s in SCALARS:
        for x, t in ((ours, theirs), strided):
            got = ours_fn(x, s).cpu().float().numpy()
            want = theirs_fn(t, s).float().numpy()
            np.testing.assert_array_equal(got, want, err_msg=f"{name}({dtype}, {s}) on {device}")
