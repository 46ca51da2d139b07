"""``mode="reduce-overhead"`` (compiler/overhead.py): the replay writes preallocated buffers and
results equal default mode's. On the CUDA device (PyTorch records CUDA graphs there alone; the
CPU emulator of its kernels here, EMBER_CUDA_EMULATOR=1) a call overwrites the previous call's
outputs (PyTorch's caveat: clone to keep them) and ``cudagraph_mark_step_begin`` makes
iterations span several calls; on cpu, ref and xpu every call's outputs are its own, as
torch.compile's are there, and only the intermediates live in buffers."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.compiler import overhead

from ..backend_cuda.conftest import emulated_cuda  # noqa: F401 - a fixture, used by name
from ..conftest import device_params

# where PyTorch runs reduce-overhead without CUDA graphs: every call's outputs are fresh
HOST = [param for param in device_params() if param.values[0] != "cuda"]


def on_cuda(test):
    """``test`` on the CUDA device, served by the CPU emulator of its kernels."""
    test = pytest.mark.parametrize("device", ["cuda"])(test)
    test = pytest.mark.usefixtures("emulated_cuda")(test)
    return pytest.mark.skipif(shutil.which("g++") is None, reason="g++ builds the emulator")(test)


@pytest.fixture(autouse=True)
def _no_marks():
    """Each test starts where no ``cudagraph_mark_step_begin`` was called (each call then an
    iteration): a mark left by an earlier test would make every later call one iteration."""
    overhead._STEPS.marks = 0
    yield
    overhead._STEPS.marks = 0


def _f(x):
    return (x * 2.0).sin() + x.exp() * 0.5


def _values(t):
    return t.detach().cpu().numpy().copy()


def _close(got, want, tol=1e-6):
    np.testing.assert_allclose(_values(got), _values(want), rtol=tol, atol=tol)


def _plans(compiled):
    (entry,) = [e for es in compiled._cache.values() for e in es]
    return entry.region.fast


def _own_memory(outputs, plans) -> None:
    """No output shares a buffer's memory (views of buffers included)."""
    buffers = set().union(*plans.storages)
    assert plans.buffers[0], "the intermediates live in buffers"
    assert all(id(t._storage) not in buffers for t in outputs)


VIEWS = {
    "view": lambda t: t.view(-1),
    "select": lambda t: t[0],
    "t": lambda t: t.t(),
    "unsqueeze": lambda t: t.unsqueeze(0),
}
# views made by composites (not view ops) and an in-place op's result: no buffer either
HOST_VIEWS = {
    **VIEWS,
    "ravel": lambda t: t.ravel(),
    "tensor_split": lambda t: t.tensor_split(2, 1)[1],
    "atleast_2d": lambda t: ember.atleast_2d(t),
    "add_": lambda t: t.add_(1.0),
}


@on_cuda
def test_outputs_match_default_and_are_overwritten(device):
    fast = ember.compile(_f, mode="reduce-overhead")
    plain = ember.compile(_f)
    xs = [ember.randn(4, 3, device=device) for _ in range(4)]
    kept = []
    for x in xs:
        got = fast(x)
        _close(got, plain(x))
        kept.append((got, got.clone()))
    first, cloned = kept[1]
    assert first.shape == (4, 3) and first is not kept[-1][0]
    with pytest.raises(RuntimeError, match="overwritten by a subsequent run"):
        first + 1  # its buffer holds the last call's values now (PyTorch raises too)
    _close(cloned, plain(xs[1]))
    _close(kept[-1][0], plain(xs[-1]))
    assert "BUF" in _plans(fast).programs[0].source


@pytest.mark.parametrize("device", HOST)
def test_outputs_of_every_call_stay_valid(device):
    """torch.compile uses CUDA graphs for CUDA tensors only: on other devices a script that
    keeps the outputs of several calls works, so it does here; the intermediates still live
    in buffers allocated once."""
    fast = ember.compile(_f, mode="reduce-overhead")
    xs = [ember.randn(4, 3, device=device) for _ in range(4)]
    outs = [fast(x) for x in xs]
    ember.compiler.cudagraph_mark_step_begin()  # iterations change nothing here
    outs += [fast(x) for x in xs]
    for got, x in zip(outs, xs + xs):
        _close(got, _f(x))
    plans = _plans(fast)
    assert "BUF" in plans.programs[0].source and len(plans.programs) == 1
    _own_memory(outs, plans)


@on_cuda
@pytest.mark.parametrize("view", list(VIEWS.values()), ids=list(VIEWS))
def test_a_view_of_a_buffer_returned_is_overwritten_with_it(view, device):
    """An output that is a view of a buffer (the buffer itself not returned) is overwritten by
    the next call as the buffer is: reading it raises instead of giving the next call's
    numbers."""

    def fn(x):
        return view(_f(x))

    fast = ember.compile(fn, mode="reduce-overhead")
    x, y = ember.randn(4, 3, device=device), ember.randn(4, 3, device=device)
    for _ in range(2):
        got = fast(x)
    _close(got, fn(x))
    _close(fast(y), fn(y))
    with pytest.raises(RuntimeError, match="overwritten by a subsequent run"):
        _values(got)


@pytest.mark.parametrize("device", HOST)
@pytest.mark.parametrize("view", list(HOST_VIEWS.values()), ids=list(HOST_VIEWS))
def test_a_view_returned_is_fresh(view, device):
    """An output that is a view of a value (or that value written in place) is allocated per
    call with that value, so it never shares a buffer's memory: every call's stays valid."""

    def fn(x):
        return view(_f(x) * x)

    fast = ember.compile(fn, mode="reduce-overhead")
    xs = [ember.randn(4, 3, device=device) for _ in range(3)]
    outs = [fast(x) for _ in range(2) for x in xs]
    for got, x in zip(outs, xs + xs):
        _close(got, fn(x))
    _own_memory(outs, _plans(fast))


@on_cuda
def test_mark_step_begin_keeps_a_step_outputs(device):
    fast = ember.compile(_f, mode="reduce-overhead")
    x, y = ember.randn(5, device=device), ember.randn(5, device=device)
    fast(x)
    for _ in range(3):
        ember.compiler.cudagraph_mark_step_begin()
        a, b = fast(x), fast(y)  # one iteration: two buffer sets
        _close(a, _f(x))
        _close(b, _f(y))
    ember.compiler.cudagraph_mark_step_begin()
    fast(y)
    _close(b, _f(y))
    with pytest.raises(RuntimeError, match="overwritten"):
        _values(a)  # the new iteration reused a's buffer


def test_module_inference_and_training(device):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 4), nn.Tanh()).to(device)
    fast = ember.compile(model, mode="reduce-overhead")
    x = ember.randn(3, 8, device=device)
    with ember.no_grad():
        for _ in range(3):
            _close(fast(x), model(x), 1e-5)
    for _ in range(3):  # a training region keeps the default replay: gradients as eager
        model.zero_grad()
        fast(x).sum().backward()
        got = [_values(p.grad) for p in model.parameters()]
        model.zero_grad()
        model(x).sum().backward()
        for g, p in zip(got, model.parameters()):
            np.testing.assert_allclose(g, _values(p.grad), rtol=1e-5, atol=1e-6)


def _products(device):
    """``mm`` nodes and a lowered composite (``linear``: ``mm`` and ``add``)."""
    ember.manual_seed(0)
    w = ember.randn(6, 5, device=device)
    model = nn.Linear(5, 3).to(device)

    def f(x):
        return (x @ w).relu(), model(x @ w)

    xs = [ember.randn(4, 6, device=device) for _ in range(3)]
    return f, ember.compile(f, mode="reduce-overhead"), xs


@on_cuda
def test_matmul_outputs_live_in_buffers(device):
    """``mm`` nodes and lowered composites write preallocated buffers as elementwise nodes do:
    a returned product is overwritten by the next call and reading it raises PyTorch's error;
    the values equal default mode's."""
    f, fast, xs = _products(device)
    with ember.no_grad():
        outs = []
        for x in xs:
            ember.compiler.cudagraph_mark_step_begin()  # one call per iteration
            got = fast(x)
            for g, want in zip(got, f(x)):
                _close(g, want, 1e-5)
            outs.append(got)
        plans = _plans(fast)
        source = plans.programs[0].source
        assert "K" in source and "SUB" in source and "BUF" in source
        assert len(plans.buffers[0]) >= 4  # mm, relu, and linear's mm and add
        for stale in outs[1]:
            with pytest.raises(RuntimeError, match="overwritten by a subsequent run"):
                stale + 1
        for g, want in zip(outs[-1], f(xs[-1])):
            _close(g, want, 1e-5)


@pytest.mark.parametrize("device", HOST)
def test_matmul_intermediates_live_in_buffers(device):
    """Off CUDA the products returned are fresh at every call, those inside stay in buffers
    (the ``mm`` that ``x @ w`` lowers to, ``linear``'s own ``mm``)."""
    f, fast, xs = _products(device)
    with ember.no_grad():
        outs = [fast(x) for x in xs]
        for got, x in zip(outs, xs):
            for g, want in zip(got, f(x)):
                _close(g, want, 1e-5)
        plans = _plans(fast)
        assert "SUB" in plans.programs[0].source
        assert len(plans.buffers[0]) >= 2
        _own_memory([t for got in outs for t in got], plans)


def _sgd_steps(device, mode, mark: bool):
    """5 SGD steps of a GELU MLP compiled with ``mode``, each step's forward output kept:
    (losses, parameters, the compiled model, the outputs, their values when made)."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 3)).to(device).double()
    fast = ember.compile(model, mode=mode)
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(0)
    outs, made, losses = [], [], []
    for _ in range(5):
        if mark:
            ember.compiler.cudagraph_mark_step_begin()
        x = ember.tensor(rng.standard_normal((4, 6)), dtype=ember.float64, device=device)
        out = fast(x)
        loss = (out * out).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
        outs.append(out)
        made.append(_values(out))
    return losses, [_values(p) for p in model.parameters()], fast, outs, made


def _training_pair(device, mark: bool):
    """The reduce-overhead run checked against default mode's; returns its pair and outputs."""
    losses, params, fast, outs, made = _sgd_steps(device, "reduce-overhead", mark)
    want_losses, want_params, _, _, want_made = _sgd_steps(device, "default", mark)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-12)
    for got, want in zip([*params, *made], [*want_params, *want_made]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    (entry,) = [e for es in fast._compiled._cache.values() for e in es]
    pair = entry.region.joint
    assert "BUF" in pair.forward.programs[0].source and "BUF" in pair.backward.source
    return pair, outs, want_made


@on_cuda
def test_training_region_buffers(device):
    """A training region's pair (joint.py) is planned too: its forward output lives in a buffer
    (overwritten by the next call, PyTorch's error on a stale read), the saved tensors and the
    gradients are fresh, and 5 SGD steps give default mode's losses and parameters."""
    _, outs, _ = _training_pair(device, mark=True)
    with pytest.raises(RuntimeError, match="overwritten by a subsequent run"):
        outs[-2] + 1
    _values(outs[-1])  # the last call's output is still valid


@pytest.mark.parametrize("device", HOST)
@pytest.mark.parametrize("mark", [False, True], ids=["calls", "marked"])
def test_training_region_outputs_stay_valid(device, mark):
    """Off CUDA the forward's outputs of every step are fresh: read after the 5 SGD steps they
    hold their own step's values (default mode's), and no output shares a buffer's memory;
    the intermediates of both programs stay in buffers."""
    pair, outs, want_made = _training_pair(device, mark)
    for out, want in zip(outs, want_made):
        np.testing.assert_allclose(_values(out), want, rtol=1e-12, atol=1e-12)
    _own_memory(outs, pair.forward)
