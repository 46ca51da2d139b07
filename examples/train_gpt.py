"""Train a small character-level GPT on the source code of Python's standard library, then sample.

The corpus exists offline on every machine with Python. Run:

    python examples/train_gpt.py --steps 300

Options: --device (any installed backend: cpu, cuda, xpu...), --steps, --epochs (passes over the
corpus instead of a step count), --checkpoint (where to save; the script reloads it and checks that
the reloaded model gives the same loss).
"""

from __future__ import annotations

import argparse
import math
import os
import sysconfig
import time

import ember
import ember.nn as nn
import ember.nn.functional as F

try:
    from tqdm import tqdm
except ImportError:  # tqdm is in ember[examples]; fall back to plain progress
    tqdm = None


def load_corpus(max_bytes: int) -> bytes:
    """The concatenated .py files of the standard library, as bytes (vocabulary: 256 values)."""
    root = sysconfig.get_paths()["stdlib"]
    chunks, total = [], 0
    for directory, _dirs, files in sorted(os.walk(root)):
        if "site-packages" in directory or "test" in directory.split(os.sep):
            continue
        for name in sorted(files):
            if name.endswith(".py"):
                with open(os.path.join(directory, name), "rb") as handle:
                    data = handle.read()
                chunks.append(data)
                total += len(data)
                if total >= max_bytes:
                    return b"".join(chunks)[:max_bytes]
    return b"".join(chunks)


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention and an MLP, each with a residual."""

    def __init__(self, d_model: int, heads: int, dropout: float):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model),
            nn.GELU(),
            nn.Linear(4 * d_model, d_model),
            nn.Dropout(dropout),
        )
        self.dropout = dropout

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        attn = F.scaled_dot_product_attention(
            q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0
        )
        x = x + self.proj(attn.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(
        self, vocab: int, context: int, d_model: int, heads: int, layers: int, dropout=0.0
    ):
        super().__init__()
        self.context = context
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(context, d_model)
        self.blocks = nn.Sequential(*[Block(d_model, heads, dropout) for _ in range(layers)])
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        positions = ember.arange(t, device=idx.device)
        x = self.tok(idx) + self.pos(positions)
        return self.head(self.ln(self.blocks(x)))


def batches(data, context: int, batch: int, generator):
    """Random windows of the corpus: inputs and next-byte targets."""
    while True:
        starts = ember.randint(0, data.shape[0] - context - 1, (batch,), generator=generator)
        offsets = ember.arange(context + 1)
        windows = data[starts.unsqueeze(1) + offsets.unsqueeze(0)]
        yield windows[:, :-1], windows[:, 1:]


@ember.no_grad()
def sample(model, prompt: bytes, length: int, device, temperature: float = 0.8) -> bytes:
    model.eval()
    idx = ember.tensor(list(prompt), dtype=ember.int64, device=device).unsqueeze(0)
    for _ in range(length):
        logits = model(idx[:, -model.context :])[:, -1, :] / temperature
        nxt = ember.multinomial(F.softmax(logits, -1), 1)
        idx = ember.cat([idx, nxt], 1)
    model.train()
    return bytes(idx[0].tolist())


def evaluate(model, data, context, device, batches_to_use=8) -> float:
    model.eval()
    gen = ember.Generator().manual_seed(1234)
    it = batches(data, context, 16, gen)
    losses = []
    with ember.no_grad():
        for _ in range(batches_to_use):
            x, y = next(it)
            logits = model(x.to(device))
            losses.append(
                F.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]), y.to(device).reshape(-1)
                ).item()
            )
    model.train()
    return sum(losses) / len(losses)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument(
        "--epochs", type=float, default=None, help="passes over the corpus (overrides --steps)"
    )
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--corpus-bytes", type=int, default=2_000_000)
    parser.add_argument("--checkpoint", default="gpt_checkpoint.pt")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    ember.manual_seed(args.seed)
    device = ember.device(args.device)
    corpus = load_corpus(args.corpus_bytes)
    data = ember.tensor(list(corpus), dtype=ember.int64)
    split = int(0.95 * data.shape[0])
    train_data, val_data = data[:split], data[split:]
    steps = args.steps
    if args.epochs is not None:
        steps = max(1, int(args.epochs * train_data.shape[0] / (args.batch * args.context)))
    print(f"corpus: {len(corpus):,} bytes of the standard library; {steps} steps on {device}")

    model = GPT(256, args.context, args.d_model, args.heads, args.layers).to(device)
    print(f"model: {sum(p.numel() for p in model.parameters()):,} parameters")
    optimizer = ember.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    schedule = ember.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=steps)
    stream = batches(train_data, args.context, args.batch, ember.Generator().manual_seed(args.seed))

    first_val = evaluate(model, val_data, args.context, device)
    progress = tqdm(range(steps), desc="training") if tqdm else range(steps)
    start = time.perf_counter()
    for step in progress:
        x, y = next(stream)
        logits = model(x.to(device))
        loss = F.cross_entropy(logits.reshape(-1, 256), y.to(device).reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        if tqdm:
            progress.set_postfix(loss=f"{loss.item():.3f}")
        elif step % 50 == 0 or step == steps - 1:
            print(f"step {step:5d}  loss {loss.item():.3f}")
    elapsed = time.perf_counter() - start
    last_val = evaluate(model, val_data, args.context, device)
    print(
        f"validation loss {first_val:.3f} -> {last_val:.3f} ({elapsed:.1f} s, "
        f"{1000 * elapsed / steps:.1f} ms/step; uniform guess is {math.log(256):.3f})"
    )

    ember.save(
        {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "args": vars(args)},
        args.checkpoint,
    )
    reloaded = GPT(256, args.context, args.d_model, args.heads, args.layers).to(device)
    reloaded.load_state_dict(ember.load(args.checkpoint, map_location=device)["model"])
    check = evaluate(reloaded, val_data, args.context, device)
    print(f"checkpoint {args.checkpoint}: reloaded model validation loss {check:.3f}")

    text = sample(model, b"def ", 300, device)
    print("sample:\n" + text.decode("utf-8", errors="replace"))


if __name__ == "__main__":
    main()
