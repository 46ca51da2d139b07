"""Adam/AdamW/SGD steps over the MLP 784-512-512-10's parameters: the default loop, foreach=True
and fused=True of ember and of PyTorch, each library in its own process (benchmarks/isolate.py),
float32, gradients set once; the median of ``--repeat`` rounds of ``--number`` steps.

    python benchmarks/bench_fused_optim.py [--threads 2] [--number 20] [--repeat 7]
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from isolate import in_own_process, load_library, median, ratio

SHAPES = [(512, 784), (512,), (512, 512), (512,), (10, 512), (10,)]
OPTIMIZERS = {
    "Adam": ("Adam", {}),
    "AdamW(wd=0.1)": ("AdamW", {"weight_decay": 0.1}),
    "SGD(momentum=0.9)": ("SGD", {"momentum": 0.9}),
}
FLAVOURS = {"default": {}, "foreach": {"foreach": True}, "fused": {"fused": True}}
MODES = {
    f"{label} {flavour}": (name, {**kwargs, **flags})
    for label, (name, kwargs) in OPTIMIZERS.items()
    for flavour, flags in FLAVOURS.items()
}


def worker(library: str, threads: int, number: int, repeat: int) -> dict:
    lib = load_library(library, threads)
    rng = np.random.default_rng(0)
    out = {}
    for label, (name, kwargs) in MODES.items():
        params = []
        for shape in SHAPES:
            p = lib.from_numpy(rng.standard_normal(shape).astype(np.float32)).requires_grad_()
            p.grad = lib.from_numpy(rng.standard_normal(shape).astype(np.float32))
            params.append(p)
        opt = getattr(lib.optim, name)(params, lr=1e-3, **kwargs)
        out[label] = median(opt.step, number, repeat)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--number", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.threads, args.number, args.repeat)))
        return
    options = ["--number", str(args.number), "--repeat", str(args.repeat)]
    got = {lib: in_own_process(__file__, lib, options, args.threads) for lib in ("ember", "torch")}
    ours, theirs = got["ember"], got["torch"]
    print(f"optimizer step, MLP 784-512-512-10 (669,706 params), {args.threads} threads, float32")
    print(f"{'optimizer':26s} {'ember ms':>9s} {'torch ms':>9s} {'ember/torch':>12s}")
    for label in MODES:
        print(
            f"{label:26s} {ours[label] * 1e3:9.3f} {theirs[label] * 1e3:9.3f} "
            f"{ratio(ours[label], theirs[label]):>12s}"
        )
    for name in OPTIMIZERS:
        fused, foreach = ours[f"{name} fused"], ours[f"{name} foreach"]
        print(f"{name}: ember fused / ember foreach {ratio(fused, foreach)}; ember fused / "
              f"torch fused {ratio(fused, theirs[f'{name} fused'])}")  # fmt: skip


if __name__ == "__main__":
    main()
