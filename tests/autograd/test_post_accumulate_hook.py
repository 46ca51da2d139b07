"""Tensor.register_post_accumulate_grad_hook against PyTorch: when it runs, what it sees, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def _run(lib, calls):
    """Two backward passes and one autograd.grad on ``w`` with a post-accumulate hook and a
    tensor hook that scales; returns what the post hook saw each time."""
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    w.register_hook(lambda g: g * 10)
    handle = w.register_post_accumulate_grad_hook(lambda p: calls.append(p.grad.numpy().copy()))
    ((w * 3).sum() + (w * w).sum()).backward()
    (w * 3).sum().backward()
    lib.autograd.grad((w * 3).sum(), w)
    handle.remove()
    (w * 3).sum().backward()
    return w.grad.numpy()


def test_hook_sees_accumulated_grad_like_torch():
    ours, theirs = [], []
    final = _run(ember, ours)
    expected = _run(torch, theirs)
    assert len(ours) == len(theirs) == 2
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b)
    np.testing.assert_allclose(final, expected)


@pytest.mark.parametrize("lib", [ember, torch], ids=["ember", "torch"])
def test_errors_like_torch(lib):
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        lib.ones(2).register_post_accumulate_grad_hook(print)
    leaf = lib.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="non-leaf tensors"):
        (leaf * 2).register_post_accumulate_grad_hook(print)
