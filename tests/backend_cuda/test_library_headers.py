"""ember's cffi declarations of cuSOLVER and cuBLAS (ember_backend_cuda.cusolver, .cublas) have
the calling shape of NVIDIA's headers: the same number of parameters, and each parameter and the
result of the same size and kind (pointer, floating point, integer), checked by the C++ compiler
where the headers are installed (the GPU machine's toolkit, or the nvidia-* wheels' include/).

ember declares NVIDIA's enums and status types as ``int`` (the same ABI), so the declarations
cannot simply be repeated after the header as test_fft_abi.py does for cuFFT: each function is
compared by a ``static_assert`` over its two signatures instead. test_solver_abi.py checks that
the bindings call these declarations correctly; this checks the declarations themselves.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from types import SimpleNamespace

import pytest
from ember_backend_cuda import cublas, cusolver
from nvidia_headers import include_dirs

FUNCTION = re.compile(r"\bint\s+(\w+)\s*\(", re.S)
# Overloaded in C++ by inline wrappers taking the old cudaDataType compute type, so ``&name`` is
# ambiguous there; both overloads have this shape. GEMM runs on every GPU run (bench_cuda.py).
CPP_OVERLOADED = {"cublasGemmEx", "cublasGemmStridedBatchedEx"}

COMPARE = """
#include <type_traits>
template <class T> constexpr int kind() {
    return std::is_pointer<T>::value ? 1 : std::is_floating_point<T>::value ? 2 : 0;
}
template <class A, class B> constexpr bool same_slot() {
    return sizeof(A) == sizeof(B) && kind<A>() == kind<B>();
}
template <class R1, class... A1, class R2, class... A2>
constexpr bool same_abi(R1 (*)(A1...), R2 (*)(A2...)) {
    if constexpr (sizeof...(A1) != sizeof...(A2)) return false;
    else return same_slot<R1, R2>() && (same_slot<A1, A2>() && ...);
}
"""


def check_source(header: str, module) -> str:
    """C++ that compiles only if each function ``module.CDEF`` declares matches ``header``'s."""
    space = "ember_" + module.__name__.rpartition(".")[2]
    lines = [f"#include <{header}>", COMPARE, f"namespace {space} {{\n{module.CDEF}\n}}"]
    for name in FUNCTION.findall(module.CDEF):
        if name not in CPP_OVERLOADED:
            lines.append(f"static_assert(same_abi(&::{name}, &{space}::{name}), "
                         f'"{name}: ember declares it unlike {header}");')  # fmt: skip
    return "\n".join(lines) + "\n"


def _compiler() -> str | None:
    return shutil.which("g++") or shutil.which("c++")


@pytest.mark.parametrize("header,module", [("cusolverDn.h", cusolver), ("cublas_v2.h", cublas)])
def test_declarations_have_the_headers_shape(header, module, tmp_path):
    includes, cxx = include_dirs(header, module), _compiler()
    if includes is None or cxx is None:
        pytest.skip(f"{header} (NVIDIA's toolkit or wheel headers) or a C++ compiler is absent")
    source = tmp_path / "abi.cpp"
    source.write_text(check_source(header, module))
    done = subprocess.run([cxx, "-std=c++17", "-fsyntax-only", *[f"-I{d}" for d in includes],
                           str(source)], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]


def test_a_differing_declaration_is_caught(tmp_path):
    """The check can fail: a cuSOLVER declaration missing its ``lda`` does not compile."""
    includes, cxx = include_dirs("cusolverDn.h", cusolver), _compiler()
    if includes is None or cxx is None:
        pytest.skip("cusolverDn.h (NVIDIA's toolkit or wheel headers) or a C++ compiler is absent")
    cdef = cusolver.CDEF.replace(
        "int cusolverDnSgetrf(cusolverDnHandle_t h, int m, int n, float *A, int lda,",
        "int cusolverDnSgetrf(cusolverDnHandle_t h, int m, int n, float *A,",
    )
    broken = SimpleNamespace(__name__="broken.cusolver", CDEF=cdef)
    assert broken.CDEF != cusolver.CDEF
    source = tmp_path / "abi.cpp"
    source.write_text(check_source("cusolverDn.h", broken))
    done = subprocess.run([cxx, "-std=c++17", "-fsyntax-only", *[f"-I{d}" for d in includes],
                           str(source)], capture_output=True, text=True)  # fmt: skip
    assert done.returncode != 0 and "cusolverDnSgetrf: ember declares it unlike" in done.stderr
