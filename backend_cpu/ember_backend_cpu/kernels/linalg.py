"""Glue for mm and bmm, and the run-time load of OpenBLAS.

Kernel convention: ``kernel(out, a, b)``, ``out`` contiguous ``[n, p]`` (mm) or ``[B, n, p]``
(bmm), ``a`` and ``b`` with any strides. OpenBLAS comes from the scipy-openblas32 wheel, opened
here with ctypes (never linked at build time: pip builds in a temporary environment), and its
entry points go to C as addresses (see csrc/matmul.c).
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import warnings

from ._args import DTYPE_NAMES, addr, raise_status

# What matmul.c takes from OpenBLAS, in ember_matmul_set_blas's order.
BLAS_SYMBOLS = (
    "scipy_cblas_sgemm",
    "scipy_cblas_dgemm",
    "scipy_openblas_set_num_threads",
)
_openblas = None  # the loaded library, kept so it is never unloaded while C holds its pointers
_openblas_error = None


def openblas_library():
    """The scipy-openblas32 library (BLAS and LAPACK), loaded once; None when it cannot load."""
    global _openblas, _openblas_error
    if _openblas is None and _openblas_error is None:
        try:
            import scipy_openblas32

            name = scipy_openblas32.get_library(True)
            _openblas = ctypes.CDLL(os.path.join(scipy_openblas32.get_lib_dir(), name))
        except (ImportError, OSError) as error:
            _openblas_error = error
            warnings.warn(
                f"ember cpu backend: OpenBLAS (scipy-openblas32) did not load ({error}); float "
                "matrix products fall back to slow C loops and ember.linalg has no CPU kernels",
                RuntimeWarning,
                stacklevel=2,
            )
    return _openblas


def openblas_addresses() -> tuple[int, ...]:
    """The addresses of BLAS_SYMBOLS (0 for any missing), all 0 when OpenBLAS cannot load."""
    library = openblas_library()
    if library is None:
        return (0,) * len(BLAS_SYMBOLS)
    return tuple(
        ctypes.cast(getattr(library, name), ctypes.c_void_p).value if hasattr(library, name) else 0
        for name in BLAS_SYMBOLS
    )


# What matmul_dnnl.c takes from oneDNN (the onednn-cpu-gomp wheel), in its struct's order.
DNNL_SYMBOLS = (
    "dnnl_engine_create",
    "dnnl_stream_create",
    "dnnl_memory_desc_create_with_strides",
    "dnnl_memory_desc_destroy",
    "dnnl_matmul_primitive_desc_create",
    "dnnl_primitive_desc_query",
    "dnnl_primitive_desc_destroy",
    "dnnl_primitive_create",
    "dnnl_primitive_execute",
    "dnnl_memory_create",
    "dnnl_memory_set_data_handle",
)
_dnnl = None  # kept loaded for the same reason as _openblas
# oneDNN is handed to C on the first bfloat16 or float32 product, not at import: loading it costs
# 0.3 s and 12 MiB that a process without products never needs to pay.
_dnnl_decided = False
BF16 = DTYPE_NAMES.index("bfloat16")
# The products oneDNN takes (see matmul_dnnl.c).
DNNL_DTYPES = (BF16, DTYPE_NAMES.index("float32"))


def dnnl_library():
    """oneDNN's libdnnl from the onednn-cpu-gomp wheel, or None when it is not installed (then
    bfloat16 products go through sgemm on float32 copies: correct, only slower)."""
    global _dnnl
    if _dnnl is None and not os.environ.get("EMBER_NO_DNNL"):
        try:
            files = importlib.metadata.distribution("onednn-cpu-gomp").files or ()
            path = next(f for f in files if f.name.startswith("libdnnl.so"))
            _dnnl = ctypes.CDLL(str(path.locate()))
        except (importlib.metadata.PackageNotFoundError, StopIteration, OSError):
            _dnnl = False
    return _dnnl or None


def dnnl_addresses() -> list[int]:
    library = dnnl_library()
    return [
        ctypes.cast(getattr(library, name), ctypes.c_void_p).value
        if library is not None and hasattr(library, name)
        else 0
        for name in DNNL_SYMBOLS
    ]


def use_dnnl(ffi, lib, enabled: bool = True) -> bool:
    """Send bfloat16 and float32 products to oneDNN (when it loads) or, not enabled, to sgemm
    (on float32 copies for bfloat16); whether oneDNN now takes them."""
    global _dnnl_decided
    _dnnl_decided = True
    addresses = dnnl_addresses() if enabled else []
    status = lib.ember_matmul_set_dnnl(ffi.new("intptr_t[]", addresses), len(addresses))
    return enabled and status == 0 and all(addresses)


def build(ffi, lib) -> dict:
    lib.ember_matmul_set_blas(*openblas_addresses())
    call = lib.ember_matmul
    no_memory = lib.EMBER_MATMUL_NO_MEMORY

    def product(name, out, a, b, batch, sa, sb):
        code = a._dtype.code
        if code in DNNL_DTYPES and not _dnnl_decided:
            use_dnnl(ffi, lib)
        n, k = a._shape[-2:]
        p = b._shape[-1]
        status = call(code, batch, n, k, p, addr(out), addr(a), sa, addr(b), sb)
        if status == no_memory:
            raise MemoryError(f"{name}: no memory for a scratch copy ({batch}x{n}x{k}x{p})")
        if status:
            raise_status(status, name, code)

    def mm(out, a, b):
        product("mm", out, a, b, 1, (0, *a._stride), (0, *b._stride))

    def bmm(out, a, b):
        product("bmm", out, a, b, a._shape[0], a._stride, b._stride)

    def addmm(out, bias, a, b):
        """out = bias + a @ b in one gemm; bias contiguous, (p,) or (1, p) broadcast to every
        row, or (n, p). NotImplementedError without OpenBLAS: the runner decomposes."""
        n, k = a._shape
        p = b._shape[1]
        rows = n if len(bias._shape) == 2 and bias._shape[0] == n else 1
        code = a._dtype.code
        status = lib.ember_addmm(
            code, n, k, p, addr(out), addr(bias), rows, addr(a), a._stride, addr(b), b._stride
        )
        if status == no_memory:
            raise MemoryError(f"addmm: no memory for a scratch copy ({n}x{k}x{p})")
        if status:
            raise_status(status, "addmm", code)

    numeric = DTYPE_NAMES[1:]
    return {
        "mm": dict.fromkeys(numeric, mm),
        "bmm": dict.fromkeys(numeric, bmm),
        "addmm": dict.fromkeys(("float32", "float64"), addmm),
    }
