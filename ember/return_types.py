"""Named tuples returned by ops with several results, like ``torch.return_types``."""

from __future__ import annotations

from typing import NamedTuple


class ValuesIndices(NamedTuple):
    """``(values, indices)``: returned by max, min, sort, topk, kthvalue, mode, median."""

    values: object
    indices: object


max = min = sort = topk = kthvalue = mode = median = cummax = cummin = ValuesIndices


class Frexp(NamedTuple):
    """``(mantissa, exponent)``: returned by frexp."""

    mantissa: object
    exponent: object


class Aminmax(NamedTuple):
    """``(min, max)``: returned by aminmax."""

    min: object
    max: object


frexp = Frexp
aminmax = Aminmax
