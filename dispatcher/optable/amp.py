"""GradScaler's ops: the fused non-finite check and unscale, and the scale update.

Both mutate their arguments on the device, so a training step never waits for the device to
decide whether to skip until ``GradScaler.step`` asks. The decompositions (ember ops) serve
devices without kernels; backends provide fused kernels (see dispatcher/kinds/amp.py).
"""

from __future__ import annotations

import ember
from ember import _dtype as dt

from ..kinds import amp as run
from ..opdef import DTYPES_FLOAT, Kind, OpDef


def _unscale(grads, found_inf, inv_scale):
    """Per tensor: found_inf = 1 where an element is inf/NaN; then ``t *= inv_scale``, computed
    in float32 for float16/bfloat16 (float64 tensors in float64), as PyTorch's kernels."""
    for t in grads:
        bad = ember.logical_not(ember.isfinite(t)).any().to(dt.float32)
        found_inf.copy_(ember.maximum(found_inf, bad.reshape(found_inf.shape)))
        wide = dt.float64 if t.dtype is dt.float64 else dt.float32
        t.copy_(t.to(wide) * inv_scale.to(wide).reshape(()))


def _update_scale(scale, tracker, found_inf, growth_factor, backoff_factor, interval):
    """PyTorch's _amp_update_scale_: back off on inf/NaN, grow after ``interval`` clean steps
    (unless growing overflows float32); products in float64 rounded once to float32."""
    found = found_inf.reshape(()) > 0
    wide = scale.reshape(()).to(dt.float64)
    successful = tracker.reshape(()) + 1
    grow = ember.logical_and(ember.logical_not(found), successful == interval)
    grown = (wide * growth_factor).to(dt.float32)
    grown = ember.where(ember.isfinite(grown), grown, scale.reshape(()))
    backed_off = (wide * backoff_factor).to(dt.float32)
    new_scale = ember.where(found, backed_off, ember.where(grow, grown, scale.reshape(())))
    new_tracker = ember.where(ember.logical_or(found, grow), successful * 0, successful)
    scale.copy_(new_scale.reshape(scale.shape))
    tracker.copy_(new_tracker.reshape(tracker.shape).to(dt.int32))


ROWS = [
    OpDef(
        "_amp_foreach_non_finite_check_and_unscale_(Tensor[] self, Tensor found_inf, "
        "Tensor inv_scale) -> ()",
        Kind.FOREACH,
        None,
        dtypes=DTYPES_FLOAT,
        differentiable=False,
        decomposition=_unscale,
        runner=run.non_finite_check_and_unscale,
        method=False,
        samples="amp_unscale",
        kernel_args="(found_inf, inv_scale, tensors): tensors a list of contiguous tensors of "
        "one dtype; found_inf, inv_scale one-element float32",
        notes="GradScaler.unscale_: one call per device and dtype",
    ),
    OpDef(
        "_amp_update_scale_(Tensor self, Tensor growth_tracker, Tensor found_inf, "
        "float scale_growth_factor, float scale_backoff_factor, int growth_interval) -> Tensor",
        Kind.FOREACH,
        None,
        dtypes=frozenset((dt.float32,)),
        differentiable=False,
        decomposition=_update_scale,
        runner=run.update_scale,
        method=False,
        samples="amp_update_scale",
        kernel_args="(scale, growth_tracker, found_inf, growth_factor, backoff_factor, "
        "growth_interval): one-element float32 scale and found_inf, int32 tracker; in place",
        notes="GradScaler.update",
    ),
]
