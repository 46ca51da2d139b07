"""Size-generic programs at sizes where an op's shape follows another rule (compiler/size_rules.py):
a slice that clamps, an index or a length past the end, a count of outputs that follows the size.
At every call the compiled function gives eager's result, or raises eager's error: the generic
program checks those nodes' shapes per call and returns to the dispatching code where the fit
does not hold, and a graph whose number of outputs follows a dynamic size specialises its sizes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.compiler import logs


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_CPU_CACHE", str(tmp_path_factory.getbasetemp() / "fused-cache"))


# name: (fn(lib, x), sizes of x's dim 0 in call order; x is (n, 7)). Cases that passed on
# dyn17's head before these checks too (the runner raised eager's error there already) stay as
# guards: narrow, select, index, unfold, view.
CASES = {
    "slice_end": (lambda lib, x: x[:100] * 2 + 1, (4, 5, 6, 150, 7, 101)),
    "slice_both_ends": (lambda lib, x: x[2:-1] * 2 + 1, (5, 6, 7, 2, 3, 8)),
    "narrow": (lambda lib, x: x.narrow(0, 0, 6) * 2 + 1, (8, 9, 10, 5, 4, 12)),
    "select": (lambda lib, x: x.select(0, 5) * 2 + x[0], (8, 9, 10, 5, 3, 12)),
    "index": (lambda lib, x: (x[5] * 2).exp(), (8, 9, 10, 5, 2, 7)),
    "topk": (lambda lib, x: lib.topk(x, 5, dim=0).values * 2 + 1, (8, 9, 10, 4, 3, 6)),
    "unfold": (lambda lib, x: x.unfold(0, 4, 1) * 2 + 1, (8, 9, 10, 3, 150, 4, 2)),
    "split": (lambda lib, x: [t * 2 for t in x.split(4)], (8, 9, 10, 150, 4, 3, 12)),
    "chunk": (lambda lib, x: [t * 2 + 1 for t in x.chunk(3)], (8, 9, 10, 4, 2, 7)),
    "negative_pad": (
        lambda lib, x: lib.nn.functional.pad(x, (0, 0, -2, -3)) * 2 + 1,
        (8, 9, 10, 5, 4, 3, 12),
    ),
    "view": (lambda lib, x: x.view(-1, 4) * 2 + 1, (4, 8, 12, 9, 5, 16)),
    "flip_then_slice": (lambda lib, x: x.flip(0)[:6] * 2 + 1, (8, 9, 10, 3, 150)),
}


def _outcome(fn, lib, x):
    try:
        found = fn(lib, x)
    except Exception as exc:  # eager's error is the expected outcome
        return exc
    return found if isinstance(found, list) else [found]


def _same(out, ours, theirs):
    """The compiled call's outcome against eager ember's and PyTorch's (shapes, values, or
    the error's type and message)."""
    if isinstance(ours, Exception):
        assert isinstance(out, type(ours)) and str(out) == str(ours), (out, ours)
        assert isinstance(theirs, Exception), theirs
        return
    assert not isinstance(out, Exception), out
    assert len(out) == len(ours) == len(theirs)
    for a, b, c in zip(out, ours, theirs):
        assert tuple(a.shape) == tuple(b.shape) == tuple(c.shape)
        np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
        np.testing.assert_allclose(a.cpu().numpy(), c.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_call_gives_eager_result_or_error(name, device):
    fn, sizes = CASES[name]
    compiled = ember.compile(lambda x: fn(ember, x), dynamic=True)
    rng = np.random.default_rng(0)
    with ember.no_grad():
        for n in sizes:
            a = rng.standard_normal((n, 7))
            x = ember.tensor(a, device=device)
            ours = _outcome(fn, ember, x)
            theirs = _outcome(fn, torch, torch.tensor(a))
            _same(_outcome(lambda lib, x: compiled(x), ember, x), ours, theirs)


def test_torch_compile_agrees_on_the_clamped_slice():
    """torch.compile(dynamic=True) gives 100 rows at 150 too (its guard on the clamp)."""
    fn, sizes = CASES["slice_end"]
    compiled = torch.compile(lambda x: fn(torch, x), dynamic=True, backend="eager")
    ours = ember.compile(lambda x: fn(ember, x), dynamic=True)
    for n in sizes:
        a = np.random.default_rng(n).standard_normal((n, 3))
        theirs = compiled(torch.tensor(a))
        np.testing.assert_allclose(ours(ember.tensor(a)).numpy(), theirs.numpy(), rtol=1e-12)


def _generic(compiled):
    regions = [e.region for entries in compiled._cache.values() for e in entries]
    found = [r for r in regions if hasattr(r, "generic")]
    return found[-1].generic if found else None


def test_a_clamped_slice_returns_to_the_dispatching_code_with_the_reason(capsys):
    """The generic program serves the sizes where the fit holds; at 150 the slice's shape
    differs, the log says so, and that call runs the dispatching code."""
    compiled = ember.compile(lambda x: x[:100] * 2 + 1, dynamic=True)
    logs.set_logs(recompiles=True)
    try:
        for n in (4, 5, 150, 6):
            assert tuple(compiled(ember.randn(n, 3)).shape) == (min(n, 100), 3)
    finally:
        logs.set_logs(recompiles=False)
    err = capsys.readouterr().err
    assert "one size-generic program for every size" in err
    assert "size-generic program: slice at" in err and "gave [100, 3]" in err
    assert compiled._count == 1
    program = _generic(compiled)
    assert "MISS" in program.source and "_s0" in program.source


def test_polymorphic_nodes_are_trusted_and_others_checked():
    """An MLP's nodes (linear, gelu, the chain) keep their fitted shapes at every size: no
    check in the program; a slice and an op the rules do not know (flip) are checked."""

    def mlp(x, w, b):
        return ember.nn.functional.gelu(ember.nn.functional.linear(x, w, b)).tanh() + x.sum()

    w, b = ember.randn(5, 3), ember.randn(5)
    compiled = ember.compile(mlp, dynamic=True)
    with ember.no_grad():
        for n in (4, 6, 9):
            x = ember.randn(n, 3)
            np.testing.assert_allclose(compiled(x, w, b).numpy(), mlp(x, w, b).numpy(), 1e-6)
    assert "MISS" not in _generic(compiled).source
    compiled = ember.compile(lambda x: x.flip(0)[1:] * 2, dynamic=True)
    for n in (4, 6, 9):
        compiled(ember.randn(n, 3))
    assert _generic(compiled).source.count("MISS") == 2
    # a view to the call's batch and static sizes is trusted; with -1 (a division) checked
    compiled = ember.compile(lambda x: x.view(x.size(0), 2, x.size(1) // 2) * 2)
    for n in (5, 6, 9):
        x = ember.randn(n, 8)
        ember._dynamo.mark_dynamic(x, 0)
        np.testing.assert_array_equal(compiled(x).numpy(), (x.view(n, 2, 4) * 2).numpy())
    assert "MISS" not in _generic(compiled).source
    compiled = ember.compile(lambda x: x.view(-1, 4) * 2, dynamic=True)
    for n in (5, 6, 9):
        compiled(ember.randn(n, 8))
    assert _generic(compiled).source.count("MISS") == 1


def test_split_of_a_dynamic_dim_is_guarded_on_its_count_and_of_a_static_dim_generic(capsys):
    """split's number of outputs follows the size it splits: on a dynamic dim the entry is
    guarded on the count (a call with another count captures again, the guard as the reason,
    one compile per count, torch.compile(dynamic=True) makes four here); on a static dim (a qkv
    projection) the graph stays generic."""
    from torch._dynamo.testing import CompileCounter

    sizes = (8, 9, 13, 10, 11, 6)
    counter = CompileCounter()
    theirs = torch.compile(lambda x: [t * 2 for t in x.split(4)], backend=counter, dynamic=True)
    compiled = ember.compile(lambda x: [t * 2 for t in x.split(4)], dynamic=True)
    logs.set_logs(recompiles=True, guards=True)
    try:
        for n in sizes:
            a = np.random.default_rng(n).standard_normal((n, 3))
            out = compiled(ember.tensor(a))
            expected = theirs(torch.tensor(a))
            assert [tuple(t.shape) for t in out] == [tuple(t.shape) for t in expected]
            for t, e in zip(out, expected):
                np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-12)
        err = capsys.readouterr().err
        assert "size guard: len(split(x.size()[0], 4, 0)) == 2" in err
        assert "- 0/0: len(split(x.size()[0], 4, 0)) == 2" in err  # the recompile's reason
        assert compiled._count == 3 <= counter.frame_count  # one per count (PyTorch: 4)
        compiled = ember.compile(lambda x: [t * 2 for t in x.split(2, dim=1)])
        for n in (8, 9, 13):
            x = ember.randn(n, 4)
            ember._dynamo.mark_dynamic(x, 0)  # the batch dim only (dynamic=True: every dim)
            assert [tuple(t.shape) for t in compiled(x)] == [(n, 2), (n, 2)]
    finally:
        logs.set_logs(recompiles=False, guards=False)
    assert "one size-generic program for every size" in capsys.readouterr().err
    assert compiled._count == 1


def test_a_chain_whose_size_may_be_zero_runs_op_by_op(device, capsys):
    """x[2:-1] is empty at 3 rows: the fitted size _s0 - 3 may be 0 or 1, which a fused
    kernel's loop nest refuses, so that chain is not fused in the generic program."""
    compiled = ember.compile(lambda x: (x[2:-1] * 2 + 1).tanh(), dynamic=True)
    logs.set_logs(fusion=True)
    try:
        for n in (5, 6, 7, 3, 4):
            x = ember.randn(n, 3, dtype=ember.float64, device=device)
            out = compiled(x).cpu().numpy()
            np.testing.assert_array_equal(out, (x[2:-1] * 2 + 1).tanh().cpu().numpy())
    finally:
        logs.set_logs(fusion=False)
    assert "may be 0 or 1 at a call" in capsys.readouterr().err


def test_half_of_a_dynamic_dim_read_as_a_size():
    """``x[:, : x.size(1) // 2]``: the slice's end is the call's size, so every call gives
    eager's result whether or not the fit holds (both dims change)."""

    def fn(x):
        return x[:, : x.size(1) // 2] * 2 + 1

    compiled = ember.compile(fn, dynamic=True)
    for n, m in ((4, 8), (5, 10), (6, 7), (9, 16), (3, 150), (2, 3)):
        a = np.random.default_rng(m).standard_normal((n, m))
        out = compiled(ember.tensor(a))
        np.testing.assert_array_equal(out.numpy(), fn(ember.tensor(a)).numpy())
        np.testing.assert_allclose(out.numpy(), fn(torch.tensor(a)).numpy(), rtol=1e-12)


def test_a_max_over_a_dim_that_may_be_empty_is_checked():
    """amax raises over an empty dim: over ``x[4:]`` (``_s0 - 4`` rows, none at 4) the
    program runs its runner, so the call at 4 raises eager's error."""

    def fn(x):
        return x[4:].amax(0, keepdim=True) * 2

    compiled = ember.compile(fn, dynamic=True)
    for n in (6, 7, 9, 4, 12):
        x = ember.randn(n, 3)
        ours = _outcome(lambda lib, x: fn(x), ember, x)
        theirs = _outcome(lambda lib, x: fn(x), torch, torch.tensor(x.numpy()))
        _same(_outcome(lambda lib, x: compiled(x), ember, x), ours, theirs)
