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


# With grad: PyTorch rebases the tensor's history onto the view's in-place node (TBackward1...),
# over its old one, and bumps its version; a leaf (or a view of one) is refused.
def _with_grad(lib):
    seen = []
    x = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    w = lib.tensor(np.arange(6.0).reshape(3, 2) + 1)
    y = x * 2
    y.t_()
    seen.append((tuple(y.shape), y.grad_fn.name(), type(y.grad_fn.next_functions[0][0]).__name__))
    (y * w).sum().backward()
    seen.append(x.grad.numpy().tolist())
    x.grad = None
    v = (x * 3)[0]  # a view of a non-leaf: its node chains to the select's
    v.unsqueeze_(0)
    seen.append((tuple(v.shape), v.grad_fn.name()))
    v.sum().backward()
    seen.append(x.grad.numpy().tolist())
    z = (x * 1).unsqueeze(0).unsqueeze(2)
    seen.append(
        [
            z.clone().squeeze_().grad_fn.name(),
            z.clone().squeeze_(0).grad_fn.name(),
            z.clone().squeeze_((0, 2)).grad_fn.name(),
            (x * 1).transpose_(0, 1).grad_fn.name(),
            (x * 1).as_strided_((3, 2), (1, 3)).grad_fn.name(),
        ]
    )
    for refused in (lambda: x.t_(), lambda: x[0].unsqueeze_(0)):
        with pytest.raises(RuntimeError) as error:
            refused()
        seen.append(str(error.value).rpartition("): ")[2])
    y = x * 2
    product = y * y  # saves y: the in-place view is a write to it, as PyTorch counts
    y.t_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        product.sum().backward()
    y = x * 2
    with lib.no_grad():  # no recording: the geometry alone, the history kept
        y.t_()
    seen.append((tuple(y.shape), y.grad_fn.name()))
    return seen


def test_inplace_views_with_grad_as_pytorch():
    import torch

    assert _with_grad(ember) == _with_grad(torch)
