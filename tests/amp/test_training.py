"""Training under CPU bfloat16 autocast: an MLP and a small GPT, 50 AdamW steps each, track the
float32 loss curve and PyTorch's own autocast curve from the same weights; the activations a
forward pass keeps for backward shrink under autocast."""

from __future__ import annotations

import pytest

import ember

from ..saved_graph import saved_bytes
from . import models as M

torch = pytest.importorskip("torch")

STEPS = 50
SMALL_GPT = {"d": 32, "heads": 2, "layers": 1, "seq": 16, "vocab": 32}
CASES = {
    "mlp": (lambda lib: M.mlp(lib), lambda lib: M.mlp_data(lib), 1e-2),
    "gpt": (
        lambda lib: M.gpt(lib, **SMALL_GPT),
        lambda lib: M.gpt_data(lib, batch=4, seq=SMALL_GPT["seq"], vocab=SMALL_GPT["vocab"]),
        1e-2,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bfloat16_autocast_tracks_float32(name):
    build, data, lr = CASES[name]
    full = M.train(ember, build(ember), data(ember), STEPS, lr=lr)
    mixed = M.train(ember, build(ember), data(ember), STEPS, ember.bfloat16, lr=lr)
    theirs = M.train(torch, build(torch), data(torch), STEPS, torch.bfloat16, lr=lr)
    assert mixed[-1] < 0.25 * mixed[0], f"{name}: bf16 training did not learn: {mixed[::10]}"
    for step, (f, m, t) in enumerate(zip(full, mixed, theirs)):
        # bfloat16 keeps 8 bits of mantissa: losses agree to a few parts in a thousand
        assert abs(m - f) <= 0.02 * f + 2e-3, f"{name}, step {step}: bf16 {m}, float32 {f}"
        assert abs(m - t) <= 0.02 * t + 2e-3, f"{name}, step {step}: ember {m}, torch {t}"


def test_autocast_shrinks_saved_activations():
    """bfloat16 products save bfloat16 inputs: half the bytes of what they replace (float32
    norms and losses still save float32, as in PyTorch)."""
    model = M.gpt(ember, d=64, heads=4, layers=2, seq=32, vocab=64)
    x, y = M.gpt_data(ember, batch=8, seq=32, vocab=64)
    full = saved_bytes(ember.nn.functional.cross_entropy(model(x), y))
    with ember.autocast("cpu"):
        mixed = saved_bytes(ember.nn.functional.cross_entropy(model(x), y))
    assert mixed < 0.75 * full, f"the graph saves {mixed} bytes under autocast, {full} without"
