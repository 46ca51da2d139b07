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

``--train``: a whole training step compiled (forward, ``loss.backward()``, an SGD step,
``zero_grad``: compiler/train_region.py) instead of the forward without grad. Printed per size
besides the medians: the first two calls at that size in the first round (a capture, then a
pair build before issue 17's generic pair: the cost of a new size), and at the end the generic
pair's step (the dynamic entry's, built at the third size) against a step compiled with
``dynamic=False`` at the first size (specialised), alternated, medians: the cost of genericity.
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


def _step(ember, model):
    """A training step over ``model``: forward, a mean-square loss, backward, SGD, zero_grad."""
    opt = ember.optim.SGD(model.parameters(), lr=1e-3)

    def step(x):
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    return step


def _timed(fn, x) -> float:
    start = time.perf_counter()
    fn(x)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mlp", choices=list(MODELS))
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--train", action="store_true", help="a compiled training step")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import contextlib

    import ember

    ember.manual_seed(0)
    model, rest = MODELS[args.model](ember)
    eager = _step(ember, model) if args.train else model
    compiled = ember.compile(_step(ember, model) if args.train else model)
    inputs = {n: ember.randn(n, *rest) for n in SIZES}
    times = {(n, mode): [] for n in SIZES for mode in ("eager", "compiled")}
    first: dict = {n: [] for n in SIZES}
    with contextlib.nullcontext() if args.train else ember.no_grad():
        for round_ in range(args.rounds + 2):
            for n in SIZES:
                for mode, fn in (("eager", eager), ("compiled", compiled)):
                    took = _timed(fn, inputs[n])
                    if round_ > 1:  # the first two rounds hold the captures and builds
                        times[(n, mode)].append(took)
                    elif mode == "compiled" and len(first[n]) < 2:
                        first[n].append(took)
    what = "training steps" if args.train else "calls without grad"
    print(f"{args.model}: {what}, {args.rounds} rounds, sizes {list(SIZES)}, ms (median)")
    for n in dict.fromkeys(SIZES):
        slow = statistics.median(times[(n, "eager")]) * 1e3
        ours = statistics.median(times[(n, "compiled")]) * 1e3
        line = f"  batch {n:3d}: eager {slow:8.3f}  compiled {ours:8.3f}  ({ours / slow:.2f}x)"
        calls = " + ".join(f"{t * 1e3:.1f}" for t in first[n])
        print(line + (f"  first two calls {calls}" if args.train else ""))
    fn = getattr(compiled, "_compiled", compiled)
    print(f"  compiles: {fn._count}")
    if args.train:
        _generic_cost(ember, model, compiled, inputs[SIZES[0]], args.rounds)


def _generic_cost(ember, model, generic, x, rounds) -> None:
    """The generic pair's step against a specialised one at the same size, alternated."""
    specialised = ember.compile(_step(ember, model), dynamic=False)
    for _ in range(3):  # the capture, the pair's build
        specialised(x)
    times: dict = {"generic": [], "specialised": []}
    for _ in range(rounds * 3):
        for mode, fn in (("generic", generic), ("specialised", specialised)):
            times[mode].append(_timed(fn, x))
    ms = {mode: statistics.median(t) * 1e3 for mode, t in times.items()}
    print(
        f"  batch {x.shape[0]}: generic pair {ms['generic']:.3f} ms, specialised "
        f"{ms['specialised']:.3f} ms ({ms['generic'] / ms['specialised']:.2f}x)"
    )


if __name__ == "__main__":
    main()
