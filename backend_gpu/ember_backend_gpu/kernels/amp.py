"""Glue for GradScaler's ops (codegen/amp.py): the fused unscale, one launch per AMP_LIST
gradients of a dtype (``kernel(found_inf, inv_scale, tensors)``, contiguous tensors), and the
scale update on the device."""

from __future__ import annotations

from .. import launch
from ..codegen.amp import AMP_LIST
from ._args import DTYPE_NAMES, addr, device, numel, token

CHUNK = 1 << 16  # elements per block row of the grid, at most


def build(rt) -> dict:
    def unscale(found_inf, inv_scale, tensors):
        dev = device(found_inf)
        name = f"em_amp_unscale_{token(tensors[0])}"
        live = [t for t in tensors if numel(t)]
        for start in range(0, len(live), AMP_LIST):
            group = live[start : start + AMP_LIST]
            ptrs = [addr(t) for t in group] + [0] * (AMP_LIST - len(group))
            sizes = [numel(t) for t in group] + [0] * (AMP_LIST - len(group))
            blocks = min(max(-(-max(sizes) // (launch.BLOCK * 4)), 1), CHUNK // launch.BLOCK)
            rt.launch(dev, name, (blocks, len(group)), launch.BLOCK, *ptrs, *sizes, len(group),
                      addr(found_inf), addr(inv_scale))  # fmt: skip

    def update_scale(scale, tracker, found_inf, growth, backoff, interval):
        rt.launch(device(scale), "em_amp_update_scale", 1, 1, addr(scale), addr(tracker),
                  addr(found_inf), growth, backoff, interval)  # fmt: skip

    unscale.__qualname__, update_scale.__qualname__ = "cuda.amp_unscale", "cuda.amp_update_scale"
    floats = [name for name in DTYPE_NAMES if name.startswith(("float", "bfloat"))]
    return {
        "_amp_foreach_non_finite_check_and_unscale_": dict.fromkeys(floats, unscale),
        "_amp_update_scale_": {"float32": update_scale},
    }
