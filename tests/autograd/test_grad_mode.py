"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode as context managers and
decorators (functions and generators), compared with PyTorch's behaviour step by step."""

from __future__ import annotations

import threading

import pytest

import ember


def _modes(lib) -> list:
    """A trace of (is_grad_enabled, is_inference_mode_enabled) through nested modes."""
    state = lambda: (lib.is_grad_enabled(), lib.is_inference_mode_enabled())  # noqa: E731
    out = [state()]
    lib.set_grad_enabled(False)
    out.append(state())
    lib.set_grad_enabled(True)
    with lib.set_grad_enabled(False):
        out.append(state())
    out.append(state())

    @lib.set_grad_enabled(False)
    def switched():
        return state()

    out += [state(), switched(), state()]
    with lib.no_grad():
        out.append(state())
        with lib.enable_grad():
            out.append(state())
            with lib.set_grad_enabled(False):
                out.append(state())
            out.append(state())
        with lib.inference_mode(False):
            out.append(state())
        out.append(state())
    with lib.inference_mode():
        out.append(state())
        with lib.inference_mode(False):
            out.append(state())
        with lib.enable_grad():
            out.append(state()[0])
    out.append(state())

    @lib.no_grad()
    def generator():
        yield state()
        received = yield state()
        yield received, state()

    gen = generator()
    out += [next(gen), state(), next(gen), state(), gen.send("x"), state()]

    @lib.inference_mode()
    def inferred(x):
        return (x * 2).requires_grad, state()

    @lib.enable_grad()
    def enabled(x):
        return (x * 2).requires_grad

    x = lib.ones(2, requires_grad=True)
    out.append(inferred(x))
    with lib.no_grad():
        out.append(enabled(x))
        out.append((x * 2).requires_grad)
    return out


def test_modes_match_pytorch():
    torch = pytest.importorskip("torch")
    assert _modes(ember) == _modes(torch)
    assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()


def test_no_grad_records_nothing(device):
    x = ember.ones(3, device=device).requires_grad_()
    with ember.no_grad():
        y = x * 2
        x[0] = 5.0  # in-place on a leaf that requires grad is allowed without recording
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    assert x.tolist() == [5.0, 1.0, 1.0] and x.is_leaf


def test_decorated_generator_restores_the_callers_mode_between_steps():
    @ember.no_grad()
    def steps():
        for _ in range(3):
            yield ember.is_grad_enabled()

    seen = []
    for inside in steps():
        seen.append((inside, ember.is_grad_enabled()))
    assert seen == [(False, True)] * 3


def test_decorated_generator_passes_throw_and_return_value():
    @ember.no_grad()
    def steps():
        try:
            yield 1
        except KeyError:
            yield ember.is_grad_enabled()
        return "done"

    gen = steps()
    assert next(gen) == 1
    assert gen.throw(KeyError("k")) is False
    with pytest.raises(StopIteration) as stop:
        next(gen)
    assert stop.value.value == "done" and ember.is_grad_enabled()


def test_grad_mode_is_thread_local():
    seen = {}

    def worker():
        seen["worker"] = ember.is_grad_enabled()

    with ember.no_grad():
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        seen["main"] = ember.is_grad_enabled()
    assert seen == {"worker": True, "main": False}
