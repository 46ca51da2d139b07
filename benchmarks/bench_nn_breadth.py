"""The nn breadth layers (issue 15), ember vs PyTorch CPU: forward + backward time per call of
layers written as compositions of table ops (3-D pooling and convolution, grid_sample, CTC,
packed LSTM, bicubic resize, margin and multilabel losses...).

    python benchmarks/bench_nn_breadth.py [--repeat 5] [--threads 1] [--only grid_sample]

Each library runs in its own process (``--lib`` runs one), so neither's threads or caches
disturb the other's; a figure is the best of ``--repeat`` rounds. The ratio is ember / torch:
below 1 is faster. A case whose inputs do not require grad is timed forward only. PyTorch is only
a reference: ember never imports it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _cases(lib):
    """name -> (setup returning (fn, inputs)); fn(*inputs) is timed with its backward."""
    nn, F = lib.nn, lib.nn.functional
    rng = np.random.default_rng(0)

    def t(*shape, grad=True, scale=1.0):
        array = (rng.standard_normal(shape) * scale).astype(np.float32)
        out = lib.tensor(array) if lib.__name__ == "ember" else lib.from_numpy(array)
        return out.requires_grad_(grad)

    def ints(high, *shape):
        array = rng.integers(0, high, shape).astype(np.int64)
        return lib.tensor(array) if lib.__name__ == "ember" else lib.from_numpy(array)

    lstm = nn.LSTM(32, 64, num_layers=2)
    rnn_utils = nn.utils.rnn
    lengths = [50 - 2 * i for i in range(16)]
    return {
        "Conv3d 8->16, 16^3, batch 4": (nn.Conv3d(8, 16, 3, padding=1), [t(4, 8, 16, 16, 16)]),
        "MaxPool3d 2, 32^3 x 8": (nn.MaxPool3d(2), [t(2, 8, 32, 32, 32)]),
        "AvgPool3d 3/2, 32^3 x 8": (nn.AvgPool3d(3, 2, 1), [t(2, 8, 32, 32, 32)]),
        "grid_sample bilinear 64^2": (
            lambda x, g: F.grid_sample(x, g, align_corners=False),
            [t(8, 16, 64, 64), t(8, 64, 64, 2, scale=0.5)],
        ),
        "grid_sample bilinear 64^2, forward": (
            lambda x, g: F.grid_sample(x, g, align_corners=False),
            [t(8, 16, 64, 64, grad=False), t(8, 64, 64, 2, scale=0.5, grad=False)],
        ),
        "grid_sample 3-D trilinear 16^3": (
            lambda x, g: F.grid_sample(x, g, align_corners=False),
            [t(4, 8, 16, 16, 16), t(4, 16, 16, 16, 3, scale=0.5)],
        ),
        "interpolate bicubic 64->128": (
            lambda x: F.interpolate(x, scale_factor=2, mode="bicubic"),
            [t(8, 16, 64, 64)],
        ),
        "CTCLoss T=50 S=20 N=16 C=30": (
            lambda x, y: F.ctc_loss(x.log_softmax(2), y, [50] * 16, [20] * 16),
            [t(50, 16, 30), ints(29, 16, 20) + 1],
        ),
        "LSTM 2x64 packed, T=50 N=16": (
            lambda x: lstm(rnn_utils.pack_padded_sequence(x, lengths))[1][0],
            [t(50, 16, 32)],
        ),
        "MultiLabelMarginLoss 64x32": (
            lambda x, y: F.multilabel_margin_loss(x, y),
            [t(64, 32), ints(32, 64, 32)],
        ),
        "pdist 256x64": (lambda x: F.pdist(x), [t(256, 64)]),
        "FractionalMaxPool2d 64^2": (
            nn.FractionalMaxPool2d(3, output_ratio=0.5),
            [t(8, 16, 64, 64)],
        ),
    }


def _time(fn, inputs, repeat: int) -> float:
    def once():
        out = fn(*inputs)
        if out.requires_grad:
            out.sum().backward()

    once()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        once()
        best = min(best, time.perf_counter() - start)
    return best


def run(lib_name: str, repeat: int, threads: int, only: str = "") -> dict:
    if lib_name == "ember":
        import ember as lib
    else:
        import torch as lib
    lib.set_num_threads(threads)
    lib.manual_seed(0)
    cases = _cases(lib).items()
    return {
        name: _time(fn, inputs, repeat) for name, (fn, inputs) in cases if name.startswith(only)
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", default="", help="the cases whose names start with this")
    parser.add_argument("--lib", choices=("ember", "torch"), help="run one library, print JSON")
    args = parser.parse_args(argv)
    if args.lib:
        print(json.dumps(run(args.lib, args.repeat, args.threads, args.only)))
        return
    results = {}
    for lib in ("ember", "torch"):
        command = [sys.executable, __file__, "--lib", lib, "--repeat", str(args.repeat)]
        command += ["--threads", str(args.threads), "--only", args.only]
        # the checkout's ember, not an installed copy (the script's folder leads sys.path)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]),
        }
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode:
            print(f"{lib}: failed\n{done.stderr[-2000:]}")
            continue
        results[lib] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{'forward (+ backward), ms':34}{'ember':>10}{'torch':>10}{'ratio':>9}")
    for name in results.get("ember", {}):
        ours = results["ember"][name] * 1e3
        theirs = results.get("torch", {}).get(name)
        ratio = f"{ours / (theirs * 1e3):8.2f}x" if theirs else "      n/a"
        shown = f"{theirs * 1e3:10.2f}" if theirs else "       n/a"
        print(f"{name:34}{ours:10.2f}{shown}{ratio}")


if __name__ == "__main__":
    main()
