"""ember.fft's public transforms against PyTorch and numpy: rfft and irfft of 1M float32 points,
fft of 1M complex64 points, fft2 and rfftn of a 1024 x 1024 signal, and an stft of 1M samples
(n_fft 512, hop 128, Hann window); ``--dtype float64`` runs them in double precision.

Each library runs in its own process (benchmarks/isolate.py), best of --repeat after a warm-up,
output allocation included. The table gives milliseconds and ember / library (below 1: ember is
faster). numpy has no stft: n/a.

    python benchmarks/bench_fft.py [--n 1048576] [--repeat 7] [--threads 1] [--dtype float32]
"""

from __future__ import annotations

import argparse
import json
import sys

from isolate import best, in_own_process, load_library, ratio

LIBRARIES = ("ember", "torch", "numpy")
CASES = ("rfft", "irfft", "fft", "fft2", "rfftn", "stft")


def _calls(lib, name: str, n: int, dtype: str):
    import numpy as np

    rng = np.random.default_rng(0)
    ctype = np.complex64 if dtype == "float32" else np.complex128
    real = rng.standard_normal(n).astype(dtype)
    spectrum = np.fft.rfft(real).astype(ctype)
    signal = (real + 1j * rng.standard_normal(n)).astype(ctype)
    side = int(n**0.5)
    image, plane = (
        real[: side * side].reshape(side, side),
        signal[: side * side].reshape(side, side),
    )
    if lib.__name__ == "numpy":
        calls = {
            "rfft": lambda: np.fft.rfft(real),
            "irfft": lambda: np.fft.irfft(spectrum, n),
            "fft": lambda: np.fft.fft(signal),
            "fft2": lambda: np.fft.fft2(plane),
            "rfftn": lambda: np.fft.rfftn(image),
        }
        return calls.get(name)
    x, s, z, im, pl = (lib.from_numpy(a) for a in (real, spectrum, signal, image, plane))
    window = lib.hann_window(512, dtype=getattr(lib, dtype))
    calls = {
        "rfft": lambda: lib.fft.rfft(x),
        "irfft": lambda: lib.fft.irfft(s, n),
        "fft": lambda: lib.fft.fft(z),
        "fft2": lambda: lib.fft.fft2(pl),
        "rfftn": lambda: lib.fft.rfftn(im),
        "stft": lambda: lib.stft(x, 512, 128, window=window, return_complex=True),
    }
    return calls[name]


def worker(library: str, n: int, repeat: int, threads: int, dtype: str) -> dict:
    lib = load_library(library, threads)
    figures = {}
    for name in CASES:
        call = _calls(lib, name, n, dtype)
        figures[name] = None if call is None else best(call, 1, repeat) * 1e3
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", choices=LIBRARIES)
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.n, args.repeat, args.threads, args.dtype)))
        return
    options = ["--n", str(args.n), "--repeat", str(args.repeat), "--dtype", args.dtype]
    results = {lib: in_own_process(__file__, lib, options, args.threads) for lib in LIBRARIES}
    run = f"{args.dtype} (and complex), {args.threads} thread(s), best of {args.repeat}"
    print(f"n = {args.n}, {run}")
    header = f"{'case':<8}" + "".join(f"{lib + ' ms':>12}" for lib in LIBRARIES)
    print(header + f"{'ember/torch':>13}{'ember/numpy':>13}")
    for name in CASES:
        ms = [results[lib][name] for lib in LIBRARIES]
        cells = "".join(f"{m:12.2f}" if m is not None else f"{'n/a':>12}" for m in ms)
        print(f"{name:<8}{cells}{ratio(ms[0], ms[1]):>13}{ratio(ms[0], ms[2]):>13}")


if __name__ == "__main__":
    sys.exit(main())
