"""The autograd issue's performance targets, ember vs PyTorch CPU, each in its own process.

    python benchmarks/bench_autograd.py [--repeat 7] [--threads 1]

- recording: ``x + y`` on 16 float32 elements that require grad, per call, against the same
  op without grad in ember (target <= 2x), with PyTorch's figures beside;
- backward of a 20-layer MLP (width 256, batch 64, ReLU, float32): the time of ``backward()``
  alone (the forward runs outside the timer), target <= 1.5x PyTorch's.

Each figure is the best of ``--repeat`` rounds (the minimum is the least disturbed by other load
on a shared machine). One thread by default: on a loaded 2-core machine worker threads spin
against the machine's other load, and the figures mean nothing.
PyTorch is only a reference here: ember never imports it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from isolate import in_own_process, load_library


def timer(fn, number: int, setup=None):
    """A round: seconds per call of ``fn(setup())`` over ``number`` calls; only ``fn`` is timed."""

    def round_() -> float:
        elapsed = 0.0
        for _ in range(number):
            arg = setup() if setup is not None else None
            start = time.perf_counter()
            fn(arg)
            elapsed += time.perf_counter() - start
        return elapsed / number

    return round_


def interleaved(rounds: dict, repeat: int) -> dict:
    """Best round of each timer, the timers taking turns (so that changes in the machine's load
    fall on all of them alike); a first round of each warms up."""
    best = dict.fromkeys(rounds, float("inf"))
    for turn in range(repeat + 1):
        for key, round_ in rounds.items():
            t = round_()
            if turn:
                best[key] = min(best[key], t)
    return best


def add_timers(lib, number: int) -> dict:
    """Timers of 100 calls of ``x + y`` on 16 float32 elements, without grad and with."""
    x, y = lib.rand(16), lib.rand(16)
    xg, yg = lib.rand(16, requires_grad=True), lib.rand(16, requires_grad=True)

    def plain(_):
        for _ in range(100):
            x + y

    def recorded(_):
        for _ in range(100):
            xg + yg

    return {"plain": timer(plain, number), "grad": timer(recorded, number)}


def mlp(lib, depth: int = 20, width: int = 256, batch: int = 64):
    layers = []
    for _ in range(depth):
        layers += [lib.nn.Linear(width, width), lib.nn.ReLU()]
    return lib.nn.Sequential(*layers[:-1]), lib.randn(batch, width)


def backward_timer(lib, number: int):
    """Timer of ``loss.backward()`` of the MLP, the forward outside the clock."""
    model, x = mlp(lib)

    def forward():
        model.zero_grad(set_to_none=True)
        return (model(x) ** 2).mean()

    return timer(lambda loss: loss.backward(), number, setup=forward)


def worker(name: str, threads: int, repeat: int) -> dict:
    """This library's best rounds (run in a process of its own)."""
    lib = load_library(name, threads)
    lib.manual_seed(0)
    rounds = {**add_timers(lib, 20), "backward": backward_timer(lib, 5)}
    return interleaved(rounds, repeat)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.threads, args.repeat)))
        return
    best = {}
    for name in ("ember", "torch"):
        try:
            best[name] = in_own_process(
                __file__, name, ["--repeat", str(args.repeat)], args.threads
            )
        except RuntimeError as exc:  # PyTorch not installed: ember's figures only
            print(f"{name}: skipped ({str(exc).splitlines()[-1]})", file=sys.stderr)
    libs = list(best)
    adds = {name: (best[name]["plain"] / 100, best[name]["grad"] / 100) for name in libs}
    backward = {name: best[name]["backward"] for name in libs}

    print(f"{'':34}" + "".join(f"{name:>12}" for name in libs))
    for label, index in (("x + y, 16 elements, no grad", 0), ("x + y, requires_grad", 1)):
        figures = "".join(f"{adds[n][index] * 1e6:10.2f}us" for n in libs)
        print(f"{label:34}{figures}")
    for name in libs:
        plain, recorded = adds[name]
        print(f"  {name}: recording costs {recorded / plain:.2f}x the op without grad")
    figures = "".join(f"{backward[n] * 1e3:10.2f}ms" for n in libs)
    print(f"{'MLP 20x256, batch 64: backward':34}{figures}")
    print(f"  recording ratio (target <= 2x): {adds['ember'][1] / adds['ember'][0]:.2f}x")
    if "torch" in libs:
        ratio = backward["ember"] / backward["torch"]
        print(f"  backward ember / torch (target <= 1.5x): {ratio:.2f}x")


if __name__ == "__main__":
    main()
