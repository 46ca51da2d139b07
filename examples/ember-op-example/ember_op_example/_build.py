"""cffi builder for the example kernel (out-of-line API mode), run by ``pip install``.

The same choices as ember's CPU backend: -O3, no -march=native (the wheel must run elsewhere), no
-ffast-math (erf and NaN must behave), -ffp-contract=off (no fused multiply-add surprises).
"""

import os
from pathlib import Path

from cffi import FFI

CSRC = Path(__file__).resolve().parent / "csrc"
HEADER = CSRC / "api_fused.h"


def _relative(path: Path) -> str:
    # setuptools wants sources relative to the project root (where setup.py runs).
    return os.path.relpath(path, Path.cwd())


ffibuilder = FFI()
ffibuilder.cdef(
    "\n".join(line for line in HEADER.read_text().splitlines() if not line.startswith("#"))
)
ffibuilder.set_source(
    "ember_op_example._kernels",
    f'#include "{HEADER.name}"\n',
    sources=[_relative(p) for p in sorted(CSRC.glob("*.c"))],
    include_dirs=[_relative(CSRC)],
    depends=[_relative(HEADER)],
    extra_compile_args=["-O3", "-std=gnu11", "-ffp-contract=off"],
    libraries=["m"],
)

if __name__ == "__main__":
    ffibuilder.compile(tmpdir=str(CSRC.parent.parent), verbose=True)
