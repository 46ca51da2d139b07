"""cuFFT through cffi's ABI mode, for ember.fft on CUDA: the library is opened at run time,
nothing is compiled, as cuBLAS and cuSOLVER are (cublas.py, cusolver.py).

``libcufft`` comes from the ``nvidia-cufft`` wheel when installed, else from the CUDA toolkit or
the loader's search path. Plans are made with ``cufftMakePlanMany64`` (64-bit sizes, cuFFT's
advanced layout) and cached per device on the whole layout, so a repeated transform only binds
the current stream and executes. cuFFT allocates each plan's work area itself. The layout
arithmetic (which dims, strides and batches) is the glue's, ember_backend_gpu/kernels/fft.py.
"""

from __future__ import annotations

from ember_backend_gpu.libraries import open_library

from .toolkit import library_paths

CDEF = """
typedef int cufftHandle;
typedef int cufftResult;
typedef int cufftType;
typedef float cufftReal;
typedef double cufftDoubleReal;
typedef struct { float x, y; } cufftComplex;
typedef struct { double x, y; } cufftDoubleComplex;
typedef struct CUstream_st *cudaStream_t;
cufftResult cufftCreate(cufftHandle *plan);
cufftResult cufftDestroy(cufftHandle plan);
cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream);
cufftResult cufftMakePlanMany64(cufftHandle plan, int rank, long long int *n,
                                long long int *inembed, long long int istride,
                                long long int idist, long long int *onembed,
                                long long int ostride, long long int odist, cufftType type,
                                long long int batch, size_t *workSize);
cufftResult cufftExecC2C(cufftHandle plan, cufftComplex *idata, cufftComplex *odata,
                         int direction);
cufftResult cufftExecR2C(cufftHandle plan, cufftReal *idata, cufftComplex *odata);
cufftResult cufftExecC2R(cufftHandle plan, cufftComplex *idata, cufftReal *odata);
cufftResult cufftExecZ2Z(cufftHandle plan, cufftDoubleComplex *idata,
                         cufftDoubleComplex *odata, int direction);
cufftResult cufftExecD2Z(cufftHandle plan, cufftDoubleReal *idata, cufftDoubleComplex *odata);
cufftResult cufftExecZ2D(cufftHandle plan, cufftDoubleComplex *idata, cufftDoubleReal *odata);
"""
# (kind, dtype) -> (cufftType, exec function, input C type, output C type)
TYPES = {
    ("r2c", "float32"): (0x2A, "cufftExecR2C", "cufftReal *", "cufftComplex *"),
    ("c2r", "float32"): (0x2C, "cufftExecC2R", "cufftComplex *", "cufftReal *"),
    ("c2c", "float32"): (0x29, "cufftExecC2C", "cufftComplex *", "cufftComplex *"),
    ("r2c", "float64"): (0x6A, "cufftExecD2Z", "cufftDoubleReal *", "cufftDoubleComplex *"),
    ("c2r", "float64"): (0x6C, "cufftExecZ2D", "cufftDoubleComplex *", "cufftDoubleReal *"),
    ("c2c", "float64"): (0x69, "cufftExecZ2Z", "cufftDoubleComplex *", "cufftDoubleComplex *"),
}
STATUS = {
    1: "CUFFT_INVALID_PLAN",
    2: "CUFFT_ALLOC_FAILED",
    3: "CUFFT_INVALID_TYPE",
    4: "CUFFT_INVALID_VALUE",
    5: "CUFFT_INTERNAL_ERROR",
    6: "CUFFT_EXEC_FAILED",
    7: "CUFFT_SETUP_FAILED",
    8: "CUFFT_INVALID_SIZE",
    9: "CUFFT_UNALIGNED_DATA",
    11: "CUFFT_INVALID_DEVICE",
    14: "CUFFT_NOT_SUPPORTED",
}
# Plans hold device memory (their work areas): past this many, the oldest is destroyed.
MAX_PLANS = 64


def library_candidates() -> list[str]:
    """Paths to try for libcufft, best first."""
    return library_paths("cufft")


class Cufft:
    """cuFFT's plans and executions for every device of one runtime."""

    def __init__(self, runtime):
        self.runtime = runtime
        self.ffi, self.lib, self.path = open_library(
            CDEF,
            library_candidates() or ["libcufft.so"],
            "cuFFT",
            "Install it with `pip install nvidia-cufft` or the CUDA toolkit's libcufft",
        )
        self._plans: dict = {}  # (device, layout) -> [plan handle, bound stream]

    def _check(self, status: int, what: str) -> None:
        if status:
            raise RuntimeError(f"cuFFT {what} failed: {STATUS.get(status, status)}")

    def _plan(self, index: int, key: tuple):
        found = self._plans.get((index, key))
        if found is not None:
            return found
        kind, dtype, n, inembed, istride, idist, onembed, ostride, odist, batch = key
        if len(self._plans) >= MAX_PLANS:
            oldest = next(iter(self._plans))
            self.runtime.synchronize(oldest[0])  # queued executions may still use its work area
            self.lib.cufftDestroy(self._plans.pop(oldest)[0])
        box = self.ffi.new("cufftHandle *")
        self._check(self.lib.cufftCreate(box), "cufftCreate")
        sizes = [self.ffi.new("long long[]", list(v)) for v in (n, inembed, onembed)]
        work = self.ffi.new("size_t *")
        status = self.lib.cufftMakePlanMany64(
            box[0], len(n), sizes[0], sizes[1], istride, idist, sizes[2], ostride, odist,
            TYPES[kind, dtype][0], batch, work,
        )  # fmt: skip
        if status:
            self.lib.cufftDestroy(box[0])
            self._check(status, f"cufftMakePlanMany64 of a {dtype} {kind} of size {list(n)}")
        found = self._plans[index, key] = [box[0], None]
        return found

    def execute(self, index, kind, dtype, n, inembed, istride, idist, onembed, ostride, odist,
                batch, src, dst, direction) -> None:  # fmt: skip
        """One batched transform in cuFFT's advanced layout (element counts, not bytes):
        input element ``[b, i...]`` at ``b * idist + (row-major index of i in inembed) *
        istride``, the output alike; unnormalised; ``direction`` -1 forward, 1 inverse (c2c)."""
        self.runtime.activate(index)
        layout = (kind, dtype, tuple(n), tuple(inembed), istride, idist, tuple(onembed),
                  ostride, odist, batch)  # fmt: skip
        entry = self._plan(index, layout)
        stream = self.runtime.current_stream(index).cuda_stream
        if entry[1] != stream:
            native = self.ffi.cast("cudaStream_t", stream)
            self._check(self.lib.cufftSetStream(entry[0], native), "cufftSetStream")
            entry[1] = stream
        _, name, in_type, out_type = TYPES[kind, dtype]
        args = [entry[0], self.ffi.cast(in_type, src), self.ffi.cast(out_type, dst)]
        if kind == "c2c":
            args.append(direction)
        self._check(getattr(self.lib, name)(*args), name)
