"""The joint pair's partition (compiler/partition.py): cheap forward values are recomputed by
the compiled backward instead of saved, so the pair saves fewer bytes than before and no more
than PyTorch's eager autograd, with eager's and PyTorch's gradients in float64, a dropout mask
never drawn again, in both modes. The models here are small: the tests of recomputation lower
the partition's floor (``SAVE_BELOW_BYTES``) to 0, and one test checks the floor itself."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.compiler import partition
from tests.compile.test_zoo import _gpt_setup

from ..saved_graph import saved_bytes

torch = pytest.importorskip("torch")

D, HEADS, T, BATCH = 8, 2, 5, 3


def _model(lib, kind: str):
    """The same model in ember or torch: ``mlp`` (linear, GELU, linear) or ``block`` (a GPT
    block: layer_norm, causal attention, GELU MLP, residuals)."""
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
            self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
            self.fc1, self.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
            causal = np.triu(np.ones((T, T), dtype=bool), 1)
            self.register_buffer("causal", lib.tensor(causal))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=-1)
            q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // HEADS))
            att = att.masked_fill(self.causal, float("-inf")).softmax(-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, c))
            return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))

    if kind == "mlp":
        return nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))
    return Block()


def _pair(kind: str, device: str):
    """``(ember model, torch model)`` with the same float64 parameters."""
    ember.manual_seed(0)
    torch.manual_seed(0)
    theirs = _model(torch, kind).double()
    ours = _model(ember, kind).to(device=device, dtype=ember.float64)
    state = {k: ember.tensor(v.numpy()).to(device) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)
    return ours, theirs


class _Spy:
    """Records each partition: the values saved and the nodes recomputed. ``floor``: the
    partition's SAVE_BELOW_BYTES (0: every size is recomputed, as these small models need)."""

    def __init__(self, monkeypatch, floor=0):
        monkeypatch.setattr(partition, "SAVE_BELOW_BYTES", floor)
        self.found: list = []
        choose = partition.choose

        def spy(*args, **kwargs):
            saved, recomputed = choose(*args, **kwargs)
            self.found.append((saved, recomputed))
            return saved, recomputed

        monkeypatch.setattr(partition, "choose", spy)

    def kinds(self):
        (saved, recomputed), *_ = self.found
        return [v.node().kind() for v in saved], [n.kind() for n in recomputed]


def _joints(compiled):
    regions = [e.region for es in compiled._compiled._cache.values() for e in es if e.region]
    return [r.joint for r in regions]


def _step(model, run, x, lr=0.1):
    """One SGD step of ``run`` (the model or its compiled form); returns the gradients."""
    model.zero_grad()
    out = run(x)
    (out * out).sum().backward()
    grads = [p.grad.detach().cpu().numpy().copy() for p in model.parameters()]
    with ember.no_grad() if isinstance(out, ember.Tensor) else torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
    return out, grads


# bytes saved by the pair that saved every forward value the backward reads (the partition
# before recomputation), float64, the batch of the tests: gelu(h) no longer among them
BEFORE = {"mlp": 10688, "block": 23993}


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
@pytest.mark.parametrize("kind", ["mlp", "block"])
def test_recomputes_gelu_and_saves_less_with_eager_gradients(kind, mode, device, monkeypatch):
    spy = _Spy(monkeypatch)
    ours, theirs = _pair(kind, device)
    twin, _ = _pair(kind, device)
    compiled = ember.compile(ours, mode=mode)
    x = np.random.default_rng(1).standard_normal((BATCH, T, D))
    for _ in range(3):  # capture, build the pair, run the pair; parameters change each step
        got, grads = _step(ours, compiled, ember.tensor(x).to(device))
        _, eager = _step(twin, twin, ember.tensor(x).to(device))
        want, oracle = _step(theirs, theirs, torch.tensor(x))
        np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-9)
        for g, e, o in zip(grads, eager, oracle):
            np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(g, o, rtol=1e-9, atol=1e-12)
    saved, recomputed = spy.kinds()
    assert "ember::gelu" in recomputed and "ember::gelu" not in saved
    (joint,) = _joints(compiled)
    assert joint.saved_bytes < BEFORE[kind]
    assert joint.saved_bytes <= saved_bytes(theirs(torch.tensor(x)))
    if kind == "mlp":  # x, h = x @ W1.t() + b1, W2.t(): gelu(h) recomputed from h
        assert joint.saved_bytes == 8 * (x.size + BATCH * T * 4 * D + 4 * D * D)


def test_dropout_mask_is_saved_not_drawn_again(device, monkeypatch):
    """The GPT of the zoo in training mode: its dropout masks are drawn once (eager's
    gradients with the same seeds), the pair saves less than before and no more than eager
    ember's autograd."""
    spy = _Spy(monkeypatch)

    def build():
        ember.manual_seed(0)
        model, batch = _gpt_setup()
        return model.to(device=device, dtype=ember.float64), batch

    (model, batch), (twin, _) = build(), build()
    compiled = ember.compile(model)
    x, _ = batch(ember.Generator().manual_seed(1))
    x = x.to(device)
    for step in range(3):
        found = []
        for run, m in ((compiled, model), (twin, twin)):
            ember.manual_seed(10 + step)
            m.zero_grad()
            out = run(x)
            (out * out).sum().backward()
            found.append([p.grad.detach().cpu().numpy() for p in m.parameters()])
        for got, want in zip(*found):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    saved, recomputed = spy.kinds()
    assert not any(k in ("ember::uniform_", "ember::empty") for k in recomputed)
    assert "ember::gelu" in recomputed and "ember::gelu" not in saved
    (joint,) = _joints(compiled)
    assert joint.saved_bytes < 72256  # every value the backward reads, as before
    ember.manual_seed(10)
    assert joint.saved_bytes <= saved_bytes(twin(x))


def test_values_below_the_floor_are_saved_not_recomputed(monkeypatch):
    """gelu(h) of a few KiB is saved rather than recomputed by a call of its own: the pair saves
    what PyTorch's eager autograd saves (x, h, gelu(h), W2), with the same gradients."""
    spy = _Spy(monkeypatch, floor=partition.SAVE_BELOW_BYTES)
    ours, theirs = _pair("mlp", "cpu")
    compiled = ember.compile(ours)
    x = np.random.default_rng(1).standard_normal((BATCH, T, D))
    for _ in range(2):
        _, grads = _step(ours, compiled, ember.tensor(x))
        _, oracle = _step(theirs, theirs, torch.tensor(x))
        for g, o in zip(grads, oracle):
            np.testing.assert_allclose(g, o, rtol=1e-9, atol=1e-12)
    _, recomputed = spy.kinds()
    assert "ember::gelu" not in recomputed  # saved (as the view the second product reads)
    (joint,) = _joints(compiled)
    h = BATCH * T * 4 * D
    assert joint.saved_bytes == 8 * (x.size + 2 * h + 4 * D * D)
    assert joint.saved_bytes == saved_bytes(theirs(torch.tensor(x)))


def test_explain_reports_the_bytes_saved(monkeypatch):
    monkeypatch.setattr(partition, "SAVE_BELOW_BYTES", 0)  # gelu(h) recomputed at this size
    ours, _ = _pair("mlp", "cpu")
    x = ember.tensor(np.random.default_rng(1).standard_normal((BATCH, T, D)))
    out = ember._dynamo.explain(ours)(x)
    assert out.saved_bytes == 8 * (x.numel() + BATCH * T * 4 * D + 4 * D * D)
    assert f"Saved for backward: {out.saved_bytes} bytes" in str(out)
    with ember.no_grad():
        assert ember._dynamo.explain(ours)(x).saved_bytes is None
