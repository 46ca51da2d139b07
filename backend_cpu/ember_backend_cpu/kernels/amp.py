"""Glue for GradScaler's ops: the fused non-finite check and unscale (one C call over the whole
list of gradients) and the scale update (see csrc/amp.c)."""

from __future__ import annotations

from ._args import addr, raise_status


def build(ffi, lib) -> dict:
    unscale_call = lib.ember_amp_unscale
    update_call = lib.ember_amp_update_scale

    def unscale(found_inf, inv_scale, tensors):
        code = tensors[0]._dtype.code
        ptrs = [addr(t) for t in tensors]
        sizes = [t.numel() for t in tensors]
        found = ffi.cast("float *", addr(found_inf))
        inv = float(ffi.cast("float *", addr(inv_scale))[0])
        status = unscale_call(code, len(tensors), ptrs, sizes, inv, found)
        if status:
            raise_status(status, "_amp_foreach_non_finite_check_and_unscale_", code)

    def update_scale(scale, tracker, found_inf, growth, backoff, interval):
        update_call(
            ffi.cast("float *", addr(scale)),
            ffi.cast("int32_t *", addr(tracker)),
            ffi.cast("float *", addr(found_inf)),
            growth,
            backoff,
            interval,
        )

    floats = ("float16", "bfloat16", "float32", "float64")
    return {
        "_amp_foreach_non_finite_check_and_unscale_": dict.fromkeys(floats, unscale),
        "_amp_update_scale_": {"float32": update_scale},
    }
