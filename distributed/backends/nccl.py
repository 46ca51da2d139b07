"""The ``nccl`` collective backend: cuda tensors through libnccl (cffi, ABI mode).

Operations are queued on the tensor's current stream, in order with the kernels around them; a
CUDA event recorded after each tells when it is done, and waiting polls it (and NCCL's
asynchronous error) until the group's timeout, after which the communicator is aborted. The
unique id that joins the ranks travels through the rendezvous store (rank 0 makes it).

PyTorch's mappings: bool moves as uint8 and reduces with MAX for SUM and MIN for PRODUCT;
int16 and the bitwise ops do not exist in NCCL and raise.
"""

from __future__ import annotations

import time
from collections import namedtuple

import pluggy

from . import _nccl_abi as abi

hookimpl = pluggy.HookimplMarker("ember")

_DTYPES = {
    "bool": "ncclUint8",
    "uint8": "ncclUint8",
    "int8": "ncclInt8",
    "int32": "ncclInt32",
    "int64": "ncclInt64",
    "float16": "ncclFloat16",
    "bfloat16": "ncclBfloat16",
    "float32": "ncclFloat32",
    "float64": "ncclFloat64",
}
_ITEMSIZE = {"bool": 1, "uint8": 1, "int8": 1, "int32": 4, "int64": 8, "float16": 2}
_ITEMSIZE.update(bfloat16=2, float32=4, float64=8)
_OPS = {"sum": "ncclSum", "avg": "ncclAvg", "product": "ncclProd", "min": "ncclMin"}
_OPS.update(max="ncclMax")
_Buffer = namedtuple("_Buffer", "ptr count dtype device stream")  # as the core's DeviceBuffer
_BOOL_OPS = {"sum": "ncclMax", "max": "ncclMax", "product": "ncclMin", "min": "ncclMin"}


def available() -> bool:
    try:
        abi.nccl()
    except OSError:
        return False
    return True


@hookimpl
def ember_collective_backend_info():
    return {
        "name": "nccl",
        "device_types": ["cuda"],
        "memory": "device",
        "priority": 10,
        "needs_store": True,
        "description": "NVIDIA NCCL through cffi (the nvidia-nccl-cu12 wheel or the system's)",
    }


@hookimpl
def ember_collective_backend_create(options):
    ffi, lib = abi.nccl()
    cuda = _Cuda(options.get("device_index") or 0)
    rank, size, store = options["rank"], options["world_size"], options["store"]
    if store is None:
        raise ValueError("the nccl backend needs the rendezvous store for its unique id")
    unique = ffi.new("ncclUniqueId *")
    if rank == 0:
        check(lib.ncclGetUniqueId(unique), "ncclGetUniqueId")
        store.set("nccl_unique_id", bytes(ffi.buffer(unique)))
    else:
        ffi.memmove(unique, store.get("nccl_unique_id"), ffi.sizeof("ncclUniqueId"))
    box = ffi.new("ncclComm_t *")
    cuda.activate()
    check(lib.ncclCommInitRank(box, size, unique[0], rank), "ncclCommInitRank")
    return Communicator(ffi, lib, cuda, box[0], rank, size)


def check(status: int, what: str, comm=None) -> None:
    if status == 0:
        return
    ffi, lib = abi.nccl()
    text = ffi.string(lib.ncclGetErrorString(status)).decode()
    detail = ffi.string(lib.ncclGetLastError(comm or ffi.NULL)).decode()
    name = abi.RESULTS.get(status, str(status))
    raise RuntimeError(f"NCCL error in {what}: {name}: {text}" + (f" ({detail})" if detail else ""))


class _Cuda:
    """The driver calls the backend needs, on one device's primary context."""

    def __init__(self, index: int):
        self.ffi, self.lib = abi.cuda()
        count = self.ffi.new("int *")
        self._check(self.lib.cuDeviceGetCount(count), "cuDeviceGetCount")
        if not 0 <= index < count[0]:
            raise RuntimeError(f"NCCL: no CUDA device {index} (this machine has {count[0]})")
        device, ctx = self.ffi.new("CUdevice *"), self.ffi.new("CUcontext *")
        self._check(self.lib.cuDeviceGet(device, index), "cuDeviceGet")
        self._check(self.lib.cuDevicePrimaryCtxRetain(ctx, device[0]), "cuDevicePrimaryCtxRetain")
        self.index, self.context = index, ctx[0]

    def _check(self, status: int, what: str) -> None:
        if status != abi.CUDA_SUCCESS:
            raise RuntimeError(f"{what} failed: {abi.cuda_error(self.ffi, self.lib, status)}")

    def activate(self) -> None:
        self._check(self.lib.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")

    def event_after(self, stream: int):
        event = self.ffi.new("CUevent *")
        self._check(self.lib.cuEventCreate(event, abi.CU_EVENT_DISABLE_TIMING), "cuEventCreate")
        self._check(self.lib.cuEventRecord(event[0], self.ffi.cast("CUstream", stream)), "record")
        return self.ffi.gc(event[0], self.lib.cuEventDestroy)

    def done(self, event) -> bool:
        status = self.lib.cuEventQuery(event)
        if status == abi.CUDA_ERROR_NOT_READY:
            return False
        self._check(status, "cuEventQuery")
        return True


class Request:
    """Done when the event recorded after the operation has passed."""

    __slots__ = ("_comm", "_done", "_event", "source")

    def __init__(self, comm, event, source=None):
        self._comm, self._event, self._done, self.source = comm, event, False, source

    def test(self) -> bool:
        if not self._done:
            self._comm.raise_async_error()
            self._done = self._comm.cuda.done(self._event)
        return self._done

    def wait(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while not self.test():
            if time.monotonic() > deadline:
                self._comm.abort()
                return False
            time.sleep(2e-5)
        return True


class Communicator:
    """An NCCL communicator and the hook spec's collectives over device buffers."""

    def __init__(self, ffi, lib, cuda, comm, rank: int, size: int):
        self.ffi, self.lib, self.cuda, self.comm = ffi, lib, cuda, comm
        self.rank, self.size = rank, size
        self._scratch = None

    def raise_async_error(self) -> None:
        error = self.ffi.new("ncclResult_t *")
        check(self.lib.ncclCommGetAsyncError(self.comm, error), "ncclCommGetAsyncError", self.comm)
        check(error[0], "an earlier operation (asynchronous error)", self.comm)

    def _finish(self, buf, status: int, what: str, source=None) -> Request:
        check(status, what, self.comm)
        return Request(self, self.cuda.event_after(buf.stream), source)

    def _args(self, buf, op=None):
        if buf.dtype not in _DTYPES:
            raise TypeError(f"NCCL has no {buf.dtype} type (use int32 or a float type)")
        dtype = abi.DATA_TYPES[_DTYPES[buf.dtype]]
        if op is None:
            return dtype
        table = _BOOL_OPS if buf.dtype == "bool" else _OPS
        if op not in table:
            raise ValueError(f"Cannot use ReduceOp.{op.upper()} with NCCL on {buf.dtype} tensors")
        return dtype, abi.RED_OPS[table[op]]

    def _ptr(self, buf, offset_elements: int = 0):
        return self.ffi.cast("void *", buf.ptr + offset_elements * _ITEMSIZE[buf.dtype])

    def _stream(self, buf):
        self.cuda.activate()
        return self.ffi.cast("cudaStream_t", buf.stream)

    def all_reduce(self, buf, op):
        dtype, red = self._args(buf, op)
        p = self._ptr(buf)
        status = self.lib.ncclAllReduce(p, p, buf.count, dtype, red, self.comm, self._stream(buf))
        return self._finish(buf, status, "ncclAllReduce")

    def reduce(self, buf, op, root):
        dtype, red = self._args(buf, op)
        p, stream = self._ptr(buf), self._stream(buf)
        status = self.lib.ncclReduce(p, p, buf.count, dtype, red, root, self.comm, stream)
        return self._finish(buf, status, "ncclReduce")

    def broadcast(self, buf, root):
        p, stream = self._ptr(buf), self._stream(buf)
        status = self.lib.ncclBroadcast(p, p, buf.count, self._args(buf), root, self.comm, stream)
        return self._finish(buf, status, "ncclBroadcast")

    def all_gather(self, send, recv):
        stream = self._stream(send)
        status = self.lib.ncclAllGather(
            self._ptr(send), self._ptr(recv), send.count, self._args(send), self.comm, stream
        )
        return self._finish(send, status, "ncclAllGather")

    def reduce_scatter(self, send, recv, op):
        dtype, red = self._args(recv, op)
        stream = self._stream(send)
        status = self.lib.ncclReduceScatter(
            self._ptr(send), self._ptr(recv), recv.count, dtype, red, self.comm, stream
        )
        return self._finish(send, status, "ncclReduceScatter")

    def _exchange(self, sends, recvs, stream_of, what: str, source=None):
        """One NCCL group of point-to-point calls: ``(buf, offset, count, peer)`` each."""
        stream = self._stream(stream_of)
        check(self.lib.ncclGroupStart(), "ncclGroupStart")
        for buf, offset, count, peer in sends:
            ptr, dtype = self._ptr(buf, offset), self._args(buf)
            check(self.lib.ncclSend(ptr, count, dtype, peer, self.comm, stream), "ncclSend")
        for buf, offset, count, peer in recvs:
            ptr, dtype = self._ptr(buf, offset), self._args(buf)
            check(self.lib.ncclRecv(ptr, count, dtype, peer, self.comm, stream), "ncclRecv")
        return self._finish(stream_of, self.lib.ncclGroupEnd(), what, source)

    def gather(self, send, recv, root):
        n = send.count
        recvs = [(recv, r * n, n, r) for r in range(self.size)] if self.rank == root else []
        return self._exchange([(send, 0, n, root)], recvs, send, "gather")

    def scatter(self, send, recv, root):
        n = recv.count
        sends = [(send, r * n, n, r) for r in range(self.size)] if self.rank == root else []
        return self._exchange(sends, [(recv, 0, n, root)], recv, "scatter")

    def all_to_all(self, send, recv, send_counts, recv_counts):
        def plan(buf, counts):
            offsets = [sum(counts[:r]) for r in range(self.size)]
            return [(buf, offsets[r], counts[r], r) for r in range(self.size) if counts[r]]

        return self._exchange(plan(send, send_counts), plan(recv, recv_counts), send, "all_to_all")

    def send(self, buf, peer, tag):
        return self._exchange([(buf, 0, buf.count, peer)], [], buf, "send")

    def recv(self, buf, peer, tag):
        if peer is None:
            raise ValueError("NCCL cannot receive from any source: pass src")
        return self._exchange([], [(buf, 0, buf.count, peer)], buf, "recv", source=peer)

    def barrier(self):
        """An all-reduce of one byte on the default stream (NCCL has no barrier)."""
        if self._scratch is None:
            ptr = self.cuda.ffi.new("CUdeviceptr *")
            self.cuda.activate()
            self.cuda._check(self.cuda.lib.cuMemAlloc(ptr, 1), "cuMemAlloc")
            self._scratch = ptr[0]
        return self.all_reduce(_Buffer(self._scratch, 1, "uint8", self.cuda.index, 0), "sum")

    def abort(self) -> None:
        if self.comm is not None:
            self.lib.ncclCommAbort(self.comm)
            self.comm = None

    def close(self) -> None:
        if self.comm is not None:
            self.cuda.activate()
            self.lib.ncclCommDestroy(self.comm)
            self.comm = None
        if self._scratch is not None:
            self.cuda.lib.cuMemFree(self._scratch)
            self._scratch = None
