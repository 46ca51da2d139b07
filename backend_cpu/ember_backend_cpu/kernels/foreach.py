"""Glue for the multi-tensor kernels of gradient clipping: ``_foreach_norm`` and
``_foreach_mul_`` by one scalar, one C call over the whole list (see csrc/foreach.c)."""

from __future__ import annotations

from ._args import addr, raise_status

FLOATS = ("float16", "bfloat16", "float32", "float64")


def _list(tensors) -> tuple:
    """The C calls' view of a list: dtype code, count, data pointers, element counts."""
    ptrs = [addr(t) for t in tensors]
    return tensors[0]._dtype.code, len(tensors), ptrs, [t.numel() for t in tensors]


def build(ffi, lib) -> dict:
    norm_call = lib.ember_foreach_norm
    mul_call = lib.ember_foreach_mul_scalar

    def norm(out, tensors, ord):
        args = _list(tensors)
        status = norm_call(*args, float(ord), addr(out))
        if status:
            raise_status(status, "_foreach_norm", args[0])

    def mul_(tensors, scale):
        args = _list(tensors)
        status = mul_call(*args, float(scale))
        if status:
            raise_status(status, "_foreach_mul_", args[0])

    return {
        "_foreach_norm": dict.fromkeys(FLOATS, norm),
        "_foreach_mul_": dict.fromkeys(FLOATS, mul_),
    }
