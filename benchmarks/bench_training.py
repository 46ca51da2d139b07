"""Training-step time, ember vs PyTorch CPU, on the three models of the nn issue.

    python benchmarks/bench_training.py [--steps 20] [--threads 2] [--models mlp cnn gpt]

Each model is built the same way in both frameworks (same layer shapes, same optimizer), one
warm-up step runs first, then the median of ``--steps`` steps (forward, backward, optimizer step) is
printed with the ember/PyTorch ratio. PyTorch is only a reference here: ember never imports it.
"""

from __future__ import annotations

import argparse
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


def gpt(nn, torchlike):
    """2 layers, d_model 128, 4 heads, seq 64, batch 16, vocab 256, AdamW."""
    F = nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(128), nn.LayerNorm(128)
            self.qkv, self.proj = nn.Linear(128, 384), nn.Linear(128, 128)
            self.mlp = nn.Sequential(nn.Linear(128, 512), nn.GELU(), nn.Linear(512, 128))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
            q, k, v = (z.view(b, t, 4, c // 4).transpose(1, 2) for z in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(256, 128), nn.Embedding(64, 128)
            self.blocks = nn.Sequential(Block(), Block())
            self.ln, self.head = nn.LayerNorm(128), nn.Linear(128, 256, bias=False)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(torchlike.arange(idx.shape[1], device=idx.device))
            return self.head(self.ln(self.blocks(x))).reshape(-1, 256)

    model = GPT()
    opt = torchlike.optim.AdamW(model.parameters(), lr=3e-4)
    x = torchlike.randint(0, 256, (16, 64))
    y = torchlike.randint(0, 256, (16 * 64,))
    return model, opt, x, y


MODELS = {"mlp": mlp, "cnn": cnn, "gpt": gpt}


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
