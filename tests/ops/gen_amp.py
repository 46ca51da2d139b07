"""Samples and property checks of GradScaler's ops (optable/amp.py): the fused non-finite check
and unscale over a list of tensors, and the scale update, against PyTorch's semantics."""

from __future__ import annotations

import numpy as np

import ember

from . import checks
from .sampling import LARGE, Arr, Sample, arr


def _scalar(value, np_dtype=np.float32) -> Arr:
    return Arr(np.array(value, np_dtype))


def amp_unscale(op, dtype, device, rng):
    """Lists of gradients: finite, with an inf, with a NaN, strided, a large one (the parallel
    path), inv_scale 1 (no multiply), and the empty list."""

    def grads(*shapes, bad=None):
        out = [arr(dtype, shape, rng) for shape in shapes]
        if bad is not None and dtype.is_floating_point:
            values = np.array(out[-1].values)
            values.reshape(-1)[values.size // 2] = bad
            out[-1] = Arr(values)
        return out

    cases = (
        (grads((3, 4), (5,)), 0.5),
        (grads((2, 3), (4,), bad=np.inf), 0.25),
        (grads((7,), (2, 2), bad=np.nan), 2.0),
        ([arr(dtype, (3, 4), rng, "transposed"), arr(dtype, (6,), rng, "sliced")], 0.125),
        (grads((LARGE,), (3,), bad=-np.inf), 0.5),
        (grads((4,)), 1.0),
        ([], 0.5),
    )
    for tensors, inv in cases:
        yield Sample((tensors, _scalar(0.0), _scalar(inv)))


def amp_update_scale(op, dtype, device, rng):
    """Growth at the interval, back-off on inf, growth capped at float32's range."""
    for scale, tracker, found, interval in (
        (1024.0, 0, 0.0, 3),
        (1024.0, 2, 0.0, 3),
        (1024.0, 2, 1.0, 3),
        (3.0e38, 0, 0.0, 1),
        (0.75, 5, 2.0, 8),
    ):
        # a rejected dtype's scale only has to exist (the op refuses it)
        first = _scalar(scale, dtype.np) if dtype.is_floating_point else _scalar(3, dtype.np)
        yield Sample((first, _scalar(tracker, np.int32), _scalar(found), 2.0, 0.5, interval))


def _wide(dtype):
    return np.float64 if dtype is ember.float64 else np.float32


def check_unscale(op, dtype, device, sample):
    tensors_arg, _, inv_arg = sample.args
    tensors, found, inv = sample.ember_args(device)
    assert op(tensors, found, inv) is None
    inv_value = float(inv_arg.values)
    for t, a in zip(tensors, tensors_arg):
        want = (a.values.astype(_wide(dtype)) * _wide(dtype)(inv_value)).astype(dtype.np)
        checks.assert_matches(t, want, dtype, (0.0, 0.0), f"{op.name}: unscaled {a!r}")
    bad = any(not np.isfinite(a.values.astype(np.float64)).all() for a in tensors_arg)
    assert float(found.item()) == (1.0 if bad else 0.0), f"{op.name}: found_inf {found.item()}"


def check_update_scale(op, dtype, device, sample):
    scale_arg, tracker_arg, found_arg, growth, backoff, interval = sample.args
    scale, tracker, *_ = args = sample.ember_args(device)
    assert op(*args) is scale
    want_scale, want_tracker = float(scale_arg.values), int(tracker_arg.values)
    if float(found_arg.values):
        want_scale, want_tracker = float(np.float32(want_scale * backoff)), 0
    elif want_tracker + 1 == interval:
        grown = np.float32(want_scale * growth)
        want_scale = float(grown) if np.isfinite(grown) else want_scale
        want_tracker = 0
    else:
        want_tracker += 1
    assert scale.item() == want_scale and tracker.item() == want_tracker, (
        f"{op.name}: scale {scale.item()}, tracker {tracker.item()}; expected {want_scale}, "
        f"{want_tracker}"
    )


GENERATORS = {"amp_unscale": amp_unscale, "amp_update_scale": amp_update_scale}
PROPERTIES = {
    "_amp_foreach_non_finite_check_and_unscale_": check_unscale,
    "_amp_update_scale_": check_update_scale,
}
