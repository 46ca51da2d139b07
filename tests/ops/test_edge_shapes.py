"""Edge shapes against PyTorch, on every device: 0-d tensors through every reduction, scan and
softmax-like row of the op table (values and gradients), empty batches through the nn layers,
and zero-size views.

The 0-d cases are generated from the table: every row of kind reduction, scan or nn whose schema
has a ``dim`` argument, called with ``dim=0`` and ``dim=-1`` (and each ``keepdim``) in every dtype
the row accepts.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.dispatcher.opdef import Kind
from ember.dispatcher.optable import OPS

from .checks import accepted_dtypes

torch = pytest.importorskip("torch")


def _arg_names(op) -> tuple:
    return tuple(a.name for a in op.schema.args)


DIM_KINDS = (Kind.REDUCTION, Kind.SCAN, Kind.NN)
DIM_OPS = [
    name
    for name, op in OPS.items()
    if op.kind in DIM_KINDS
    and op.defn.function
    and op.inplace_of is None
    and "dim" in _arg_names(op)
    and op.schema.args[0].is_tensor
]
ZERO_D_CASES = [
    (name, d.name, dim, keepdim)
    for name in DIM_OPS
    for d in accepted_dtypes(OPS[name])
    for dim in (0, -1)
    for keepdim in ((False, True) if "keepdim" in _arg_names(OPS[name]) else (None,))
]
FLOATS = ("float32", "float64")


def _np(t) -> np.ndarray:
    """A host float64 (or int64/bool) array of an ember or torch tensor, for comparison."""
    t = t.detach().cpu()
    if 0 in t.shape:  # no data to read (a zero-size view's offset may lie past its storage)
        return np.empty(tuple(t.shape))
    if t.dtype.is_floating_point:
        t = t.double()
    return np.asarray(t.numpy())


def assert_same(ours, theirs, what: str, rtol=1e-5, atol=1e-6) -> None:
    """Same shape, dtype and values (NaN where torch has NaN) as PyTorch's result(s)."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs), f"{what}: {ours!r}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{what}, output {i}", rtol, atol)
        return
    assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: shape {ours.shape} vs torch's"
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch."), f"{what}: {ours.dtype}"
    np.testing.assert_allclose(_np(ours), _np(theirs), rtol, atol, equal_nan=True, err_msg=what)


def _both(fn_ours, fn_theirs, what: str):
    """Both results, or both errors (PyTorch refusing means ember must refuse too)."""
    try:
        theirs = fn_theirs()
    except (RuntimeError, IndexError, TypeError) as exc:
        with pytest.raises(type(exc)):
            fn_ours()
        return None, None
    return fn_ours(), theirs


# Required arguments besides the input and dim, for the rows that have them.
EXTRA_ARGS = {
    "kthvalue": {"k": 1},
    "quantile": {"q": 0.5},
    "nanquantile": {"q": 0.5},
    "renorm": {"p": 2, "maxnorm": 1.0},
}


def _zero_d_kwargs(name: str, dim: int, keepdim) -> dict:
    kwargs = {**EXTRA_ARGS.get(name, {}), "dim": dim}
    if keepdim is not None:
        kwargs["keepdim"] = keepdim
    return kwargs


def _outputs(result) -> tuple:
    return tuple(result) if isinstance(result, tuple) else (result,)


@pytest.mark.parametrize("name, dtype, dim, keepdim", ZERO_D_CASES)
def test_zero_dim_through_dim_ops(name, dtype, dim, keepdim, device):
    """A 0-d input takes dim 0 or -1 and gives PyTorch's 0-d result: no garbage (softmax once
    read uninitialised memory here), no IndexError from a shape without dims."""
    value = {"bool": True}.get(dtype, 3 if "int" in dtype else -1.5)
    ours_in = ember.tensor(value, dtype=getattr(ember, dtype), device=device)
    theirs_in = torch.tensor(value, dtype=getattr(torch, dtype))
    kwargs = _zero_d_kwargs(name, dim, keepdim)
    what = f"{name}[{dtype}] of a 0-d tensor with {kwargs} on {device}"
    ours, theirs = _both(
        lambda: getattr(ember, name)(ours_in, **kwargs),
        lambda: getattr(torch, name)(theirs_in, **kwargs),
        what,
    )
    if theirs is not None:
        tol = OPS[name].defn.tolerance(getattr(ember, dtype))
        assert_same(_outputs(ours), _outputs(theirs), what, *tol)


GRAD_CASES = [
    (name, dtype, dim, keepdim)
    for name, dtype, dim, keepdim in ZERO_D_CASES
    if dtype in FLOATS and OPS[name].defn.differentiable
]


@pytest.mark.parametrize("name, dtype, dim, keepdim", GRAD_CASES)
def test_zero_dim_gradients(name, dtype, dim, keepdim, device):
    """Backward through a 0-d reduction: the formulas see dim 0 of a shape without dims. Rows
    PyTorch refuses a 0-d input (trapezoid, renorm) must refuse it too."""
    kwargs = _zero_d_kwargs(name, dim, keepdim)
    ours_in = ember.tensor(-1.5, dtype=getattr(ember, dtype), device=device, requires_grad=True)
    theirs_in = torch.tensor(-1.5, dtype=getattr(torch, dtype), requires_grad=True)
    ours, theirs = _both(
        lambda: _outputs(getattr(ember, name)(ours_in, **kwargs))[0],
        lambda: _outputs(getattr(torch, name)(theirs_in, **kwargs))[0],
        f"{name}[{dtype}] of a 0-d tensor with {kwargs} on {device}",
    )
    if theirs is None:
        return
    ours.sum().backward()
    theirs.sum().backward()
    assert_same(ours_in.grad, theirs_in.grad, f"grad of {name}[{dtype}] with {kwargs} on {device}")


def _softmax_like(op) -> bool:
    """An nn row called as ``f(input, dim)``: nothing else required (renorm needs p, maxnorm)."""
    return _arg_names(op)[:2] == (op.schema.args[0].name, "dim") and all(
        a.has_default for a in op.schema.args[2:]
    )


SOFTMAX_LIKE = [n for n in DIM_OPS if OPS[n].kind is Kind.NN and _softmax_like(OPS[n])]


@pytest.mark.parametrize("name", SOFTMAX_LIKE)
def test_zero_dim_softmax_is_written(name, device):
    """Every element of the result is computed: fresh allocations of garbage give the same
    answer every time, on the fused kernel's path and through ``dtype=``."""
    x = ember.tensor(0.25, device=device)
    expected = getattr(torch, name)(torch.tensor(0.25), 0).item()
    for _ in range(5):
        junk = ember.full((64,), 1e30, device=device)  # dirties the allocator's free blocks
        del junk
        assert getattr(ember, name)(x, 0).item() == expected
        assert getattr(ember, name)(x, -1, dtype=ember.float64).item() == expected


class P:
    """A tensor argument of ``shape`` (values in [0.5, 1.5]), with a gradient unless ``grad``
    is False (running statistics)."""

    def __init__(self, *shape, grad: bool = True):
        self.shape, self.grad = shape, grad


# (function, input shape, further arguments (P for tensors), keyword arguments). Functions are
# torch.nn.functional's, or torch's when F has none; ember has the same under the same name.
EMPTY_BATCH_CASES = [
    ("conv1d", (0, 2, 5), [P(3, 2, 3), P(3)], {}),
    ("conv1d", (0, 4, 6), [P(4, 2, 3), P(4)], {"stride": 2, "padding": 1, "groups": 2}),
    ("conv2d", (0, 2, 5, 5), [P(3, 2, 3, 3), P(3)], {"padding": 1}),
    ("conv2d", (0, 4, 6, 6), [P(6, 2, 3, 3)], {"stride": 2, "dilation": 2, "groups": 2}),
    ("conv2d", (0, 2, 5, 5), [P(3, 2, 2, 2)], {"padding": "same"}),
    ("conv_transpose2d", (0, 2, 4, 4), [P(2, 3, 3, 3), P(3)], {"stride": 2, "output_padding": 1}),
    ("conv_transpose2d", (0, 4, 3, 3), [P(4, 1, 2, 2)], {"groups": 2, "padding": 1}),
    ("batch_norm", (0, 4, 3), [P(4, grad=False), P(4, grad=False), P(4), P(4)], {"training": True}),
    ("batch_norm", (0, 4, 2, 2), [P(4, grad=False), P(4, grad=False), P(4), P(4)], {}),
    ("group_norm", (0, 4, 3), [2, P(4), P(4)], {}),
    ("group_norm", (0, 6, 2, 2), [3], {}),
    ("instance_norm", (0, 4, 3), [], {}),
    ("layer_norm", (0, 3, 4), [(4,), P(4), P(4)], {}),
    ("max_pool1d", (0, 2, 4), [2], {}),
    ("avg_pool1d", (0, 2, 4), [2], {}),
    ("max_pool2d", (0, 2, 4, 4), [2], {"padding": 1}),
    ("avg_pool2d", (0, 2, 4, 4), [3], {"stride": 1, "padding": 1}),
    ("adaptive_avg_pool2d", (0, 2, 5, 5), [3], {}),
    ("adaptive_max_pool2d", (0, 2, 5, 5), [3], {}),
    ("adaptive_avg_pool1d", (0, 2, 5), [3], {}),
    ("unfold", (0, 2, 4, 4), [2], {}),
    ("fold", (0, 8, 9), [(4, 4), 2], {}),
    ("linear", (0, 3), [P(2, 3), P(2)], {}),
    ("matmul", (0, 2, 3), [P(0, 3, 4)], {}),
    ("matmul", (0, 2, 3), [P(3, 4)], {}),
    ("matmul", (2, 0, 3), [P(2, 3, 4)], {}),
    ("matmul", (2, 2, 0), [P(2, 0, 4)], {}),
    ("bmm", (0, 2, 3), [P(0, 3, 4)], {}),
    ("bmm", (2, 3, 0), [P(2, 0, 4)], {}),
]


def _build(args, rng, device):
    """Matching (ember, torch) argument lists: P becomes a random tensor in both."""
    ours, theirs = [], []
    for a in args:
        if isinstance(a, P):
            values = rng.uniform(0.5, 1.5, a.shape).astype(np.float32)
            ours.append(ember.tensor(values, device=device, requires_grad=a.grad))
            theirs.append(torch.tensor(values, requires_grad=a.grad))
        else:
            ours.append(a)
            theirs.append(a)
    return ours, theirs


def _function(namespace, name):
    return getattr(namespace.nn.functional, name, None) or getattr(namespace, name)


def _case_id(name, shape, args, kwargs) -> str:
    options = ",".join(f"{k}={v}" for k, v in kwargs.items())
    return f"{name}-{'x'.join(map(str, shape))}" + (f"-{options}" if options else "")


@pytest.mark.parametrize(
    "name, shape, args, kwargs",
    [pytest.param(*case, id=_case_id(*case)) for case in EMPTY_BATCH_CASES],
)
def test_empty_batches(name, shape, args, kwargs, device, rng):
    """Zero-size batches (and zero-size inner dims) give PyTorch's empty result, and backward
    gives the parameters PyTorch's (zero) gradients."""
    ours, theirs = _build([P(*shape), *args], rng, device)
    what = f"{name}{shape} with {kwargs} on {device}"
    got = _function(ember, name)(*ours, **kwargs)
    want = _function(torch, name)(*theirs, **kwargs)
    assert_same(got, want, what)
    got.sum().backward()
    want.sum().backward()
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if isinstance(b, torch.Tensor) and b.requires_grad:
            assert_same(a.grad, b.grad, f"{what}: gradient of argument {i}")


def test_batch_norm_empty_batch_keeps_running_stats(device):
    """PyTorch skips the statistics of an empty training batch: the running ones stay."""
    mean, var = ember.zeros(3, device=device), ember.ones(3, device=device)
    out = ember.nn.functional.batch_norm(ember.zeros(0, 3, device=device), mean, var, training=True)
    assert out.shape == (0, 3)
    assert mean.tolist() == [0.0] * 3 and var.tolist() == [1.0] * 3
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        ember.nn.functional.batch_norm(ember.zeros(1, 3, device=device), mean, var, training=True)


ZERO_SIZE_VIEWS = {
    "strided slice, then an empty narrow": lambda m: m.zeros(1)[::2].narrow(0, 1, 0),
    "empty slice past the end": lambda m: m.zeros(3, dtype=m.int32)[5:],
    "empty inner dim": lambda m: m.zeros(3, 0, 2)[:, :, 1:],
    "column of an empty matrix": lambda m: m.zeros(0, 4)[:, 3],
    "transposed empty": lambda m: m.zeros(2, 0, 3).transpose(0, 2)[::2],
}


@pytest.mark.parametrize("name", ZERO_SIZE_VIEWS)
def test_zero_size_views_print(name, device):
    """A zero-size view prints like PyTorch's, even where its offset lies past its storage."""
    view = ZERO_SIZE_VIEWS[name](ember)
    want = repr(ZERO_SIZE_VIEWS[name](torch)).replace("torch.", "ember.")
    assert repr(view) == want
    on_device = view.to(device) if device != "cpu" else view
    assert repr(on_device).startswith("tensor([]")


@pytest.mark.parametrize("shape", [(0, 3), (0,), (2, 0, 3), (), (3,)], ids=str)
@pytest.mark.parametrize("value", [0.0, 2.0])
def test_nonzero_as_tuple(shape, value, device):
    """One index vector per dim (a 0-d input counts as a 1-element vector), empty ones too."""
    ours = ember.nonzero(ember.full(shape, value, device=device), as_tuple=True)
    theirs = torch.nonzero(torch.full(shape, value), as_tuple=True)
    assert_same(ours, theirs, f"nonzero({shape}, as_tuple=True) of {value} on {device}")
    assert_same(ember.where(ember.full(shape, value, device=device) != 0), theirs, "where(c)")


SPREAD_CALLS = [
    ((True,), {}),
    ((False,), {}),
    ((1, True), {}),
    ((1, False, True), {}),
    ((0,), {"unbiased": False, "keepdim": True}),
    (((0, 1),), {"correction": 0}),
    ((), {"dim": 1, "correction": 2}),
]


@pytest.mark.parametrize("name", ["var", "std", "var_mean", "std_mean"])
@pytest.mark.parametrize("args, kwargs", SPREAD_CALLS, ids=str)
def test_spread_overloads(name, args, kwargs, device):
    """``var(x, True)`` is PyTorch's ``var(input, bool unbiased)`` overload, in all four."""
    values = np.arange(12.0).reshape(3, 4) ** 1.5
    ours = getattr(ember, name)(ember.tensor(values, device=device), *args, **kwargs)
    theirs = getattr(torch, name)(torch.tensor(values), *args, **kwargs)
    assert_same(ours, theirs, f"{name}(x, *{args}, **{kwargs}) on {device}")


PADS_1D = [(-1, 2), (2, -3), (-2, -2), (3, -2), (-3, 1), (0, -8), (-2, 6), (-6, 1), (8, 0), (9, -1)]
PADS_2D = [(-1, 2, 1, -1), (2, -1, -2, 2), (1, 1, -1, -1)]


@pytest.mark.parametrize("mode", ["circular", "reflect", "replicate", "constant"])
@pytest.mark.parametrize("pad", PADS_1D + PADS_2D, ids=str)
def test_pad_negative(mode, pad, device):
    """Negative pads crop (a circular pad wraps around what the crop keeps), values and
    gradients as PyTorch's; where PyTorch refuses, ember refuses."""
    shape = (1, 2, 8) if len(pad) == 2 else (1, 2, 5, 6)
    values = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    ours_in = ember.tensor(values, device=device, requires_grad=True)
    theirs_in = torch.tensor(values, requires_grad=True)
    what = f"pad({shape}, {pad}, mode={mode}) on {device}"
    ours, theirs = _both(
        lambda: ember.nn.functional.pad(ours_in, pad, mode=mode),
        lambda: torch.nn.functional.pad(theirs_in, pad, mode=mode),
        what,
    )
    if theirs is None:
        return
    assert_same(ours, theirs, what)
    weights = np.linspace(-1, 1, int(np.prod(theirs.shape)), dtype=np.float32)
    (ours * ember.tensor(weights.reshape(theirs.shape), device=device)).sum().backward()
    (theirs * torch.tensor(weights.reshape(theirs.shape))).sum().backward()
    assert_same(ours_in.grad, theirs_in.grad, f"gradient of {what}")


def test_circular_pad_wraps_a_crop_more_than_once(device):
    """pad (-2, 7) keeps 6 elements and wraps them twice: PyTorch's values (its gradient
    misses the second wrap, so the gradient is checked by counting)."""
    values = np.arange(16, dtype=np.float32).reshape(1, 2, 8)
    x = ember.tensor(values, device=device, requires_grad=True)
    out = ember.nn.functional.pad(x, (-2, 7), mode="circular")
    want = torch.nn.functional.pad(torch.tensor(values), (-2, 7), mode="circular")
    assert_same(out, want, f"circular pad (-2, 7) on {device}")
    out.sum().backward()
    picks = np.bincount(2 + np.arange(13) % 6, minlength=8).astype(np.float64)
    np.testing.assert_array_equal(_np(x.grad), np.broadcast_to(picks, (1, 2, 8)))


NORM_ROWS = [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [0.0, 2.0, -1.0], [-4.0, 4.0, 0.5]]
ORDERS = [-2.5, -1, 0, 0.5, 1, 1.5, 2, 3, float("inf"), float("-inf")]


@pytest.mark.parametrize("p", ORDERS, ids=str)
@pytest.mark.parametrize("name", ["norm", "normalize"])
def test_norm_orders_with_zeros(name, p, device):
    """Every order, with zero vectors and zero elements: PyTorch's values (F.normalize with
    p < 0 once gave 1e12-scaled garbage) and PyTorch's gradients (none through a zero norm,
    none from a zero element where |x|^(p-1) is infinite), not NaN."""
    ours_in = ember.tensor(NORM_ROWS, device=device, requires_grad=True)
    theirs_in = torch.tensor(NORM_ROWS, requires_grad=True)
    if name == "norm":
        ours, theirs = ember.norm(ours_in, p, 1), torch.norm(theirs_in, p, 1)
    else:
        ours = ember.nn.functional.normalize(ours_in, p=p)
        theirs = torch.nn.functional.normalize(theirs_in, p=p)
    what = f"{name}(p={p}) on {device}"
    assert_same(ours, theirs, what, rtol=1e-5, atol=1e-5)
    ours.sum().backward()
    theirs.sum().backward()
    if theirs_in.grad is None:  # p=0: a count, no gradient at all
        assert ours_in.grad is None, what
    else:
        assert_same(ours_in.grad, theirs_in.grad, f"gradient of {what}", rtol=1e-4, atol=1e-4)


# (input, repeats (a list: a tensor of them), dim, output_size)
REPEAT_CASES = [
    ([[1.0, 2.0], [3.0, 4.0]], [1, 2], 0, None),
    ([[1.0, 2.0], [3.0, 4.0]], [0, 3], 1, None),
    ([[1.0, 2.0], [3.0, 4.0]], [1, 2], 0, 3),
    ([[1.0, 2.0], [3.0, 4.0]], [2], None, None),
    ([[1.0, 2.0], [3.0, 4.0]], 2, None, 8),
    ([[1.0, 2.0], [3.0, 4.0]], 0, 1, None),
    ([1.0, 2.0, 3.0], [3, 0, 1], None, None),
    ([[1.0, 2.0], [3.0, 4.0]], [1, -2], 0, None),
    ([[1.0, 2.0], [3.0, 4.0]], [1, 2, 3], 0, None),
    ([[1.0, 2.0], [3.0, 4.0]], [1, 2], 0, 4),
    ([[1.0, 2.0], [3.0, 4.0]], -1, None, None),
    ([[1.0, 2.0], [3.0, 4.0]], 2, None, 5),
]


@pytest.mark.parametrize("values, repeats, dim, output_size", REPEAT_CASES, ids=str)
def test_repeat_interleave(values, repeats, dim, output_size, device):
    """Int or tensor repeats, dim and output_size: PyTorch's values and gradients, and its
    refusals (negative repeats, wrong sizes, an output_size that does not match)."""
    x = ember.tensor(values, device=device, requires_grad=True)
    tx = torch.tensor(values, requires_grad=True)
    r = ember.tensor(repeats, device=device) if isinstance(repeats, list) else repeats
    tr = torch.tensor(repeats) if isinstance(repeats, list) else repeats
    what = f"repeat_interleave({values}, {repeats}, {dim}, output_size={output_size})"
    ours, theirs = _both(
        lambda: ember.repeat_interleave(x, r, dim, output_size=output_size),
        lambda: torch.repeat_interleave(tx, tr, dim, output_size=output_size),
        what,
    )
    if theirs is not None:
        assert_same(ours, theirs, what)
        assert_same(x.repeat_interleave(r, dim), tx.repeat_interleave(tr, dim), "method")
        ours.sum().backward()
        theirs.sum().backward()
        assert_same(x.grad, tx.grad, f"gradient of {what}")


@pytest.mark.parametrize("repeats", [[1, 2, 3], [0, 2], [], [4]], ids=str)
def test_repeat_interleave_of_repeats(repeats, device):
    """``repeat_interleave(repeats)``: position i, repeats[i] times (and with output_size)."""
    ours = ember.repeat_interleave(ember.tensor(repeats, dtype=ember.int64, device=device))
    theirs = torch.repeat_interleave(torch.tensor(repeats, dtype=torch.int64))
    assert_same(ours, theirs, f"repeat_interleave({repeats})")
    sized = ember.repeat_interleave(
        ember.tensor(repeats, dtype=ember.int64, device=device), output_size=sum(repeats)
    )
    assert_same(sized, theirs, f"repeat_interleave({repeats}, output_size={sum(repeats)})")


# (input shape, weight shape, keyword arguments)
TRANSPOSED_CASES = [
    ((2, 4, 5, 5), (4, 3, 3, 3), {"groups": 2, "stride": 2, "output_padding": 1, "padding": 1}),
    ((2, 4, 5, 5), (4, 1, 3, 2), {"groups": 4, "stride": (2, 3), "output_padding": (1, 2)}),
    ((1, 6, 4, 3), (6, 2, 3, 3), {"groups": 3, "stride": 3, "output_padding": (2, 1)}),
    ((1, 4, 4, 3), (4, 2, 3, 3), {"groups": 2, "stride": 2, "output_padding": 1, "dilation": 2}),
    ((4, 5, 5), (4, 3, 3, 3), {"groups": 2, "stride": 2, "output_padding": 1}),
]


@pytest.mark.parametrize("x_shape, w_shape, kwargs", TRANSPOSED_CASES, ids=str)
def test_conv_transpose2d_output_padding_groups(x_shape, w_shape, kwargs, device, rng):
    """output_padding with groups: values and the gradients of input, weight and bias."""
    bias_size = w_shape[1] * kwargs["groups"]
    ours, theirs = _build([P(*x_shape), P(*w_shape), P(bias_size)], rng, device)
    got = ember.nn.functional.conv_transpose2d(*ours, **kwargs)
    want = torch.nn.functional.conv_transpose2d(*theirs, **kwargs)
    assert_same(got, want, f"conv_transpose2d {kwargs}", rtol=1e-4, atol=1e-4)
    weights = rng.standard_normal(tuple(want.shape)).astype(np.float32)
    (got * ember.tensor(weights, device=device)).sum().backward()
    (want * torch.tensor(weights)).sum().backward()
    for name, a, b in zip(("input", "weight", "bias"), ours, theirs):
        assert_same(a.grad, b.grad, f"gradient of {name}", rtol=1e-4, atol=1e-4)


# (function, input shape, weight shape, keyword arguments): every dimensionality, and
# transposed ones with output_padding >= stride (allowed below the dilation).
CONV_FAMILY_CASES = [
    ("conv1d", (2, 4, 9), (6, 2, 3), {"stride": 2, "padding": 1, "groups": 2}),
    ("conv3d", (2, 4, 5, 6, 5), (6, 2, 3, 2, 3), {"stride": (2, 1, 2), "padding": 1, "groups": 2}),
    ("conv3d", (3, 5, 4, 6), (2, 3, 2, 3, 3), {"dilation": (2, 1, 2), "padding": "same"}),
    ("conv3d", (0, 2, 4, 4, 4), (3, 2, 2, 2, 2), {}),
    ("conv_transpose1d", (2, 4, 5), (4, 3, 3), {"stride": 3, "output_padding": 2, "groups": 2}),
    ("conv_transpose1d", (2, 4, 5), (4, 3, 3), {"output_padding": 1, "dilation": 2}),
    ("conv_transpose2d", (1, 4, 4, 3), (4, 2, 3, 3), {"output_padding": 1, "dilation": 2}),
    ("conv_transpose2d", (1, 2, 3, 3), (2, 2, 3, 3), {"output_padding": (2, 0), "dilation": 3,
                                                       "padding": 1, "stride": (1, 2)}),
    ("conv_transpose3d", (2, 4, 3, 4, 3), (4, 1, 2, 3, 2), {"stride": 2, "output_padding": 1,
                                                             "padding": (1, 0, 1), "groups": 2}),
    ("conv_transpose3d", (1, 2, 3, 3, 3), (2, 2, 3, 2, 2), {"output_padding": (1, 0, 1),
                                                             "dilation": (2, 1, 2)}),
    ("conv_transpose3d", (0, 2, 3, 3, 3), (2, 2, 2, 2, 2), {"stride": 2}),
]  # fmt: skip


@pytest.mark.parametrize(
    "name, x_shape, w_shape, kwargs",
    [pytest.param(*case, id=f"{case[0]}-{i}") for i, case in enumerate(CONV_FAMILY_CASES)],
)
def test_conv_family(name, x_shape, w_shape, kwargs, device, rng):
    """conv1d/3d and conv_transpose1d/2d/3d against PyTorch: values and the gradients of
    input, weight and bias (3-D ones are sums of 2-D ones per kernel depth)."""
    transposed = name.startswith("conv_transpose")
    out_channels = w_shape[1] * kwargs.get("groups", 1) if transposed else w_shape[0]
    ours, theirs = _build([P(*x_shape), P(*w_shape), P(out_channels)], rng, device)
    got = getattr(ember.nn.functional, name)(*ours, **kwargs)
    want = getattr(torch.nn.functional, name)(*theirs, **kwargs)
    what = f"{name}{x_shape} with {kwargs} on {device}"
    assert_same(got, want, what, rtol=1e-4, atol=1e-4)
    weights = rng.standard_normal(tuple(want.shape)).astype(np.float32)
    (got * ember.tensor(weights, device=device)).sum().backward()
    (want * torch.tensor(weights)).sum().backward()
    for arg, a, b in zip(("input", "weight", "bias"), ours, theirs):
        assert_same(a.grad, b.grad, f"gradient of {arg}: {what}", rtol=1e-4, atol=1e-4)


# Every dim sliced with a step: no two dims merge, so a kernel walks all 10 (xpu's kernels
# walk at most 8 at once, and used to refuse such layouts).
TEN_DIMS = (slice(None, None, 2),) * 10
INDEX_PAST_EIGHT = {
    "gather": lambda m, x, i, dim, on: m.gather(x, dim, i),
    "scatter_add": lambda m, x, i, dim, on: m.zeros((4,) * 10, **on)[TEN_DIMS].scatter_add(
        dim, i, x
    ),
    "index_select": lambda m, x, i, dim, on: m.index_select(x, dim, i.flatten()[:3] % 2),
    "index_add": lambda m, x, i, dim, on: m.zeros((4,) * 10, **on)[TEN_DIMS].index_add(
        dim, m.arange(1, -1, -1, **on), x.narrow(dim, 0, 2)
    ),
}


@pytest.mark.parametrize("dim", [0, 4, 9])
@pytest.mark.parametrize("name", INDEX_PAST_EIGHT)
def test_index_ops_past_eight_dims(name, dim, device, rng):
    """Index ops over 10-dim layouts that cannot be merged, along a leading, middle or last dim."""
    values = rng.standard_normal((4,) * 10).astype(np.float32)
    index = rng.integers(0, 2, size=(4,) * 10)
    theirs = INDEX_PAST_EIGHT[name](
        torch, torch.tensor(values)[TEN_DIMS], torch.tensor(index)[TEN_DIMS], dim, {}
    )
    x = ember.tensor(values, device=device)[TEN_DIMS]
    i = ember.tensor(index, device=device)[TEN_DIMS]
    ours = INDEX_PAST_EIGHT[name](ember, x, i, dim, {"device": device})
    assert_same(ours, theirs, f"{name} along dim {dim} of a 10-dim layout on {device}")


@pytest.mark.parametrize("layout", ["strided", "size-1 dims"])
def test_nonzero_past_eight_dims(layout, device, rng):
    """nonzero writes one coordinate per dim, past the 8 dims an xpu kernel walks too."""
    if layout == "strided":
        values = rng.integers(0, 2, size=(4,) * 10).astype(np.float32)
        index = TEN_DIMS
    else:
        values, index = np.ones((1,) * 9 + (2,), np.float32), ...
    ours = ember.nonzero(ember.tensor(values, device=device)[index])
    assert_same(ours, torch.nonzero(torch.tensor(values)[index]), f"nonzero on {device}")


def test_searchsorted_past_eight_dims(device, rng):
    """Values of 10 unmergeable dims, each row of its own sequence (the leading 9 dims)."""
    seq = np.sort(rng.standard_normal((4,) * 9 + (5,)).astype(np.float32), axis=-1)
    values = rng.standard_normal((4,) * 10).astype(np.float32)
    cut = TEN_DIMS[:9] + (slice(None),)
    ours = ember.searchsorted(
        ember.tensor(seq, device=device)[cut], ember.tensor(values, device=device)[TEN_DIMS]
    )
    theirs = torch.searchsorted(torch.tensor(seq)[cut], torch.tensor(values)[TEN_DIMS])
    assert_same(ours, theirs, f"searchsorted on {device}")
