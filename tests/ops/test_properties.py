"""Property tests for the ops that have no numpy reference (``OpDef.reference is None``).

Each such op has one entry in ``PROPERTIES``: a check of one sample's call (the results' shapes,
dtypes, values where they are determined, statistics and determinism for random ops). The
coverage test fails for an op with neither a reference nor an entry here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.dispatcher.optable import OPS

from . import checks
from .gen_amp import PROPERTIES as AMP_PROPERTIES
from .gen_foreach import PROPERTIES as FOREACH_PROPERTIES
from .gen_optim import PROPERTIES as OPTIM_PROPERTIES
from .samples import samples
from .sampling import Arr, Seed


def _run(op, sample, device):
    """Calls the op; for in-place ops on a strided view, checks the buffer around it is kept."""
    args = sample.ember_args(device)
    first = sample.args[0] if sample.args else None
    before = checks.gaps(first, args[0])
    result = op(*args)
    checks.assert_gaps_kept(first, args[0], before, op.name)
    return args, result


def _values(arg):
    return arg.values if isinstance(arg, Arr) else np.asarray(arg)


# ---- data movement ------------------------------------------------------------------------
def copy_(op, dtype, device, sample):
    dst_arg, src_arg = sample.args[:2]
    (dst, _src, *_), out = _run(op, sample, device)
    assert out is dst, "copy_ must return self"
    want = np.broadcast_to(src_arg.values.astype(dtype.np), dst_arg.values.shape)
    checks.assert_matches(dst, want, dtype, (0.0, 0.0), "copy_")


def fill_(op, dtype, device, sample):
    x_arg = sample.args[0]
    value = _values(sample.args[1]) if op.name == "fill_" else 0
    (x, *_), out = _run(op, sample, device)
    assert out is x, f"{op.name} must return self"
    want = np.full(x_arg.values.shape, value).astype(dtype.np)
    checks.assert_matches(x, want, dtype, (0.0, 0.0), op.name)


def as_strided(op, dtype, device, sample):
    x_arg, size, stride, offset = sample.args
    (x, *_), out = _run(op, sample, device)
    flat = x_arg.values.reshape(-1)[offset or 0 :]
    byte_strides = tuple(s * flat.itemsize for s in stride)
    want = np.lib.stride_tricks.as_strided(flat, tuple(size), byte_strides)
    checks.assert_matches(out, want, dtype, (0.0, 0.0), "as_strided")
    assert out._storage is x._storage, "as_strided must be a view"


def _split_points(length: int, op_name: str, how) -> list:
    if op_name == "chunk":
        if not length:  # PyTorch: ``chunks`` empty pieces
            return [0] * (how - 1)
        how = -(-length // how)
    if isinstance(how, int):
        return list(range(how, length, how))
    return list(np.cumsum(how)[:-1])


def split(op, dtype, device, sample):
    """split/chunk: views that tile the input along dim, with PyTorch's piece sizes."""
    x_arg, how, dim = sample.args
    (x, *_), pieces = _run(op, sample, device)
    want = np.split(x_arg.values, _split_points(x_arg.values.shape[dim], op.name, how), axis=dim)
    assert len(pieces) == len(want), f"{op.name}: {len(pieces)} pieces, expected {len(want)}"
    for piece, expected in zip(pieces, want):
        checks.assert_matches(piece, expected, dtype, (0.0, 0.0), op.name)
        assert piece._storage is x._storage, f"{op.name}: pieces must be views"


def topk(op, dtype, device, sample):
    x_arg, k, dim, largest, is_sorted = sample.args
    _args, (values, indices) = _run(op, sample, device)
    x = x_arg.values.astype(np.float64)
    if x.ndim == 0:
        x, dim = x.reshape(1), 0
        values, indices = values.reshape(-1), indices.reshape(-1)
    order = np.sort(x, axis=dim)
    order = np.flip(order, axis=dim) if largest else order
    want = np.take(order, range(k), axis=dim).reshape(values.shape)
    got = values
    if not is_sorted:  # any order: compare as sorted
        got = ember.from_numpy(np.sort(checks.host(values), axis=dim))
        want = np.sort(want, axis=dim)
    checks.assert_matches(got, want.astype(dtype.np), dtype, (0.0, 0.0), "topk values")
    assert indices.dtype is ember.int64
    picked = np.take_along_axis(x, checks.host(indices).reshape(want.shape), axis=dim)
    np.testing.assert_array_equal(picked.reshape(values.shape), want, "topk indices")


# ---- factories and random ops ---------------------------------------------------------------
def empty(op, dtype, device, sample):
    size, dtype_arg = sample.args[0], sample.args[1]
    _args, out = _run(op, sample, device)
    assert tuple(out.shape) == tuple(size)
    assert out.dtype is (dtype_arg or ember.get_default_dtype())
    assert out.device.type == device and out.is_contiguous()


def _redraw(op, sample, device):
    """The same call with a fresh generator of the same seed, and with another seed."""
    again = op(*sample.ember_args(device))
    other = tuple(Seed(a.value + 1000) if isinstance(a, Seed) else a for a in sample.args)
    different = op(*type(sample)(other).ember_args(device))
    return checks.host(again).copy(), checks.host(different).copy()


def _check_draws(op, sample, device, got: np.ndarray) -> None:
    again, different = (
        a.astype(np.float64).reshape(got.shape) for a in _redraw(op, sample, device)
    )
    np.testing.assert_array_equal(got, again, f"{op.name}: same seed, different numbers")
    if got.size > 16:
        assert not np.array_equal(got, different), f"{op.name}: another seed, same numbers"


def _within(name: str, got: float, want: float, spread: float, n: int) -> None:
    """``got`` is a mean of n draws with standard deviation ``spread``: within 6 sigma."""
    bound = 6 * spread / math.sqrt(n) + 1e-2 * abs(want)
    assert abs(got - want) <= bound, f"{name}: {got} vs expected {want} (+- {bound})"


def _fill_values(op, sample, device):
    (x, *_), out = _run(op, sample, device)
    assert out is x, f"{op.name} must return self"
    return checks.host(out).astype(np.float64).reshape(-1)


def uniform_(op, dtype, device, sample):
    low, high = sample.args[1], sample.args[2]
    got = _fill_values(op, sample, device)
    assert ((got >= low) & (got < high)).all(), f"uniform_: values outside [{low}, {high})"
    if got.size >= 1000:
        width = high - low
        _within("uniform_ mean", got.mean(), (low + high) / 2, width / math.sqrt(12), got.size)
    _check_draws(op, sample, device, got)


def normal_(op, dtype, device, sample):
    mean, std = sample.args[1], sample.args[2]
    got = _fill_values(op, sample, device)
    if got.size >= 1000:
        _within("normal_ mean", got.mean(), mean, std, got.size)
        _within("normal_ std", got.std(), std, std, got.size)
    _check_draws(op, sample, device, got)


def random_(op, dtype, device, sample):
    low, high = sample.args[1], sample.args[2]
    if high is None:
        low, high = 0, (low or None)
    got = _fill_values(op, sample, device)
    assert (got == np.round(got)).all(), "random_: values must be whole numbers"
    assert (got >= low).all(), f"random_: values below {low}"
    if high is not None:
        assert (got < high).all(), f"random_: values not below {high}"
        if got.size >= 1000 and high - low <= 256:
            assert len(np.unique(got)) == high - low, "random_: some values never drawn"
    _check_draws(op, sample, device, got)


def bernoulli(op, dtype, device, sample):
    """bernoulli(probabilities), bernoulli(x, p) and x.bernoulli_(p): zeros and ones in the
    input's dtype (in place for bernoulli_), with the mean of the probabilities."""
    p = sample.args[0].values.astype(np.float64).reshape(-1)
    if sample.args[1] is not None:  # a float p: the input gives only the shape
        p = np.full(p.shape, float(sample.args[1]))
    (x, *_), out = _run(op, sample, device)
    assert out.dtype is dtype
    assert out is x or not op.mutates, f"{op.name} must return self"
    got = checks.host(out).astype(np.float64).reshape(-1)
    assert np.isin(got, (0.0, 1.0)).all(), "bernoulli: values other than 0 and 1"
    if got.size >= 1000:
        _within("bernoulli mean", got.mean(), p.mean(), 0.5, got.size)
    _check_draws(op, sample, device, got)


def multinomial(op, dtype, device, sample):
    probs, count, replacement = sample.args[0].values, sample.args[1], sample.args[2]
    _args, out = _run(op, sample, device)
    assert out.dtype is ember.int64
    assert tuple(out.shape) == probs.shape[:-1] + (count,)
    got = checks.host(out).reshape(-1, count)
    rows = probs.reshape(-1, probs.shape[-1])
    for row, weights in zip(got, rows):
        assert (weights[row] > 0).all(), "multinomial: drew a category of weight zero"
        if not replacement:
            assert len(set(row.tolist())) == count, "multinomial: repeats without replacement"
    _check_draws(op, sample, device, got)


def randperm(op, dtype, device, sample):
    n = sample.args[0]
    _args, out = _run(op, sample, device)
    assert out.dtype is dtype and tuple(out.shape) == (n,)
    got = checks.host(out).astype(np.float64)
    np.testing.assert_array_equal(np.sort(got), np.arange(n), "randperm: not a permutation")
    _check_draws(op, sample, device, got)


def cauchy_(op, dtype, device, sample):
    """The sample median and quartiles of a Cauchy law: median and median +- sigma."""
    median, sigma = sample.args[1], sample.args[2]
    got = _fill_values(op, sample, device)
    if got.size >= 1000:
        low, mid, high = np.quantile(got, (0.25, 0.5, 0.75))
        # a quantile's spread is 1 / (2 f(q)) / sqrt(n): f(median) = 1 / (pi sigma)
        _within("cauchy_ median", mid, median, math.pi * sigma / 2, got.size)
        _within("cauchy_ quartile spread", (high - low) / 2, sigma, 2 * math.pi * sigma, got.size)
    _check_draws(op, sample, device, got)


def exponential_(op, dtype, device, sample):
    lambd = sample.args[1]
    got = _fill_values(op, sample, device)
    assert (got >= 0).all(), "exponential_: negative values"
    if got.size >= 1000:
        _within("exponential_ mean", got.mean(), 1 / lambd, 1 / lambd, got.size)
    _check_draws(op, sample, device, got)


def geometric_(op, dtype, device, sample):
    p = sample.args[1]
    got = _fill_values(op, sample, device)
    assert (got == np.round(got)).all() and (got >= 1).all(), "geometric_: not a count >= 1"
    if got.size >= 1000 and dtype.itemsize > 1:  # int8 and uint8 wrap rare long runs
        _within("geometric_ mean", got.mean(), 1 / p, math.sqrt(1 - p) / p, got.size)
    _check_draws(op, sample, device, got)


def log_normal_(op, dtype, device, sample):
    mean, std = sample.args[1], sample.args[2]
    got = _fill_values(op, sample, device)
    assert (got > 0).all(), "log_normal_: values must be positive"
    if got.size >= 1000:
        logs = np.log(got)
        _within("log_normal_ log mean", logs.mean(), mean, std, got.size)
        _within("log_normal_ log std", logs.std(), std, std, got.size)
    _check_draws(op, sample, device, got)


# Mean and variance of each sampler's draws from its parameters (the sample's tensors, in order).
SAMPLER_MOMENTS = {
    "_standard_gamma": lambda a: (a, a),
    "poisson": lambda rate: (rate, rate),
    "binomial": lambda count, prob: (count * prob, count * prob * (1 - prob)),
}


def sampler(op, dtype, device, sample):
    """_standard_gamma, poisson, binomial: non-negative draws with their distribution's mean."""
    params = [_values(a).astype(np.float64) for a in sample.args if isinstance(a, Arr)]
    params = [np.broadcast_to(p, params[0].shape).reshape(-1) for p in params]
    _args, out = _run(op, sample, device)
    assert out.dtype is dtype and tuple(out.shape) == tuple(sample.args[0].values.shape)
    got = checks.host(out).astype(np.float64).reshape(-1)
    assert (got >= 0).all(), f"{op.name}: negative draws"
    if op.name != "_standard_gamma":
        assert (got == np.round(got)).all(), f"{op.name}: values must be whole numbers"
    if got.size >= 1000:
        mean, var = SAMPLER_MOMENTS[op.name](*params)
        _within(f"{op.name} mean", got.mean(), mean.mean(), math.sqrt(var.mean()), got.size)
    _check_draws(op, sample, device, got)


def sample_dirichlet(op, dtype, device, sample):
    """_sample_dirichlet: points of the simplex (last dim) with the Dirichlet's mean."""
    alpha = _values(sample.args[0]).astype(np.float64)
    _args, out = _run(op, sample, device)
    assert out.dtype is dtype and tuple(out.shape) == alpha.shape
    got = checks.host(out).astype(np.float64)
    # half types: draws below their smallest subnormal round to 0 in the final cast
    positive = got > 0 if dtype.itemsize >= 4 else got >= 0
    assert (positive & (got <= 1)).all(), "_sample_dirichlet: draws outside (0, 1]"
    if got.size and alpha.ndim:
        tolerance = 2e-2 if dtype.itemsize >= 4 else 2e-1
        np.testing.assert_allclose(got.sum(-1), 1.0, atol=tolerance * alpha.shape[-1])
    if got.size >= 1000 and dtype.itemsize >= 4:  # half types clamp small draws to their tiny
        mean = alpha / alpha.sum(-1, keepdims=True)
        var = mean * (1 - mean) / (alpha.sum(-1, keepdims=True) + 1)
        _within("_sample_dirichlet mean", got.mean(), mean.mean(), math.sqrt(var.mean()), got.size)
    _check_draws(op, sample, device, got)


PROPERTIES = {
    "_sample_dirichlet": sample_dirichlet,
    "_standard_gamma": sampler,
    "poisson": sampler,
    "binomial": sampler,
    "copy_": copy_,
    "fill_": fill_,
    "zero_": fill_,
    "as_strided": as_strided,
    "split": split,
    "chunk": split,
    "topk": topk,
    "empty": empty,
    "uniform_": uniform_,
    "normal_": normal_,
    "random_": random_,
    "bernoulli": bernoulli,
    "bernoulli_": bernoulli,
    "multinomial": multinomial,
    "randperm": randperm,
    "cauchy_": cauchy_,
    "exponential_": exponential_,
    "geometric_": geometric_,
    "log_normal_": log_normal_,
    **AMP_PROPERTIES,
    **FOREACH_PROPERTIES,
    **OPTIM_PROPERTIES,
}

UNREFERENCED = [name for name, op in OPS.items() if op.defn.reference is None]
CASES = [
    (name, d.name)
    for name in UNREFERENCED
    if name in PROPERTIES
    for d in checks.accepted_dtypes(OPS[name])
]


@pytest.mark.parametrize("name,dtype_name", CASES)
def test_property(name, dtype_name, device, rng):
    op, dtype = OPS[name], checks.BY_NAME[dtype_name]
    for sample in samples(op, dtype, device, rng):
        try:
            PROPERTIES[name](op, dtype, device, sample)
        except Exception as exc:
            exc.add_note(f"sample: {op.name}[{dtype.name}] with {sample!r}")
            raise
