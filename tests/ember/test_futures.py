"""``ember.futures`` and ``ember.jit.fork``/``wait`` against PyTorch's: the same calls on both
libraries, compared result by result; ``typename`` and ``is_storage`` likewise."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

import ember


def _scaled(x, k=1):
    return x * 2 + k


def _boom():
    raise ValueError("boom")


def _story(lib) -> list:
    """What a program sees doing the usual things with futures, as plain values."""
    seen = []
    fut = lib.jit.fork(_scaled, lib.ones(2), k=3)
    seen += [fut.done(), lib.jit.wait(fut).tolist()]
    with pytest.raises(ValueError, match="boom"):
        lib.jit.fork(_boom)  # raised at the fork (the function ran at once)
    first = lib.futures.Future()
    chained = first.then(lambda done: done.wait() + 1)
    calls = []
    first.add_done_callback(lambda done: calls.append(done.value()))
    seen += [first.done(), chained.done()]
    first.set_result(5)
    seen += [first.done(), first.wait(), first.value(), chained.wait(), calls]
    with pytest.raises(RuntimeError, match="marked completed once"):
        first.set_result(6)
    failed = lib.futures.Future()
    failed.set_exception(ValueError("x"))
    for read in (failed.wait, failed.value):
        with pytest.raises(ValueError, match="x"):
            read()
    raising = first.then(lambda done: _boom())
    with pytest.raises(RuntimeError, match="error when running the callback: ValueError: boom"):
        raising.wait()
    futures = [lib.jit.fork(_scaled, lib.ones(1)), lib.jit.fork(_scaled, lib.zeros(1))]
    collected = lib.futures.collect_all(futures).wait()
    seen += [[f.wait().tolist() for f in collected]]
    seen += [[v.tolist() for v in lib.futures.wait_all(futures)]]
    return seen


def test_futures_and_fork_behave_as_pytorchs():
    assert _story(ember) == _story(torch)


def test_wait_blocks_until_another_thread_sets_the_result():
    fut = ember.futures.Future()
    setter = threading.Timer(0.05, lambda: fut.set_result(ember.ones(3)))
    setter.start()
    np.testing.assert_array_equal(fut.wait().numpy(), np.ones(3))
    setter.join()


def test_fork_inside_a_trace_records_its_ops():
    def model(x):
        return ember.jit.wait(ember.jit.fork(_scaled, x)) + 1

    traced = ember.jit.trace(model, (ember.ones(2),))
    np.testing.assert_allclose(traced(ember.full((2,), 3.0)).numpy(), [8.0, 8.0])


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.ones(1),
        lambda lib: lib.ones(1, dtype=lib.int64),
        lambda lib: 1.0,
        lambda lib: lib.nn.Linear(1, 1),
        lambda lib: lib.nn.Linear,
        lambda lib: lib.ones(1).untyped_storage(),
    ],
    ids=["float-tensor", "long-tensor", "float", "module", "class", "storage"],
)
def test_typename_and_is_storage(make):
    got, want = make(ember), make(torch)
    assert ember.typename(got) == torch.typename(want).replace("torch", "ember")
    assert ember.is_storage(got) == torch.is_storage(want)
