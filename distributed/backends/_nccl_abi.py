"""libnccl and the CUDA driver through cffi's ABI mode: declarations, enums, library lookup.

The declarations are NCCL's ``nccl.h`` (2.18 and later; the ``nvidia-nccl-cu12`` wheel ships
the header and a test holds these values to it). The CUDA driver (``libcuda.so.1``, part of the
GPU driver) gives the events that tell when an operation on a stream is done, and the device's
primary context, which ember's CUDA backend shares.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib

NCCL_CDEF = """
typedef struct ncclComm* ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;
typedef int ncclResult_t;
typedef int ncclDataType_t;
typedef int ncclRedOp_t;
typedef void* cudaStream_t;
ncclResult_t ncclGetVersion(int *version);
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
const char* ncclGetErrorString(ncclResult_t result);
const char* ncclGetLastError(ncclComm_t comm);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError);
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
    ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
    ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
"""

CUDA_CDEF = """
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef struct CUevent_st* CUevent;
typedef struct CUstream_st* CUstream;
typedef unsigned long long CUdeviceptr;
CUresult cuInit(unsigned int flags);
CUresult cuDeviceGetCount(int* count);
CUresult cuDeviceGet(CUdevice* device, int ordinal);
CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuEventCreate(CUevent* event, unsigned int flags);
CUresult cuEventRecord(CUevent event, CUstream stream);
CUresult cuEventQuery(CUevent event);
CUresult cuEventDestroy(CUevent event);
CUresult cuMemAlloc(CUdeviceptr* dptr, size_t bytesize);
CUresult cuMemFree(CUdeviceptr dptr);
CUresult cuGetErrorString(CUresult error, const char** str);
"""

# ncclResult_t, ncclRedOp_t and ncclDataType_t (nccl.h); tests/distributed/test_nccl_abi.py
# reads the wheel's header and compares.
RESULTS = {
    0: "ncclSuccess",
    1: "ncclUnhandledCudaError",
    2: "ncclSystemError",
    3: "ncclInternalError",
    4: "ncclInvalidArgument",
    5: "ncclInvalidUsage",
    6: "ncclRemoteError",
    7: "ncclInProgress",
    8: "ncclTimeout",
}
RED_OPS = {"ncclSum": 0, "ncclProd": 1, "ncclMax": 2, "ncclMin": 3, "ncclAvg": 4}
DATA_TYPES = {
    "ncclInt8": 0,
    "ncclUint8": 1,
    "ncclInt32": 2,
    "ncclUint32": 3,
    "ncclInt64": 4,
    "ncclUint64": 5,
    "ncclFloat16": 6,
    "ncclFloat32": 7,
    "ncclFloat64": 8,
    "ncclBfloat16": 9,
}
CUDA_SUCCESS = 0
CUDA_ERROR_NOT_READY = 600
CU_EVENT_DISABLE_TIMING = 2


def nccl_candidates() -> list[str]:
    """Where libnccl may be: ``EMBER_NCCL_LIBRARY``, the ``nvidia-nccl-cu12``/``cu13`` wheel's
    ``nvidia/nccl/lib``, then the loader's search path."""
    found = [os.environ["EMBER_NCCL_LIBRARY"]] if os.environ.get("EMBER_NCCL_LIBRARY") else []
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        lib = pathlib.Path(root, "nccl", "lib", "libnccl.so.2")
        if lib.exists():
            found.append(str(lib))
    return found + ["libnccl.so.2", "libnccl.so"]


def open_library(cdef: str, candidates: list[str], what: str, fix: str):
    """``(ffi, lib)`` of the first candidate that opens, or OSError naming the fix."""
    from cffi import FFI

    ffi = FFI()
    ffi.cdef(cdef)
    errors = []
    for path in candidates:
        try:
            return ffi, ffi.dlopen(path)
        except OSError as exc:
            errors.append(f"{path}: {exc}")
    raise OSError(f"{what} did not load ({'; '.join(errors) or 'not found'}). {fix}")


_LOADED: dict = {}


def nccl():
    """``(ffi, lib)`` of libnccl, opened once."""
    if "nccl" not in _LOADED:
        _LOADED["nccl"] = open_library(
            NCCL_CDEF, nccl_candidates(), "libnccl", "pip install 'ember[nccl]' (nvidia-nccl-cu12)"
        )
    return _LOADED["nccl"]


def cuda():
    """``(ffi, lib)`` of the CUDA driver, opened and initialised once."""
    if "cuda" not in _LOADED:
        ffi, lib = open_library(
            CUDA_CDEF,
            ["libcuda.so.1", "libcuda.so"],
            "the CUDA driver (libcuda)",
            "NCCL runs on NVIDIA GPUs: install the NVIDIA driver",
        )
        status = lib.cuInit(0)
        if status != CUDA_SUCCESS:
            raise RuntimeError(f"cuInit failed: {cuda_error(ffi, lib, status)} (no usable GPU?)")
        _LOADED["cuda"] = (ffi, lib)
    return _LOADED["cuda"]


def cuda_error(ffi, lib, status: int) -> str:
    text = ffi.new("const char **")
    if lib.cuGetErrorString(status, text) == CUDA_SUCCESS and text[0] != ffi.NULL:
        return f"{ffi.string(text[0]).decode()} ({status})"
    return f"CUDA error {status}"
