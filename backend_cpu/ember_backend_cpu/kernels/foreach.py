"""Glue for the multi-tensor kernels of gradient clipping and the optimizers' step counters:
``_foreach_norm``, ``_foreach_mul_`` by one scalar and ``_foreach_add_`` of one, one C call over
the whole list (see csrc/foreach.c)."""

from __future__ import annotations

from ._args import addr, raise_status

FLOATS = ("float16", "bfloat16", "float32", "float64")


def _list(tensors) -> tuple:
    """The C calls' view of a list: dtype code, count, data pointers, element counts."""
    ptrs = [addr(t) for t in tensors]
    return tensors[0]._dtype.code, len(tensors), ptrs, [t.numel() for t in tensors]


def build(ffi, lib) -> dict:
    norm_call = lib.ember_foreach_norm

    def norm(out, tensors, ord):
        args = _list(tensors)
        status = norm_call(*args, float(ord), addr(out))
        if status:
            raise_status(status, "_foreach_norm", args[0])

    def in_place(call, name):
        def kernel(tensors, scalar):
            args = _list(tensors)
            status = call(*args, float(scalar))
            if status:
                raise_status(status, name, args[0])

        return kernel

    return {
        "_foreach_norm": dict.fromkeys(FLOATS, norm),
        "_foreach_mul_": dict.fromkeys(
            FLOATS, in_place(lib.ember_foreach_mul_scalar, "_foreach_mul_")
        ),
        "_foreach_add_": dict.fromkeys(
            FLOATS, in_place(lib.ember_foreach_add_scalar, "_foreach_add_")
        ),
    }
