"""A CPU emulator of the ``cuda`` device, for testing the kernels and their glue without a GPU.

``EMBER_CUDA_EMULATOR=1`` makes the plugin serve ``cuda`` with ``EmulatedRuntime``: the same
generated kernel modules, compiled by the host C++ compiler with a small header that supplies
CUDA's vocabulary (threadIdx, __syncthreads, shuffles, atomics), run one block at a time; threads
of modules that synchronise are fibers (ucontext) switched at every barrier or shuffle, the others
plain calls. "Device" memory is host memory that numpy cannot see (``host_memory = False``), so
every transfer goes through ``copy_in``/``copy_out`` as on a GPU. Each allocation is a memfd, so
that another process can open it from an inter-process handle as CUDA's IPC does (the handle
names the exporter's pid and descriptor; the importer opens ``/proc/<pid>/fd/<fd>``). cuBLAS is
replaced by a numpy GEMM that reads its operands with cuBLAS's column-major conventions, so the
layout logic of the matmul glue is exercised too.

It is slow and it is not a GPU: it checks indexing, dtype handling, launch geometry, argument
packing and the algorithms (tree reductions, scans, the bitonic sort), not timing, memory
ordering between streams, or the device's math library.
"""

from __future__ import annotations

import ctypes
import hashlib
import mmap
import os
import re
import struct
import subprocess
import tempfile
import threading
import time
import weakref
from pathlib import Path

import numpy as np

from . import codegen, diskcache
from .codegen.prelude import common
from .gpu import DeviceProperties, GpuRuntime

HEADER = r"""
#include <cmath>
#include <cstring>
#include <ucontext.h>
#include <setjmp.h>
#include <cstdlib>
using namespace std;
#define __device__
#define __global__
#define __forceinline__ inline
#define __shared__ static
struct em_dim3 { unsigned x, y, z; };
struct emu_thread { ucontext_t ctx; jmp_buf jb; em_dim3 tid; int linear; bool done, started; };
static emu_thread *emu_cur;
static emu_thread emu_single;
static em_dim3 emu_block_idx, emu_block_dim, emu_grid_dim;
static jmp_buf emu_sched;
static bool emu_fibers;
#define threadIdx (emu_cur->tid)
#define blockIdx emu_block_idx
#define blockDim emu_block_dim
#define gridDim emu_grid_dim
/* Fibers: made once per launch (getcontext, makecontext, setcontext), each runs the kernel for
 * every block in turn, and they switch with _setjmp/_longjmp. swapcontext saves and restores the
 * signal mask, a system call per switch, and a block reduction switches 12 times per thread:
 * grid_sampler_3d's OpInfo record spent most of its emulated time there. */
static inline void emu_yield() {
    if (emu_fibers && !_setjmp(emu_cur->jb)) _longjmp(emu_sched, 1);
}
static inline void __syncthreads() { emu_yield(); }
static unsigned long long emu_slots[1024];
template <class T>
static T emu_shfl(T v, int mode, int arg) {
    const int t = emu_cur->linear, lane = t % 32, base = t - lane;
    unsigned long long bits = 0;
    memcpy(&bits, &v, sizeof(T));
    emu_slots[t] = bits;
    emu_yield();
    int src = mode == 0 ? (lane >= arg ? lane - arg : lane)
            : mode == 1 ? (lane + arg < 32 ? lane + arg : lane) : arg;
    bits = emu_slots[base + src];
    T r;
    memcpy(&r, &bits, sizeof(T));
    emu_yield();
    return r;
}
#define EM_WARP 32
#define EM_SHFL_UP(v, d) emu_shfl((v), 0, (d))
#define EM_SHFL_DOWN(v, d) emu_shfl((v), 1, (d))
#define EM_SHFL(v, l) emu_shfl((v), 2, (l))
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline float __uint_as_float(unsigned i) { float f; memcpy(&f, &i, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned i; memcpy(&i, &f, 4); return i; }
static inline double __longlong_as_double(long long i) { double f; memcpy(&f, &i, 8); return f; }
static inline long long __double_as_longlong(double f) { long long i; memcpy(&i, &f, 8); return i; }
static inline unsigned __umulhi(unsigned a, unsigned b) {
    return (unsigned)(((unsigned long long)a * b) >> 32);
}
static inline unsigned atomicCAS(unsigned *p, unsigned c, unsigned v) {
    unsigned old = *p; if (old == c) *p = v; return old;
}
static inline unsigned long long atomicCAS(unsigned long long *p, unsigned long long c,
                                           unsigned long long v) {
    unsigned long long old = *p; if (old == c) *p = v; return old;
}
template <class T> static inline T atomicAdd(T *p, T v) { T old = *p; *p = old + v; return old; }
static inline float em_h2f(unsigned short h) { _Float16 v; memcpy(&v, &h, 2); return (float)v; }
static inline unsigned short em_f2h(float f) {
    _Float16 v = (_Float16)f; unsigned short h; memcpy(&h, &v, 2); return h;
}
static void (*emu_body)(const void *);  /* the launch's kernel call, and its lambda */
static const void *emu_body_ctx;
static void emu_entry() {
    for (;;) {  // one block per turn; the scheduler resumes a finished fiber for the next block
        emu_body(emu_body_ctx);
        emu_cur->done = true;
        emu_yield();
    }
}
static void emu_schedule(emu_thread *threads, int n) {
    for (volatile bool live = true; live;) {
        live = false;
        for (volatile int t = 0; t < n; t++) {
            if (threads[t].done) continue;
            emu_cur = &threads[t];
            if (!_setjmp(emu_sched)) {
                if (threads[t].started) _longjmp(threads[t].jb, 1);
                threads[t].started = true;
                setcontext(&threads[t].ctx);
            }
            live = live || !threads[t].done;
        }
    }
}
/* Sets the launch's dims, then calls per_block() for every block in order, blockIdx set. */
template <class F>
static void emu_each_block(em_dim3 grid, em_dim3 block, bool fibers, const F &per_block) {
    emu_grid_dim = grid;
    emu_block_dim = block;
    emu_fibers = fibers;
    for (unsigned bz = 0; bz < grid.z; bz++)
    for (unsigned by = 0; by < grid.y; by++)
    for (unsigned bx = 0; bx < grid.x; bx++) {
        emu_block_idx = {bx, by, bz};
        per_block();
    }
}
static inline void emu_set_thread(emu_thread *th, int t, em_dim3 block) {
    th->tid = {t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
    th->linear = t;
}
/* Kernels without __syncthreads or shuffles run their threads one after another. The launcher's
 * lambda is a template argument, inlined into this loop, not an indirect call per thread;
 * with the struct parameters by reference (module_source) a 100k-element float64 mul runs
 * 1.6x faster, a strided one 2x (CPU time, 2026-11-28). */
template <class F>
static void emu_run_threads(em_dim3 grid, em_dim3 block, const F &body) {
    const int n = (int)(block.x * block.y * block.z);
    emu_cur = &emu_single;
    emu_each_block(grid, block, false, [&] {
        for (int t = 0; t < n; t++) {
            emu_set_thread(&emu_single, t, block);
            body();
        }
    });
}
/* Fibers call the kernel through a plain function pointer: <functional> was half of every
 * module's compile time (0.4 of 0.7 s for the header alone), paid ~190 times by a cold run. */
template <class F>
static void emu_run_fibers(em_dim3 grid, em_dim3 block, const F &body) {
    const int n = (int)(block.x * block.y * block.z);
    const size_t stack = 64 * 1024;
    emu_body = [](const void *lambda) { (*(const F *)lambda)(); };
    emu_body_ctx = &body;
    emu_thread *threads = (emu_thread *)calloc(n, sizeof(emu_thread));
    char *stacks = (char *)malloc(stack * n);
    for (int t = 0; t < n; t++) {
        emu_thread *th = &threads[t];
        emu_set_thread(th, t, block);
        getcontext(&th->ctx);
        th->ctx.uc_stack.ss_sp = stacks + stack * t;
        th->ctx.uc_stack.ss_size = stack;
        makecontext(&th->ctx, emu_entry, 0);
    }
    emu_each_block(grid, block, true, [&] {
        for (int t = 0; t < n; t++) threads[t].done = false;
        emu_schedule(threads, n);
    });
    free(threads);
    free(stacks);
}
"""

KERNEL = re.compile(r"EM_KERNEL (\w+)\(([^)]*)\)")
STRUCT = re.compile(r"struct (em_\w+) \{")


def _launchers(body: str, fibers: bool) -> str:
    """For each kernel: ``emu_<name>(args, grid, block)`` unpacking pycuda's argument buffer."""
    out = []
    for name, params in KERNEL.findall(body):
        fields = [p.strip() for p in params.split(",") if p.strip()]
        names = [f.split()[-1].lstrip("*") for f in fields]
        decl = "".join(f"    {f};\n" for f in fields)
        call = ", ".join(f"a.{n}" for n in names)
        out.append(
            f'extern "C" int emu_size_{name}(void) {{\n  struct A {{\n{decl}  }};\n'
            f"  return (int)sizeof(A);\n}}\n"
            f'extern "C" void emu_{name}(const char *buf, unsigned gx, unsigned gy, unsigned gz,'
            f" unsigned bx, unsigned by, unsigned bz) {{\n  struct A {{\n{decl}  }} a;\n"
            f"  memcpy(&a, buf, sizeof(A));\n"
            f"  emu_run_{'fibers' if fibers else 'threads'}({{gx, gy, gz}}, {{bx, by, bz}}, "
            f"[&] {{ {name}({call}); }});\n}}\n"
        )
    return "".join(out)


def module_source(name: str, body: str | None = None) -> str:
    """The host C++ of kernel module ``name`` (``body``: a generated module's text)."""
    body = codegen.body(name) if body is None else body
    fibers = "__syncthreads" in body or "EM_SHFL" in body or "em_block_reduce" in body
    prelude = common()
    return HEADER + prelude + _by_reference(body, prelude + body) + _launchers(body, fibers)


def _by_reference(body: str, source: str) -> str:
    """``body`` with its kernels' struct parameters (``em_nd nd``, 688 bytes) taken by const
    reference: a GPU kernel gets them by value in its parameter buffer, but on the emulator a
    by-value struct is copied for every emulated thread. A kernel that wrote into one would not
    compile."""
    structs = set(STRUCT.findall(source))

    def parameter(text: str) -> str:
        words = text.split()
        by_value_struct = len(words) == 2 and words[0] in structs
        return f"const {words[0]} &{words[1]}" if by_value_struct else text

    def signature(match: re.Match) -> str:
        params = [parameter(p.strip()) for p in match.group(2).split(",") if p.strip()]
        return f"EM_KERNEL {match.group(1)}({', '.join(params)})"

    return KERNEL.sub(signature, body)


def build_module(name: str, body: str | None = None) -> Path:
    """Compile a kernel module for the emulator (cached like the nvcc builds)."""
    source = module_source(name, body)
    key = hashlib.sha256(source.encode()).hexdigest()[:32]
    path = diskcache.cache_dir("cuda") / "emulator" / f"{name}-{key}.so"
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ember-emu-") as tmp:
        src = Path(tmp) / "module.cpp"
        src.write_text(source)
        out = Path(tmp) / "module.so"
        cxx = os.environ.get("CXX", "g++")
        command = [cxx, "-O1", "-std=c++17", "-shared", "-fPIC", "-ffp-contract=off", "-w",
                   "-U_FORTIFY_SOURCE",  # its longjmp check refuses jumps between fiber stacks
                   "-o", str(out), str(src)]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode:
            raise diskcache.CompileError(f"emulator build of {name} failed:\n{result.stderr}")
        fd, staged = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        os.close(fd)
        os.replace(out, staged)
        os.replace(staged, path)
    return path


class PinnedBytes(bytearray):
    """Host memory the emulator calls pinned."""


class DeviceMemory(np.ndarray):
    """An emulated device allocation: a memfd's mapping (``fd`` open while it lives)."""

    fd = -1


def device_memory(nbytes: int) -> DeviceMemory:
    """A new emulated allocation of ``nbytes`` (a memfd, so IPC handles can name it)."""
    fd = os.memfd_create("ember-cuda-emulator", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, max(int(nbytes), 1) + 64)  # slack: vector reads past the end
    except BaseException:
        os.close(fd)
        raise
    return map_memfd(fd)


IPC_HANDLE = struct.Struct("<qqq")  # exporter pid, descriptor, size; padded to CUDA's 64 bytes


def map_memfd(fd: int) -> DeviceMemory:
    """The whole of the memfd ``fd`` as device memory; it owns (and closes) the descriptor."""
    try:
        size = os.fstat(fd).st_size
        memory = np.frombuffer(mmap.mmap(fd, size), np.uint8).view(DeviceMemory)
    except BaseException:
        os.close(fd)
        raise
    memory.fd = fd
    weakref.finalize(memory, os.close, fd)
    return memory


class HostStream:
    """A native stream of the emulator: work runs when issued, so it is always done."""

    handle = 0

    def __init__(self):
        self.handle = id(self)

    def is_done(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def wait_for_event(self, event) -> None:
        pass


class HostEvent:
    """A native event of the emulator: records the host clock (not a device timing)."""

    def __init__(self, enable_timing: bool, blocking: bool):
        self.time = None

    def record(self, stream) -> None:
        self.time = time.perf_counter()

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def time_since(self, start) -> float:
        return (self.time - start.time) * 1000.0


_HOST_LOCK = threading.RLock()  # the fibers' scheduler state is global in each module


class EmulatedKernel:
    """One kernel of an emulator module (``ctypes.CDLL`` of ``build_module``): its launcher,
    its parameter list's size and the ``struct`` of its argument format."""

    def __init__(self, module, kernel: str, arg_format: str = ""):
        self.entry = getattr(module, f"emu_{kernel}")
        self.size = getattr(module, f"emu_size_{kernel}")()
        self.packer = struct.Struct(arg_format)

    def run(self, grid, block, packed: bytes) -> None:
        """Run the kernel on packed arguments (a driver's parameter buffer) over (x, y, z)
        ``grid`` and ``block``; the format must match the kernel's signature."""
        expected = self.size
        if not expected - 8 < len(packed) <= expected:
            raise RuntimeError(
                f"{self.entry.__name__}: {len(packed)} argument bytes packed for a "
                f"{expected}-byte parameter list: the argument format does not match the "
                "kernel's signature"
            )
        buf = ctypes.create_string_buffer(bytes(packed) + bytes(expected - len(packed) + 8))
        dims = (*grid, *(1,) * (3 - len(grid)), *block, *(1,) * (3 - len(block)))
        with _HOST_LOCK:
            self.entry(buf, *(ctypes.c_uint(v) for v in dims))


class EmulatedRuntime(GpuRuntime):
    """The driver hooks of ``gpu.GpuRuntime`` over host memory, launching kernels on the CPU
    (one device): everything above the hooks is the code the GPUs run."""

    pinned_type = PinnedBytes

    def __init__(self):
        super().__init__(1)

    # ---- devices -----------------------------------------------------------------------------
    def device_name(self, index=None) -> str:
        return "ember CUDA emulator (CPU)"

    def device_properties(self, index=None):
        self.device_index(index)
        return DeviceProperties(name=self.device_name(), major=8, minor=0,
                                total_memory=1 << 34, multi_processor_count=1)  # fmt: skip

    def mem_get_info(self, index=None) -> tuple[int, int]:
        return 1 << 34, 1 << 34

    def activate(self, index) -> None:
        pass

    def _sync(self, index) -> None:
        pass

    # ---- memory ------------------------------------------------------------------------------
    def alloc(self, nbytes: int, index=None):
        return device_memory(nbytes)

    def ipc_handle(self, handle, index=None) -> bytes:
        """An allocation's inter-process handle (64 bytes, as cuIpcGetMemHandle's)."""
        return IPC_HANDLE.pack(os.getpid(), handle.fd, handle.size).ljust(64, b"\0")

    def open_ipc_handle(self, data: bytes, index=None) -> DeviceMemory:
        """The exporter's allocation, mapped here (unmapped when the result is collected)."""
        pid, fd, _ = IPC_HANDLE.unpack_from(data)
        try:
            return map_memfd(os.open(f"/proc/{pid}/fd/{fd}", os.O_RDWR))
        except FileNotFoundError:
            raise RuntimeError(
                f"cannot open the IPC handle of process {pid}: it exited, or freed the memory"
            ) from None

    def free(self, handle, index=None) -> None:
        del handle

    def address(self, handle) -> int:
        return handle.ctypes.data

    def _copy(self, kind: str, dst, src, nbytes: int, stream) -> None:
        dst = dst.ctypes.data if isinstance(dst, np.ndarray) else dst
        src = src.ctypes.data if isinstance(src, np.ndarray) else src
        ctypes.memmove(dst, src, nbytes)

    def memset(self, index, address: int, nbytes: int) -> None:
        ctypes.memset(address, 0, nbytes)

    def read(self, index, host, address: int) -> None:
        ctypes.memmove(host.ctypes.data, address, host.nbytes)

    def host_alloc(self, nbytes: int):
        """ "Pinned" host memory: marked, so the core's non-blocking paths are exercised."""
        return np.frombuffer(PinnedBytes(max(int(nbytes), 1)), np.uint8)

    # ---- kernels and streams -----------------------------------------------------------------
    def _load_module(self, index: int, module_name: str):
        return ctypes.CDLL(str(build_module(module_name, self.module_body(module_name))))

    def _get_function(self, module, kernel: str, arg_format: str):
        return EmulatedKernel(module, kernel, arg_format)

    def _call(self, function, grid, block, stream, args, shared: int) -> None:
        function.run(grid, block, function.packer.pack(*args))

    def new_native_stream(self, index):
        return HostStream()

    def new_native_event(self, enable_timing: bool, blocking: bool):
        return HostEvent(enable_timing, blocking)

    def make_blas(self):
        return EmulatedBlas()

    def make_solver(self):
        from .emulated_solver import EmulatedSolver

        return EmulatedSolver()

    def make_fft(self):
        from .emulated_fft import EmulatedFft

        return EmulatedFft()


class EmulatedBlas:
    """cuBLAS's column-major GEMM in numpy, reading operands as cuBLAS would (op 0 N, 1 T,
    2 C: the conjugate transpose)."""

    COMPLEX = True
    DTYPES = {"float16": np.float16, "bfloat16": np.uint16, "float32": np.float32,
              "float64": np.float64, "complex64": np.complex64,
              "complex128": np.complex128}  # fmt: skip

    @staticmethod
    def _matrix(address, dtype, rows, cols, ld, trans):
        """X^T (trans) or X for a column-major X with leading dimension ld (rows x cols)."""
        stored_rows, stored_cols = (cols, rows) if trans else (rows, cols)
        size = np.dtype(dtype).itemsize
        count = (stored_cols - 1) * ld + stored_rows if stored_rows * stored_cols else 0
        buf = (ctypes.c_char * (count * size)).from_address(address)
        flat = np.frombuffer(buf, dtype, count)
        stored = np.lib.stride_tricks.as_strided(
            flat, (stored_rows, stored_cols), (size, ld * size)
        )
        return stored.T if trans else stored

    @staticmethod
    def _load(matrix, dtype):
        if dtype == "bfloat16":
            return (matrix.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        return matrix.astype(np.complex128 if dtype.startswith("complex") else np.float64)

    @staticmethod
    def _store(out, values, dtype):
        if dtype == "bfloat16":
            bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
            out[...] = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
        else:
            out[...] = values.astype(out.dtype)

    def _op(self, address, dtype, rows, cols, ld, op):
        """op(X) as float64 (complex128) values, rows x cols."""
        np_type = self.DTYPES[dtype]
        values = self._load(self._matrix(address, np_type, rows, cols, ld, op != 0), dtype)
        return values.conj() if op == 2 else values

    def gemm(self, index, dtype, ta, tb, m, n, k, a, lda, sa, b, ldb, sb, c, ldc, sc, batch,
             negate=False):  # fmt: skip
        if (ta == 2 or tb == 2) and not dtype.startswith("complex"):
            raise RuntimeError("emulated cuBLAS: CUBLAS_OP_C of a real dtype")
        np_type = self.DTYPES[dtype]
        size = np.dtype(np_type).itemsize
        for i in range(batch):
            op_a = self._op(a + i * sa * size, dtype, m, k, lda, ta)
            op_b = self._op(b + i * sb * size, dtype, k, n, ldb, tb)
            out = self._matrix(c + i * sc * size, np_type, m, n, ldc, False)
            product = op_a @ op_b
            self._store(out, -product if negate else product, dtype)
