"""Products of conjugate views: ``a.mH @ b`` and ``a.conj() @ b`` of 512 x 512 complex64
matrices against the plain ``a @ b`` and the materialized ``a.mH.resolve_conj() @ b`` (what
ember ran before the conjugate bit reached cgemm), in ember and PyTorch.

With the bit passed to BLAS (ConjTrans / ConjNoTrans) a product of conjugate views costs what
``a @ b`` does; ember's worker also counts the operands the math-bits layer materialized during
its ``a.mH @ b`` calls (0 when no copy is made). Each library runs in its own process
(benchmarks/isolate.py); the cases take turns, each round three calls per case, and each
figure is the best round of --repeat.

    python benchmarks/bench_conj_matmul.py [--n 512] [--repeat 7] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import sys

from isolate import best, in_own_process, load_library, ratio

LIBRARIES = ("ember", "torch")
CASES = {
    "a @ b": lambda a, b: a @ b,
    "a.mH @ b": lambda a, b: a.mH @ b,
    "a.conj() @ b": lambda a, b: a.conj() @ b,
    "a @ b.mH": lambda a, b: a @ b.mH,
    "a.mH.resolve_conj() @ b": lambda a, b: a.mH.resolve_conj() @ b,
}


def _materialized(lib, a, b) -> int:
    """How many operands ember's math-bits layer materializes in one ``a.mH @ b``."""
    from ember.dispatcher import mathbits

    count = [0]
    apply_bits = mathbits._apply_bits

    def counting(value, source):
        count[0] += 1
        return apply_bits(value, source)

    mathbits._apply_bits = counting
    try:
        a.mH @ b
    finally:
        mathbits._apply_bits = apply_bits
    return count[0]


def worker(library: str, n: int, repeat: int, threads: int) -> dict:
    import numpy as np

    lib = load_library(library, threads)
    rng = np.random.default_rng(0)
    a, b = (
        lib.from_numpy(
            (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))).astype(np.complex64)
        )
        for _ in range(2)
    )
    figures = {name: float("inf") for name in CASES}
    for _ in range(repeat):  # the cases interleaved, so a burst of load on the shared machine
        for name, f in CASES.items():  # reaches all of them alike
            figures[name] = min(figures[name], best(lambda f=f: f(a, b), 3, 1) * 1e3)
    if library == "ember":
        figures["materialized"] = _materialized(lib, a, b)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", choices=LIBRARIES)
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.n, args.repeat, args.threads)))
        return
    options = ["--n", str(args.n), "--repeat", str(args.repeat)]
    results = {lib: in_own_process(__file__, lib, options, args.threads) for lib in LIBRARIES}
    print(f"{args.n} x {args.n} complex64, {args.threads} thread(s), best of {args.repeat}")
    print(f"{'case':<26}{'ember ms':>10}{'torch ms':>10}{'ember/torch':>13}")
    for name in CASES:
        ours, theirs = results["ember"][name], results["torch"][name]
        print(f"{name:<26}{ours:10.2f}{theirs:10.2f}{ratio(ours, theirs):>13}")
    print(f"operands ember materialized in a.mH @ b: {results['ember']['materialized']}")


if __name__ == "__main__":
    sys.exit(main())
