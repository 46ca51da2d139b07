"""The CUDA backend's performance targets (issue 6), ember vs PyTorch CUDA in one run.

    python benchmarks/bench_cuda.py [--repeat 5] [--only gemm elementwise launch gpt fft]

- GEMM float32 (TF32 off in both) and float16 at n=4096 and 8192: TFLOP/s; target >= 90% of
  PyTorch's;
- elementwise ``x * 2`` (read + write) on 256M float32: GB/s, next to a device-to-device copy of
  the same bytes (the device's copy bandwidth); target >= 80% of the copy;
- a tiny op (``x + y`` on 16 float32 elements): per-call time; target <= 3x PyTorch;
- the GPT training step scaled up (d_model 768, 12 heads, 6 layers, seq 256, batch 16):
  target <= 1.5x PyTorch eager;
- ember.fft through cuFFT (issue 14): a 1M-point float32 ``rfft`` and a batched complex64
  ``fft2`` (64 x 512 x 512): per-call time against torch.fft.

GPU figures are timed with the device synchronised around each round and the best of
``--repeat`` rounds kept. Without a CUDA device (or without ember's cuda backend) the script says
so and exits 0 with no figures: there is nothing honest to print on a CPU.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def best(fn, sync, number: int, repeat: int) -> float:
    """Seconds per call of ``fn``: the best of ``repeat`` synchronised rounds of ``number``."""
    fn()
    sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        times.append((time.perf_counter() - start) / number)
    return min(times)


def libraries():
    """``{"ember": module, "torch": module or None}`` with a CUDA device, or a reason."""
    import ember

    if not ember.cuda.is_available():
        return None, f"ember.cuda is not available: {ember.cuda.unavailable_reason()}"
    try:
        import torch

        torch = torch if torch.cuda.is_available() else None
    except ImportError:
        torch = None
    return {"ember": ember, "torch": torch}, None


def report(name: str, unit: str, ours: float, theirs, better: str) -> None:
    """One line; ``better`` is "higher" (rates) or "lower" (times)."""
    if theirs is None:
        print(f"{name:34s} {ours:12.3f} {'n/a':>12s} {unit}")
        return
    ratio = ours / theirs
    print(f"{name:34s} {ours:12.3f} {theirs:12.3f} {unit:6s} ratio {ratio:6.2f} ({better} wins)")


def gemm(libs, repeat):
    for dtype in ("float32", "float16"):
        for n in (4096, 8192):
            rates = {}
            for name, lib in libs.items():
                if lib is None:
                    continue
                tf32 = lib.backends.cuda.matmul
                tf32.allow_tf32 = False
                a = lib.randn(n, n, device="cuda").to(getattr(lib, dtype))
                b = lib.randn(n, n, device="cuda").to(getattr(lib, dtype))
                seconds = best(lambda a=a, b=b: a @ b, lib.cuda.synchronize, 3, repeat)
                rates[name] = 2 * n**3 / seconds / 1e12
            report(f"gemm {dtype} n={n}", "TFLOP/s", rates["ember"], rates.get("torch"), "higher")


def elementwise(libs, repeat):
    n = 256 << 20
    for name, lib in libs.items():
        if lib is None:
            continue
        x = lib.empty(n, device="cuda")
        out = lib.empty(n, device="cuda")
        scale = best(lambda x=x: x * 2, lib.cuda.synchronize, 5, repeat)
        copy = best(lambda x=x, out=out: out.copy_(x), lib.cuda.synchronize, 5, repeat)
        rate, copy_rate = 2 * 4 * n / scale / 1e9, 2 * 4 * n / copy / 1e9
        print(f"{name:6s} x*2 on 256M float32: {rate:8.1f} GB/s; device copy {copy_rate:8.1f} "
              f"GB/s; ratio to copy {rate / copy_rate:5.2f} (target >= 0.80)")  # fmt: skip
        del x, out


def launch(libs, repeat):
    times = {}
    for name, lib in libs.items():
        if lib is None:
            continue
        x, y = lib.ones(16, device="cuda"), lib.ones(16, device="cuda")
        times[name] = best(lambda x=x, y=y: x + y, lib.cuda.synchronize, 2000, repeat) * 1e6
    report("tiny op x + y (16 floats)", "us", times["ember"], times.get("torch"), "lower")


def gpt(libs, repeat):
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_training import gpt as build

    times = {}
    for name, lib in libs.items():
        if lib is None:
            continue
        lib.manual_seed(0)
        model, opt, x, y = build(lib.nn, lib, "cuda", d=768, heads=12, layers=6, seq=256, batch=16)

        def step(model=model, opt=opt, x=x, y=y, lib=lib):
            opt.zero_grad()
            lib.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

        times[name] = best(step, lib.cuda.synchronize, 3, repeat) * 1e3
        del model, opt
    report("GPT step d768 h12 l6 seq256 b16", "ms", times["ember"], times.get("torch"), "lower")


def fft(libs, repeat):
    """cuFFT through each library: a 1M-point float32 rfft and a batched complex64 fft2
    (64 images of 512 x 512); per-call time, plans cached after the first call in both."""
    cases = {
        "rfft 1M float32": (lambda lib: lib.randn(1 << 20, device="cuda"), "rfft"),
        "fft2 64x512x512 complex64": (
            lambda lib: lib.complex(
                lib.randn(64, 512, 512, device="cuda"), lib.randn(64, 512, 512, device="cuda")
            ),
            "fft2",
        ),
    }
    for label, (make, name) in cases.items():
        times = {}
        for lib_name, lib in libs.items():
            if lib is None:
                continue
            x, transform = make(lib), getattr(lib.fft, name)
            times[lib_name] = best(lambda x=x, f=transform: f(x), lib.cuda.synchronize, 20,
                                   repeat) * 1e3  # fmt: skip
        report(label, "ms", times["ember"], times.get("torch"), "lower")


BENCHES = {"gemm": gemm, "elementwise": elementwise, "launch": launch, "gpt": gpt, "fft": fft}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", nargs="+", default=list(BENCHES), choices=list(BENCHES))
    args = parser.parse_args(argv)
    libs, reason = libraries()
    if libs is None:
        print(f"No CUDA GPU run: {reason}. Nothing measured.")
        return 0
    import ember

    print(f"device: {ember.cuda.get_device_name()}; PyTorch CUDA: "
          f"{'yes' if libs['torch'] else 'absent (ember figures only)'}")  # fmt: skip
    print(f"{'':34s} {'ember':>12s} {'torch':>12s}")
    for name in args.only:
        BENCHES[name](libs, args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
