"""In-place views (transpose_, t_, squeeze_, unsqueeze_, as_strided_) give self the view's
geometry: every later read (copies, casts, transfers, kernels) sees the new layout, as PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

import ember

CASES = {
    "transpose_": (lambda t: t.transpose_(0, 1), lambda a: a.transpose(1, 0, 2)),
    "t_": (lambda t: t[0].t_(), lambda a: a[0].T),
    "unsqueeze_": (lambda t: t.unsqueeze_(1), lambda a: a[:, None]),
    "squeeze_": (lambda t: t[:, :1].squeeze_(1), lambda a: a[:, 0]),
    "as_strided_": (
        lambda t: t.as_strided_((3, 2), (1, 3), 1),
        lambda a: np.lib.stride_tricks.as_strided(
            a.ravel()[1:], (3, 2), (a.itemsize, 3 * a.itemsize)
        ),
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_inplace_view_reads_with_the_new_geometry(name, device):
    change, reference = CASES[name]
    values = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = ember.tensor(values, device=device)
    viewed = change(t)
    want = reference(values)
    assert tuple(viewed.shape) == want.shape
    for read in (
        lambda v: v.contiguous().cpu().numpy(),
        lambda v: v.cpu().numpy(),
        lambda v: v.to(ember.float64).cpu().numpy(),
        lambda v: (v + 0).cpu().numpy(),
        lambda v: v.clone().cpu().numpy(),
    ):
        np.testing.assert_array_equal(read(viewed), want, err_msg=name)
    assert viewed.is_contiguous() == want.flags.c_contiguous
