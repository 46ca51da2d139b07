"""The rows that accept PyTorch's limited-support dtypes (float8, uint16/32/64): moving and
copying data, whose CPU kernels are the backend's copy and fill (see docs/float8.md). Every
other row refuses them with PyTorch's NotImplementedError, as PyTorch's CPU build does."""

from __future__ import annotations

from ember import _dtype as dt

LIMITED = frozenset(dt.LIMITED)
# The rows with CPU kernels for them (copy_, fill_) and those that run on those kernels.
WIDEN = frozenset({"copy_", "fill_", "clone", "contiguous", "zero_"})


def widen(ops: dict) -> None:
    """Add the limited dtypes to the rows in WIDEN."""
    for op in ops.values():
        if op.name in WIDEN or (op.inplace_of is not None and op.inplace_of.name in WIDEN):
            op.dtypes = op.dtypes | LIMITED
