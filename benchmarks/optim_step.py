"""Time one optimizer step, ember vs PyTorch, on the same parameter shapes (CPU, float32).

    python benchmarks/optim_step.py [--repeat 50]

Gradients are set once; each timed call is ``opt.step()`` alone; the best of 5 rounds counts.
PyTorch's CPU default is its single-tensor path (foreach is only the default on CUDA), the same
per-parameter loop as ember's.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import ember

MODELS = {
    "mlp (4 params, 200k)": [(784, 256), (256,), (256, 10), (10,)],
    "small (20 params, 20k)": [(32, 32), (32,)] * 10,
}
CONFIGS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("Adam", {"lr": 1e-3}),
    ("AdamW", {"lr": 1e-3}),
    ("RMSprop", {"lr": 1e-3}),
    ("Adagrad", {"lr": 1e-2}),
    ("NAdam", {"lr": 2e-3}),
    ("RAdam", {"lr": 1e-3}),
    ("Adamax", {"lr": 2e-3}),
    ("Adadelta", {}),
    ("Rprop", {"lr": 1e-2}),
    ("ASGD", {"lr": 1e-2}),
    ("Adafactor", {"lr": 1e-2}),
]


def _time(opt, repeat: int, rounds: int = 5) -> float:
    """Seconds per step: the best of ``rounds`` rounds (the machine is shared; noise only adds)."""
    for _ in range(3):
        opt.step()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(repeat):
            opt.step()
        best = min(best, (time.perf_counter() - start) / repeat)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    print(f"{'model':24s} {'optimizer':30s} {'ember us':>9s} {'torch us':>9s} {'ratio':>6s}")
    for model, shapes in MODELS.items():
        arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        for name, kwargs in CONFIGS:
            ours = [ember.from_numpy(a.copy()).requires_grad_() for a in arrays]
            theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
            for p, q, g in zip(ours, theirs, grads):
                p.grad = ember.from_numpy(g)
                q.grad = torch.from_numpy(g)
            t_ours = _time(getattr(ember.optim, name)(ours, **kwargs), args.repeat)
            t_theirs = _time(getattr(torch.optim, name)(theirs, **kwargs), args.repeat)
            label = f"{name}({', '.join(f'{k}={v}' for k, v in kwargs.items())})"
            print(
                f"{model:24s} {label:30s} {t_ours * 1e6:9.1f} {t_theirs * 1e6:9.1f} "
                f"{t_ours / t_theirs:6.2f}"
            )


if __name__ == "__main__":
    main()
