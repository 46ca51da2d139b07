"""``libamdhip64`` through cffi's ABI mode: the HIP runtime and hiprtc (which libamdhip64 exports),
opened at run time with the few functions ember calls declared here, so installing the plugin
needs no ROCm headers and no compiler.

Values below (error codes, memcpy kinds, event flags, device attributes) are those of HIP's
``hip_runtime_api.h`` from ROCm 5.x, unchanged in 6.x; ``tests/backend_rocm`` checks them against
the installed header when there is one. ``hipErrorNoDevice`` and ``hipErrorInvalidDevice`` from
``hipGetDeviceCount`` mean "no AMD GPU here", as on a machine with ROCm's libraries but no GPU.
"""

from __future__ import annotations

import ctypes.util
import glob
import os

from ember_backend_gpu.libraries import open_library

CDEF = """
typedef int hipError_t;
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipEvent_t *hipEvent_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;
typedef struct _hiprtcProgram *hiprtcProgram;
typedef struct { char reserved[64]; } hipIpcMemHandle_t;

const char *hipGetErrorName(hipError_t error);
const char *hipGetErrorString(hipError_t error);
hipError_t hipInit(unsigned int flags);
hipError_t hipRuntimeGetVersion(int *version);
hipError_t hipGetDeviceCount(int *count);
hipError_t hipSetDevice(int device);
hipError_t hipDeviceSynchronize(void);
hipError_t hipDeviceGetName(char *name, int len, int device);
hipError_t hipDeviceTotalMem(size_t *bytes, int device);
hipError_t hipDeviceGetAttribute(int *value, int attribute, int device);
hipError_t hipGetDeviceProperties(void *prop, int device);
hipError_t hipMemGetInfo(size_t *free, size_t *total);

hipError_t hipMalloc(void **ptr, size_t size);
hipError_t hipFree(void *ptr);
hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags);
hipError_t hipHostFree(void *ptr);
hipError_t hipMemcpy(void *dst, const void *src, size_t size, int kind);
hipError_t hipMemcpyAsync(void *dst, const void *src, size_t size, int kind, hipStream_t stream);
hipError_t hipMemsetAsync(void *dst, int value, size_t size, hipStream_t stream);
hipError_t hipIpcGetMemHandle(hipIpcMemHandle_t *handle, void *devPtr);
hipError_t hipIpcOpenMemHandle(void **devPtr, hipIpcMemHandle_t handle, unsigned int flags);
hipError_t hipIpcCloseMemHandle(void *devPtr);

hipError_t hipModuleLoadData(hipModule_t *module, const void *image);
hipError_t hipModuleGetFunction(hipFunction_t *function, hipModule_t module, const char *name);
hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gx, unsigned int gy,
                                 unsigned int gz, unsigned int bx, unsigned int by,
                                 unsigned int bz, unsigned int shared, hipStream_t stream,
                                 void **params, void **extra);

hipError_t hipStreamCreate(hipStream_t *stream);
hipError_t hipStreamDestroy(hipStream_t stream);
hipError_t hipStreamQuery(hipStream_t stream);
hipError_t hipStreamSynchronize(hipStream_t stream);
hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event, unsigned int flags);
hipError_t hipEventCreateWithFlags(hipEvent_t *event, unsigned int flags);
hipError_t hipEventDestroy(hipEvent_t event);
hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream);
hipError_t hipEventQuery(hipEvent_t event);
hipError_t hipEventSynchronize(hipEvent_t event);
hipError_t hipEventElapsedTime(float *ms, hipEvent_t start, hipEvent_t stop);

int hiprtcVersion(int *major, int *minor);
const char *hiprtcGetErrorString(int result);
int hiprtcCreateProgram(hiprtcProgram *prog, const char *src, const char *name, int numHeaders,
                        const char **headers, const char **includeNames);
int hiprtcCompileProgram(hiprtcProgram prog, int numOptions, const char **options);
int hiprtcGetProgramLogSize(hiprtcProgram prog, size_t *size);
int hiprtcGetProgramLog(hiprtcProgram prog, char *log);
int hiprtcGetCodeSize(hiprtcProgram prog, size_t *size);
int hiprtcGetCode(hiprtcProgram prog, char *code);
int hiprtcDestroyProgram(hiprtcProgram *prog);
"""

SUCCESS = 0
OUT_OF_MEMORY = 2
NO_DEVICE = 100
INVALID_DEVICE = 101
NOT_READY = 600
MEMCPY = {"htod": 1, "dtoh": 2, "dtod": 3}
EVENT_BLOCKING_SYNC, EVENT_DISABLE_TIMING = 1, 2
IPC_HANDLE_SIZE, IPC_LAZY_ENABLE_PEER_ACCESS = 64, 0  # HIP 5-6 define the flag as 0
ATTRIBUTE = {"major": 23, "minor": 61, "multi_processor_count": 63}
# hipGetDeviceProperties (the symbol kept with ROCm 5's layout) fills a struct of 792 bytes on
# ROCm 5; gcnArchName ("gfx90a:sramecc+:xnack-") is at byte 396. EMBER_ROCM_ARCH overrides it.
PROPS_BYTES, ARCH_OFFSET = 4096, 396
LAUNCH_BUFFER_POINTER, LAUNCH_BUFFER_SIZE, LAUNCH_END = 1, 2, 3


class HipError(RuntimeError):
    """A HIP runtime call failed; ``code`` is its hipError_t."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


class Hip:
    """The opened library: ``hip.lib.<function>`` and ``hip.check(status, what)``."""

    def __init__(self, ffi, lib, path: str):
        self.ffi, self.lib, self.path = ffi, lib, path

    def error_name(self, status: int) -> str:
        return self.ffi.string(self.lib.hipGetErrorName(status)).decode()

    def check(self, status: int, what: str) -> None:
        if status != SUCCESS:
            raise HipError(f"{what} failed: {self.error_name(status)} ({status})", status)

    def version(self) -> str:
        """The HIP runtime version as "major.minor.patch" (HIP encodes it as M*1e7+m*1e5+p)."""
        box = self.ffi.new("int *")
        self.check(self.lib.hipRuntimeGetVersion(box), "hipRuntimeGetVersion")
        value = box[0]
        return f"{value // 10_000_000}.{value // 100_000 % 100}.{value % 100_000}"

    def device_count(self) -> int:
        """Devices HIP sees; 0 when it reports none (hipErrorNoDevice/hipErrorInvalidDevice)."""
        box = self.ffi.new("int *")
        status = self.lib.hipGetDeviceCount(box)
        if status in (NO_DEVICE, INVALID_DEVICE):
            return 0
        self.check(status, "hipGetDeviceCount")
        return box[0]


def library_candidates(stem: str = "amdhip64") -> list[str]:
    """Paths to try for lib<stem>, best first: $ROCM_PATH, $HIP_PATH, /opt/rocm, the loader's
    search path (Debian ships only the versioned name without its -dev package)."""
    found = []
    for root in (os.environ.get("ROCM_PATH"), os.environ.get("HIP_PATH"), "/opt/rocm"):
        if root:
            found += sorted(glob.glob(os.path.join(root, "lib", f"lib{stem}.so*")), reverse=True)
    found.append(ctypes.util.find_library(stem) or f"lib{stem}.so")
    found += sorted(glob.glob(f"/usr/lib/*-linux-gnu/lib{stem}.so.*"), reverse=True)
    return found


def load_hip() -> Hip:
    """The HIP runtime, or RuntimeError saying what is missing (the core shows it as the reason
    the ``rocm`` plugin cannot serve ``cuda``)."""
    try:
        ffi, lib, path = open_library(
            CDEF,
            library_candidates(),
            "the HIP runtime (libamdhip64)",
            "Install ROCm (https://rocm.docs.amd.com) or Debian's libamdhip64-5, or set ROCM_PATH",
        )
    except OSError as exc:
        raise RuntimeError(f"no ROCm on this machine: {exc}") from exc
    return Hip(ffi, lib, path)
