"""ember.compile's surface against torch.compile's: arguments, errors, decorators, modules."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember._dynamo.exc import InvalidBackend


def _f(x):
    return x.sin() * 2 + x.cos()


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


def _torch_error(**kwargs):
    with pytest.raises(Exception) as info:
        torch.compile(lambda x: x, **kwargs)(torch.ones(1))
    return info.value


@pytest.mark.parametrize(
    "kwargs",
    [{"mode": "fast"}, {"mode": "default", "options": {"a": 1}}],
    ids=["unknown-mode", "mode-and-options"],
)
def test_argument_errors_match_torch(kwargs):
    expected = _torch_error(**kwargs)
    with pytest.raises(type(expected)) as info:
        ember.compile(_f, **kwargs)
    assert str(info.value) == str(expected)


def test_unknown_backend_raises_invalid_backend():
    expected = str(_torch_error(backend="nope")).replace("torch", "ember")
    with pytest.raises(InvalidBackend) as info:
        ember.compile(_f, backend="nope")
    assert str(info.value) == expected


def test_accepted_backends_and_modes_run():
    x = ember.randn(5)
    for backend in ["inductor", "eager", "aot_eager", "cudagraphs", "ember"]:
        _close(ember.compile(_f, backend=backend)(x), _f(x))
    for mode in ["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]:
        _close(ember.compile(_f, mode=mode)(x), _f(x))
    assert {"inductor", "ember"} <= set(ember.compiler.list_backends())
    assert {"eager", "aot_eager"} <= set(ember.compiler.list_backends(None))
    assert "eager" not in ember.compiler.list_backends()


def test_decorator_forms_and_disable():
    x = ember.randn(3)

    @ember.compile
    def bare(x):
        return _f(x)

    @ember.compile(fullgraph=True, mode="max-autotune")
    def called(x):
        return _f(x)

    _close(bare(x), _f(x))
    _close(called(x), _f(x))
    assert bare.__name__ == "bare"
    assert ember.compile(_f, disable=True) is _f
    with pytest.raises(RuntimeError, match="Model can't be None"):
        ember.compile()(None)


class _Scaled(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.l = nn.Linear(3, 3)
        self.k = k

    @ember.compile
    def forward(self, x):
        return self.l(x).relu() * self.k

    @ember.compile(dynamic=False)
    def shifted(self, x, y=1.0):
        return self.l(x) + y


def test_decorated_methods_bind_to_each_instance():
    # torch.compile over a method in a class body returns a function, which binds
    a, b = _Scaled(1.0), _Scaled(2.0)
    x = ember.randn(2, 3)
    for module in (a, b, a, b):
        _close(module(x), module.l(x).relu() * module.k)
        _close(module.shifted(x, y=3.0), module.l(x) + 3.0)
    b(x).sum().backward()
    assert a.l.weight.grad is None and b.l.weight.grad is not None
    assert _Scaled.forward.__name__ == "forward"


def _mlp():
    return nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 3))


def test_optimized_module_is_torchs_shape():
    model = _mlp()
    compiled = ember.compile(model)
    reference = torch.compile(torch.nn.Sequential(torch.nn.Linear(4, 8)))
    assert type(compiled).__name__ == type(reference).__name__ == "OptimizedModule"
    assert compiled._orig_mod is model
    assert list(compiled.state_dict()) == [f"_orig_mod.{k}" for k in model.state_dict()]
    assert getattr(compiled, "0") is model[0]  # attributes read through to the original
    x = ember.randn(2, 4)
    _close(compiled(x), model(x))


def test_module_compile_in_place():
    model = _mlp()
    keys = list(model.state_dict())
    assert model.compile() is None
    assert type(model) is nn.Sequential and list(model.state_dict()) == keys
    x = ember.randn(6, 4, requires_grad=True)
    out = model(x)  # captures
    again = model(x)  # replays
    model._compiled_call_impl = None
    eager = model(x)
    _close(out, eager)
    _close(again, eager)
    again.sum().backward()
    assert x.grad is not None and model[0].weight.grad is not None


def test_reset_captures_again():
    compiled = ember.compile(_f)
    x = ember.randn(4)
    compiled(x)
    compiled(x)
    assert compiled._count == 1
    ember.compiler.reset()
    assert compiled._count == 0
    compiled(x)
    assert compiled._count == 1


def test_is_compiling_true_only_while_capturing():
    seen = []

    def f(x):
        seen.append(ember.compiler.is_compiling())
        return x + 1

    compiled = ember.compile(f)
    x = ember.randn(2)
    compiled(x)
    compiled(x)  # the append is a side effect: f's Python runs again, as compiled code
    assert seen == [True, True]  # PyTorch's too: dynamo replays the append
    assert ember.compiler.is_compiling() is False
    assert ember._dynamo.is_compiling() is False


def test_disable_runs_eagerly_and_breaks_the_graph():
    @ember.compiler.disable
    def helper(x):
        return x * 3

    def f(x):
        return helper(x.sin()).cos()

    x = ember.randn(3)
    _close(ember.compile(f)(x), f(x))
    explained = ember._dynamo.explain(f)(x)
    assert explained.graph_break_count == 1
    assert "disable" in explained.break_reasons[0].reason


def test_non_tensor_arguments_and_outputs():
    def f(x, scale, name=None, pair=(1, 2)):
        return {"y": x * scale + pair[1], "tag": name, "n": 3}

    compiled = ember.compile(f)
    x = ember.randn(3)
    for scale in (2.0, 2.0, 5.0):
        got, want = compiled(x, scale, name="a"), f(x, scale, name="a")
        _close(got["y"], want["y"])
        assert (got["tag"], got["n"]) == ("a", 3)
    assert compiled._count == 2  # the float is guarded by value


_Pair = __import__("collections").namedtuple("_Pair", "low high")


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.max(0),  # max's (values, indices)
        lambda x: _Pair(x - 1, x + 1),
        lambda x: (x.shape, x * 2),
        lambda x: {"pair": _Pair(x, x.size()), "n": 1},
        lambda x: x.shape,  # no tensor out at all: a graph with no outputs
    ],
    ids=["return_types", "namedtuple", "size", "nested", "only-size"],
)
def test_replays_return_the_types_eager_returns(fn):
    """A replay rebuilds its outputs from pytree's specs, which know a namedtuple or a Size
    only as a tuple: the types come back (``.values``, ``.low`` work at every call, as with
    torch.compile), and a function that returns sizes alone compiles."""
    compiled = ember.compile(fn)
    x = ember.randn(3, 2)
    for _ in range(3):
        got, want = compiled(x), fn(x)
        assert _types(got) == _types(want)
    assert compiled._count == 1


def _types(tree):
    if isinstance(tree, dict):
        return {k: _types(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return (type(tree), [_types(v) for v in tree])
    return type(tree)


def test_config_is_one_module():
    import ember._dynamo.config as dynamo_config

    assert dynamo_config is ember.compiler.config
    assert dynamo_config.recompile_limit == 8 == torch._dynamo.config.recompile_limit


def test_autocast_applies_at_replay():
    model = _mlp()
    compiled = ember.compile(model)
    x = ember.randn(3, 4)
    compiled(x)  # captured outside autocast
    with ember.autocast("cpu", dtype=ember.bfloat16):
        got, want = compiled(x), model(x)
    assert got.dtype == want.dtype == ember.bfloat16
    _close(got.float(), want.float())


def test_dict_and_keyword_inputs():
    def f(batch, *, bias):
        return {"out": batch["x"] @ batch["w"] + bias}

    compiled = ember.compile(f)
    batch = {"x": ember.randn(2, 3), "w": ember.randn(3, 4)}
    for _ in range(2):
        _close(compiled(batch, bias=ember.ones(4))["out"], f(batch, bias=ember.ones(4))["out"])
    assert compiled._count == 1


def test_compiled_module_inside_jit_trace_is_inlined():
    model = _mlp()
    model.compile()
    x = ember.randn(2, 4)
    traced = ember.jit.trace(model, x)
    assert any(n.kind() == "ember::linear" for n in traced.graph.nodes())
    _close(traced(x), model(x))


def test_pytorch_marks_and_aliases_run_unchanged():
    x = ember.randn(4, 3)
    ember._dynamo.mark_dynamic(x, 0)
    ember._dynamo.maybe_mark_dynamic(x, -1)
    ember._dynamo.mark_static(x)
    assert x._dynamo_dynamic_indices == {0} and x._dynamo_static_indices == {0, 1}
    with pytest.raises(IndexError):
        ember._dynamo.mark_dynamic(x, 2)
    assert ember.compiler.allow_in_graph(_f) is _f
    assert ember.compiler.is_dynamo_compiling() is False
    _close(ember.compile(_f)(x), _f(x))


def test_first_calls_from_several_threads():
    """Threads whose first calls of one compiled module capture at the same time (a thread per
    request, DataLoader-style workers) take turns tracing: before, the second trace's layer
    clashed with the first's (`ValueError: ... same priority`) and the call failed."""
    import threading

    model = nn.Sequential(nn.Linear(16, 16), nn.GELU(), nn.Linear(16, 4))
    compiled = ember.compile(model)
    start = threading.Barrier(4)
    errors, mismatches = [], []

    def worker(seed):
        generator = ember.Generator().manual_seed(seed)
        start.wait()
        try:
            for _ in range(20):
                x = ember.randn(3 + seed, 16, generator=generator)
                with ember.no_grad():
                    got, want = compiled(x), model(x)
                if not np.allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6):
                    mismatches.append(seed)
        except Exception as exc:  # reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and not mismatches


def test_a_call_that_waited_for_a_capture_uses_it():
    """A thread whose call misses while another thread's capture of the same call is under
    way waits for it, then looks again: it runs the new entry rather than capturing a second
    time on a guard key it read before (after sizes turned dynamic, such a stale capture read
    no sizes and failed: `'NoneType' object has no attribute 'compares'`, CI stop 40)."""
    import threading
    import time

    inside, release = threading.Event(), threading.Event()
    first = threading.current_thread()

    def f(x):
        if threading.current_thread() is first and not inside.is_set():
            inside.set()  # the first capture is under way: let the other thread call
            release.wait(10)
        return x * 2 + 1

    compiled = ember.compile(f)
    x = ember.randn(3, 4)
    results = []
    other = threading.Thread(target=lambda: results.append(compiled(x)))

    def release_later():
        inside.wait(10)
        other.start()
        time.sleep(0.3)  # the other thread's call reaches the miss and waits for its turn
        release.set()

    helper = threading.Thread(target=release_later)
    helper.start()
    mine = compiled(x)
    helper.join()
    other.join()
    assert compiled._count == 1
    assert np.allclose(results[0].numpy(), mine.numpy())
