"""``ember.finfo`` and ``ember.iinfo``: the numeric limits of a dtype, as PyTorch reports them.

The numbers come from numpy's ``finfo``/``iinfo`` of the dtype's numpy twin (ml_dtypes' for
bfloat16 and the float8 formats), which use the same IEEE-style definitions as PyTorch.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from . import _dtype as dt

# c10's numeric_limits<Float8_e5m2fnuz>::epsilon() is 2**-3 (0x34), not the 2**-2 that the
# format's 2-bit mantissa gives; PyTorch reports c10's number.
_EPS = {dt.float8_e5m2fnuz: 2.0**-3}


class finfo:  # noqa: N801 - PyTorch's name
    """Machine limits of a floating dtype (``torch.finfo``): bits, eps, max, min, tiny,
    smallest_normal, resolution and dtype (its name)."""

    def __init__(self, type: dt.dtype | None = None):
        d = dt.DEFAULTS.float if type is None else type
        if not isinstance(d, dt.dtype) or d.category != dt.FLOATING:
            raise TypeError(
                "torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                "'torch.finfo'"
            )
        info = ml_dtypes.finfo(d.np) if d.itemsize <= 2 else np.finfo(d.np)
        self.bits = d.itemsize * 8
        self.eps = _EPS.get(d, float(info.eps))
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        # 10**-digits10, digits10 from the stored mantissa bits as in std::numeric_limits
        self.resolution = float(10 ** -math.floor(info.nmant * math.log10(2)))
        self.dtype = d.name

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
            f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, "
            f"dtype={self.dtype})"
        )


class iinfo:  # noqa: N801 - PyTorch's name
    """Machine limits of an integer dtype (``torch.iinfo``): bits, min, max and dtype."""

    def __init__(self, type: dt.dtype):
        if not isinstance(type, dt.dtype) or type.category > dt.INTEGRAL:
            raise TypeError(
                "torch.iinfo() requires an integer input type. Use torch.finfo to handle "
                "'torch.iinfo'"
            )
        info = np.iinfo(np.uint8 if type is dt.bool_ else type.np)
        self.bits = type.itemsize * 8
        self.min = 0 if type is dt.bool_ else int(info.min)
        self.max = 1 if type is dt.bool_ else int(info.max)
        self.dtype = type.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
