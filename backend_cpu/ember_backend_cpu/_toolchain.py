"""The C toolchain both builds use: ``_build.py`` (the kernels, at ``pip install``) and
``fused.py`` (fused kernels, at run time). Importing it runs nothing."""

from __future__ import annotations

import os
import subprocess
import sysconfig
import tempfile
from pathlib import Path

# -g0 overrides the -g of Python's own CFLAGS, which setuptools and cffi pass first: debug info
# was a quarter of the kernels' compile time and two thirds of the wheel (numpy's and PyTorch's
# wheels ship without it too).
BASE_FLAGS = ["-O3", "-g0", "-std=gnu11", "-fwrapv", "-ffp-contract=off", "-fno-math-errno"]


def compiler() -> list:
    return (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()


def has_openmp() -> bool:
    """Whether the C compiler accepts -fopenmp (gcc does; Apple clang does not)."""
    if os.environ.get("EMBER_NO_OPENMP"):
        return False
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "omp.c"
        src.write_text("#include <omp.h>\nint main(void){return omp_get_max_threads() < 1;}\n")
        try:
            result = subprocess.run(
                [*compiler(), "-fopenmp", str(src), "-o", str(Path(tmp) / "omp")],
                capture_output=True,
                check=False,
            )
        except OSError:
            return False
        return result.returncode == 0
