"""In-place views (t_, unsqueeze_...) inside ember.compile and jit.trace: the ops after one read
the tensor's new geometry in every replay, with and without a graph break in the call, with
and without grad (eager's values and gradients). Before, a replay gave those ops the value
from before the view: a wrong shape, or a silently wrong result after a break."""

from __future__ import annotations

import numpy as np
import pytest

import ember


def _no_break(x):
    y = x * 2
    y.t_()
    return y + ember.ones(3, 2)


def _with_break(x):
    y = x * 2
    y.t_()
    if y.sum() > 0:  # a graph break: the rest is another segment
        y = y + 1
    z = y * 3
    z.unsqueeze_(0)
    return z - 1


@pytest.mark.parametrize("fn", [_no_break, _with_break])
@pytest.mark.parametrize("shift", [-2.0, 2.0])  # each side of the break's branch
def test_compiled_replays_see_the_in_place_view(fn, shift):
    x = ember.randn(2, 3) + shift
    want = fn(x).numpy()
    compiled = ember.compile(fn)
    for _ in range(4):  # capture, then replays
        np.testing.assert_allclose(compiled(x).numpy(), want, rtol=1e-6)
    xe = x.clone().requires_grad_()
    fn(xe).sum().backward()
    xg = x.clone().requires_grad_()
    compiled = ember.compile(fn)
    for _ in range(4):
        xg.grad = None
        compiled(xg).sum().backward()
        np.testing.assert_allclose(xg.grad.numpy(), xe.grad.numpy(), rtol=1e-6)


def test_traced_graph_reads_the_in_place_view():
    x = ember.randn(2, 3)
    traced = ember.jit.trace(_no_break, (x,))
    for probe in (x, ember.randn(2, 3)):
        np.testing.assert_allclose(traced(probe).numpy(), _no_break(probe).numpy(), rtol=1e-6)
