"""A compiled forward at varying batch sizes: eager ember against ember.compile.

    python benchmarks/bench_dynamic.py [--model mlp|gpt] [--rounds 30] [--threads 1]

The model (``mlp``: Linear 256 -> 1024, GELU, Linear -> 256, a residual and tanh; ``small``:
the same at width 64, bound by the per-op work rather than the matmuls; ``gpt``: a
pre-norm transformer block over sequences of 32 tokens of width 128, causal attention with 4
heads) runs without grad on batches of the sizes in ``SIZES`` in turn, ``--rounds`` times, the
compiled model (``ember.compile(model)``: automatic dynamic after the second size) and the
eager one alternated call by call. Printed per size: the median of the eager and compiled calls
(after a warm-up round, which holds the captures) and their ratio; the compile count. Run it
with another checkout on ``PYTHONPATH`` (and its venv) to compare compilers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

SIZES = (64, 63, 50, 17, 64, 33, 8)


def _mlp(ember, width=256):
    nn, f = ember.nn, ember.nn.functional

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

        def forward(self, x):
            return (self.down(f.gelu(self.up(x)) * 0.5) + x).tanh()

    return MLP(), (width,)


MODELS = {"mlp": _mlp, "small": lambda ember: _mlp(ember, 64), "gpt": lambda ember: _gpt(ember)}


def _gpt(ember):
    nn, f = ember.nn, ember.nn.functional
    width, heads, tokens = 128, 4, 32

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
            self.register_buffer("mask", ember.tril(ember.ones(tokens, tokens)) == 0)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / (C // heads) ** 0.5)
            att = f.softmax(att.masked_fill(self.mask, float("-inf")), dim=-1)
            y = (att @ v).transpose(1, 2).reshape(B, T, C)
            x = x + self.proj(y)
            return x + self.down(f.gelu(self.up(self.ln2(x))))

    return Block(), (tokens, width)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mlp", choices=list(MODELS))
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import ember

    ember.manual_seed(0)
    model, rest = MODELS[args.model](ember)
    compiled = ember.compile(model)
    inputs = {n: ember.randn(n, *rest) for n in SIZES}
    times = {(n, mode): [] for n in SIZES for mode in ("eager", "compiled")}
    with ember.no_grad():
        for round_ in range(args.rounds + 1):
            for n in SIZES:
                for mode, fn in (("eager", model), ("compiled", compiled)):
                    start = time.perf_counter()
                    fn(inputs[n])
                    if round_:  # the first round holds the captures and builds
                        times[(n, mode)].append(time.perf_counter() - start)
    print(f"{args.model}: {args.rounds} rounds, sizes {list(SIZES)}, ms per call (median)")
    for n in dict.fromkeys(SIZES):
        eager = statistics.median(times[(n, "eager")]) * 1e3
        ours = statistics.median(times[(n, "compiled")]) * 1e3
        print(f"  batch {n:3d}: eager {eager:8.3f}  compiled {ours:8.3f}  ({ours / eager:.2f}x)")
    print(f"  compiles: {compiled._compiled._count}")


if __name__ == "__main__":
    main()
