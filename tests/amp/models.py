"""An MLP and a small GPT written once for ember and torch (``lib``), with weights from numpy so
both libraries start from the same point; used by the mixed-precision training tests and
benchmarks/bench_amp.py."""

from __future__ import annotations

import numpy as np


def _load(lib, model, seed: int):
    """Overwrite every parameter with seeded numpy values (PyTorch's default init ranges)."""
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for name, p in model.named_parameters():
            shape = tuple(p.shape)
            if name.endswith("bias") or "ln" in name:
                values = np.zeros(shape) if name.endswith("bias") else np.ones(shape)
            else:
                bound = 1.0 / np.sqrt(shape[-1])
                values = rng.uniform(-bound, bound, shape)
            p.copy_(lib.tensor(values.astype(np.float32)))
    return model


def mlp(lib, d_in=64, hidden=128, classes=10, seed=0):
    nn = lib.nn
    model = nn.Sequential(
        nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
        nn.Linear(hidden, classes),
    )  # fmt: skip
    return _load(lib, model, seed)


def gpt(lib, d=64, heads=4, layers=2, seq=32, vocab=64, seed=0):
    """Pre-norm transformer blocks over token and position embeddings, as bench_training's."""
    nn = lib.nn
    F = nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
            self.blocks = nn.Sequential(*[Block() for _ in range(layers)])
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(lib.arange(idx.shape[1], device=idx.device))
            return self.head(self.ln(self.blocks(x))).reshape(-1, vocab)

    return _load(lib, GPT(), seed)


def mlp_data(lib, batch=64, d_in=64, classes=10, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, d_in)).astype(np.float32)
    y = (x[:, :classes].argmax(1)).astype(np.int64)  # learnable: the largest of 10 features
    return lib.tensor(x), lib.tensor(y)


def gpt_data(lib, batch=8, seq=32, vocab=64, seed=1):
    """Sequences that count up modulo ``vocab``: the next token is predictable."""
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, vocab, (batch, 1))
    tokens = (starts + np.arange(seq + 1)) % vocab
    return lib.tensor(tokens[:, :-1].astype(np.int64)), lib.tensor(
        tokens[:, 1:].reshape(-1).astype(np.int64)
    )


def train(lib, model, data, steps, autocast_dtype=None, lr=3e-3):
    """Losses of ``steps`` AdamW steps; forward and loss in CPU autocast when a dtype is given."""
    x, y = data
    opt = lib.optim.AdamW(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        if autocast_dtype is None:
            loss = lib.nn.functional.cross_entropy(model(x), y)
        else:
            with lib.autocast("cpu", dtype=autocast_dtype):
                loss = lib.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
    return losses
