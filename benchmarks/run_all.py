"""Every benchmark in one report: ``docs/benchmarks.md``, the table the README links.

    python benchmarks/run_all.py [--only bench_ops bench_linalg] [--out docs/benchmarks.md]

Runs each script of ``SUITE`` in turn (each one starts one process per library itself: see
isolate.py) with the arguments listed there, which keep the whole run to minutes on a 2-core
machine, and writes their tables, ember / PyTorch (and numpy) ratios included, under one
heading each, with the date, commit, machine and command. A script that fails or runs past
its time limit is reported as such in the file, not hidden. The GPU benchmark (bench_cuda.py)
is left out: it needs a CUDA device (see ../shared/gpu in the developers' kit).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# script: arguments of the reported run (smaller than the scripts' defaults where those take long)
SUITE = {
    "bench_overhead.py": ["--threads", "1", "--repeat", "9"],
    "bench_ops.py": ["--repeat", "5", "--threads", "2"],
    "bench_autograd.py": ["--repeat", "5"],
    "bench_training.py": ["--steps", "10", "--threads", "1", "2", "--share"],
    "bench_amp.py": ["--steps", "5", "--rounds", "2"],
    "bench_compile.py": ["--steps", "10", "--models", "tiny", "mlp"],
    "bench_unary_kernels.py": ["--n", "4194304", "--repeat", "5"],
    "bench_reduce_kernels.py": ["--repeat", "5"],
    "bench_index_kernels.py": ["--repeat", "5"],
    "bench_matmul.py": [],
    "bench_linalg.py": [],
    "bench_fft_special.py": ["--n", "1048576", "--repeat", "5"],
    "bench_surface.py": ["--repeat", "5"],
    "bench_nn_breadth.py": ["--repeat", "5"],
    "bench_distributions.py": ["--reps", "3"],
    "bench_jit.py": ["--repeat", "5"],
    "bench_script.py": ["--repeat", "5"],
    "bench_checkpoint.py": [],
    "bench_data.py": [],
    "bench_xpu.py": ["--reps", "5"],
    "bench_fused_optim.py": ["--number", "10", "--repeat", "5"],
}


def _commit() -> str:
    done = subprocess.run(
        ["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            model = next(
                line.split(":", 1)[1].strip() for line in info if line.startswith("model name")
            )
    except (OSError, StopIteration):
        model = platform.processor() or "unknown CPU"
    return f"{model}, {os.cpu_count()} logical cores"


def run_one(script: str, options: list[str], limit: float) -> tuple[str, float, str]:
    """(status, seconds, output) of one benchmark script."""
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, os.path.join(HERE, script), *options],
                              capture_output=True, text=True, timeout=limit, cwd=ROOT)  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        partial = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        return f"timed out after {limit:.0f} s", time.perf_counter() - start, partial
    status = "ok" if done.returncode == 0 else f"failed (exit {done.returncode})"
    output = done.stdout if done.returncode == 0 else done.stdout + done.stderr[-3000:]
    return status, time.perf_counter() - start, output


def report(results: list, argv: list[str]) -> str:
    lines = [
        "# Benchmarks: the latest full run",
        "",
        f"`{' '.join(['python benchmarks/run_all.py', *argv])}`",
        f"on {datetime.date.today()}, commit {_commit()}, {_cpu()},",
        f"Python {platform.python_version()}. Each library runs in its own process; figures are",
        "best or median rounds as each script's header says. A shared machine makes single runs",
        "noisy: compare ratios, not absolute times.",
        "",
    ]
    for script, options, (status, seconds, output) in results:
        lines += [f"## {script} {' '.join(options)}".rstrip(), "", f"{status}, {seconds:.0f} s", ""]
        lines += ["```", output.rstrip(), "```", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="script names (without .py)")
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    parser.add_argument("--limit", type=float, default=900, help="seconds per script")
    args = parser.parse_args(argv)
    chosen = [s for s in SUITE if args.only is None or s[:-3] in args.only]
    results = []
    for script in chosen:
        print(f"{script} ...", flush=True)
        results.append((script, SUITE[script], run_one(script, SUITE[script], args.limit)))
        print(f"  {results[-1][2][0]}, {results[-1][2][1]:.0f} s", flush=True)
    with open(args.out, "w") as out:
        out.write(report(results, argv))
    print(f"wrote {args.out}")
    return 0 if all(r[2][0] == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
