"""Activation checkpointing: the peak memory of one training step of a 12-layer MLP, with and
without ``ember.utils.checkpoint``, and what the recomputation costs in time.

    python benchmarks/bench_checkpoint.py [--width 512] [--batch 4096] [--segments 4]

Each variant runs in its own process, so that caches and peaks of one do not show in another:
the plain step, ``checkpoint_sequential`` with both variants (``use_reentrant=False`` and
``True``), and every layer checkpointed on its own (non-reentrant). Memory is what the CPU
backend's caching allocator holds at its peak during the step (forward, backward, optimizer),
above what the model and its input held before; tensors of 1 MiB and more go through it, which
is every activation here (``batch * width * 4`` bytes). PyTorch's figures, measured the same
way with its own CPU allocator counters (``torch.cpu`` keeps none, so its peak is read as the
largest resident set growth) are not comparable, and are left out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

# The variants import the checkout's ember (not an installed one) wherever they are started.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VARIANTS = ("plain", "sequential-nonreentrant", "sequential-reentrant", "per-layer-nonreentrant")


def _step(variant: str, width: int, batch: int, segments: int) -> dict:
    import ember
    from ember.dispatcher.memory import backend_for
    from ember.utils.checkpoint import checkpoint, checkpoint_sequential

    ember.manual_seed(0)
    layers = []
    for _ in range(12):
        layers += [ember.nn.Linear(width, width), ember.nn.ReLU()]
    model = ember.nn.Sequential(*layers)
    x = ember.randn(batch, width)
    target = ember.randn(batch, width)
    optimizer = ember.optim.SGD(model.parameters(), lr=1e-3)

    def forward():
        if variant == "plain":
            return model(x)
        if variant.startswith("sequential"):
            reentrant = variant.endswith("-reentrant")
            x.requires_grad_(reentrant)  # the reentrant variant needs an input that requires grad
            return checkpoint_sequential(model, segments, x, use_reentrant=reentrant)
        out = x
        for i in range(0, len(layers), 2):
            block = ember.nn.Sequential(layers[i], layers[i + 1])
            out = checkpoint(block, out, use_reentrant=False)
        return out

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = ((forward() - target) ** 2).mean()
        loss.backward()
        optimizer.step()
        return loss.item()

    step()  # warm up: the optimizer state and the allocator's segments exist from here on
    allocator = backend_for("cpu").allocator(None)
    allocator.empty_cache()
    before = allocator.stats()["allocated_bytes.current"]
    allocator.reset_peak_stats()
    start = time.perf_counter()
    loss = step()
    elapsed = time.perf_counter() - start
    peak = allocator.stats()["allocated_bytes.peak"]
    return {"peak_mib": (peak - before) / 2**20, "seconds": elapsed, "loss": loss}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--segments", type=int, default=4)
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:  # the child process: one variant, printed as JSON
        print(json.dumps(_step(args.variant, args.width, args.batch, args.segments)))
        return
    results = {}
    for variant in VARIANTS:
        command = [
            sys.executable,
            __file__,
            "--variant",
            variant,
            "--width",
            str(args.width),
            "--batch",
            str(args.batch),
            "--segments",
            str(args.segments),
        ]
        env = dict(os.environ, PYTHONPATH=ROOT)
        found = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
        results[variant] = json.loads(found.stdout.strip().splitlines()[-1])
    plain = results["plain"]
    activation = args.batch * args.width * 4 / 2**20
    print(
        f"12-layer MLP training step, width {args.width}, batch {args.batch} "
        f"(one activation: {activation:.1f} MiB), {args.segments} segments"
    )
    print(
        f"{'variant':<26}{'peak MiB':>10}{'vs plain':>10}{'step s':>9}{'vs plain':>10}{'loss':>12}"
    )
    for variant, r in results.items():
        print(
            f"{variant:<26}{r['peak_mib']:>10.1f}{r['peak_mib'] / plain['peak_mib']:>10.2f}"
            f"{r['seconds']:>9.3f}{r['seconds'] / plain['seconds']:>10.2f}{r['loss']:>12.6f}"
        )


if __name__ == "__main__":
    main()
