"""Glue for GradScaler's ops (clc/amp.cl): the fused non-finite check and unscale, one launch per
buffer holding gradients (tensors are (buffer, offset) pairs, and the caching allocator packs
small gradients into shared segments, so a model's gradients take a few launches), and the scale
update on the device."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ..programs import source
from ._launch import DTYPE_NAMES, TOKENS, device_of, offset

WIDTH = 64  # work-items per gradient (each loops over its share)


def _spans(tensors) -> dict:
    """``{buffer: [(element offset, count), ...]}`` of the non-empty tensors."""
    found: dict = defaultdict(list)
    for t in tensors:
        count = 1
        for size in t._shape:
            count *= size
        if count:
            found[t._storage.handle].append((offset(t), count))
    return found


def build(runtime) -> dict:
    cl = runtime._cl

    def unscale(found_inf, inv_scale, tensors):
        dev = device_of(runtime, found_inf)
        token = TOKENS[tensors[0]._dtype.code]
        kernel = dev.programs.get(
            ("amp", token), lambda: f"#define T {token}\n" + source("amp.cl")
        )["amp_unscale"]
        found_at, inv_at = offset(found_inf), offset(inv_scale)
        for buffer, spans in _spans(tensors).items():
            table = np.asarray(spans, np.int64).reshape(-1)
            with dev.scratch(table.nbytes) as (staged,):
                event = cl.enqueue_copy(dev.queue, staged, table, is_blocking=False)
                dev.keep_upload(event)
                kernel.fn(dev.queue, (WIDTH, len(spans)), (WIDTH, 1), buffer, staged,
                          found_inf._storage.handle, found_at, inv_scale._storage.handle,
                          inv_at)  # fmt: skip

    def update_scale(scale, tracker, found_inf, growth, backoff, interval):
        dev = device_of(runtime, scale)
        kernel = dev.programs.get(("amp_update",), lambda: source("amp.cl"))["amp_update_scale"]
        kernel.fn(dev.queue, (1,), (1,), scale._storage.handle, offset(scale),
                  tracker._storage.handle, offset(tracker), found_inf._storage.handle,
                  offset(found_inf), growth, backoff, interval)  # fmt: skip

    unscale.__qualname__, update_scale.__qualname__ = "xpu.amp_unscale", "xpu.amp_update_scale"
    floats = [name for name in DTYPE_NAMES if name.startswith(("float", "bfloat"))]
    return {
        "_amp_foreach_non_finite_check_and_unscale_": dict.fromkeys(floats, unscale),
        "_amp_update_scale_": {"float32": update_scale},
    }
