"""ember.special's CPU kernels and (once complex dtypes land) rfft, against PyTorch.

Each (library, function) runs in its own process, so one library's thread pools and caches never
count against the other's; each prints its best time of --repeat, output allocation included.
The table gives milliseconds and torch / ember (above 1: ember is faster).

    python benchmarks/bench_fft_special.py [--n 16777216] [--repeat 5] [--threads 2] [--only ...]

rfft (1M float32) runs on ember's ``_fft_r2c`` op when the op table has it and is reported as
missing otherwise.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

# name: (domain, function path under the library, arity)
SPECIAL = {
    "gammaln": ("positive", "special.gammaln", 1),
    "digamma": ("positive", "special.digamma", 1),
    "erfinv": ("unit", "special.erfinv", 1),
    "erfcx": ("normal", "special.erfcx", 1),
    "i0": ("normal", "special.i0", 1),
    "i0e": ("normal", "special.i0e", 1),
    "i1e": ("normal", "special.i1e", 1),
    "ndtri": ("unit_open", "special.ndtri", 1),
    "log_ndtr": ("normal", "special.log_ndtr", 1),
    "bessel_j0": ("normal", "special.bessel_j0", 1),
    "modified_bessel_k1": ("positive", "special.modified_bessel_k1", 1),
    "airy_ai": ("normal", "special.airy_ai", 1),
    "zeta": ("zeta", "special.zeta", 2),
    "gammainc": ("pair_positive", "special.gammainc", 2),
    "xlog1py": ("pair_positive", "special.xlog1py", 2),
}


def _inputs(domain: str, n: int):
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.standard_normal(n, dtype=np.float32) * 3
    if domain == "positive":
        return (np.abs(x) + np.float32(0.05),)
    if domain == "unit":
        return (np.tanh(x),)
    if domain == "unit_open":
        return ((np.tanh(x) + 1) / 2 * np.float32(0.998) + np.float32(0.001),)
    if domain == "zeta":
        return np.abs(x) + np.float32(1.1), np.abs(x[::-1]).copy() + np.float32(0.5)
    if domain == "pair_positive":
        return np.abs(x) + np.float32(0.1), np.abs(x[::-1]).copy()
    return (x,)


def worker(lib_name: str, name: str, n: int, repeat: int, threads: int) -> dict:
    # the checkout's ember (its ember.special), not an older installed copy
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    lib = __import__(lib_name)
    lib.set_num_threads(threads)
    if name == "rfft":
        import numpy as np

        x = lib.from_numpy(np.random.default_rng(0).standard_normal(n, dtype=np.float32))
        if lib_name == "torch":
            fn = lib.fft.rfft
        elif "_fft_r2c" in dir(lib.ops):
            fn = lambda t: lib.ops._fft_r2c(t, [0], 0, True)  # noqa: E731
        else:
            return {"ms": None}
        args = (x,)
    else:
        _, path, _ = SPECIAL[name]
        module, attr = path.split(".")
        __import__(f"{lib_name}.{module}")
        fn = getattr(getattr(lib, module), attr)
        args = tuple(lib.from_numpy(a) for a in _inputs(SPECIAL[name][0], n))
    fn(*args)
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return {"ms": best * 1e3}


def _run(lib: str, name: str, n: int, repeat: int, threads: int):
    cmd = [sys.executable, __file__, "--worker", lib, name, str(n), str(repeat), str(threads)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])["ms"]


def main() -> None:
    if sys.argv[1:2] == ["--worker"]:
        lib, name, n, repeat, threads = sys.argv[2:7]
        print(json.dumps(worker(lib, name, int(n), int(repeat), int(threads))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 24, help="elements, special functions")
    parser.add_argument("--fft-n", type=int, default=1 << 20, help="rfft length")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", default="", help="comma-separated names (rfft included)")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else ["rfft", *SPECIAL]
    print(f"float32; special: {args.n} elements, rfft: {args.fft_n}; best of {args.repeat}, "
          f"{args.threads} threads, one process per (library, function)")  # fmt: skip
    print(f"{'function':<20} {'ember ms':>10} {'torch ms':>10} {'torch/ember':>12}")
    for name in names:
        n = args.fft_n if name == "rfft" else args.n
        ember_ms = _run("ember", name, n, args.repeat, args.threads)
        torch_ms = _run("torch", name, n, args.repeat, args.threads)
        ratio = f"{torch_ms / ember_ms:12.2f}" if ember_ms and torch_ms else f"{'-':>12}"
        e = f"{ember_ms:10.1f}" if ember_ms else f"{'missing':>10}"
        t = f"{torch_ms:10.1f}" if torch_ms else f"{'-':>10}"
        print(f"{name:<20} {e} {t} {ratio}")


if __name__ == "__main__":
    main()
