"""Compiled OpenCL programs: built once per (device, key), kept with their kernel objects.

A family's glue asks ``programs.get(key, make_source)``; the source is generated and compiled only
the first time the key is seen on that device, and the ``cl.Kernel`` objects are created once and
reused for every call (a ``clCreateKernel`` per call would cost as much as the launch). Binaries
are also cached on disk, keyed by source, options and device, by pyopencl
(``EMBER_XPU_CACHE_DIR`` or pyopencl's default cache directory) and, on PoCL, by PoCL itself,
so a new process skips the compiler.

Kernel argument types are read back from the compiled program (``-cl-kernel-arg-info``), so the
glue passes plain Python numbers and pyopencl packs them without guessing.
"""

from __future__ import annotations

import os
from importlib import resources

import numpy as np

CACHE_ENV = "EMBER_XPU_CACHE_DIR"
# Options added to every program's build, split on spaces (the test suite passes
# ``-cl-opt-disable``: tests/conftest.py says why).
OPTIONS_ENV = "EMBER_XPU_BUILD_OPTIONS"

_SCALARS = {
    "char": np.int8,
    "uchar": np.uint8,
    "short": np.int16,
    "ushort": np.uint16,
    "int": np.int32,
    "uint": np.uint32,
    "long": np.int64,
    "ulong": np.uint64,
    "float": np.float32,
    "double": np.float64,
}
_SOURCES: dict = {}


def source(name: str) -> str:
    """The text of ``clc/<name>``, read once."""
    text = _SOURCES.get(name)
    if text is None:
        text = resources.files(__package__).joinpath("clc", name).read_text()
        _SOURCES[name] = text
    return text


class Kernel:
    """A kernel object, the work-group size it launches with, and its argument setters:
    ``set_arg`` (buffers) and ``set_bytes`` (packed values: pyopencl's ``_set_arg_buf``, what
    its own invokers use, since ``set_arg`` takes 6 us to work out what a bytes object is)."""

    __slots__ = ("fn", "local", "set_arg", "set_bytes")

    def __init__(self, fn, local: int):
        self.fn = fn
        self.local = local
        self.set_arg = fn.set_arg
        self.set_bytes = getattr(fn, "_set_arg_buf", fn.set_arg)


class Programs:
    """The programs of one device, by key; ``builds`` counts compilations (tests check it)."""

    def __init__(self, cl, device):
        self._cl = cl
        self._device = device
        self._found: dict = {}
        self.builds = 0
        self.options = ["-cl-kernel-arg-info"]
        if device.cl_device.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT:
            # float division and sqrt as exact as the CPU's (OpenCL allows 2.5 ulp by default).
            self.options.append("-cl-fp32-correctly-rounded-divide-sqrt")
        self.options += os.environ.get(OPTIONS_ENV, "").split()
        self.prelude = ("#define EM_FP64 1\n" if device.fp64 else "") + source("ember.h")
        self.cache_dir = os.environ.get(CACHE_ENV) or None

    def get(self, key, make_source) -> dict:
        """``{kernel name: Kernel}`` of the program for ``key``, built on first use.

        ``key`` is a tuple naming the program, with the dtype tokens it uses: a key holding
        ``"f64"`` is refused on a device without double precision.
        """
        found = self._found.get(key)
        if found is None:
            self.check_dtypes(key)
            found = self._build(key, make_source())
            self._found[key] = found
        return found

    def check_dtypes(self, tokens, op: str = "") -> None:
        """Refuses float64 work (a ``"f64"`` among ``tokens``) on a device without doubles;
        the message starts with ``op`` where the caller names one."""
        if "f64" in tokens and not self._device.fp64:
            raise TypeError(
                f"{op + ': ' if op else ''}xpu:{self._device.index} ({self._device.name}) has "
                "no float64: the OpenCL device lacks cl_khr_fp64. Use float32 there, or keep "
                "float64 work on the CPU"
            )

    def usable(self, tokens) -> list:
        """The dtype tokens among ``tokens`` this device can compile (all but float64 without
        doubles): what a program holding several dtypes' kernels is generated for."""
        return [token for token in tokens if token != "f64" or self._device.fp64]

    def _build(self, key, text: str) -> dict:
        cl = self._cl
        program = cl.Program(self._device.context, self.prelude + "\n" + text)
        try:
            program.build(options=self.options, cache_dir=self.cache_dir)
        except cl.RuntimeError as exc:
            raise RuntimeError(
                f"xpu: compiling the OpenCL program {key} for {self._device.name} failed: {exc}"
            ) from exc
        self.builds += 1
        kernels = {}
        for fn in program.all_kernels():
            fn.set_scalar_arg_dtypes(self._arg_dtypes(fn))
            fits = fn.get_work_group_info(
                cl.kernel_work_group_info.WORK_GROUP_SIZE, self._device.cl_device
            )
            local = self._device.local_size
            while local > fits:
                local //= 2
            kernels[fn.function_name] = Kernel(fn, local)
        return kernels

    def _arg_dtypes(self, fn) -> list:
        cl = self._cl
        dtypes = []
        for i in range(fn.num_args):
            name = fn.get_arg_info(i, cl.kernel_arg_info.TYPE_NAME).rstrip("\x00").strip()
            if name.endswith("*"):
                dtypes.append(None)  # a buffer
            elif name in ("long8", "long16"):
                dtypes.append(getattr(cl.cltypes, name))  # shapes, strides, metadata: packed
            else:
                dtypes.append(_SCALARS[name])
        return dtypes
