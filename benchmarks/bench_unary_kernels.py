"""Elementwise transcendental functions: ember's CPU kernels against numpy and PyTorch.

Times each function on the same float32 input (16M elements by default), each library in its own
process, and prints milliseconds (median of --repeat, output allocation included for all three) and
the ratios numpy / ember and torch / ember (above 1: ember is faster). numpy has no erf: its
column uses scipy.special when installed, and is left empty otherwise.

``--backward`` times the input gradient instead: the forward runs once, then each timed call is
``autograd.grad(y, x, g, retain_graph=True)`` (ember and torch only; numpy has no column).
``--shape`` gives the input a shape (softmax and log_softmax run along its last dim), e.g. the
GPT step's activations, 16*64 x 512: ``--shape 1024,512``.

    python benchmarks/bench_unary_kernels.py [--n 16777216] [--repeat 7] [--only exp,tanh]
        [--backward] [--shape 1024,512]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time

import numpy as np
from isolate import in_own_process, load_library

try:
    from scipy.special import erf as np_erf
    from scipy.special import erfc as np_erfc
except ImportError:
    np_erf = np_erfc = None

SQRT_2_OVER_PI = np.float32(math.sqrt(2 / math.pi))
RSQRT2 = np.float32(1 / math.sqrt(2))


def _np_gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(SQRT_2_OVER_PI * (x + np.float32(0.044715) * x * x * x)))


def _np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name: (input domain, the call in ember and torch given (lib, lib.nn.functional, *inputs),
#        numpy's or None)
FUNCTIONS = {
    "exp": ("normal", lambda lib, nnf, x: lib.exp(x), np.exp),
    "expm1": ("normal", lambda lib, nnf, x: lib.expm1(x), np.expm1),
    "log": ("positive", lambda lib, nnf, x: lib.log(x), np.log),
    "log1p": ("positive", lambda lib, nnf, x: lib.log1p(x), np.log1p),
    "tanh": ("normal", lambda lib, nnf, x: lib.tanh(x), np.tanh),
    "sigmoid": ("normal", lambda lib, nnf, x: lib.sigmoid(x), _np_sigmoid),
    "silu": ("normal", lambda lib, nnf, x: nnf.silu(x), lambda x: x * _np_sigmoid(x)),
    "gelu": (
        "normal",
        lambda lib, nnf, x: nnf.gelu(x),
        np_erf and (lambda x: 0.5 * x * (1 + np_erf(x * RSQRT2))),
    ),
    "gelu_tanh": ("normal", lambda lib, nnf, x: nnf.gelu(x, approximate="tanh"), _np_gelu_tanh),
    "erf": ("normal", lambda lib, nnf, x: lib.erf(x), np_erf),
    "erfc": ("normal", lambda lib, nnf, x: lib.erfc(x), np_erfc),
    "sin": ("wide", lambda lib, nnf, x: lib.sin(x), np.sin),
    "cos": ("wide", lambda lib, nnf, x: lib.cos(x), np.cos),
    "softplus": ("normal", lambda lib, nnf, x: nnf.softplus(x), lambda x: np.logaddexp(0, x)),
    "mish": ("normal", lambda lib, nnf, x: nnf.mish(x), lambda x: x * np.tanh(np.logaddexp(0, x))),
    "logaddexp": ("pair", lambda lib, nnf, x, y: lib.logaddexp(x, y), np.logaddexp),
    "relu": ("normal", lambda lib, nnf, x: lib.relu(x), lambda x: np.maximum(x, 0)),
    "softmax": ("normal", lambda lib, nnf, x: lib.softmax(x, -1), None),
    "log_softmax": ("normal", lambda lib, nnf, x: lib.log_softmax(x, -1), None),
}


def _inputs(domain: str, n: int, rng, shape) -> tuple:
    x = (rng.standard_normal(n, dtype=np.float32) * 3).reshape(shape)
    if domain == "positive":
        x = np.abs(x) + np.float32(1e-3)
    elif domain == "wide":
        x = x * 30
    elif domain == "pair":
        return x, (rng.standard_normal(n, dtype=np.float32) * 3).reshape(shape)
    return (x,)


def _median_ms(fn, args, repeat: int) -> float:
    fn(*args)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _gradient_call(lib, call, arrays, rng):
    """The timed call of --backward: the input gradient of an already computed forward."""
    inputs = [lib.from_numpy(a).requires_grad_() for a in arrays]
    y = call(lib, lib.nn.functional, *inputs)
    g = lib.from_numpy(rng.standard_normal(arrays[0].shape, dtype=np.float32))
    return lambda: lib.autograd.grad(y, inputs, g, retain_graph=True), ()


def worker(name: str, n: int, repeat: int, only: list[str], threads: int, options) -> dict:
    """Milliseconds per function for one library (run in a process of its own); the same
    inputs in every process (same seed)."""
    lib = None if name == "numpy" else load_library(name, threads=threads)
    rng = np.random.default_rng(0)
    shape = tuple(options.shape) if options.shape else (n,)
    found = {}
    for function in only:
        domain, call, numpy_fn = FUNCTIONS[function]
        arrays = _inputs(domain, math.prod(shape), rng, shape)
        if options.backward:
            if lib is not None:
                found[function] = _median_ms(*_gradient_call(lib, call, arrays, rng), repeat)
            continue
        if lib is None:
            if numpy_fn is not None:
                with np.errstate(all="ignore"):
                    found[function] = _median_ms(numpy_fn, arrays, repeat)
            continue
        inputs = [lib.from_numpy(a) for a in arrays]
        fn = lambda *xs, call=call: call(lib, lib.nn.functional, *xs)  # noqa: E731
        found[function] = _median_ms(fn, inputs, repeat)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 24, help="elements (float32)")
    parser.add_argument("--repeat", type=int, default=7, help="timed runs; the best is shown")
    parser.add_argument("--only", default="", help="comma-separated function names")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--backward", action="store_true", help="time the input gradient")
    parser.add_argument("--shape", type=_shape, help="input shape, e.g. 1024,512 (overrides --n)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(FUNCTIONS)
    if args.worker:
        print(json.dumps(worker(args.worker, args.n, args.repeat, names, args.threads, args)))
        return
    options = ["--n", str(args.n), "--repeat", str(args.repeat), "--only", ",".join(names)]
    options += ["--backward"] * args.backward
    options += ["--shape", ",".join(map(str, args.shape))] if args.shape else []
    ms = {}
    for lib in ("ember", "numpy", "torch"):
        try:
            ms[lib] = in_own_process(__file__, lib, options, args.threads)
        except RuntimeError as exc:  # PyTorch not installed: its column stays empty
            print(f"{lib}: skipped ({str(exc).splitlines()[-1]})", file=sys.stderr)
            ms[lib] = {}
    size = "x".join(map(str, args.shape)) if args.shape else str(args.n)
    mode = "backward (input gradient)" if args.backward else "forward"
    print(f"{size} float32 elements, {mode}, median of {args.repeat}, {args.threads} thread(s)")
    print(f"{'function':<10} {'ember ms':>9} {'numpy ms':>9} {'torch ms':>9} {'np/ember':>9} "
          f"{'torch/ember':>12}")  # fmt: skip
    for name in names:
        ember_ms, numpy_ms, torch_ms = (ms[lib].get(name) for lib in ("ember", "numpy", "torch"))
        times = [_cell(value, 9) for value in (ember_ms, numpy_ms, torch_ms)]
        ratios = [
            _cell(numpy_ms and numpy_ms / ember_ms, 9),
            _cell(torch_ms and torch_ms / ember_ms, 12),
        ]
        print(f"{name:<10} {' '.join(times)} {' '.join(ratios)}")


def _shape(text: str) -> list[int]:
    return [int(part) for part in text.split(",")]


def _cell(value, width: int) -> str:
    return f"{value:{width}.2f}" if value is not None else "-".rjust(width)


if __name__ == "__main__":
    main()
