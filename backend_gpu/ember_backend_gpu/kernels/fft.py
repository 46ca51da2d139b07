"""Glue for ember.fft's primitives ``_fft_r2c``, ``_fft_c2r`` and ``_fft_c2c`` on the GPU: cuFFT
through the runtime's ``make_fft()``. The kernel convention is the CPU backend's (ember's
dispatcher/kinds/fft.py): complex tensors are their real view (a trailing dim of 2), ``out`` is
contiguous, ``input`` has any strides, ``dims`` are sorted.

The input is packed (a strided copy kernel) unless it is contiguous and cuFFT may read it in
place. The transformed dims are split into runs of consecutive dims, at most three long (cuFFT's
rank limit); each run is one batched plan in cuFFT's advanced layout (stride = the elements
after the run, batch = those elements, a host loop over the elements before it; one call when
nothing follows the run). A transform is separable, so r2c is an r2c over the last run then
in-place c2c passes over the others, and c2r the reverse. A two-sided r2c writes the real input
into ``out``'s real parts and runs c2c. ATen's normalization is a following ``mul`` kernel.
"""

from __future__ import annotations

import math

from ..codegen import copy as copy_gen
from ..codegen import elementwise as ew
from ._args import (
    TOKENS,
    addr,
    compute_bits,
    device,
    math_library,
    numel,
    operand,
    run_strided,
)

FFT_DTYPES = ("float32", "float64")
FORWARD, INVERSE = -1, 1


def _runs(dims) -> list[list[int]]:
    runs: list[list[int]] = []
    for d in dims:
        if runs and runs[-1][-1] == d - 1 and len(runs[-1]) < 3:
            runs[-1].append(d)
        else:
            runs.append([d])
    return runs


def _contiguous_strides(shape, item: int) -> tuple:
    strides, step = [], item
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


class _Transforms:
    """The three kernels over one runtime and its cuFFT binding."""

    def __init__(self, rt, fft):
        self.rt, self.fft = rt, fft

    def _copy(self, dev: int, dst: int, dst_strides, x) -> None:
        """dst (byte strides ``dst_strides``) = x, element by element."""
        code = x._dtype.code
        name = copy_gen.cast_name(TOKENS[code], TOKENS[code])
        operands = [(dst, dst_strides, 0), operand(x, code, x._shape)]
        run_strided(self.rt, dev, name, x._shape, operands)

    def _packed(self, dev: int, x, writable: bool) -> int:
        """The address of ``x``'s elements in row-major order: ``x`` itself when it is contiguous
        and only read, else a copy in the stream's scratch space."""
        if x._contig and not writable:
            return addr(x)
        address = self.rt.scratch(dev, max(numel(x) * x._dtype.itemsize, 1))
        self._copy(dev, address, _contiguous_strides(x._shape, x._dtype.itemsize), x)
        return address

    def _pass(self, dev, kind, dtype, run, shape_in, shape_out, src, dst, direction) -> None:
        """One cuFFT plan over the dims ``run`` of row-major arrays of element shapes
        ``shape_in`` and ``shape_out`` (complex elements counted once)."""
        first, last = run[0], run[-1]
        inembed, onembed = shape_in[first : last + 1], shape_out[first : last + 1]
        n = onembed if kind == "c2r" else inembed
        inner, outer = math.prod(shape_in[last + 1 :]), math.prod(shape_in[:first])
        item = 4 if dtype == "float32" else 8
        in_item = item if kind == "r2c" else 2 * item
        out_item = item if kind == "c2r" else 2 * item
        in_block, out_block = math.prod(inembed) * inner, math.prod(onembed) * inner
        if inner == 1:  # the batch dims are all before the run: one call
            self.fft.execute(dev, kind, dtype, n, inembed, 1, in_block, onembed, 1, out_block,
                             outer, src, dst, direction)  # fmt: skip
            return
        for o in range(outer):
            self.fft.execute(dev, kind, dtype, n, inembed, inner, 1, onembed, inner, 1, inner,
                             src + o * in_block * in_item, dst + o * out_block * out_item,
                             direction)  # fmt: skip

    def _scale(self, out, normalization: int, size: int) -> None:
        """ATen's normalization (1: 1/sqrt(n), 2: 1/n) as ``out *= factor``."""
        if normalization == 0:
            return
        factor = 1 / math.sqrt(size) if normalization == 1 else 1 / size
        dev, code, item = device(out), out._dtype.code, out._dtype.itemsize
        shape = (numel(out),)
        operands = [
            (addr(out), (item,), 0),
            (addr(out), (item,), 0),
            (0, (0,), compute_bits(factor, code, True)),
        ]
        name = ew.kernel_name("mul", TOKENS[code])
        run_strided(self.rt, dev, name, shape, operands, (self.rt.status_word(dev),), (0.0,))

    def r2c(self, out, x, dims, normalization, onesided):
        if not numel(out):
            return
        dev, dtype, signal = device(out), x._dtype.name, tuple(x._shape)
        runs = _runs(dims)
        if onesided:
            src = self._packed(dev, x, writable=False)
            spectrum = tuple(out._shape[:-1])
            self._pass(dev, "r2c", dtype, runs[-1], signal, spectrum, src, addr(out), 0)
            runs = runs[:-1]
        else:  # out = x + 0j, then a complex transform over every run
            self.rt.memset(dev, addr(out), numel(out) * out._dtype.itemsize)
            strides = _contiguous_strides(out._shape, out._dtype.itemsize)[:-1]
            self._copy(dev, addr(out), strides, x)
        shape = tuple(out._shape[:-1])
        for run in runs:
            self._pass(dev, "c2c", dtype, run, shape, shape, addr(out), addr(out), FORWARD)
        self._scale(out, normalization, math.prod(signal[d] for d in dims))

    def c2r(self, out, x, dims, normalization, last_dim_size):
        if not numel(out):
            return
        dev, dtype = device(out), x._dtype.name
        runs = _runs(dims)
        # cuFFT's c2r overwrites its input: always a private copy
        src, shape = self._packed(dev, x, writable=True), tuple(x._shape[:-1])
        for run in runs[:-1]:
            self._pass(dev, "c2c", dtype, run, shape, shape, src, src, INVERSE)
        self._pass(dev, "c2r", dtype, runs[-1], shape, tuple(out._shape), src, addr(out), 0)
        self._scale(out, normalization, math.prod(out._shape[d] for d in dims))

    def c2c(self, out, x, dims, normalization, forward):
        if not numel(out):
            return
        dev, dtype = device(out), x._dtype.name
        self._copy(dev, addr(out), _contiguous_strides(out._shape, out._dtype.itemsize), x)
        shape = tuple(out._shape[:-1])
        for run in _runs(dims):
            self._pass(dev, "c2c", dtype, run, shape, shape, addr(out), addr(out),
                       FORWARD if forward else INVERSE)  # fmt: skip
        self._scale(out, normalization, math.prod(shape[d] for d in dims))


def build(rt) -> dict:
    fft = math_library(rt, "make_fft", "ember.fft's transforms")
    if fft is None:
        return {}
    t = _Transforms(rt, fft)
    kernels = {"_fft_r2c": t.r2c, "_fft_c2r": t.c2r, "_fft_c2c": t.c2c}
    return {name: dict.fromkeys(FFT_DTYPES, fn) for name, fn in kernels.items()}
