"""The dispatch-free replay (compiler/replay.py, compiler/lower.py): the same numbers as eager on
every device, the layers and gradients it must not skip, and the memory plan."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.dispatcher.layers import STACK, Layer, installed
from tests.compile.test_zoo import _flat, _numpy, _on
from tests.jit.zoo import CASES


def _programs(compiled):
    inner = compiled._compiled if hasattr(compiled, "_compiled") else compiled
    return [e.region.fast for es in inner._cache.values() for e in es if e.region is not None]


def _close(got, want):
    np.testing.assert_allclose(
        np.concatenate([np.ravel(a) for a in _flat(_numpy(got))]),
        np.concatenate([np.ravel(a) for a in _flat(_numpy(want))]),
        rtol=1e-5,
        atol=1e-5,
    )


@pytest.mark.parametrize("name", list(CASES))
def test_zoo_replay_matches_eager_without_grad(name, device):
    case = CASES[name]
    model = copy.deepcopy(case.model).to(device)
    compiled = ember.compile(model)
    with ember.no_grad():
        for args in [case.example, case.example, case.example, *case.others, *case.others]:
            args = _on(args, device)
            _close(compiled(*args), model(*args))
    programs = _programs(compiled)
    assert programs and all(p is not None for p in programs)


def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4), nn.Tanh())


def _replayed():
    """An MLP, compiled, and its input, after a capture and a first replay without grad."""
    model = _mlp()
    compiled = ember.compile(model)
    x = ember.randn(3, 8)
    with ember.no_grad():
        compiled(x)
        compiled(x)
    return model, compiled, x


def test_plain_nodes_call_kernels_and_composites_are_inlined():
    _model, compiled, _x = _replayed()
    (program,) = _programs(compiled)
    # each linear is its ops (lower.inlined): t, the mm kernel into a buffer, and the bias
    # add fused with the activation after it into another; the three that are not returned
    # are slices of the call's arena (one empty() for them), the result its own empty()
    assert program.source.count("= empty(") == 2
    assert program.source.count("make(arena__") == 3
    assert program.source.count("FUSED") == 2 and "SUB" not in program.source
    assert "del " in program.source


def test_inlined_composites_leave_the_captured_graph_as_it_was():
    from ember.compiler.region import replayed_graph

    _model, compiled, _x = _replayed()
    inner = compiled._compiled if hasattr(compiled, "_compiled") else compiled
    (graph,) = [e.region.graph for es in inner._cache.values() for e in es]
    before = str(graph)
    flat = replayed_graph(graph)
    assert flat is not graph and str(graph) == before  # a copy: explain() shows the capture
    kinds = [n.kind() for n in flat.block().nodes()]
    assert "ember::linear" not in kinds and kinds.count("ember::mm") == 2
    flat.lint()


def test_a_parameter_that_starts_requiring_grad_gets_its_gradient():
    model = _mlp()
    for p in model.parameters():
        p.requires_grad_(False)
    compiled = ember.compile(model)
    x = ember.randn(3, 8)
    compiled(x)
    compiled(x)
    assert _programs(compiled)[0] is not None
    model[0].weight.requires_grad_(True)
    compiled(x).sum().backward()
    want = model[0].weight.grad.clone()
    model[0].weight.grad = None
    model(x).sum().backward()
    np.testing.assert_allclose(want.numpy(), model[0].weight.grad.numpy(), rtol=1e-6)


class _Count(Layer):
    name = "count"
    priority = 350

    def __init__(self):
        self.calls = 0

    def handle(self, op, args):
        self.calls += 1
        return op.redispatch(self, args)


def test_an_installed_layer_sees_every_op_of_a_replay():
    model, compiled, x = _replayed()
    with ember.no_grad():
        layer = _Count()
        with installed(layer):
            got = compiled(x)
        assert layer.calls >= 4  # linear, gelu, linear, tanh went through the layer
        assert STACK.grad_only_layers is STACK.layers
        _close(got, model(x))


def test_autocast_replay_matches_eager_autocast():
    model, compiled, x = _replayed()
    with ember.no_grad(), ember.autocast("cpu", dtype=ember.bfloat16):
        got, want = compiled(x), model(x)
    assert got.dtype == want.dtype
    _close(got.float(), want.float())


def _autocast_inside(x, w):
    with ember.autocast("cpu", dtype=ember.bfloat16):
        y = x @ w
    return y + 1


def _autocast_inside_with_a_break(x, w):
    with ember.autocast("cpu", dtype=ember.bfloat16):
        y = x @ w
        print(end="")  # a graph break inside the autocast block
        z = y @ w
    return z.float() * 2


@pytest.mark.parametrize("fn", [_autocast_inside, _autocast_inside_with_a_break])
def test_autocast_entered_inside_a_compiled_function(fn):
    """The trace records above the autocast layer, so a graph kept the matmul without its
    casts: replays returned float32 (and, through a break's segments, values read with the
    wrong dtype, off by 1e34). The call now runs as segments whose ops under autocast run
    eagerly through it: eager's dtypes and values at every call."""
    compiled = ember.compile(fn)
    x, w = ember.randn(4, 4), ember.randn(4, 4)
    want = fn(x, w)
    for _ in range(3):
        got = compiled(x, w)
        assert got.dtype == want.dtype
        _close(got.float(), want.float())
    assert ember._dynamo.explain(fn)(x, w).graph_break_count >= 1


def test_explain_reports_the_peak_of_the_memory_plan():
    def chain(x):
        for _ in range(6):
            x = (x * 2.0).sin()
        return x

    out = ember._dynamo.explain(chain)(ember.randn(64, 64))
    one = 64 * 64 * 4
    assert out.total_bytes == 12 * one
    # each intermediate dies at its only use: at most the one being read and the one written
    assert out.peak_bytes == 2 * one
    assert f"Peak Memory: {2 * one} bytes" in str(out)


@pytest.mark.parametrize(
    "make",
    [
        lambda: ember.randn(3, 5),
        lambda: ember.randn(5, 3).t(),
        lambda: ember.randn(1, 4),
        lambda: ember.randn(4, 1),
        lambda: ember.randn(0, 3),
        lambda: ember.randn(6, 8)[1:4, ::2],
    ],
    ids=["contiguous", "transposed", "row", "column", "empty", "sliced"],
)
def test_direct_transpose_is_the_view_op(make):
    """replay's ``t`` of a 2-D tensor builds the view op's own result."""
    from ember.compiler.replay import _transposed

    x = make()
    got, want = _transposed(x), x.t()
    assert (got.shape, got.stride(), got.storage_offset()) == (
        want.shape,
        want.stride(),
        want.storage_offset(),
    )
    assert got.is_contiguous() == want.is_contiguous()
    assert got._base is want._base
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_reductions_call_their_kernel(device):
    """sum/amax/prod over constant dims (or every dim) run ``kernel(out, x, dims)`` from the
    program (no runner), with keepdim or without (the keepdim buffer seen without its size-1
    dims, as the runner's squeeze); a reduction with ``dtype=`` keeps the runner."""

    def f(x):
        a = x.sum(0, keepdim=True) * 2
        b = x.amax([0, 2], keepdim=True) + 1
        c = x.prod(-1, keepdim=True)
        d = x.sum(1) + x.sum(1, keepdim=True, dtype=ember.float64).float().squeeze(1)
        e = x.sum() * 3
        g = x.amax([2, 0])
        return a, b, c, d, e, g, x.mean()

    compiled = ember.compile(f)
    x = ember.randn(3, 4, 5, device=device)
    with ember.no_grad():
        compiled(x)
        got = compiled(x)
    (program,) = _programs(compiled)
    names = program.__globals__
    runners = [names[k].name for k in names if k.startswith("OP")]
    reductions = [name for name in runners if name in ("sum", "amax", "prod")]
    assert reductions == ["sum"], program.source  # the dtype= one
    # the three without keepdim, and the mean's sum (the composite inlined: lower.inlined)
    assert sum(k.startswith("SQ") for k in names) == 4, program.source
    want = f(x)
    for g, w in zip(got, want, strict=True):
        assert (g.shape, g.stride(), g.dtype) == (w.shape, w.stride(), w.dtype)
        assert g.is_contiguous() and g._base is None
        np.testing.assert_allclose(g.cpu().numpy(), w.cpu().numpy(), rtol=1e-6, atol=1e-6)
    t = torch.tensor(x.cpu().numpy())
    np.testing.assert_allclose(got[5].cpu().numpy(), t.amax([2, 0]).numpy())
    np.testing.assert_allclose(got[4].item(), (t.sum() * 3).item(), rtol=1e-6)


def test_reshape_of_a_contiguous_value_is_built_directly(device):
    """``view``/``reshape`` of a contiguous value build the view from the guarded shape; a
    strided one (here a transpose) still goes through the runner, which copies."""

    def f(x):
        a = (x * 2).reshape(-1, 2)
        b = x.t().reshape(-1)
        c = (x + 1).view(2, -1) * 3
        return a, b, c

    compiled = ember.compile(f)
    x = ember.randn(4, 6, device=device)
    with ember.no_grad():
        compiled(x)
        got = compiled(x)
    (program,) = _programs(compiled)
    assert program.source.count("._contig else") == 3, program.source
    for g, w in zip(got, f(x)):
        assert (g.shape, g.stride(), g.is_contiguous()) == (w.shape, w.stride(), w.is_contiguous())
        np.testing.assert_array_equal(g.cpu().numpy(), w.cpu().numpy())


def test_contiguous_of_a_transposed_view_then_view():
    """``contiguous`` is not lowered to its decomposition traced on contiguous zeros (which
    returns its input as is): the replay copies a transposed input before ``view``."""

    def f(x):
        return (x * 2).transpose(1, 2).contiguous().view(x.shape[0], -1)

    compiled = ember.compile(f)
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    with ember.no_grad():
        compiled(ember.tensor(x))
        out = compiled(ember.tensor(x))
    np.testing.assert_array_equal(out.numpy(), (x * 2).transpose(0, 2, 1).reshape(2, -1))


_TABLE = ember.randn(4, 3)


def _lookup_without_grad(index, x):
    y = x * 2
    with ember.no_grad():
        rows = ember.index_select(_TABLE, 0, index) * 3
    return y + rows.sum()


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_an_error_inside_a_no_grad_block_restores_grad_mode(mode):
    """The replay's kernel raises between its ``set_grad_enabled(False)`` and the block's end
    (an index out of range known only at this call): the caller's mode comes back, as eager's
    ``with`` block gives it back, and the error is eager's."""
    compiled = ember.compile(_lookup_without_grad, mode=mode)
    x = ember.randn(2, 3)
    compiled(ember.tensor([0, 1]), x)
    compiled(ember.tensor([0, 1]), x)
    program = _programs(compiled)[0]
    assert program is not None
    if mode is None:
        assert "set_grad_enabled(False)" in program.source
    with pytest.raises(IndexError, match="out of range"):
        compiled(ember.tensor([0, 9]), x)
    assert ember.is_grad_enabled()
    np.testing.assert_allclose(
        compiled(ember.tensor([3, 2]), x).numpy(),
        _lookup_without_grad(ember.tensor([3, 2]), x).numpy(),
        rtol=1e-6,
    )


class _Doubled(nn.Module):
    def forward(self, w):
        return w * 2


class _Routed(nn.Module):
    """An attribute that ``__getattr__`` makes: the program must keep asking it."""

    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(3, 3)

    def __getattr__(self, name):
        if name == "alias":
            return super().__getattr__("inner")
        return super().__getattr__(name)

    def forward(self, x):
        return self.alias(x)


def test_parameters_are_read_from_their_registries_unless_a_lookup_intervenes():
    """A plain module path reads ``_modules``/``_parameters`` directly (no ``__getattr__``
    call per step); a parametrized weight (a class property) and a module with its own
    ``__getattr__`` keep ``getattr``, and all three follow later changes as eager does."""
    plain = nn.Sequential(nn.Linear(3, 3), nn.GELU())
    param = nn.Sequential(nn.Linear(3, 3))
    nn.utils.parametrize.register_parametrization(param[0], "weight", _Doubled())
    routed = _Routed()
    x = ember.randn(2, 3)
    for model, direct in [(plain, True), (param, False), (routed, False)]:
        compiled = ember.compile(model)
        with ember.no_grad():
            for _ in range(2):
                _close(compiled(x), model(x))
            for p in model.parameters():  # in place: same objects, the probe still holds
                p.add_(0.5)
            _close(compiled(x), model(x))
        (program,) = _programs(compiled)
        assert ("._parameters['weight']" in program.source) is direct, program.source
        for _ in range(2):  # the training pair reads its parameters the same way
            grads = []
            for run in (compiled, model):
                model.zero_grad()
                run(x).square().sum().backward()
                grads.append([p.grad.clone() for p in model.parameters()])
            for got, want in zip(*grads):
                _close(got, want)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_activation_backward_rows_call_their_kernel(approximate, device):
    """``gelu_backward`` (whose check reads only ``approximate``, a constant here) and
    ``threshold_backward`` run their kernel from the program, with their parameter, as the
    compiled training backward calls them; PyTorch's numbers."""
    aten = ember.ops.aten

    def f(g, x):
        return aten.gelu_backward(g, x, approximate=approximate), aten.threshold_backward(g, x, 0.5)

    compiled = ember.compile(f)
    g, x = ember.randn(6, 5, device=device), ember.randn(6, 5, device=device)
    with ember.no_grad():
        compiled(g, x)
        got = compiled(g, x)
    (program,) = _programs(compiled)
    if device != "ref":  # the reference backend has no kernel for them: runners decompose
        assert not any(k.startswith("OP") for k in program.__globals__), program.source
    tg, tx = (torch.tensor(t.cpu().numpy()) for t in (g, x))
    want = (
        torch.ops.aten.gelu_backward(tg, tx, approximate=approximate),
        torch.ops.aten.threshold_backward(tg, tx, 0.5),
    )
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a.cpu().numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_small_temporaries_share_the_calls_arena():
    """Temporaries read only by kernels (and their views) are slices of one buffer a call
    (replay._Arena); a value returned, or returned through a view, or read by a runner, or
    too large, keeps its own buffer, so no result shares memory with another."""
    from ember.compiler import replay

    def f(x, w):
        a = x @ w  # a temporary: read by the fused kernel alone
        b = (a * 2.0).relu()  # returned through its transpose: its own buffer
        c = (x * 3.0).cumsum(0)  # read by a runner: its own buffer
        big = x.repeat(64, 64) @ w.repeat(64, 16)  # 128 KiB, over ARENA_BYTES: its own buffer
        return b.t(), c + 1, big.sum(0)

    compiled = ember.compile(f)
    x, w = ember.randn(4, 8), ember.randn(8, 8)
    with ember.no_grad():
        compiled(x, w)
        got = compiled(x, w)
    (program,) = _programs(compiled)
    assert program.source.count("make(arena__") == 1, program.source  # a's
    arena = [line for line in program.source.splitlines() if "arena__ = empty" in line]
    assert len(arena) == 1 and int(arena[0].split("((")[1].split(",")[0]) <= replay.ARENA_BYTES
    storages = [id(t._storage) for t in got]
    assert len(set(storages)) == len(storages)
    want = f(x, w)
    for g, e in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-5, atol=1e-5)
