"""What a tiny eager op on ``cuda`` costs below the Python call, step by step, without a GPU.

    python benchmarks/cuda_call_steps.py [--number 20000] [--repeat 5]

Runs the CUDA plugin's own runtime (runtime.py) over the emulated, counting pycuda
(``EMBER_CUDA_EMULATOR=driver``, ember_backend_gpu/emulated_pycuda.py) and times ``x + y`` on 16
float32 elements as a ladder: the whole op, then each level below it called directly with what
the level above would pass. A step's cost is its level's time less the next one's; the
emulator's own kernel run (a host call, not a GPU's) is timed alone and subtracted, and so is
the emulated ``_launch_kernel`` frame, which on a GPU is pycuda's C++ and ``cuLaunchKernel``.
Then it counts the driver calls per op of a few ops. Each figure is the best of ``--repeat``
rounds, in microseconds of this machine's CPU time per call.
"""

from __future__ import annotations

import argparse
import math
import os
import time
import warnings
from collections import Counter

os.environ["EMBER_CUDA_EMULATOR"] = "driver"


def best(fn, number: int, repeat: int) -> float:
    """Microseconds of process time per call of ``fn``: the best of ``repeat`` rounds."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(number):
            fn()
        times.append((time.process_time() - start) / number * 1e6)
    return min(times)


def ladder(ember, number: int, repeat: int) -> list[tuple[str, float]]:
    """``[(level, us per call)]`` from the whole op down to the emulated kernel."""
    from ember_backend_gpu import launch
    from ember_backend_gpu.kernels import elementwise
    from ember_backend_gpu.kernels._args import operand, run_strided

    from ember._tensor import empty

    x, y = ember.ones(16, device="cuda"), ember.ones(16, device="cuda")
    x + y
    rt = ember.cuda._runtime()
    kernel = elementwise.build(rt)["add"]["float32"]  # the glue closure the dispatcher calls
    out = empty(x._shape, x._dtype, x._storage.device)
    name = "em_ew_add_f32"
    # Strided operands (every other element) take the glue's full path, the levels below it.
    xs, ys = ember.ones(32, device="cuda")[::2], ember.ones(32, device="cuda")[::2]
    operands = [operand(out, 8, (16,)), operand(xs, 8, (16,)), operand(ys, 8, (16,), False)]
    status = (rt.status_word(0),)
    tail = (0.0,)
    shape, strides = launch.coalesce((16,), [op[1] for op in operands])
    args = (*[op[0] for op in operands], *status, *launch.nd_args(shape, strides, [0, 0, 0]), *tail)
    function = rt.function(0, name)
    grid, block = (launch.grid(16, rt.sm_count(0)), 1, 1), (launch.BLOCK, 1, 1)
    launcher, packer = function
    entry = kernel.contiguous("float32")[0]
    out_at, x_at, y_at = (t._storage.ptr for t in (out, x, y))
    nd = launch.nd_args((16,), [(4,), (4,), (4,)], [0, 0, 0])  # contiguous, as the entry
    packed = packer.pack(*args)
    emulated = launcher._kernel
    levels = [
        ("x + y", lambda: x + y),
        ("empty(16): the output", lambda: empty(x._shape, x._dtype, x._storage.device)),
        ("contiguous entry", lambda: entry(None, out_at, x_at, y_at, 16)),
        ("rt.launch_flat", lambda: rt.launch_flat(0, name, 16, (out_at, x_at, y_at), nd, tail)),
        ("kernel(out, x[::2], y[::2]): the glue", lambda: kernel(out, xs, ys)),
        ("run_strided", lambda: run_strided(rt, 0, name, (16,), operands, status, tail)),
        ("rt.launch_1d", lambda: rt.launch_1d(0, name, math.prod(shape), *args)),
        ("rt.call", lambda: rt.call(0, function, grid, block, *args)),
        ("rt._call", lambda: rt._call(function, grid, block, None, args, 0)),
        ("Struct.pack", lambda: packer.pack(*args)),
        (
            "_launch_kernel (emulated)",
            lambda: launcher._launch_kernel(grid, block, packed, 0, None),
        ),
        ("the emulated kernel", lambda: emulated.run(grid, block, packed)),
    ]
    return [(label, best(fn, number, repeat)) for label, fn in levels]


def steps(levels: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Exclusive cost of each step from the ladder's levels."""
    t = dict(levels)
    return [
        (
            "dispatcher: fast path of binary()",
            t["x + y"] - t["empty(16): the output"] - t["contiguous entry"],
        ),
        ("allocation: empty() through the caching allocator", t["empty(16): the output"]),
        (
            "contiguous entry: em_nd arguments (memoised)",
            t["contiguous entry"] - t["rt.launch_flat"],
        ),
        ("launch_flat: function, activate, grid, status word", t["rt.launch_flat"] - t["rt._call"]),
        ("strided operands instead (x[::2] + y[::2]: the glue, the levels below):", 0.0),
        (
            "  glue: operands (address, byte strides, scalar bits), status word",
            t["kernel(out, x[::2], y[::2]): the glue"] - t["run_strided"],
        ),
        (
            "  run_strided: coalesce, em_nd arguments (memoised)",
            t["run_strided"] - t["rt.launch_1d"],
        ),
        ("  launch_1d/launch: grid, function lookup", t["rt.launch_1d"] - t["rt.call"]),
        ("  call: activate, dims, current stream", t["rt.call"] - t["rt._call"]),
        ("both: _call's argument Struct.pack (91 values)", t["Struct.pack"]),
        (
            "both: the rest of _call (tuple unpack, bound method)",
            t["rt._call"] - t["Struct.pack"] - t["_launch_kernel (emulated)"],
        ),
        (
            "(emulated _launch_kernel frame, not on a GPU)",
            t["_launch_kernel (emulated)"] - t["the emulated kernel"],
        ),
        ("(the emulated kernel, not on a GPU)", t["the emulated kernel"]),
    ]


def driver_calls(ember, number: int = 10) -> dict[str, Counter]:
    """Driver calls per op (after a first call that loads its kernel)."""
    from ember_backend_gpu.emulated_pycuda import CALLS

    x, y = ember.ones(16, device="cuda"), ember.ones(16, device="cuda")
    cases = {
        "x + y": lambda: x + y,
        "x * 2.5": lambda: x * 2.5,
        "x.sum()": lambda: x.sum(),
        "x[::2] + y[::2]": lambda: x[::2] + y[::2],
        "x.cpu()": lambda: x.cpu(),
        "x.sum().item()": lambda: x.sum().item(),
    }
    found = {}
    for label, fn in cases.items():
        fn()
        before = Counter(CALLS)
        for _ in range(number):
            fn()
        diff = Counter(CALLS) - before
        found[label] = {k: v / number for k, v in sorted(diff.items())}
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    with warnings.catch_warnings():  # no cuBLAS/cuSOLVER/cuFFT with the emulated driver
        warnings.simplefilter("ignore", RuntimeWarning)
        import ember

        ember.ones(1, device="cuda")
    levels = ladder(ember, args.number, args.repeat)
    print(f"{'level':44s} {'us/call':>8s}")
    for label, value in levels:
        print(f"{label:44s} {value:8.2f}")
    print(f"\n{'step (x + y, 16 float32)':60s} {'us':>6s}")
    for label, value in steps(levels):
        print(f"{label:60s} {value:6.2f}")
    print("\ndriver calls per op:")
    for label, counts in driver_calls(ember).items():
        print(f"  {label:18s} {dict(counts)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
