"""Building an extension: cffi writes the glue, the system compiler builds the shared library.

The compilers run as subprocesses (not through setuptools) so that their output is captured for
the error message, C, C++ and CUDA sources each get their own compiler, and the files compile in
parallel. The glue is compiled as C and sees the functions through their C declarations, which
is why exported functions need C linkage (``EMBER_EXPORT``).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

_CXX_SUFFIXES = frozenset((".cpp", ".cc", ".cxx", ".c++", ".C"))
# Headers among the sources are scanned for EMBER_EXPORT declarations and hashed, not compiled.
_HEADER_SUFFIXES = frozenset((".h", ".hh", ".hpp", ".hxx", ".cuh"))
_OPT = "-O2"


def build(spec, module_name: str, root: Path, library: Path, verbose: bool, keep: bool) -> None:
    """Build ``spec`` into ``library`` (atomically: a half-built file is never left there)."""
    work = root / f"{module_name}.build"
    work.mkdir(exist_ok=True)
    glue = work / f"{module_name}.c"
    _emit_glue(spec, module_name, glue)
    includes = [f"-I{root}"] + [f"-I{p}" for p in spec.includes]
    commands = [_glue_command(glue, includes)]
    compiled = [p for p in spec.paths if p.suffix not in _HEADER_SUFFIXES]
    commands += [_compile_command(spec, p, work, includes) for p in compiled]
    _run_all(spec.name, commands, verbose)
    objects = [command[-1] for command in commands]
    target = work / library.name
    _run_all(spec.name, [_link_command(spec, objects, target)], verbose)
    os.replace(target, library)
    if not keep:
        shutil.rmtree(work, ignore_errors=True)


def _emit_glue(spec, module_name: str, path: Path) -> None:
    from cffi import FFI, CDefError

    ffi = FFI()
    declarations = [decl for decl, _ in spec.declarations.values()]
    try:
        ffi.cdef("\n".join(decl + ";" for decl in declarations))
    except CDefError as exc:
        raise ValueError(
            f"extension '{spec.name}': cffi cannot parse the declarations (plain C types only: "
            f"pointers, integers, floating point): {exc}"
        ) from exc
    prelude = '#include "ember_extension.h"\n'
    ffi.set_source(module_name, prelude + "".join(f"EMBER_EXPORT {d};\n" for d in declarations))
    with contextlib.redirect_stdout(io.StringIO()):  # cffi prints "generating <file>"
        ffi.emit_c_code(str(path))


def _glue_command(glue: Path, includes: list) -> list:
    python = sysconfig.get_paths()["include"]
    cc = _compiler("CC", "cc")
    return [*cc, "-c", "-fPIC", _OPT, f"-I{python}", *includes, str(glue), "-o", f"{glue}.o"]


def _compile_command(spec, path: Path, work: Path, includes: list) -> list:
    out = str(work / f"{path.name}.o")
    if path.suffix == ".cu":
        nvcc = [_nvcc(spec.name), "-c", "-Xcompiler", "-fPIC", "-std=c++17", _OPT]
        return [*nvcc, *includes, *spec.cuda_cflags, str(path), "-o", out]
    if path.suffix in _CXX_SUFFIXES:
        compiler = [*_compiler("CXX", "c++"), "-std=c++17"]
    else:
        compiler = _compiler("CC", "cc")
    return [*compiler, "-c", "-fPIC", _OPT, *includes, *spec.cflags, str(path), "-o", out]


def _link_command(spec, objects: list, target: Path) -> list:
    cxx = spec.cuda or any(p.suffix in _CXX_SUFFIXES or p.suffix == ".cu" for p in spec.paths)
    linker = _compiler("CXX", "c++") if cxx else _compiler("CC", "cc")
    flags = ["-undefined", "dynamic_lookup"] if sys.platform == "darwin" else []
    if spec.cuda:
        flags += _cuda_libraries(spec.name)
    return [*linker, "-shared", *objects, "-o", str(target), *flags, *spec.ldflags]


def _run_all(name: str, commands: list, verbose: bool) -> None:
    """Run the commands in parallel; RuntimeError with the compiler's output if one fails."""
    running = []
    for command in commands:
        if verbose:
            print(" ".join(command), flush=True)
        running.append(
            (command, subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        )
    failed = []
    for command, process in running:
        output = process.communicate()[0].decode(errors="replace")
        if verbose and output:
            print(output, end="", flush=True)
        if process.returncode:
            failed.append(f"{' '.join(command)}\n{output}")
    if failed:
        raise RuntimeError(f"Error building extension '{name}': " + "\n".join(failed))


def _compiler(variable: str, default: str) -> list:
    compiler = os.environ.get(variable) or default
    words = compiler.split()
    if shutil.which(words[0]) is None:
        raise RuntimeError(
            f"no C/C++ compiler: '{compiler}' is not on PATH; install one (gcc or clang) or "
            f"set ${variable}"
        )
    return words


def _nvcc(name: str) -> str:
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    found = shutil.which("nvcc") or (home and shutil.which(str(Path(home) / "bin" / "nvcc")))
    if not found:
        raise RuntimeError(
            f"Error building extension '{name}': nvcc not found (CUDA sources need the CUDA "
            "toolkit's nvcc on PATH or under $CUDA_HOME/bin)"
        )
    return found


def _cuda_libraries(name: str) -> list:
    """Linker flags for the CUDA runtime, from the first CUDA home that has it (torch's order:
    $CUDA_HOME, $CUDA_PATH, above nvcc, /usr/local/cuda); nvcc may be a wrapper script."""
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    homes += [str(Path(_nvcc(name)).resolve().parent.parent), "/usr/local/cuda"]
    for home in filter(None, homes):
        for lib in (Path(home) / "lib64", Path(home) / "lib"):
            if any(lib.glob("libcudart.so*")) or any(lib.glob("libcudart.dylib")):
                return [f"-L{lib}", f"-Wl,-rpath,{lib}", "-lcudart"]
    return ["-lcudart"]  # the linker's search path, or its error names what is missing
