"""cffi builder for the CPU kernels (out-of-line API mode), run by ``pip install``.

Compiler flags: -O3 with AVX2 clones chosen at load time (``target_clones`` in ember_cpu.h), never
-march=native (the wheel must run on other machines) nor -ffast-math (NaN and rounding must match
numpy). -fwrapv makes integer overflow wrap as PyTorch's does; -ffp-contract=off keeps a*b+c
unfused so the AVX2 and baseline clones give the same bits. OpenMP when the compiler has it.
"""

import os
import shutil
import sys
from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
# cffi runs this file by path (setup.py's cffi_modules), not as a package module: the sibling
# _toolchain.py (shared with the run-time fused kernels) is put on the path for the import.
sys.path.insert(0, str(HERE))
from _toolchain import BASE_FLAGS, has_openmp  # noqa: E402
from _toolchain import compiler as _compiler  # noqa: E402

sys.path.remove(str(HERE))  # the package's other modules must not shadow top-level names

CSRC = HERE / "csrc"


def _relative(path: Path) -> str:
    # setuptools wants sources relative to the project root (where setup.py runs).
    return os.path.relpath(path, Path.cwd())


API_HEADERS = sorted(CSRC.glob("api_*.h"))  # one per kernel family: what Python may call


def _cdef_text() -> str:
    """The API headers as cffi reads them: declarations only (guards and includes dropped)."""
    lines = []
    for header in API_HEADERS:
        lines += [
            line for line in header.read_text().splitlines() if not line.lstrip().startswith("#")
        ]
    return "\n".join(lines)


# Seconds each of the slow sources took to compile on a CI-sized machine (2026-11-29, -O3 -g0);
# the rest take under ten. Only the order of compilation reads them: started last, one of the
# loop files alone kept a core busy for a minute and a half after the other had finished.
_COMPILE_SECONDS = {"reduce": 65, "unary_loops": 61, "binary_loops": 57, "nn": 18}


def _compile_in_parallel(
    self,
    sources,
    output_dir=None,
    macros=None,
    include_dirs=None,
    debug=0,
    extra_preargs=None,
    extra_postargs=None,
    depends=None,
):
    """distutils' CCompiler.compile with the sources compiled on every core: the kernels are one
    extension of many C files, which setuptools compiles one after another (three minutes on
    two cores, most of a fresh install). Same steps as the original, in a thread pool, the
    slowest sources first so that the cores finish together."""
    from concurrent.futures import ThreadPoolExecutor

    macros, objects, extra_postargs, pp_opts, build = self._setup_compile(
        output_dir, macros, include_dirs, sources, depends, extra_postargs
    )
    cc_args = self._get_cc_args(pp_opts, debug, extra_preargs)

    def one(obj):
        if obj in build:
            src, ext = build[obj]
            self._compile(obj, src, ext, cc_args, extra_postargs, pp_opts)

    slowest_first = sorted(objects, key=lambda obj: -_COMPILE_SECONDS.get(Path(obj).stem, 0))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(one, slowest_first))  # list(): a compile error is raised here
    return objects


def _use_parallel_compile() -> None:
    try:
        from setuptools._distutils import ccompiler
    except ImportError:  # setuptools without its vendored distutils: the serial default
        return
    ccompiler.CCompiler.compile = _compile_in_parallel


_use_parallel_compile()
ffibuilder = FFI()
ffibuilder.cdef(_cdef_text())
_openmp = ["-fopenmp"] if has_openmp() else []
ffibuilder.set_source(
    "ember_backend_cpu._kernels",
    "".join(f'#include "{header.name}"\n' for header in API_HEADERS),
    sources=[_relative(p) for p in sorted(CSRC.glob("*.c"))],
    include_dirs=[_relative(CSRC)],
    depends=[_relative(p) for p in sorted(CSRC.glob("*.[hd]*"))],
    extra_compile_args=BASE_FLAGS + _openmp,
    extra_link_args=_openmp,
    libraries=["m"],
)

# The hot path's small calls that keep the GIL: a module of its own, since cffi's wrappers release
# it for every call of a module (csrc/gil_held/gil_held.c says why and when they release it).
HELD_SOURCE = CSRC / "gil_held" / "gil_held.c"
held_builder = FFI()
held_builder.cdef(
    """
    void ember_held_bind(intptr_t binary, intptr_t unary);
    int ember_held_binary_contig(int key, intptr_t out, intptr_t a, intptr_t b, int64_t n);
    int ember_held_unary_contig(int key, intptr_t out, intptr_t x, int64_t n);
    intptr_t ember_held_address(const char *buffer);
    int ember_held_max_elements(void);
    """
)
held_builder.set_source(
    "ember_backend_cpu._gil_held",
    HELD_SOURCE.read_text(),
    depends=[_relative(HELD_SOURCE)],
    extra_compile_args=BASE_FLAGS,
)

if __name__ == "__main__":
    if shutil.which(_compiler()[0]) is None:
        raise SystemExit("no C compiler found")
    for builder in (ffibuilder, held_builder):
        builder.compile(tmpdir=str(HERE.parent), verbose=True)
