"""Glue for the multi-tensor kernels of gradient clipping: ``_foreach_norm`` and
``_foreach_mul_`` by one scalar, one C call over the whole list (see csrc/foreach.c)."""

from __future__ import annotations

from ._args import addr, raise_status

FLOATS = ("float16", "bfloat16", "float32", "float64")


def build(ffi, lib) -> dict:
    norm_call = lib.ember_foreach_norm
    mul_call = lib.ember_foreach_mul_scalar

    def norm(out, tensors, ord):
        code = tensors[0]._dtype.code
        ptrs = [addr(t) for t in tensors]
        sizes = [t.numel() for t in tensors]
        status = norm_call(code, len(tensors), ptrs, sizes, float(ord), addr(out))
        if status:
            raise_status(status, "_foreach_norm", code)

    def mul_(tensors, scale):
        code = tensors[0]._dtype.code
        ptrs = [addr(t) for t in tensors]
        sizes = [t.numel() for t in tensors]
        status = mul_call(code, len(tensors), ptrs, sizes, float(scale))
        if status:
            raise_status(status, "_foreach_mul_", code)

    return {
        "_foreach_norm": dict.fromkeys(FLOATS, norm),
        "_foreach_mul_": dict.fromkeys(FLOATS, mul_),
    }
