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
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import ember
from ember.dispatcher.optable import OPS

from ..ops.samples import samples
from ..ops.sampling import Arr, Sample, complete

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


# Rows with complex inputs or outputs: this float64 harness cannot sample them, and
# tests/complex/test_autograd.py gradchecks them through real views instead.
COMPLEX_VIEWS = frozenset({"view_as_real", "view_as_complex", "complex", "polar"})
COMPLEX_VIEWS |= {"_linalg_eig", "linalg_eig", "linalg_eigvals", "_conj"}  # _conj: test_conj_bit.py
DIFFERENTIABLE = sorted(
    name for name, op in OPS.items() if differentiable(op) and name not in COMPLEX_VIEWS
)


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


# ---- what OpInfo adds to a sample for a gradient check ------------------------------------------
# Finite differences perturb one entry at a time, so they leave the sets some ops live on: an op
# that reads one triangle of a Hermitian input sees no change in the other, and outputs defined
# up to a sign (singular and eigen vectors) may flip. PyTorch's OpInfo checks these ops through a
# gradcheck_wrapper (on the arguments) and an output_process_fn_grad (on the outputs); the same
# here, from one table.


def _same(x):
    return x


@dataclass(frozen=True)
class Harness:
    """``wrap`` rewrites the op's arguments inside the checked function (OpInfo's
    gradcheck_wrapper), ``outputs`` maps its result to the outputs checked (OpInfo's
    output_process_fn_grad), and ``refuses`` names the samples PyTorch raises for when
    differentiated, which OpInfo does not generate (it gets the complete argument tuple)."""

    wrap: Callable[[list], list] = _same
    outputs: Callable = _same
    refuses: Callable[[tuple], bool] = lambda args: False


def _hermitian(args: list) -> list:
    """gradcheck_wrapper_hermitian_input: op(A + A^H, ...), Hermitian under any perturbation."""
    a = args[0]
    return [a + a.mH, *args[1:]]


def _triangular(at: int):
    """gradcheck_wrapper_triangular_input: the factor at ``at`` cut to the triangle its
    ``upper`` flag names, as the op reads it (PyTorch's formula is not masked to it)."""

    def wrap(args: list) -> list:
        upper = len(args) > at + 1 and args[at + 1]
        factor = args[at].triu() if upper else args[at].tril()
        return [*args[:at], factor, *args[at + 1 :]]

    return wrap


def _hermitian_if_asked(args: list) -> list:
    """linalg.pinv's 'hermitian' variant: only hermitian=True reads a single triangle."""
    return _hermitian(args) if len(args) > 3 and args[3] else args


def _q_inside(args: list) -> list:
    """quantile's q, (nudged) samples 0.05, 0.3, 0.5, 1, moved to 0.11, 0.31, 0.47, 0.87: inside
    [0, 1] under perturbation, and off the kinks of the interpolations (q (n - 1) an integer or
    a half, for the sampled n of 4 to 6), as OpInfo's random q in (0, 1) is."""
    q = args[1]
    if not isinstance(q, ember.Tensor):
        return args
    return [args[0], 0.07 + 0.8 * q, *args[2:]]


def _uniform_svd(u, s, vh) -> tuple:
    """sample_inputs_svd's processing: the first k singular vectors (full_matrices' others are
    arbitrary), and functions of them free of each pair's common sign: |U|, |Vh| and U Vh."""
    k = s.shape[-1]
    u, vh = u[..., :k], vh[..., :k, :]
    return u.abs(), s, vh.abs(), u @ vh


def _eigh_outputs(out) -> tuple:
    return out[0], out[1].abs()  # eigenvectors are defined up to sign


def _qr_refused(args: tuple) -> bool:
    """PyTorch: 'The derivative of linalg.qr depends on Q, which is not computed when mode='r''
    and 'The QR decomposition is not differentiable when mode='complete' and nrows > ncols'."""
    m, n = args[0].values.shape[-2:]
    return args[1] == "r" or (args[1] == "complete" and m > n)


def _pinv_truncates(args: tuple) -> bool:
    """atol/rtol that drop singular values: PyTorch's pinv_backward is the derivative of the
    untruncated pseudo-inverse there (its own gradcheck fails), and ember's formula is PyTorch's;
    the OpInfo suite compares those gradients with PyTorch's."""
    atol, rtol = (args[i] if len(args) > i else None for i in (1, 2))
    if atol is None and rtol is None:
        return False
    s = np.linalg.svd(args[0].values, compute_uv=False)
    tol = np.maximum(atol or 0.0, (rtol or 0.0) * s.max(-1, keepdims=True))
    return bool((s <= tol).any())


def _uv_not_computed(args: tuple) -> bool:
    """compute_uv / compute_v=False: PyTorch's backward needs the vectors and fails without them
    (_linalg_svd: 'U.dim() >= 2 && Vh.dim() >= 2 INTERNAL ASSERT FAILED'; _linalg_eigh:
    'tensor.mH is only supported on matrices')."""
    return not args[2]


def _list_in_place() -> Harness:
    """Ops that write a list in place and return nothing (``_foreach_mul_``): they write
    clones of the list's leaves, which are the outputs checked."""
    written: list = []

    def wrap(args: list) -> list:
        written[:] = [t.clone() for t in args[0]]
        return [list(written), *args[1:]]

    return Harness(wrap, lambda _: tuple(written))


HARNESS = {
    "cholesky": Harness(_hermitian),
    "cholesky_inverse": Harness(_triangular(0)),
    "cholesky_solve": Harness(_triangular(1)),
    "linalg_cholesky": Harness(_hermitian),
    "linalg_cholesky_ex": Harness(_hermitian),
    "linalg_eigh": Harness(_hermitian, _eigh_outputs),
    "_linalg_eigh": Harness(_hermitian, _eigh_outputs, _uv_not_computed),
    "linalg_eigvalsh": Harness(_hermitian),
    "linalg_pinv": Harness(_hermitian_if_asked, refuses=_pinv_truncates),
    "svd": Harness(outputs=lambda usv: _uniform_svd(usv[0], usv[1], usv[2].mH)),
    "linalg_svd": Harness(outputs=lambda usv: _uniform_svd(*usv)),
    "_linalg_svd": Harness(outputs=lambda usv: _uniform_svd(*usv), refuses=_uv_not_computed),
    "linalg_qr": Harness(refuses=_qr_refused),
    # linalg.lstsq's 'grad_oriented' variant: rank and singular values are not differentiable
    "linalg_lstsq": Harness(outputs=lambda out: out[:2]),
    "quantile": Harness(_q_inside),
    "nanquantile": Harness(_q_inside),
    # the saved statistics are not differentiable outputs (PyTorch's output_differentiability)
    "native_layer_norm": Harness(outputs=lambda out: out[:1]),
    "native_batch_norm": Harness(outputs=lambda out: out[:1]),
    "_batch_norm_with_update": Harness(outputs=lambda out: out[:1]),
    # total_weight is not a differentiable output (PyTorch's output_differentiability)
    "nll_loss_forward": Harness(outputs=lambda out: out[:1]),
    "_foreach_mul_": _list_in_place(),
    "_foreach_add_": _list_in_place(),
}


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


# Float tensor arguments PyTorch's derivatives.yaml does not differentiate (its gradcheck keeps
# them constant): nll_loss's class weights and its backward's total_weight.
CONSTANT = {
    "nll_loss_forward": frozenset({"weight"}),
    "nll_loss_backward": frozenset({"weight", "total_weight"}),
}


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
        constant = CONSTANT.get(self.op.name, frozenset())
        if (
            arg.values.dtype != np.float64
            or position not in self.op.tensor_positions
            or self.op.schema.args[position].name in constant
        ):
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
    harness = HARNESS.get(op.name, Harness())
    if harness.refuses(complete(op, sample.args)):
        return None
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
        args = harness.wrap([make(leaves) for make in makers])
        if not op.mutates:
            return _float_outputs(harness.outputs(op(*args)))
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
