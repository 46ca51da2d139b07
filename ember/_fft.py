"""The FFT transforms of ``ember.fft`` as compositions over the three primitive rows
``_fft_r2c``, ``_fft_c2r`` and ``_fft_c2c`` (ATen's names and normalization codes), the way ATen's
``SpectralOps.cpp`` builds them: promotion, ``n``/``s`` padding or trimming, ``dim``
canonicalisation, the normalization code for the direction, and a conjugate where an inverse is
computed by a forward primitive.

The primitives take complex tensors as their real view (a trailing dim of 2), so the padding,
trimming and conjugation here happen on that real view too: real ops that every device has, and
the gradient flows through ``view_as_real``/``view_as_complex`` and the primitives' formulas.
"""

from __future__ import annotations

from collections.abc import Sequence

import ember as E

from . import _dtype as dt
from ._tensor import Tensor

NONE, BY_ROOT_N, BY_N = 0, 1, 2  # ATen's fft_norm_mode


def norm_code(norm: str | None, forward: bool) -> int:
    """ATen's norm_from_string: which scaling a transform in direction ``forward`` applies."""
    if norm is None or norm == "backward":
        return NONE if forward else BY_N
    if norm == "forward":
        return BY_N if forward else NONE
    if norm == "ortho":
        return BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def is_complex(x: Tensor) -> bool:
    return x.dtype.category == dt.COMPLEX


def promote(x: Tensor, require_complex: bool) -> Tensor:
    """ATen's promote_tensor_fft, on the real view: integers and bool become the default float
    dtype; the result is the real view of a complex tensor when ``require_complex``."""
    if not isinstance(x, Tensor):
        raise TypeError(f"fft: argument 'input' must be Tensor, not {type(x).__name__}")
    if is_complex(x):
        return E.view_as_real(x.resolve_conj())
    if not x.dtype.is_floating_point:
        x = x.to(dt.get_default_dtype())
    if x.dtype.itemsize == 2:
        raise RuntimeError(f"fft: {x.dtype} is not supported (the FFT kernels: float32, float64)")
    if require_complex:
        return E.stack((x, E.zeros_like(x)), -1)
    return x


def wrap_dim(dim: int, ndim: int) -> int:
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -ndim <= dim < ndim:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
            f"but got {dim})"
        )
    return dim % ndim


def shape_and_dims(x: Tensor, s, dim) -> tuple[list[int], list[int]]:
    """ATen's canonicalize_fft_shape_and_dim_args: the signal sizes and dims an n-d transform
    covers (``s`` entries of -1 keep the input's size)."""
    ndim, sizes = x.ndim, x.shape
    dims = None
    if dim is not None:
        dim = [dim] if isinstance(dim, int) else list(dim)
        dims = [wrap_dim(d, ndim) for d in dim]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = [s] if isinstance(s, int) else list(s)
        if dims is not None and len(dims) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > ndim:
            raise RuntimeError(
                f"Got shape with {len(s)} values but input tensor only has {ndim} dimensions."
            )
        if dims is None:
            dims = list(range(ndim - len(s), ndim))
        shape = [sizes[d] if n == -1 else int(n) for n, d in zip(s, dims)]
    elif dims is None:
        dims, shape = list(range(ndim)), list(sizes)
    else:
        shape = [sizes[d] for d in dims]
    for n in shape:
        if n <= 0:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return shape, dims


def resize(r: Tensor, dims: Sequence[int], sizes: Sequence[int]) -> Tensor:
    """ATen's resize_fft_input on the (real view of the) signal: zero-pad or trim each of
    ``dims`` to its size."""
    for d, n in zip(dims, sizes):
        have = r.shape[d]
        if n < have:
            r = r.narrow(d, 0, n)
        elif n > have:
            pad = list(r.shape)
            pad[d] = n - have
            r = E.cat((r, E.zeros(pad, dtype=r.dtype, device=r.device)), d)
    return r


def conj(r: Tensor) -> Tensor:
    """The conjugate of a complex tensor's real view."""
    return E.stack((r[..., 0], r[..., 1].neg()), -1)


def as_complex(r: Tensor) -> Tensor:
    return E.view_as_complex(r if r.is_contiguous() else r.contiguous())


def finish(result: Tensor, out) -> Tensor:
    """The result, or written into ``out`` (resized, as PyTorch's out= variants do)."""
    if out is None:
        return result
    if out.dtype != result.dtype:
        raise RuntimeError(
            f"Expected out tensor to have dtype {result.dtype}, but got {out.dtype} instead"
        )
    out.resize_(result.shape)
    return out.copy_(result)


def c2c(name, x, s, dim, norm, forward: bool, out, one_dim: bool):
    """fft/ifft family: complex to complex; a real input is taken through r2c, full-sided."""
    shape, dims = _dims(x, s, dim, one_dim)
    if not is_complex(x):
        r = resize(promote(x, False), dims, shape)
        y = E.ops._fft_r2c(r, dims, norm_code(norm, forward), False)
        return finish(as_complex(y if forward else conj(y)), out)
    r = resize(promote(x, True), dims, shape)
    return finish(as_complex(E.ops._fft_c2c(r, dims, norm_code(norm, forward), forward)), out)


def r2c(name, x, s, dim, norm, forward: bool, out, one_dim: bool):
    """rfft (forward) and ihfft (inverse, conjugated): a real input, the one-sided half."""
    if is_complex(x):
        raise RuntimeError(f"{name} expects a real input tensor, but got {_aten_name(x.dtype)}")
    shape, dims = _dims(x, s, dim, one_dim)
    if not shape:
        raise RuntimeError(f"{name} must transform at least one axis")
    r = resize(promote(x, False), dims, shape)
    code = norm_code(norm, forward)
    if forward:
        return finish(as_complex(E.ops._fft_r2c(r, dims, code, True)), out)
    # ihfftn: the one-sided r2c over the last dim, conjugated, then an inverse c2c over the rest
    y = conj(E.ops._fft_r2c(r, dims[-1:], code, True))
    if len(dims) > 1:
        y = E.ops._fft_c2c(y, dims[:-1], code, False)
    return finish(as_complex(y), out)


def c2r(name, x, s, dim, norm, forward: bool, out, one_dim: bool):
    """irfft (inverse) and hfft (forward, of the conjugate): a Hermitian half to a real signal
    of ``2 (m - 1)`` points along the last dim unless ``n``/``s`` says otherwise."""
    shape, dims = _dims(x, s, dim, one_dim)
    if not shape:
        raise RuntimeError(f"{name} must transform at least one axis")
    given = s is not None and (s if isinstance(s, int) else list(s)[-1]) != -1
    last = shape[-1] if given else 2 * (x.shape[dims[-1]] - 1)
    if last < 1:
        raise RuntimeError(f"Invalid number of data points ({last}) specified")
    shape[-1] = last // 2 + 1
    r = resize(promote(x, True), dims, shape)
    code = norm_code(norm, forward)
    if forward:  # hfftn: a forward c2c over the leading dims, then c2r of the conjugate
        if len(dims) > 1:
            r = E.ops._fft_c2c(r, dims[:-1], code, True)
        return finish(E.ops._fft_c2r(conj(r), dims[-1:], code, last), out)
    return finish(E.ops._fft_c2r(r, dims, code, last), out)  # irfftn: one c2r over every dim


def _dims(x, s, dim, one_dim: bool):
    if not isinstance(x, Tensor):
        raise TypeError(f"fft: argument 'input' must be Tensor, not {type(x).__name__}")
    if one_dim:  # the 1-d transforms: n and one dim (a 0-d input has no dim to transform)
        d = wrap_dim(dim, x.ndim)
        n = x.shape[d] if s is None else s
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
        return [n], [d]
    return shape_and_dims(x, s, dim)


def _aten_name(dtype) -> str:
    return {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}.get(dtype.name, dtype.name)
