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

cuFFT refuses (CUFFT_INVALID_VALUE) a data pointer not aligned to its complex type, which a
real array's batch can start at: a float64 slice at an odd offset, or the host loop's blocks of
an odd size. Real data is then laid out with each block's start rounded up to even (a padded
copy in, or a padded result copied out), as ATen clones such inputs.
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


def _real_layout(shape, run, item: int) -> tuple[int, int, tuple]:
    """How a real array of ``shape`` is laid out for the passes over ``run``: (elements from one
    host-loop block to the next, bytes in all, byte strides). Row-major, except that a block
    (the dims from ``run[0]`` on) of an odd size is padded to even when the host loop steps
    through it, so that every block starts at a complex-aligned address."""
    first, last = run[0], run[-1]
    block = math.prod(shape[first:])
    looped = math.prod(shape[last + 1 :]) > 1 and math.prod(shape[:first]) > 1
    step = block + block % 2 if looped else block
    inner = _contiguous_strides(shape[first:], item)
    outer = _contiguous_strides(shape[:first], step * item)
    return step, max(math.prod(shape[:first]) * step * item, 1), outer + inner


def _aligned(address: int, item: int) -> bool:
    return address % (2 * item) == 0


class _Transforms:
    """The three kernels over one runtime and its cuFFT binding."""

    def __init__(self, rt, fft):
        self.rt, self.fft = rt, fft

    def _copy(self, dev: int, dst: int, dst_strides, x, src=None) -> None:
        """dst (byte strides ``dst_strides``) = x element by element, or = the memory ``src``
        (address, byte strides) holding elements of ``x``'s dtype and shape."""
        code = x._dtype.code
        name = copy_gen.cast_name(TOKENS[code], TOKENS[code])
        source = operand(x, code, x._shape) if src is None else (*src, 0)
        run_strided(self.rt, dev, name, x._shape, [(dst, dst_strides, 0), source])

    def _real_input(self, dev: int, x, run) -> tuple[int, int]:
        """(address, block step) of the real input to an r2c over ``run``: ``x`` itself when its
        layout is already cuFFT's, else a padded copy in the stream's scratch space."""
        item = x._dtype.itemsize
        step, nbytes, strides = _real_layout(tuple(x._shape), run, item)
        if x._contig and _aligned(addr(x), item) and step == math.prod(x._shape[run[0] :]):
            return addr(x), step
        address = self.rt.scratch(dev, nbytes)
        self._copy(dev, address, strides, x)
        return address, step

    def _pass(self, dev, kind, dtype, run, shape_in, shape_out, src, dst, direction,
              steps=None) -> None:  # fmt: skip
        """One cuFFT plan over the dims ``run`` of row-major arrays of element shapes
        ``shape_in`` and ``shape_out`` (complex elements counted once); the host loop steps
        ``steps`` elements (in, out) from block to block, by default a block's size."""
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
        in_step, out_step = steps or (in_block, out_block)
        for o in range(outer):
            self.fft.execute(dev, kind, dtype, n, inembed, inner, 1, onembed, inner, 1, inner,
                             src + o * in_step * in_item, dst + o * out_step * out_item,
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
            src, step = self._real_input(dev, x, runs[-1])
            spectrum = tuple(out._shape[:-1])
            steps = (step, math.prod(spectrum[runs[-1][0] :]))
            self._pass(dev, "r2c", dtype, runs[-1], signal, spectrum, src, addr(out), 0, steps)
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
        shape, signal, item = tuple(x._shape[:-1]), tuple(out._shape), out._dtype.itemsize
        step, nbytes, strides = _real_layout(signal, runs[-1], item)
        padded = step != math.prod(signal[runs[-1][0] :]) or not _aligned(addr(out), item)
        packed = numel(x) * x._dtype.itemsize
        src = self.rt.scratch(dev, packed + 256 + (nbytes if padded else 0))
        self._copy(dev, src, _contiguous_strides(x._shape, x._dtype.itemsize), x)
        for run in runs[:-1]:
            self._pass(dev, "c2c", dtype, run, shape, shape, src, src, INVERSE)
        # a padded result goes to the scratch space after the input, then into ``out``
        dst = src + (packed + 255) // 256 * 256 if padded else addr(out)
        steps = (math.prod(shape[runs[-1][0] :]), step)
        self._pass(dev, "c2r", dtype, runs[-1], shape, signal, src, dst, 0, steps)
        if padded:
            self._copy(dev, addr(out), _contiguous_strides(signal, item), out, (dst, strides))
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
