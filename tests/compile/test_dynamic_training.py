"""Size-generic training (compiler/joint_dynamic.py): after a size change, one forward/backward
pair serves every batch size of a compiled module called with gradients and of a compiled
whole training step, and training over batches of varying sizes follows eager ember's and
PyTorch's losses, gradients and parameters."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch._dynamo.testing

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.compiler import logs
from ember.compiler.joint_dynamic import GenericJoint

BATCHES = (64, 63, 17, 64, 8, 33, 17, 2)


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_CPU_CACHE", str(tmp_path_factory.getbasetemp() / "fused-cache"))


@pytest.fixture
def logged(capsys):
    """Turns the ``recompiles`` and ``graphs`` logs on (in the test's body: the stderr handler
    takes the stream capsys gives the call) and returns their text so far; off at the end."""

    def text():
        return capsys.readouterr().err

    logs.set_logs(recompiles=False, graphs=False)
    try:
        yield lambda: logs.set_logs(recompiles=True, graphs=True) or text
    finally:
        logs.set_logs(recompiles=False, graphs=False)


def _mlp(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(16, 32), lib.nn.GELU(), lib.nn.Linear(32, 4)).double()


def _copy(model, twin):
    """``twin`` (a PyTorch or ember model of the same layout) given ``model``'s parameters."""
    for mine, theirs in zip(model.parameters(), twin.parameters()):
        with torch.no_grad():
            theirs.copy_(torch.tensor(mine.detach().cpu().numpy()))


def _batch(n, device=None, lib=ember):
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal((n, 16)), rng.integers(0, 4, n)
    if lib is torch:
        return torch.tensor(x), torch.tensor(y)
    return ember.tensor(x, device=device), ember.tensor(y, device=device)


def _numpy(t):
    return t.detach().cpu().numpy() if hasattr(t, "cpu") else np.asarray(t)


def _steps(model, call, device=None, lib=ember, batches=BATCHES):
    """Per step the loss and the gradients (SGD with momentum over ``batches``), and the
    final parameters."""
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    record = []
    for n in batches:
        x, y = _batch(n, device, lib)
        loss = lib.nn.functional.cross_entropy(call(x), y)
        loss.backward()
        record.append([_numpy(loss)] + [_numpy(p.grad) for p in model.parameters()])
        opt.step()
        opt.zero_grad()
    return record, [_numpy(p) for p in model.parameters()]


def _close(got, want, tol):
    for a, b in zip(got, want):
        if isinstance(a, list):
            _close(a, b, tol)
        else:
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _pairs(compiled) -> list:
    """The generic pairs of a compiled function's (or module's) dynamic regions."""
    fn = getattr(compiled, "_compiled", compiled)
    regions = [e.region for entries in fn._cache.values() for e in entries]
    regions = [getattr(r, "forward", r) for r in regions]
    return [r.pair for r in regions if isinstance(getattr(r, "pair", None), GenericJoint)]


def test_module_over_batch_sizes_matches_eager_and_torch(device, logged):
    """A compiled module trained over batches 64, 63, 17...: the first size compiles, the
    second recompiles with the batch dynamic (as torch.compile), the third builds one generic
    pair that every later batch replays; losses, gradients and parameters equal eager ember's
    to 1e-12 and PyTorch's to 1e-10."""
    read = logged()
    model = _mlp(ember).to(device)
    compiled = ember.compile(model)
    got = _steps(model, compiled, device)
    outs = [type(compiled(_batch(n, device)[0]).grad_fn).__name__ for n in (9, 64)]
    err = read()
    eager = _mlp(ember).to(device)
    _close(got, _steps(eager, eager, device), 1e-12)
    theirs = _mlp(torch)
    _copy(_mlp(ember), theirs)
    torch._dynamo.reset()
    counter = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    _close(got, _steps(theirs, torch.compile(theirs, backend=counter), lib=torch), 1e-10)
    assert compiled._compiled._count == 2 == counter.frame_count
    assert len(_pairs(compiled)) == 1
    # the compiled node, at every size
    assert outs == ["CompiledFunctionBackward", "CompiledFunctionBackward"]
    assert "automatic dynamic shapes" in err
    assert err.count("one size-generic forward/backward pair for every size") == 1
    # the pair built at the first replay with gradients at the second size, no other
    assert err.count("compiled backward:") == 1, err


def test_whole_training_step_over_batch_sizes(device, logged):
    """``loss.backward()`` and ``opt.step()`` inside the compiled function (train_region.py):
    the step's forward is generic too, so the loop compiles twice, not once per size."""
    read = logged()
    model = _mlp(ember).to(device)
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    compiled = ember.compile(step)
    losses = [_numpy(compiled(*_batch(n, device))) for n in BATCHES]
    params = [_numpy(p) for p in model.parameters()]
    err = read()
    eager = _mlp(ember).to(device)
    want, want_params = _steps(eager, eager, device)
    _close(losses, [w[0] for w in want], 1e-12)
    _close(params, want_params, 1e-12)
    assert compiled._count == 2
    assert len(_pairs(compiled)) == 1
    assert "one size-generic forward/backward pair for every size" in err


def test_sizes_0_and_1_stay_specialised(logged):
    """A batch of 1 after the dynamic graph compiles again (broadcasting differs at 1, as in
    PyTorch), with the size in the reason; its gradients equal eager's."""
    read = logged()
    model = _mlp(ember)
    compiled = ember.compile(model)
    got = _steps(model, compiled, batches=(8, 9, 5, 1, 7))
    err = read()
    eager = _mlp(ember)
    _close(got, _steps(eager, eager, batches=(8, 9, 5, 1, 7)), 1e-12)
    assert compiled._compiled._count == 3
    assert "expected 9, actual 1" in err or "size mismatch at index 0" in err, err


def _noisy(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(
        lib.nn.Linear(6, 8), lib.nn.BatchNorm1d(8), lib.nn.Dropout(0.3), lib.nn.Linear(8, 3)
    ).double()


def _noisy_steps(model, call, batches):
    losses = []
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    for n in batches:
        x = ember.tensor(np.random.default_rng(n).standard_normal((n, 6)))
        ember.manual_seed(n)  # the same dropout masks in both runs
        loss = (call(x) ** 2).mean()
        loss.backward()
        losses.append(
            [
                _numpy(loss),
                *[_numpy(p.grad) for p in model.parameters()],
                _numpy(model[1].running_var),
            ]
        )
        opt.step()
        opt.zero_grad()
    return losses, [_numpy(b) for b in model.buffers()]


def test_dropout_and_batch_norm_per_size():
    """Dropout draws a mask of each call's size and batch norm normalises over each call's
    batch and updates its running statistics once per call, as in eager."""
    batches = (12, 10, 7, 12, 5, 9)
    model = _noisy(ember)
    compiled = ember.compile(model)
    got = _noisy_steps(model, compiled, batches)
    eager = _noisy(ember)
    _close(got, _noisy_steps(eager, eager, batches), 1e-12)
    assert len(_pairs(compiled)) == 1
    assert model[1].num_batches_tracked.item() == len(batches)


def test_batch_norm_statistics_match_torch():
    """Without dropout: the running statistics after training over varying batches equal
    PyTorch's."""
    torch.manual_seed(0)
    ours = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Linear(8, 3)).double()
    theirs = torch.nn.Sequential(
        torch.nn.Linear(6, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 3)
    ).double()
    _copy(ours, theirs)
    compiled = ember.compile(ours)
    for n in (12, 10, 7, 12, 5):
        x = np.random.default_rng(n).standard_normal((n, 6))
        compiled(ember.tensor(x)).pow(2).mean().backward()
        theirs(torch.tensor(x)).pow(2).mean().backward()
    for a, b in zip(ours.buffers(), theirs.buffers()):
        np.testing.assert_allclose(_numpy(a), b.numpy(), rtol=1e-12, atol=1e-12)
    for a, b in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(_numpy(a.grad), b.grad.numpy(), rtol=1e-10, atol=1e-10)
    assert len(_pairs(compiled)) == 1


def test_a_slice_that_clamps_runs_the_dispatching_code(logged):
    """``h[:100]`` is checked: at batches above 100 the slice clamps, the generic forward
    declines the call before any node is recorded and the dispatching code records it; the
    gradients equal eager's at every size."""

    class Head(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(16, 4).double()

        def forward(self, x):
            return self.lin(x)[:100] * 2

    def run(call, model):
        grads = []
        for n in (8, 9, 12, 30, 120, 10, 130, 25):
            x = _batch(n)[0]
            call(x).sum().backward()
            grads.append([_numpy(p.grad).copy() for p in model.parameters()])
            model.zero_grad()
        return grads

    read = logged()
    ember.manual_seed(0)
    model = Head()
    got = run(ember.compile(model), model)
    err = read()
    ember.manual_seed(0)
    eager = Head()
    _close(got, run(eager, eager), 1e-12)
    assert "one size-generic forward/backward pair for every size" in err
    assert "slice at" in err and "gave [100, 4] where the fit says (_s0, 4)" in err, err
