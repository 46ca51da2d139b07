"""ember.fft's public transforms against PyTorch and numpy: rfft and irfft of 1M float32 points,
fft of 1M complex64 points, fft2 and rfftn of a 1024 x 1024 signal, an stft of 1M samples
(n_fft 512, hop 128, Hann window), and two small ones where the per-call cost shows: rfft of a
64 x 512 batch along the last dim, fft2 of 256 x 256 complex64 (--n does not scale those);
``--dtype float64`` runs them in double precision.

Each library runs in its own process (benchmarks/isolate.py), the median of --repeat rounds
after a warm-up (``--best``: the fastest round), output allocation included. ``--clock cpu``
times the calling thread's CPU time instead of the wall clock: on a shared machine it barely
moves with the other load, and with one thread every library computes on the calling thread
(refused with more). The table gives milliseconds and ember / library (below 1: ember is
faster). numpy has no stft: n/a.

    python benchmarks/bench_fft.py [--n 1048576] [--repeat 7] [--threads 1] [--dtype float32]
        [--clock wall|cpu] [--best]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from isolate import best, in_own_process, load_library, median, ratio

LIBRARIES = ("ember", "torch", "numpy")
CASES = ("rfft", "irfft", "fft", "fft2", "rfftn", "stft", "rfft_64x512", "fft2_256")
SMALL = {"rfft_64x512": (64, 512), "fft2_256": (256, 256)}  # timed over rounds of 50 calls
CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}


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
    batch = rng.standard_normal(SMALL["rfft_64x512"]).astype(dtype)
    tile = signal[: 256 * 256].reshape(SMALL["fft2_256"])
    if lib.__name__ == "numpy":
        calls = {
            "rfft": lambda: np.fft.rfft(real),
            "irfft": lambda: np.fft.irfft(spectrum, n),
            "fft": lambda: np.fft.fft(signal),
            "fft2": lambda: np.fft.fft2(plane),
            "rfftn": lambda: np.fft.rfftn(image),
            "rfft_64x512": lambda: np.fft.rfft(batch),
            "fft2_256": lambda: np.fft.fft2(tile),
        }
        return calls.get(name)
    arrays = (real, spectrum, signal, image, plane, batch, tile)
    x, s, z, im, pl, b, t = (lib.from_numpy(a) for a in arrays)
    window = lib.hann_window(512, dtype=getattr(lib, dtype))
    calls = {
        "rfft": lambda: lib.fft.rfft(x),
        "irfft": lambda: lib.fft.irfft(s, n),
        "fft": lambda: lib.fft.fft(z),
        "fft2": lambda: lib.fft.fft2(pl),
        "rfftn": lambda: lib.fft.rfftn(im),
        "stft": lambda: lib.stft(x, 512, 128, window=window, return_complex=True),
        "rfft_64x512": lambda: lib.fft.rfft(b),
        "fft2_256": lambda: lib.fft.fft2(t),
    }
    return calls[name]


def worker(library: str, n: int, repeat: int, threads: int, dtype: str, clock: str, fastest: bool):
    lib = load_library(library, threads)
    statistic = best if fastest else median
    figures = {}
    for name in CASES:
        call = _calls(lib, name, n, dtype)
        number = 50 if name in SMALL else 1
        seconds = None if call is None else statistic(call, number, repeat, CLOCKS[clock])
        figures[name] = None if seconds is None else seconds * 1e3
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", choices=LIBRARIES)
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="wall")
    parser.add_argument("--best", action="store_true", help="the fastest round, not the median")
    args = parser.parse_args()
    if args.clock == "cpu" and args.threads != 1:
        parser.error("--clock cpu counts the calling thread only: use it with --threads 1")
    if args.worker:
        figures = worker(
            args.worker, args.n, args.repeat, args.threads, args.dtype, args.clock, args.best
        )
        print(json.dumps(figures))
        return
    options = ["--n", str(args.n), "--repeat", str(args.repeat), "--dtype", args.dtype]
    options += ["--clock", args.clock] + (["--best"] if args.best else [])
    results = {lib: in_own_process(__file__, lib, options, args.threads) for lib in LIBRARIES}
    statistic = "best" if args.best else "median"
    run = f"{args.dtype} (and complex), {args.threads} thread(s), {args.clock} clock"
    print(f"n = {args.n}, {run}, {statistic} of {args.repeat}")
    header = f"{'case':<12}" + "".join(f"{lib + ' ms':>12}" for lib in LIBRARIES)
    print(header + f"{'ember/torch':>13}{'ember/numpy':>13}")
    for name in CASES:
        ms = [results[lib][name] for lib in LIBRARIES]
        cells = "".join(f"{m:12.3f}" if m is not None else f"{'n/a':>12}" for m in ms)
        print(f"{name:<12}{cells}{ratio(ms[0], ms[1]):>13}{ratio(ms[0], ms[2]):>13}")


if __name__ == "__main__":
    sys.exit(main())
