"""``ember.compiler.set_stance`` against ``torch.compiler.set_stance``: each stance's effect on
captures and replays, its function, context-manager and decorator forms, and its errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember._dynamo.exc import InvalidBackend
from ember.compiler import stance


@pytest.fixture(autouse=True)
def _default_stance():
    yield
    stance.CURRENT[0] = stance.DEFAULT


def _entries(compiled) -> int:
    return sum(len(es) for es in compiled._cache.values())


def _double(x):
    return x * 2


def test_force_eager_neither_captures_nor_replays():
    compiled = ember.compile(_double)
    x = ember.ones(2)
    with ember.compiler.set_stance("force_eager"):
        np.testing.assert_allclose(compiled(x).numpy(), [2.0, 2.0])
        assert _entries(compiled) == 0
    compiled(x)
    assert _entries(compiled) == 1
    ember.compiler.set_stance("force_eager")  # the function form: from now on
    calls = []
    compiled_side = ember.compile(lambda x: calls.append(1) or x + 1)
    compiled_side(x)
    compiled_side(x)
    assert len(calls) == 2 and _entries(compiled_side) == 0
    ember.compiler.set_stance("default")
    assert stance.CURRENT[0] is not None and stance.CURRENT[0].stance == "default"


def test_eager_on_recompile_replays_what_is_cached_and_runs_the_rest_eagerly():
    compiled = ember.compile(_double)
    compiled(ember.ones(2))
    with ember.compiler.set_stance("eager_on_recompile"):
        for n in (2, 3, 4, 2):
            np.testing.assert_allclose(compiled(ember.ones(n)).numpy(), np.full(n, 2.0))
    assert _entries(compiled) == 1


def test_fail_on_recompile_raises_as_torch():
    def f(x):
        return x * 2

    tf = torch.compile(f, backend="eager")
    ef = ember.compile(f)
    tf(torch.ones(2))
    ef(ember.ones(2))
    with torch.compiler.set_stance("fail_on_recompile"):
        tf(torch.ones(2))
        with pytest.raises(RuntimeError) as want:
            tf(torch.ones(3, 3))
    with ember.compiler.set_stance("fail_on_recompile"):
        ef(ember.ones(2))  # a cached entry: no recompile
        with pytest.raises(RuntimeError) as got:
            ef(ember.ones(3, 3))
    head = "Detected recompile when torch.compile stance is 'fail_on_recompile'. "
    assert str(want.value).startswith(head) and str(got.value).startswith(head)
    assert "rank mismatch. expected 1, actual 2" in str(want.value)
    assert "rank mismatch. expected 1, actual 2" in str(got.value)
    with ember.compiler.set_stance("fail_on_recompile"), pytest.raises(RuntimeError, match=head):
        ember.compile(lambda x: x + 1)(ember.ones(2))  # a first capture is refused too


def test_eager_then_compile_runs_the_first_call_eagerly():
    compiled = ember.compile(_double)
    with ember.compiler.set_stance("eager_then_compile"):
        compiled(ember.ones(2))
        assert _entries(compiled) == 0
        compiled(ember.ones(2))
        assert _entries(compiled) == 1


def test_decorator_applies_during_calls_only():
    compiled = ember.compile(_double)

    @ember.compiler.set_stance("force_eager")
    def run(x):
        assert stance.CURRENT[0].stance == "force_eager"
        return compiled(x)

    assert stance.CURRENT[0] is stance.DEFAULT  # decorating did not change it
    run(ember.ones(2))
    assert _entries(compiled) == 0 and stance.CURRENT[0] is stance.DEFAULT


def test_force_backend_and_errors_match_torch():
    compiled = ember.compile(_double)
    with ember.compiler.set_stance(force_backend="aot_eager"):  # ember's one path
        np.testing.assert_allclose(compiled(ember.ones(2)).numpy(), [2.0, 2.0])
    assert _entries(compiled) == 1
    with pytest.raises(InvalidBackend):
        ember.compiler.set_stance(force_backend="no_such_backend")
    for kwargs in ({"stance": "force_eager", "force_backend": "eager"},):
        with pytest.raises(RuntimeError) as want:
            torch.compiler.set_stance(**kwargs)
        with pytest.raises(RuntimeError) as got:
            ember.compiler.set_stance(**kwargs)
        assert str(got.value) == str(want.value)
    ember.compiler.set_stance("not_a_stance")
    with pytest.raises(RuntimeError, match=r"invalid torch\.compile stance"):
        ember.compile(_double)(ember.ones(2))
    ember.compiler.set_stance("default")


def test_set_inside_a_capture_raises():
    def f(x):
        ember.compiler.set_stance("force_eager")
        return x + 1

    with pytest.raises(RuntimeError, match=r"attempted to set_stance in a torch\.compile region"):
        ember.compile(f, fullgraph=True)(ember.ones(2))
