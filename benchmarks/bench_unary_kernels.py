"""Elementwise transcendental functions: ember's CPU kernels against numpy and PyTorch.

Times each function on the same float32 input (16M elements by default) in one run and prints
milliseconds (best of --repeat, output allocation included for all three) and the ratios
numpy / ember and torch / ember (above 1: ember is faster). numpy has no erf: its column uses
scipy.special when installed, and is left empty otherwise.

    python benchmarks/bench_unary_kernels.py [--n 16777216] [--repeat 7] [--only exp,tanh]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import ember

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = None
try:
    from scipy.special import erf as np_erf
    from scipy.special import erfc as np_erfc
except ImportError:
    np_erf = np_erfc = None

E = ember.ops
SQRT_2_OVER_PI = np.float32(math.sqrt(2 / math.pi))
RSQRT2 = np.float32(1 / math.sqrt(2))


def _np_gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(SQRT_2_OVER_PI * (x + np.float32(0.044715) * x * x * x)))


def _np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name: (input domain, ember, numpy or None, torch or None)
FUNCTIONS = {
    "exp": ("normal", ember.exp, np.exp, "exp"),
    "expm1": ("normal", ember.expm1, np.expm1, "expm1"),
    "log": ("positive", ember.log, np.log, "log"),
    "log1p": ("positive", ember.log1p, np.log1p, "log1p"),
    "tanh": ("normal", ember.tanh, np.tanh, "tanh"),
    "sigmoid": ("normal", ember.sigmoid, _np_sigmoid, "sigmoid"),
    "silu": ("normal", E.silu, lambda x: x * _np_sigmoid(x), lambda t: TF.silu(t)),
    "gelu": (
        "normal",
        E.gelu,
        np_erf and (lambda x: 0.5 * x * (1 + np_erf(x * RSQRT2))),
        lambda t: TF.gelu(t),
    ),
    "gelu_tanh": (
        "normal",
        lambda t: E.gelu(t, "tanh"),
        _np_gelu_tanh,
        lambda t: TF.gelu(t, approximate="tanh"),
    ),
    "erf": ("normal", ember.erf, np_erf, "erf"),
    "erfc": ("normal", ember.erfc, np_erfc, "erfc"),
    "sin": ("wide", ember.sin, np.sin, "sin"),
    "cos": ("wide", ember.cos, np.cos, "cos"),
    "softplus": ("normal", E.softplus, lambda x: np.logaddexp(0, x), lambda t: TF.softplus(t)),
    "mish": (
        "normal",
        E.mish,
        lambda x: x * np.tanh(np.logaddexp(0, x)),
        lambda t: TF.mish(t),
    ),
    "logaddexp": ("pair", ember.logaddexp, np.logaddexp, "logaddexp"),
}


def _inputs(domain: str, n: int, rng) -> tuple:
    x = rng.standard_normal(n, dtype=np.float32) * 3
    if domain == "positive":
        x = np.abs(x) + np.float32(1e-3)
    elif domain == "wide":
        x = x * 30
    elif domain == "pair":
        return x, rng.standard_normal(n, dtype=np.float32) * 3
    return (x,)


def _best_ms(fn, args, repeat: int) -> float:
    fn(*args)
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def _torch_fn(spec):
    if torch is None or spec is None:
        return None
    return getattr(torch, spec) if isinstance(spec, str) else spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 24, help="elements (float32)")
    parser.add_argument("--repeat", type=int, default=7, help="timed runs; the best is shown")
    parser.add_argument("--only", default="", help="comma-separated function names")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(FUNCTIONS)
    rng = np.random.default_rng(0)
    torch_note = f"torch {torch.__version__}, {torch.get_num_threads()} threads" if torch else ""
    print(f"{args.n} float32 elements, best of {args.repeat}; {torch_note or 'no torch'}")
    print(f"{'function':<10} {'ember ms':>9} {'numpy ms':>9} {'torch ms':>9} {'np/ember':>9} "
          f"{'torch/ember':>12}")  # fmt: skip
    for name in names:
        domain, ember_fn, numpy_fn, torch_spec = FUNCTIONS[name]
        arrays = _inputs(domain, args.n, rng)
        ember_ms = _best_ms(ember_fn, [ember.from_numpy(a) for a in arrays], args.repeat)
        with np.errstate(all="ignore"):
            numpy_ms = _best_ms(numpy_fn, arrays, args.repeat) if numpy_fn else None
        torch_fn = _torch_fn(torch_spec)
        torch_args = [torch.from_numpy(a) for a in arrays] if torch_fn else None
        torch_ms = _best_ms(torch_fn, torch_args, args.repeat) if torch_fn else None
        times = [_cell(ms, 9) for ms in (ember_ms, numpy_ms, torch_ms)]
        ratios = [
            _cell(numpy_ms and numpy_ms / ember_ms, 9),
            _cell(torch_ms and torch_ms / ember_ms, 12),
        ]
        print(f"{name:<10} {' '.join(times)} {' '.join(ratios)}")


def _cell(value, width: int) -> str:
    return f"{value:{width}.2f}" if value is not None else "-".rjust(width)


if __name__ == "__main__":
    main()
