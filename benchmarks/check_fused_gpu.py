"""A quick check of the generated fused kernels on a CUDA (or xpu) device, with its numbers.

    python benchmarks/check_fused_gpu.py [--device cuda]

Three compiled chains (bias+GELU+residual, softmax, layer_norm) in float64: whether the replay
fused them and their largest difference from eager ember; then compiled SGD (momentum), Adam
and AdamW steps over three tensors for 20 steps: the plan's line (one multi-tensor kernel on
devices without the fused op's kernel) and the largest difference from PyTorch's CPU
optimizers. For a device machine, where the test suite's fixtures may not import.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

import ember

F = ember.nn.functional
CHAINS = {
    "bias_gelu_residual": lambda x, w, r: F.gelu(x * w + r) * 0.5 + r,
    "softmax": lambda x, w, r: F.softmax(x * 0.125 + r, -1),
    "layer_norm": lambda x, w, r: F.layer_norm(x + r, (x.shape[-1],), w, None, 1e-5),
}


def chains(device: str) -> None:
    like = {"device": device, "dtype": ember.float64}
    x, w, r = (ember.randn(*s, **like) for s in ((64, 512), (512,), (64, 512)))
    for name, fn in CHAINS.items():
        compiled = ember.compile(fn)
        with ember.no_grad():
            compiled(x, w, r)
            out = compiled(x, w, r)
        (entry,) = [e for entries in compiled._cache.values() for e in entries]
        fused = entry.region.fast.source.count("FUSED")
        diff = float((out - fn(x, w, r)).abs().max())
        print(f"{name}: {fused} fused kernel(s), max |compiled - eager| {diff:.3g}")


def optimizers(device: str) -> None:
    for name in ("SGD", "Adam", "AdamW"):
        ours = [ember.randn(n, device=device, dtype=ember.float64, requires_grad=True)
                for n in (3, 70000, 9)]  # fmt: skip
        theirs = [torch.tensor(p.detach().cpu().numpy(), requires_grad=True) for p in ours]
        kw = {"momentum": 0.9} if name == "SGD" else {}
        opt = getattr(ember.optim, name)(ours, lr=0.01, **kw)
        opt.step = ember.compile(opt.step)
        ref = getattr(torch.optim, name)(theirs, lr=0.01, **kw)
        for i in range(20):
            for p, q in zip(ours, theirs):
                g = np.random.default_rng(i).standard_normal(tuple(q.shape))
                p.grad = ember.tensor(g, device=device)
                q.grad = torch.tensor(g)
            opt.step()
            ref.step()
        diff = max(
            float(np.abs(p.detach().cpu().numpy() - q.detach().numpy()).max())
            for p, q in zip(ours, theirs)
        )
        print(opt.step._plan.buckets[0].describe().strip())
        print(f"{name}: max |compiled ember - torch| after 20 steps {diff:.3g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    chains(args.device)
    optimizers(args.device)


if __name__ == "__main__":
    main()
