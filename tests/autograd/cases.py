"""Gradient-check cases built from the op suite's samples (tests/ops/samples.py).

A sample describes each tensor argument as values plus a memory layout. Here every float64
tensor argument in a differentiable position becomes a *leaf*: a contiguous buffer that requires
grad, from which the layout is rebuilt inside the checked function with differentiable view ops
(``permute`` for transposed, ``slice`` for sliced, ``as_strided`` with a negative stride for
negative, ``expand`` for broadcast). So gradients are checked on odd shapes and flow back through
the views that made them, and the leaves themselves are plain buffers that finite differences can
perturb one element at a time.

In-place variants run on a view of a clone of their buffer, so views and CopySlices are checked
too: the case returns the written view and the whole buffer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import ember
from ember.dispatcher.optable import OPS

from ..ops.samples import samples
from ..ops.sampling import Arr, Sample

# Cases stay small: finite differences cost two calls per input element and the analytical
# Jacobian one backward per output element.
MAX_INPUT_ELEMENTS = 96
MAX_OUTPUT_ELEMENTS = 96
# gradgradcheck also perturbs the grad_outputs and runs a double backward per element.
GRADGRAD_MAX_ELEMENTS = 24
GRADGRAD_CASES = 3
# Sampled values closer than this to a kink (0 for abs, relu, xlogy...) are moved away from it.
NUDGE = 0.05


def differentiable(op) -> bool:
    return (op.inplace_of or op).defn.differentiable


DIFFERENTIABLE = sorted(name for name, op in OPS.items() if differentiable(op))


@dataclass
class Case:
    """``fn(*leaves)`` computes the op's float outputs from leaves that require grad."""

    op: object
    sample: Sample
    leaves: tuple
    fn: object

    def __repr__(self) -> str:
        return f"{self.op.name} with {self.sample!r}"

    @property
    def size(self) -> int:
        return sum(t.numel() for t in self.leaves)


# ---- layouts as differentiable functions of a contiguous buffer -------------------------------
def _stored(a: Arr) -> tuple[np.ndarray, object]:
    """The contiguous buffer behind ``a``'s layout and the view function that rebuilds ``a``."""
    v = a.values
    if a.layout == "transposed":
        order = tuple(range(v.ndim - 1, -1, -1))
        return v.transpose(order), lambda t: OPS["permute"](t, order)
    if a.layout == "sliced":
        buffer = np.zeros(v.shape[:-1] + (2 * v.shape[-1] + 1,), v.dtype)
        buffer[..., 1::2] = v
        return buffer, lambda t: OPS["slice"](t, -1, 1, None, 2)
    if a.layout == "negative" and v.shape[0] > 1:
        stride = tuple(math.prod(v.shape[i + 1 :]) for i in range(v.ndim))
        offset = (v.shape[0] - 1) * stride[0]
        negative = (-stride[0],) + stride[1:]
        return v[::-1], lambda t: OPS["as_strided"](t, v.shape, negative, offset)
    if a.layout == "expanded":
        small = v[tuple(slice(0, 1) if s == 0 else slice(None) for s in v.strides)]
        return small, lambda t: OPS["expand"](t, v.shape)
    return v, None


def _on(values: np.ndarray, device: str):
    t = ember.from_numpy(np.array(values, order="C"))
    return t if device == "cpu" else t.to(device)


def _nudged(v: np.ndarray) -> np.ndarray:
    """Values with every entry at least NUDGE away from 0, keeping its sign (0 goes up)."""
    small = np.abs(v) < NUDGE
    return np.where(small, np.where(v < 0, -NUDGE, NUDGE), v).astype(v.dtype)


class _Builder:
    """Turns a sample's arguments into leaves plus a function rebuilding the arguments."""

    def __init__(self, op, device):
        self.op = op
        self.device = device
        self.leaves: list = []
        self.views: list = []

    def argument(self, position: int, arg):
        if isinstance(arg, list) and any(isinstance(a, Arr) for a in arg):
            built = [self.argument(position, a) for a in arg]
            return lambda leaves: [b(leaves) for b in built]
        if not isinstance(arg, Arr):
            return lambda leaves: arg
        if arg.values.dtype != np.float64 or position not in self.op.tensor_positions:
            constant = arg  # indices, masks: rebuilt per call like the op suite does
            from ..ops.sampling import to_ember

            return lambda leaves: to_ember(constant, self.device)
        stored, view = _stored(Arr(_nudged(arg.values), arg.layout))
        index = len(self.leaves)
        self.leaves.append(_on(stored, self.device).requires_grad_())
        self.views.append(view)
        if view is None:
            return lambda leaves: leaves[index]
        return lambda leaves: view(leaves[index])


def _float_outputs(result) -> tuple:
    items = result if isinstance(result, (tuple, list)) else (result,)
    return tuple(t for t in items if isinstance(t, ember.Tensor) and t.is_floating_point())


def build(op, sample: Sample, device: str) -> Case | None:
    """The gradcheck case of ``sample``, or None when the sample does not suit one."""
    arrays = [a for a in _flat(sample.args) if isinstance(a, Arr)]
    floats = [a for a in arrays if a.values.dtype.kind == "f"]
    if any(a.values.dtype != np.float64 for a in floats):
        return None  # other float dtypes (casts): finite differences would only see rounding
    if any(
        not np.all(np.isfinite(a.values)) or np.abs(a.values).max(initial=0) > 1e6 for a in floats
    ):
        return None  # special values: nothing to differentiate
    builder = _Builder(op, device)
    makers = [builder.argument(i, arg) for i, arg in enumerate(sample.args)]
    if not builder.leaves or sum(t.numel() for t in builder.leaves) > MAX_INPUT_ELEMENTS:
        return None
    if op.mutates:
        target = sample.args[0]
        if not isinstance(target, Arr) or target.values.dtype != np.float64:
            return None
        if target.layout == "expanded":
            return None  # writing into a broadcast tensor is an error, tested elsewhere

    def fn(*leaves):
        args = [make(leaves) for make in makers]
        if not op.mutates:
            return _float_outputs(op(*args))
        buffer = leaves[0].clone()
        view = builder.views[0]
        target = view(buffer) if view is not None else buffer
        op(target, *args[1:])
        return (target, buffer) if target is not buffer else (target,)

    if not _valid(op, fn, builder.leaves, sample):
        return None
    return Case(op, sample, tuple(builder.leaves), fn)


def _valid(op, fn, leaves, sample) -> bool:
    """The forward runs without error, has float outputs of a checkable size, all finite, and
    (in-place) keeps the target's shape."""
    detached = [t.detach() for t in leaves]
    try:
        with ember.no_grad():
            outs = fn(*detached)
    except (RuntimeError, TypeError, ValueError, IndexError, ZeroDivisionError):
        return False  # an argument check refuses the sample: the op suite tests that
    if not outs or sum(o.numel() for o in outs) > MAX_OUTPUT_ELEMENTS:
        return False
    if any(o.dtype is not ember.float64 for o in outs):
        return False  # a cast to a narrower float: differences would measure its rounding
    if op.mutates and tuple(outs[0].shape) != tuple(sample.args[0].values.shape):
        return False
    return all(bool(ember.isfinite(o).all()) for o in outs if o.numel())


def _flat(args):
    for a in args:
        if isinstance(a, list):
            yield from a
        else:
            yield a


def gradgrad_cases(found: list[Case]) -> list[Case]:
    """A few cases spread over the sizes up to GRADGRAD_MAX_ELEMENTS (the smallest case when
    none is that small), skipping empty ones: second derivatives cost far more."""
    ordered = sorted((c for c in found if c.size), key=lambda c: c.size)
    small = [c for c in ordered if c.size <= GRADGRAD_MAX_ELEMENTS] or ordered[:1]
    step = max(1, len(small) // GRADGRAD_CASES)
    return small[::step][:GRADGRAD_CASES]


def cases(name: str, device: str, rng) -> list[Case]:
    op = OPS[name]
    found = []
    for sample in samples(op, ember.float64, device, rng):
        case = build(op, sample, device)
        if case is not None:
            found.append(case)
    return found
