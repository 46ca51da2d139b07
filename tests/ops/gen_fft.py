"""Sample generators of the FFT primitives (dispatcher/optable/fft.py): real signals for r2c,
real views of complex signals (a trailing dim of 2) for c2r and c2c, over layouts, dims, the
three normalizations and both directions / sidedness."""

from __future__ import annotations

from .sampling import Sample, arr

C, T, N = "contiguous", "transposed", "negative"
# (signal shape, layout, dims)
CASES = (
    ((8,), C, [0]),
    ((7,), N, [-1]),
    ((3, 5), C, [1]),
    ((4, 6), T, [0, 1]),
    ((2, 3, 6), C, [0, 2]),
    ((1,), C, [0]),
)


def fft(op, dtype, device, rng):
    complex_input = op.name != "_fft_r2c"
    for i, (shape, layout, dims) in enumerate(CASES):
        normalization = i % 3
        if not complex_input:
            x = arr(dtype, shape, rng, layout)
            for onesided in (True, False):
                yield Sample((x, dims, normalization, onesided))
        elif op.name == "_fft_c2c":
            x = arr(dtype, (*shape, 2), rng, C if layout == T else layout)
            for forward in (True, False):
                yield Sample((x, dims, normalization, forward))
        else:
            last = max(d % len(shape) for d in dims)
            for n in (2 * (shape[last] - 1), 2 * shape[last] - 1):
                if n < 1:
                    continue
                half = list(shape)
                half[last] = n // 2 + 1
                x = arr(dtype, (*half, 2), rng, C if layout == T else layout)
                yield Sample((x, dims, i % 3, n))


GENERATORS = {"fft": fft}
