"""Training-step time, ember vs PyTorch CPU, on the three models of the nn issue.

    python benchmarks/bench_training.py [--steps 20] [--threads 2] [--models mlp cnn gpt]

Each model is built the same way in both frameworks (same layer shapes, same optimizer), one
warm-up step runs first, then the median of ``--steps`` steps (forward, backward, optimizer step) is
printed with the ember/PyTorch ratio. PyTorch is only a reference here: ember never imports it.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time


def mlp(nn, torchlike):
    model = nn.Sequential(
        nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
    )
    opt = torchlike.optim.Adam(model.parameters(), lr=1e-3)
    x = torchlike.randn(128, 784)
    y = torchlike.randint(0, 10, (128,))
    return model, opt, x, y


def cnn(nn, torchlike):
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 5 * 5, 10),
    )  # fmt: skip
    opt = torchlike.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torchlike.randn(64, 1, 28, 28)
    y = torchlike.randint(0, 10, (64,))
    return model, opt, x, y


GPT_SIZES = {"d": 128, "heads": 4, "layers": 2, "seq": 64, "batch": 16, "vocab": 256}


def gpt(nn, torchlike, device="cpu", written_out=False, weight_decay=0.0, **sizes):
    """GPT of ``layers`` pre-norm blocks (GPT_SIZES: 2 layers, d_model 128, 4 heads, seq 64,
    batch 16, vocab 256; ``sizes`` overrides them), AdamW; bench_cuda.py scales it up on
    ``device``. ``written_out``: attention as minGPT writes it (``q @ k.transpose(-2, -1)``,
    scale, ``masked_fill`` with a causal mask buffer, softmax, ``@ v``) instead of
    ``scaled_dot_product_attention``."""
    d, heads, layers, seq, batch, vocab = ({**GPT_SIZES, **sizes}[k] for k in GPT_SIZES)
    F = nn.functional
    mask = torchlike.tril(torchlike.ones(seq, seq, device=device)).view(1, 1, seq, seq)

    def attention(q, k, v):
        if not written_out:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        t = q.shape[2]
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
        scores = scores.masked_fill(mask[:, :, :t, :t] == 0, float("-inf"))
        return F.softmax(scores, dim=-1) @ v

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            a = attention(q, k, v)
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
            self.blocks = nn.Sequential(*[Block() for _ in range(layers)])
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(torchlike.arange(idx.shape[1], device=idx.device))
            return self.head(self.ln(self.blocks(x))).reshape(-1, vocab)

    model = GPT().to(device)
    opt = torchlike.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=weight_decay)
    x = torchlike.randint(0, vocab, (batch, seq), device=device)
    y = torchlike.randint(0, vocab, (batch * seq,), device=device)
    return model, opt, x, y


def gpt_written(nn, torchlike):
    """Issue 20's GPT: attention written out as minGPT writes it, AdamW with weight decay 0.1."""
    return gpt(nn, torchlike, written_out=True, weight_decay=0.1)


MODELS = {"mlp": mlp, "cnn": cnn, "gpt": gpt, "gpt_written": gpt_written}


def time_steps(lib, build, steps: int) -> float:
    model, opt, x, y = build(lib.nn, lib)
    loss_fn = lib.nn.functional.cross_entropy

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    step()  # warm-up: kernel tables, allocator caches
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    args = parser.parse_args(argv)

    import ember

    ember.set_num_threads(args.threads)  # both frameworks get the same threads
    ember.manual_seed(0)
    try:
        import torch

        torch.set_num_threads(args.threads)
        torch.manual_seed(0)
    except ImportError:
        torch = None
    print(f"{'model':6s} {'ember ms':>10s} {'torch ms':>10s} {'ratio':>8s}")
    for name in args.models:
        ours = time_steps(ember, MODELS[name], args.steps) * 1e3
        theirs = time_steps(torch, MODELS[name], args.steps) * 1e3 if torch else float("nan")
        print(f"{name:6s} {ours:10.2f} {theirs:10.2f} {ours / theirs:8.2f}x")


if __name__ == "__main__":
    main()
