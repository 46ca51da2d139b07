"""Training-step time and memory, ember vs PyTorch CPU: the nn issue's models and minGPT's.

    python benchmarks/bench_training.py [--steps 20] [--threads 1 2] [--rounds 3] [--share]
                                        [--clock wall|cpu]
                                        [--models mlp cnn gpt gpt_written mingpt]

Each model is built the same way in both frameworks (same layer shapes, same optimizer), and
each (library, model, threads) runs in its own process (isolate.py). One warm-up step runs
first, then the median of ``--steps`` steps (forward, backward, optimizer step) is printed with
the ember/PyTorch ratio, and the memory the steps take: the peak resident set during them
minus the resident set before them, each library's native code already loaded. ``--share``
adds a third process per model: ember's step timed with PyTorch imported and running the same
model's step before each of ember's (issue 20: "sharing the process"), against ember alone.
PyTorch is only a reference here: ember never imports it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from isolate import in_own_process, load_library, ratio


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


# minGPT's projects/adder as the repository configures it: model_type "gpt-nano" (3 layers,
# 3 heads, n_embd 48), 2-digit addition (vocab 10, block size 3 * 2 = 6), the trainer's batch
# of 64; about 0.09M parameters, so a step is bound by the cost of each op, not by its work.
MINGPT_SIZES = {"layers": 3, "heads": 3, "d": 48, "vocab": 10, "block": 6, "batch": 64}


def mingpt(nn, torchlike, **sizes):
    """minGPT's model.py as written (NewGELU in tanh form written out, dropout 0.1 after the
    embeddings, the attention weights and both projections, attention with ``masked_fill`` on a
    causal mask buffer), its optimizer (AdamW, betas (0.9, 0.95), weight decay 0.1 on the Linear
    weights only, lr 5e-4 as adder.py sets it) and adder.py's targets, whose first 2 * ndigit - 1
    positions are ignored by the loss (-100 here, PyTorch's default ``ignore_index``, where
    minGPT writes -1 and passes ``ignore_index=-1``: the same loss). The trainer also clips the
    gradient norm to 1.0: ``CLIP_GRAD_NORM``."""
    layers, heads, d, vocab, block, batch = ({**MINGPT_SIZES, **sizes}[k] for k in MINGPT_SIZES)
    F = nn.functional

    class NewGELU(nn.Module):
        def forward(self, x):
            inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torchlike.pow(x, 3.0))
            return 0.5 * x * (1.0 + torchlike.tanh(inner))

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.attn_dropout, self.resid_dropout = nn.Dropout(0.1), nn.Dropout(0.1)
            mask = torchlike.tril(torchlike.ones(block, block)).view(1, 1, block, block)
            self.register_buffer("bias", mask)

        def forward(self, x):
            b, t, c = x.size()
            q, k, v = self.c_attn(x).split(d, dim=2)
            k = k.view(b, t, heads, c // heads).transpose(1, 2)
            q = q.view(b, t, heads, c // heads).transpose(1, 2)
            v = v.view(b, t, heads, c // heads).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
            att = self.attn_dropout(F.softmax(att, dim=-1))
            y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
            return self.resid_dropout(self.c_proj(y))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn, self.ln_2 = (
                nn.LayerNorm(d),
                CausalSelfAttention(),
                nn.LayerNorm(d),
            )
            self.c_fc, self.c_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.act, self.dropout = NewGELU(), nn.Dropout(0.1)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.dropout(self.c_proj(self.act(self.c_fc(self.ln_2(x)))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe, self.drop = (
                nn.Embedding(vocab, d),
                nn.Embedding(block, d),
                nn.Dropout(0.1),
            )
            self.h = nn.ModuleList([Block() for _ in range(layers)])
            self.ln_f, self.lm_head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            pos = torchlike.arange(0, idx.size(1), dtype=torchlike.long).unsqueeze(0)
            x = self.drop(self.wte(idx) + self.wpe(pos))
            for block_ in self.h:
                x = block_(x)
            logits = self.lm_head(self.ln_f(x))
            return logits.view(-1, logits.size(-1))

    model = GPT()
    decay = [m.weight for m in model.modules() if isinstance(m, nn.Linear)]
    chosen = {id(p) for p in decay}
    no_decay = [p for p in model.parameters() if id(p) not in chosen]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    opt = torchlike.optim.AdamW(groups, lr=5e-4, betas=(0.9, 0.95))
    x = torchlike.randint(0, vocab, (batch, block))
    y = torchlike.randint(0, vocab, (batch, block))
    y[:, : 2 * 2 - 1] = -100
    return model, opt, x, y.view(-1)


MODELS = {"mlp": mlp, "cnn": cnn, "gpt": gpt, "gpt_written": gpt_written, "mingpt": mingpt}
# The trainer's gradient clipping (minGPT: ``clip_grad_norm_(model.parameters(), 1.0)``).
CLIP_GRAD_NORM = {"mingpt": 1.0}


def make_step(lib, name: str):
    """The training step of model ``name`` in library ``lib`` (seeded the same in both)."""
    lib.manual_seed(0)
    model, opt, x, y = MODELS[name](lib.nn, lib)
    loss_fn, clip = lib.nn.functional.cross_entropy, CLIP_GRAD_NORM.get(name)

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        if clip is not None:
            lib.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        return loss

    return step


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def _reset_peak() -> None:
    """Reset the resident-set high-water mark (VmHWM) to the resident set now (Linux 4.0+), so
    that the peak is the steps' own and not that of the imports or the model's construction."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _load_native(lib) -> None:
    """What a library loads on its first matrix product, loaded before the steps' memory is
    measured: ember opens oneDNN then (12 MiB of library pages, its static constructors'),
    PyTorch maps its own at import. The steps' memory is then their tensors, caches and the
    code they run, in both, not one library's loading."""
    lib.ones(2, 2) @ lib.ones(2, 2)


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def worker(library: str, name: str, steps: int, threads: int, beside: str | None, clock) -> dict:
    """Median step time of ``name`` in ``library``, and the memory the steps take: the
    high-water mark of the resident set during them minus the resident set before the first
    (the activations kept for backward, gradients, optimizer state, allocator caches). With
    ``beside`` (``torch``), that library is imported and its own step of the same model runs
    before each timed step, in the same process and on the same threads. ``clock``: wall time,
    or the process's CPU time (``--clock cpu``: steadier on a loaded machine at one thread; at
    two it also counts the workers' spinning)."""
    lib = load_library(library, threads)
    other = make_step(load_library(beside, threads), name) if beside else None
    step = make_step(lib, name)
    if other:
        other()
    _load_native(lib)
    before = _status_kib("VmRSS")
    _reset_peak()
    step()  # warm-up: kernel tables, allocator caches, optimizer state
    times = []
    for _ in range(steps):
        if other:
            other()
        start = clock()
        step()
        times.append(clock() - start)
    peak = _status_kib("VmHWM")
    return {"ms": statistics.median(times) * 1e3, "step_mib": (peak - before) / 1024,
            "hwm_mib": peak / 1024}  # fmt: skip


def measure(name: str, threads: int, args) -> dict:
    """Each configuration in its own process, ``--rounds`` times taking turns; the best median
    of each (a noisy neighbour on the shared machine slows them all alike, not one of them)."""
    configs = {"ember": ("ember", []), "torch": ("torch", [])}
    if args.share:
        configs["shared"] = ("ember", ["--beside", "torch"])
    best: dict = {}
    for _ in range(args.rounds):
        for key, (library, extra) in configs.items():
            options = ["--models", name, "--steps", str(args.steps), "--clock", args.clock, *extra]
            got = in_own_process(__file__, library, options, threads)
            if key not in best or got["ms"] < best[key]["ms"]:
                best[key] = got
    return best


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, nargs="+", default=[2])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--clock", choices=list(CLOCKS), default="wall")
    parser.add_argument("--share", action="store_true", help="also time ember beside PyTorch")
    parser.add_argument("--beside", choices=["torch"], help="(worker) the library sharing it")
    parser.add_argument("--worker", choices=["ember", "torch"])
    args = parser.parse_args(argv)
    if args.worker:
        clock = CLOCKS[args.clock]
        got = worker(args.worker, args.models[0], args.steps, args.threads[0], args.beside, clock)
        print(json.dumps(got))
        return
    columns = ["ember ms", "torch ms", "ratio", "ember MiB", "torch MiB", "ratio"]
    columns += ["ember HWM", "torch HWM"] + (["shared ms", "shr/alone"] if args.share else [])
    for threads in args.threads:
        print(f"{threads} thread(s), median of {args.steps} steps ({args.clock} clock), "
              f"best of {args.rounds} round(s)")  # fmt: skip
        print(f"{'model':12s}" + "".join(f"{c:>10s}" for c in columns))
        for name in args.models:
            got = measure(name, threads, args)
            ours, theirs = got["ember"], got["torch"]
            cells = [f"{ours['ms']:.2f}", f"{theirs['ms']:.2f}", ratio(ours["ms"], theirs["ms"])]
            cells += [f"{ours['step_mib']:.1f}", f"{theirs['step_mib']:.1f}"]
            cells += [ratio(ours["step_mib"], theirs["step_mib"])]
            cells += [f"{ours['hwm_mib']:.1f}", f"{theirs['hwm_mib']:.1f}"]
            if args.share:
                cells += [f"{got['shared']['ms']:.2f}", ratio(got["shared"]["ms"], ours["ms"])]
            print(f"{name:12s}" + "".join(f"{c:>10s}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
