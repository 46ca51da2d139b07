"""Glue for the loss kernels (loss.c): nll_loss's forward and backward.

The core's runners (dispatcher/kinds/loss.py) pass the input and the target contiguous, the
input seen as (n, c, inner) and the target as (n, inner), one float dtype throughout.
"""

from __future__ import annotations

from ._args import raise_status

# float16/bfloat16 stay on the decomposition, which computes in their own precision.
DTYPES = ("float32", "float64")


def _addr(t) -> int:
    return t._storage.ptr + t._offset * t._dtype.itemsize


def _optional(t) -> int:
    return 0 if t is None else _addr(t)


def build(ffi, lib) -> dict:
    def forward(out, total_weight, x, target, weight, geometry, reduction, ignore_index):
        """geometry: (n, c, inner)."""
        status = lib.ember_nll_loss_forward(
            x._dtype.code,
            _addr(out),
            _addr(total_weight),
            _addr(x),
            _addr(target),
            _optional(weight),
            *geometry,
            reduction,
            ignore_index,
        )
        if status:
            raise_status(status, "nll_loss_forward", x._dtype.code)

    def backward(grad_input, grad_output, target, weight, total_weight, geometry, reduction,
                 ignore_index):  # fmt: skip
        status = lib.ember_nll_loss_backward(
            grad_input._dtype.code,
            _addr(grad_input),
            _addr(grad_output),
            _addr(target),
            _optional(weight),
            _addr(total_weight),
            *geometry,
            reduction,
            ignore_index,
        )
        if status:
            raise_status(status, "nll_loss_backward", grad_input._dtype.code)

    return {
        "nll_loss_forward": dict.fromkeys(DTYPES, forward),
        "nll_loss_backward": dict.fromkeys(DTYPES, backward),
    }
