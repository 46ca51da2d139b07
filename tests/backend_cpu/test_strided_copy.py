"""Copies of one dtype through ember_copy's own loop (copy.c ``copy_same``): views whose
coalesced layout has two or more levels (attention's head transposes), negative strides,
broadcast (stride 0) sources, zero sizes, every item width; against numpy's and PyTorch's
copies. Sizes stay under the parallel threshold (the path's range) except one, which checks
the driver's parallel path still runs the same copies."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

ITEM_DTYPES = ("bool", "uint8", "int16", "float16", "bfloat16", "float32", "int64", "float64")
ITEM_DTYPES += ("complex64", "complex128")


def _values(dtype: str, shape: tuple) -> torch.Tensor:
    gen = torch.Generator().manual_seed(0)
    if dtype == "bool":
        return torch.randint(0, 2, shape, generator=gen).bool()
    if dtype in ("uint8", "int16", "int64"):
        return torch.randint(0, 100, shape, generator=gen).to(getattr(torch, dtype))
    return torch.randn(shape, generator=gen, dtype=torch.float64).to(getattr(torch, dtype))


def _ember(t: torch.Tensor) -> ember.Tensor:
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: through its bits
        bits = ember.from_numpy(t.view(torch.int16).numpy().copy())
        return bits.view(ember.bfloat16)
    return ember.from_numpy(t.numpy().copy())


def _torch(e: ember.Tensor) -> torch.Tensor:
    if e.dtype == ember.bfloat16:
        return torch.from_numpy(e.view(ember.int16).numpy().copy()).view(torch.bfloat16)
    return torch.from_numpy(e.numpy().copy())


# (base shape, the view taken of it, in both libraries)
VIEWS = {
    "heads_transpose": ((64, 3, 6, 16), lambda t: t.transpose(1, 2)),
    "qkv_transpose": ((4, 6, 3, 16), lambda t: t.transpose(1, 2)),
    "matrix_transpose": ((48, 36), lambda t: t.t()),
    "three_levels": ((5, 4, 3, 7), lambda t: t.permute(2, 0, 3, 1)),
    "row_slices": ((9, 10, 12), lambda t: t[:, 1:8:2, 2:11]),
    "flipped_rows": ((6, 5, 8), lambda t: t.flip(1)),
    "flipped_inner": ((6, 5, 8), lambda t: t.flip(2).transpose(0, 1)),
    "flipped_all": ((4, 6, 5), lambda t: t.flip(0, 1, 2).transpose(0, 2)),
    "broadcast_rows": ((1, 7, 16), lambda t: t.expand(5, 7, 16).transpose(0, 1)),
    "broadcast_inner": ((6, 1), lambda t: t.expand(6, 9).t()),
    "zero_rows": ((0, 4, 5), lambda t: t.transpose(0, 1)),
    "zero_inner": ((4, 3, 0), lambda t: t.transpose(0, 1)),
    "scalar": ((), lambda t: t),
    "one_element_rows": ((8, 1, 6), lambda t: t.transpose(0, 2)),
}


def _check(base: torch.Tensor, view) -> None:
    ours = view(_ember(base)).contiguous()
    theirs = view(base).contiguous()
    assert ours.is_contiguous()
    assert tuple(ours.shape) == tuple(theirs.shape)
    got = _torch(ours)
    # bits, not values: a copy of one dtype moves them as they are (NaN payloads too)
    if got.dtype.is_floating_point or got.dtype.is_complex:
        bits = (t.reshape(-1).view(torch.uint8) for t in (got, theirs))
        assert torch.equal(*bits)
    else:
        assert torch.equal(got, theirs)


@pytest.mark.parametrize("dtype", ITEM_DTYPES)
@pytest.mark.parametrize("case", VIEWS)
def test_contiguous_of_strided_views(case, dtype):
    shape, view = VIEWS[case]
    _check(_values(dtype, shape), view)


@pytest.mark.parametrize("case", ["heads_transpose", "flipped_all", "broadcast_rows"])
def test_copy_into_strided_destination(case):
    """copy_ into a non-contiguous view of the destination (both operands strided)."""
    shape, view = VIEWS[case]
    source = _values("float32", shape)
    dims = tuple(reversed(range(view(source).ndim)))
    target = torch.zeros(tuple(view(source).shape[d] for d in dims)).permute(*dims)
    ours = _ember(target.contiguous()).as_strided(target.shape, target.stride())
    ours.copy_(view(_ember(source)))
    target.copy_(view(source))
    np.testing.assert_array_equal(ours.numpy(), target.numpy())


def test_nan_payloads_kept():
    """A bit copy: a NaN's payload and sign survive (a cast loop through float would not have
    to keep them; PyTorch's copy of one dtype keeps them)."""
    bits = np.array([0x7FC00001, 0xFFC12345, 0x7F800001, 0x3F800000] * 6, dtype=np.uint32)
    values = ember.from_numpy(bits.view(np.float32).reshape(4, 6).copy())
    copied = values.t().contiguous()
    np.testing.assert_array_equal(copied.numpy().view(np.uint32), bits.reshape(4, 6).T)


@pytest.mark.parametrize("threads", [1, 2])
def test_large_copy_takes_the_driver(threads):
    """Above the parallel threshold the copy stays on the N-d driver: the same values."""
    before = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        _check(_values("float32", (64, 12, 64, 16)), lambda t: t.transpose(1, 2))
    finally:
        ember.set_num_threads(before)
