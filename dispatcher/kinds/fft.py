"""Runners of the FFT primitives ``_fft_r2c``, ``_fft_c2r`` and ``_fft_c2c`` (ATen's names).

Until ember has complex dtypes, a complex tensor is stored as its real view: a trailing dim of 2,
(real, imaginary), as ``view_as_real`` gives. ``dim`` counts the signal's dims, without that
trailing 2. ``normalization`` is ATen's: 0 none, 1 by 1/sqrt(n), 2 by 1/n (n: the signal's size
over ``dim``), applied in either direction.

Kernel convention: ``kernel(out, input, dims, normalization, flag)`` with ``out`` contiguous and
``input`` of any strides; ``dims`` are non-negative and sorted, ``flag`` is ``onesided`` (r2c),
the last dim's output size (c2r: the input then holds exactly ``flag // 2 + 1`` entries along
``dims[-1]``) or ``forward`` (c2c).
"""

from __future__ import annotations

from ember._tensor import Tensor, empty, is_contiguous, make

from ._common import common_device, wrap_dims


def _prepare(op, input, dim, normalization, complex_input: bool) -> tuple:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op.name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input._dtype not in op.dtypes:
        raise RuntimeError(f'"{op.name}" not implemented for {input._dtype.name}')
    signal = input._shape[:-1] if complex_input else input._shape
    if complex_input and (not input._shape or input._shape[-1] != 2):
        raise RuntimeError(
            f"{op.name}(): expected the real view of a complex tensor (a last dim of size 2), "
            f"got shape {list(input._shape)}"
        )
    dims = tuple(sorted(set(wrap_dims(dim, len(signal), op.name))))
    if not dims:
        raise RuntimeError(f"{op.name}(): expected at least one dim to transform")
    if normalization not in (0, 1, 2):
        raise RuntimeError(f"{op.name}(): normalization must be 0, 1 or 2, got {normalization}")
    for d in dims:
        if signal[d] < 1:
            raise RuntimeError(
                f"{op.name}(): Invalid number of data points ({signal[d]}) specified"
            )
    return signal, dims


def _run(op, input, shape, dims, normalization, flag):
    dev = common_device(op.name, (input,))
    out = empty(shape, input._dtype, dev)
    op.kernel(dev.type, input._dtype)(out, input, dims, normalization, flag)
    return out


def r2c(op, input, dim, normalization, onesided):
    signal, dims = _prepare(op, input, dim, normalization, False)
    shape = list(signal)
    if onesided:
        shape[dims[-1]] = signal[dims[-1]] // 2 + 1
    return _run(op, input, (*shape, 2), dims, normalization, bool(onesided))


def c2r(op, input, dim, normalization, last_dim_size):
    signal, dims = _prepare(op, input, dim, normalization, True)
    if last_dim_size < 1:
        raise RuntimeError(f"{op.name}(): Invalid number of data points ({last_dim_size})")
    input = _half_spectrum(op, input, signal, dims[-1], last_dim_size // 2 + 1)
    shape = list(signal)
    shape[dims[-1]] = int(last_dim_size)
    return _run(op, input, tuple(shape), dims, normalization, int(last_dim_size))


def c2c(op, input, dim, normalization, forward):
    signal, dims = _prepare(op, input, dim, normalization, True)
    return _run(op, input, (*signal, 2), dims, normalization, bool(forward))


def _half_spectrum(op, input, signal, dim: int, half: int):
    """The kernels read exactly ``half`` entries along ``dim`` (cuFFT and pocketfft take no other
    size): a longer input is narrowed to them, a view (ATen reads the first half of a full-length
    one, numpy trims any); a shorter one is refused (ATen asserts; ember's transforms pad
    before the call), not read past its end."""
    if signal[dim] == half:
        return input
    if signal[dim] < half:
        raise RuntimeError(
            f"{op.name}(): expected {half} entries (last_dim_size // 2 + 1) along dim {dim}, "
            f"got {signal[dim]}"
        )
    shape = (*input._shape[:dim], half, *input._shape[dim + 1 :])
    contig = is_contiguous(shape, input._stride)
    return make(input._storage, shape, input._stride, input._offset, input._dtype, contig)
