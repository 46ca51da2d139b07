"""CLBlast's GEMM through cffi in ABI mode: the shared library is opened at run time (no compiler,
no headers), and called on pyopencl's ``cl_mem`` and ``cl_command_queue`` handles, so its
kernels run in ember's in-order queue between ember's own.

The library is ``EMBER_CLBLAST_LIBRARY`` when set, else the system's ``libclblast`` (Debian and
Ubuntu: ``apt install libclblast1``, or ``libclblast-dev``). ``EMBER_XPU_CLBLAST=0`` turns it off;
without it, matrix products use the built-in tiled kernel (clc/gemm.cl), which is slower.
"""

from __future__ import annotations

import ctypes.util
import os
import warnings

LIBRARY_ENV = "EMBER_CLBLAST_LIBRARY"
SWITCH_ENV = "EMBER_XPU_CLBLAST"

ROW_MAJOR = 101
NO_TRANS = 111
TRANS = 112
CONJ_TRANS = 113  # CLBlast has no conjugate without a transpose
SUCCESS = 0
# CLBlast statuses that mean the device ran out of memory.
NO_MEMORY = (-4, -5, -6)
PRECISIONS = {"float32": 32, "float64": 64}  # CLBlastPrecision codes

# Kernel parameters for OpenCL devices of CPU type (PoCL), which CLBlast's database does not know:
# with its defaults, GEMM ran at 15-17 GFLOPS on PoCL here (2 cores, AVX-512), and small and
# medium products took its "direct" kernel at 9-11. These values come from a search over a few
# dozen settings of 1024^2, 2048^2 and the training models' products (64x784x512 ...): 67-70
# GFLOPS at 1024 and 2048, 25-45 for the models' shapes, which now take the tiled kernel from
# 64^3 up. Tiles of 64x64x32 with 8-wide vectors, staged in local memory (cache-resident on a
# CPU). GPUs keep CLBlast's own tuning.
CPU_PARAMETERS = {
    "Xgemm": {"GEMMK": 0, "KREG": 1, "KWG": 32, "KWI": 2, "MDIMA": 8, "MDIMC": 8, "MWG": 64,
              "NDIMB": 8, "NDIMC": 8, "NWG": 64, "SA": 1, "SB": 1, "STRM": 0, "STRN": 0,
              "VWM": 8, "VWN": 8},
    "GemmRoutine": {"XGEMM_MIN_INDIRECT_SIZE": 64},
}  # fmt: skip

_GEMM = """
    int CLBlast{p}gemm(int layout, int a_transpose, int b_transpose, size_t m, size_t n, size_t k,
        {t} alpha, const cl_mem a, size_t a_offset, size_t a_ld, const cl_mem b, size_t b_offset,
        size_t b_ld, {t} beta, cl_mem c, size_t c_offset, size_t c_ld, cl_command_queue *queue,
        cl_event *event);
    int CLBlast{p}gemmStridedBatched(int layout, int a_transpose, int b_transpose, size_t m,
        size_t n, size_t k, {t} alpha, const cl_mem a, size_t a_offset, size_t a_ld,
        size_t a_stride, const cl_mem b, size_t b_offset, size_t b_ld, size_t b_stride, {t} beta,
        cl_mem c, size_t c_offset, size_t c_ld, size_t c_stride, size_t batch_count,
        cl_command_queue *queue, cl_event *event);
"""
# cl_float2 / cl_double2 by value: two floats (doubles) in SSE registers, as these structs.
CDEF = (
    "typedef void *cl_mem; typedef void *cl_command_queue; typedef void *cl_event;\n"
    "typedef struct { float re, im; } cl_float2; typedef struct { double re, im; } cl_double2;\n"
    "int CLBlastOverrideParameters(void *device, const char *kernel_name, int precision,\n"
    "    size_t num_parameters, const char **names, const size_t *values);\n"
    + _GEMM.format(p="S", t="float")
    + _GEMM.format(p="D", t="double")
    + _GEMM.format(p="C", t="cl_float2")
    + _GEMM.format(p="Z", t="cl_double2")
)


def _candidates() -> list[str]:
    given = os.environ.get(LIBRARY_ENV)
    if given:
        return [given]
    found = ctypes.util.find_library("clblast")
    names = ["libclblast.so.1", "libclblast.so", "libclblast.dylib", "clblast.dll"]
    return ([found] if found else []) + names


class CLBlast:
    """The loaded library and the per-device queue handles it takes."""

    def __init__(self, ffi, lib, path: str):
        self.ffi = ffi
        self.lib = lib
        self.path = path
        self._queues: dict = {}

    def queue(self, dev):
        """A ``cl_command_queue *`` for a device's queue (CLBlast takes a pointer to it); the first
        call for a CPU-type device also gives CLBlast the kernel parameters for one."""
        found = self._queues.get(dev.index)
        if found is None:
            if dev.cpu:
                self.tune(dev, CPU_PARAMETERS)
            found = self.ffi.new("cl_command_queue *", self.ffi.cast("void *", dev.queue.int_ptr))
            self._queues[dev.index] = found
        return found

    def mem(self, buffer):
        return self.ffi.cast("cl_mem", buffer.int_ptr)

    def tune(self, dev, parameters: dict) -> None:
        """Override CLBlast's parameters for ``dev``: ``{kernel: {name: value}}``, every precision
        ember calls. A refusal (another CLBlast version names them otherwise) keeps its own."""
        ffi = self.ffi
        device = ffi.cast("void *", dev.cl_device.int_ptr)
        for kernel, values in parameters.items():
            names = [ffi.new("char[]", name.encode()) for name in values]
            name_array = ffi.new("const char *[]", names)
            value_array = ffi.new("size_t[]", list(values.values()))
            for precision in PRECISIONS.values():
                status = self.lib.CLBlastOverrideParameters(
                    device, kernel.encode(), precision, len(values), name_array, value_array
                )
                if status != SUCCESS:
                    warnings.warn(
                        f"xpu: CLBlast refused ember's {kernel} parameters for "
                        f"{dev.name} (status {status}); it keeps its defaults",
                        RuntimeWarning,
                        stacklevel=3,
                    )


def load() -> CLBlast:
    """Open CLBlast; raises OSError naming what was tried (or that it is switched off)."""
    if os.environ.get(SWITCH_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        raise OSError(f"CLBlast is switched off ({SWITCH_ENV}=0)")
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    errors = []
    for path in _candidates():
        try:
            return CLBlast(ffi, ffi.dlopen(path), path)
        except OSError as exc:
            errors.append(f"{path}: {exc}")
    raise OSError(
        "CLBlast was not found (tried " + "; ".join(errors) + "). Install it (Debian/Ubuntu: "
        f"apt install libclblast-dev) or point {LIBRARY_ENV} at libclblast"
    )
