"""Adaptive average pooling in scripted code: the output cell (i, j) averages input rows
``[floor(i*H/oh), ceil((i+1)*H/oh))`` and the matching columns (PyTorch's definition), for
input sizes known only at run time. Written in the TorchScript subset and compiled (two
``prim::Loop``s); global pooling (1 x 1) is one mean.
"""

from __future__ import annotations

# ruff: noqa: UP006 - List: the TorchScript spelling of the source below
from typing import List  # noqa: UP035

import ember
from ember import Tensor

from . import builtins as lib


def adaptive_avg_pool2d(x, oh: int, ow: int):
    h = x.size(-2)
    w = x.size(-1)
    rows: List[Tensor] = []
    for i in range(oh):
        h0 = (i * h) // oh
        h1 = ((i + 1) * h + oh - 1) // oh
        band = x.narrow(-2, h0, h1 - h0)
        cells: List[Tensor] = []
        for j in range(ow):
            w0 = (j * w) // ow
            w1 = ((j + 1) * w + ow - 1) // ow
            cells.append(band.narrow(-1, w0, w1 - w0).mean([-2, -1]))
        rows.append(ember.stack(cells, -1))
    return ember.stack(rows, -2)


def lower(em, ref, args, kwargs):
    if len(args) != 1 or kwargs:
        raise lib.BindError("AdaptiveAvgPool2d.forward() expected one input")
    (x,) = args
    size = ref.module.output_size
    oh, ow = (size, size) if isinstance(size, int) else size
    if oh is None or ow is None:
        raise lib.BindError(
            "AdaptiveAvgPool2d with a None output size isn't supported by ember.jit.script"
        )
    if (oh, ow) == (1, 1):
        return em.call_op("mean", [x, em.constant([-2, -1]), em.constant(True)], {})
    sizes = [x, em.constant(oh), em.constant(ow)]
    return em.unit.call_function(em, adaptive_avg_pool2d, sizes, {}, em.current)
