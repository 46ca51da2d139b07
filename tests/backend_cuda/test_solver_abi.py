"""The cuSOLVER and cuBLAS bindings of ember.linalg (ember_backend_cuda.cusolver, Cublas.trsm) run
their real cffi calls without a GPU, against a stub library built from their own declarations.

The emulator (test_cuda_linalg.py) replaces the Cusolver class with scipy, so only this test
executes cusolver.py's methods in CI: every call goes through cffi's ABI mode with the declared C
types, so a wrong argument count or type (an int for a pointer, a missing ``lwork``) raises here
instead of on a GPU machine. The stub exports every declared function; each logs its name, the
bufferSize queries answer a workspace size and the Create functions a handle. Whether the
declarations match NVIDIA's headers is the one thing left to a GPU run (CI has neither the headers
nor the libraries).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc builds the stub library")
# cuFFT declares its functions as returning ``cufftResult`` (an int), the others ``int``
DECLARATION = re.compile(r"(?:int|cufftResult)\s+(\w+)\(([^;]*)\);", re.S)


def _definition(name: str, params: str) -> str:
    """A C body for one declared function: log the call, fill in the outputs the caller reads."""
    body = [f'    ember_stub_note("{name}");']
    for param in (p.strip() for p in params.split(",")):
        kind, _, arg = param.rpartition("*")
        if arg.strip() == "lwork":
            body.append("    *lwork = 8;")
        elif "Create" in name and kind.strip().count(" ") == 0:  # ``handle_t *handle``
            body.append(f"    *{arg.strip()} = ({kind.strip()})(uintptr_t)16;")
    return f"int {name}({params}) {{\n" + "\n".join(body) + "\n    return 0;\n}\n"


def _stub_source(cdef: str) -> str:
    log = (
        "#include <stdint.h>\n#include <string.h>\n"
        "static char ember_stub_text[1 << 16];\n"
        "const char *ember_stub_log(void) { return ember_stub_text; }\n"
        "void ember_stub_clear(void) { ember_stub_text[0] = 0; }\n"
        "static void ember_stub_note(const char *name) {\n"
        "    if (strlen(ember_stub_text) + strlen(name) + 2 < sizeof ember_stub_text) {\n"
        '        strcat(ember_stub_text, name); strcat(ember_stub_text, "\\n"); }\n}\n'
    )
    functions = "".join(_definition(n, p) for n, p in DECLARATION.findall(cdef))
    return log + cdef + functions


def _build(cdef: str, folder, name: str) -> str:
    source, library = folder / f"{name}.c", folder / f"lib{name}.so"
    source.write_text(_stub_source(cdef))
    done = subprocess.run(["gcc", "-shared", "-fPIC", "-Wall", "-Werror", "-o", str(library),
                           str(source)], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return str(library)


class _Runtime:
    """What the bindings ask of a CUDA runtime: a current stream and per-stream scratch."""

    def __init__(self, make_blas):
        self.make_blas, self._scratch = make_blas, []

    def activate(self, index):
        pass

    def current_stream(self, index):
        return SimpleNamespace(cuda_stream=32)

    def scratch(self, index, nbytes):
        self._scratch.append(np.zeros(max(nbytes, 1), np.uint8))
        return self._scratch[-1].ctypes.data


@pytest.fixture(scope="module")
def solver(tmp_path_factory):
    from ember_backend_cuda import cublas, cusolver

    folder = tmp_path_factory.mktemp("stubs")
    paths = {m: _build(m.CDEF, folder, m.__name__.rpartition(".")[2]) for m in (cublas, cusolver)}
    patch = pytest.MonkeyPatch()
    for module, path in paths.items():
        patch.setattr(module, "library_candidates", lambda path=path: [path])
    runtime = _Runtime(lambda: cublas.Cublas(runtime))
    yield cusolver.Cusolver(runtime)
    patch.undo()


def _libraries(solver) -> list:
    import ctypes

    paths = [solver.path] + ([solver._blas.path] if solver._blas is not None else [])
    return [ctypes.CDLL(path) for path in paths]  # the loaded stubs: the same handles as cffi's


def _calls(solver, method, *args) -> list[str]:
    """The routines ``solver.method(*args)`` calls, in order (handle setup left out)."""
    import ctypes

    for library in _libraries(solver):
        library.ember_stub_clear()
    getattr(solver, method)(*args)
    log = []
    for library in _libraries(solver):
        library.ember_stub_log.restype = ctypes.c_char_p
        log += library.ember_stub_log().decode().split()
    return [name for name in log if "Create" not in name and "SetStream" not in name]


BATCH = 2
BUFFER = np.zeros(4096)  # every operand's address: the stubs read and write none of them
A = BUFFER.ctypes.data


@pytest.mark.parametrize("dtype,letter", [("float32", "S"), ("float64", "D")])
@pytest.mark.parametrize(
    "method,args,routine,query",
    [
        ("getrf", (3, 4, A, A, A), "getrf", True),
        ("getrs", (3, 2, 1, A, 9, A, 3, A, A), "getrs", False),
        ("potrf", (3, True, A, A), "potrf", True),
        ("geqrf", (4, 3, A, A, A), "geqrf", True),
        ("orgqr", (4, 3, 3, A, A, 3, A), "orgqr", True),
        ("syevd", (3, False, True, A, A, A), "syevd", True),
        ("gesvdj", (4, 3, True, True, A, A, A, A, A), "gesvdj", True),
        ("gesvdj", (3, 5, False, False, A, A, A, A, A), "gesvdj", True),
    ],
)
def test_solver_calls_go_through_cffi(solver, method, args, routine, query, dtype, letter):
    name = f"cusolverDn{letter}{routine}"
    calls = _calls(solver, method, 0, dtype, BATCH, *args)
    want = [f"{name}_bufferSize"] * query + [name] * BATCH
    assert [c for c in calls if "GesvdjInfo" not in c] == want
    if routine == "gesvdj":  # its parameters object is created and destroyed around the calls
        assert "cusolverDnDestroyGesvdjInfo" in calls


@pytest.mark.parametrize("dtype,letter", [("float32", "S"), ("float64", "D")])
def test_triangular_solves_go_through_cublas(solver, dtype, letter):
    for left in (True, False):
        calls = _calls(solver, "trsm", 0, dtype, BATCH, 3, 2, left, True, False, True, A, 0, A)
        assert calls == [f"cublas{letter}trsm_v2"] * BATCH
