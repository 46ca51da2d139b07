"""Factories and random fills. The public factories (zeros, randn...) are in ember/_factories.py
and call these ops; random fills share one Philox stream across devices (docs/random.md)."""

from __future__ import annotations

import numpy as np

import ember

from ..kinds import factory as run
from ..opdef import (
    DTYPES_FLOAT,
    DTYPES_NUMERIC,
    OUT_ELEMENTWISE,
    OUT_EXACT,
    OUT_FROM_OUT,
    Kind,
    OpDef,
)

RANDOM_ARGS = (
    "(out, seed, offset, a, b): fill out per docs/random.md (Philox 4x32-10 at block offset)"
)
SAMPLER_ARGS = (
    "(out, seed, block, *params): element i from Philox counters (block, i, k), k = 1, 2, ... "
    "(docs/random.md, variable-draw samplers)"
)


def _sampler(schema: str, runner) -> OpDef:
    """A variable-draw sampler's row: floating parameters in, draws of their dtype out."""
    return OpDef(
        schema,
        Kind.RANDOM,
        None,
        dtypes=DTYPES_FLOAT,
        runner=runner,
        method=False,
        differentiable=False,
        kernel_args=SAMPLER_ARGS,
    )


def _holds(condition) -> bool:
    """Whether ``condition`` (a bool tensor) holds everywhere: one reduction, one read back.
    Probability checks read the whole tensor, as PyTorch's do; meta tensors have no values."""
    if not condition.numel() or condition.is_meta:
        return True
    return bool(ember.all(condition).item())


def _check_probability(p: float, op: str) -> None:
    if not 0 <= p <= 1:
        raise RuntimeError(f"{op} expects p to be in [0, 1], but got p={p}")


def _bernoulli(input, p=None, generator=None):
    """Draws 1 with probability ``input`` (or the float ``p``) per element, else 0."""
    if p is not None:
        _check_probability(p, "bernoulli_")
        return _bernoulli_(ember.empty_like(input), p, generator)
    if not _holds((input >= 0) & (input <= 1)):  # NaN fails both comparisons
        raise RuntimeError(
            f"bernoulli(): Expected p_in >= 0 && p_in <= 1 to be true, but got false (a "
            f"probability of {input.dtype.name} shape {list(input.shape)} is outside [0, 1])"
        )
    u = ember.rand(input.shape, dtype=input.dtype, device=input.device, generator=generator)
    return (u < input).to(input.dtype)


def _bernoulli_(self, p=0.5, generator=None):
    """Fills ``self`` with 1 at probability ``p`` (a float, or a tensor broadcast to self)."""
    if isinstance(p, ember.Tensor):
        p = p if p.dtype.is_floating_point else p.to(ember.get_default_dtype())
        drawn = _bernoulli(p.expand(self.shape), None, generator)
    else:
        _check_probability(p, "bernoulli_")
        u = ember.rand(self.shape, dtype=ember.float32, device=self.device, generator=generator)
        drawn = u < p
    return self.copy_(drawn)


def _eye(n, m=None, dtype=None, device=None):
    out = ember.zeros(n, n if m is None else m, dtype=dtype, device=device)
    out.diagonal().fill_(1)
    return out


def _check_distribution(rows, num_samples: int, replacement: bool) -> None:
    """PyTorch's refusals; the values are checked with one reduction and one read back."""
    if num_samples <= 0:
        raise RuntimeError(f"multinomial(): cannot sample n_sample <= 0 samples, got {num_samples}")
    if not replacement and num_samples > rows.shape[-1]:
        raise RuntimeError(
            f"multinomial(): cannot sample n_sample > prob_dist.size(-1) samples without "
            f"replacement ({num_samples} > {rows.shape[-1]})"
        )
    # inf - inf is NaN, so one comparison finds negatives, infinities and NaN alike.
    finite = (rows >= 0) & (rows - rows == 0)
    readable = rows.numel() and not rows.is_meta  # meta tensors have no values to check
    flags = ember.stack([finite.all(), (rows.sum(-1) > 0).all()]).tolist() if readable else []
    if flags and not flags[0]:
        raise RuntimeError(
            "multinomial(): probability tensor contains either `inf`, `nan` or element < 0"
        )
    if flags and not flags[1]:
        raise RuntimeError(
            "multinomial(): invalid multinomial distribution (sum of probabilities <= 0)"
        )


def _multinomial(probs, num_samples, replacement=False, generator=None):
    if probs.ndim not in (1, 2):
        raise RuntimeError(f"multinomial(): prob_dist must be 1 or 2 dim, got {probs.ndim}")
    rows = probs if probs.ndim == 2 else probs.unsqueeze(0)
    _check_distribution(rows, num_samples, replacement)
    if replacement:
        cdf = rows.cumsum(-1)
        cdf = cdf / cdf[:, -1:]
        u = ember.rand(
            rows.shape[0], num_samples, dtype=cdf.dtype, device=probs.device, generator=generator
        )
        picks = ember.searchsorted(cdf.contiguous(), u.contiguous(), right=True)
        picks = ember.clamp(picks, max=rows.shape[-1] - 1)
    else:
        # Gumbel top-k: sampling without replacement in proportion to the weights.
        u = ember.rand(rows.shape, dtype=rows.dtype, device=probs.device, generator=generator)
        keys = ember.log(rows) - ember.log(-ember.log(u.clamp(min=1e-20)))
        picks = ember.topk(keys, num_samples, -1).indices
    return picks if probs.ndim == 2 else picks.squeeze(0)


def _randperm(n, generator=None, dtype=None, device=None):
    keys = ember.rand(n, dtype=ember.float64, device=device, generator=generator)
    order = ember.argsort(keys)
    return order if dtype in (None, ember.int64) else order.to(dtype)


ROWS = [
    OpDef(
        "empty(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
        Kind.FACTORY,
        None,
        runner=run.empty_,
        core=True,
        frontend=True,
        method=False,
        differentiable=False,
        samples="factory",
        kernel_args="none: allocation only",
    ),
    OpDef(
        "full(int[] size, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None) -> "
        "Tensor",
        Kind.FACTORY,
        lambda size, v, dtype=None, device=None: np.full(size, v),
        runner=run.full,
        core=True,
        frontend=True,
        method=False,
        differentiable=False,
        samples="factory",
        kernel_args="none: empty + fill_",
    ),
    OpDef(
        "arange(Scalar start, Scalar? end=None, Scalar step=1, *, ScalarType? dtype=None, "
        "Device? device=None) -> Tensor",
        Kind.FACTORY,
        lambda start, end=None, step=1, dtype=None, device=None: np.arange(start, end, step),
        dtypes=DTYPES_NUMERIC,
        runner=run.arange,
        frontend=True,
        method=False,
        differentiable=False,
        samples="arange",
        kernel_args="(out, start, step): out[i] = start + i * step",
    ),
    OpDef(
        "linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, "
        "Device? device=None) -> Tensor",
        Kind.FACTORY,
        lambda start, end, steps, dtype=None, device=None: np.linspace(start, end, steps),
        dtypes=DTYPES_NUMERIC,
        runner=run.linspace,
        frontend=True,
        method=False,
        differentiable=False,
        samples="linspace",
        kernel_args="(out, start, end): PyTorch's symmetric formula (exact endpoints)",
    ),
    OpDef(
        "eye(int n, int? m=None, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
        Kind.FACTORY,
        lambda n, m=None, dtype=None, device=None: np.eye(n, m),
        decomposition=_eye,
        frontend=True,
        method=False,
        differentiable=False,
        samples="factory",
    ),
    OpDef(
        "uniform_(Tensor self, float from=0.0, float to=1.0, *, Generator? generator=None) -> "
        "Tensor",
        Kind.RANDOM,
        None,
        dtypes=DTYPES_FLOAT,
        runner=run.uniform_,
        function=False,
        differentiable=False,
        samples="random",
        kernel_args=RANDOM_ARGS,
    ),
    OpDef(
        "normal_(Tensor self, float mean=0.0, float std=1.0, *, Generator? generator=None) -> "
        "Tensor",
        Kind.RANDOM,
        None,
        dtypes=DTYPES_FLOAT,
        runner=run.normal_,
        function=False,
        differentiable=False,
        samples="random",
        kernel_args=RANDOM_ARGS,
    ),
    OpDef(
        "random_(Tensor self, int from=0, int? to=None, *, Generator? generator=None) -> Tensor",
        Kind.RANDOM,
        None,
        runner=run.random_,
        function=False,
        differentiable=False,
        samples="random",
        kernel_args=RANDOM_ARGS,
    ),
    _sampler(
        "_standard_gamma(Tensor self, Generator? generator=None) -> Tensor", run._standard_gamma
    ),
    _sampler("poisson(Tensor self, Generator? generator=None) -> Tensor", run.poisson),
    _sampler(
        "binomial(Tensor count, Tensor prob, Generator? generator=None) -> Tensor", run.binomial
    ),
    OpDef(
        "bernoulli(Tensor input, float? p=None, *, Generator? generator=None) -> Tensor",
        Kind.RANDOM,
        None,
        dtypes=DTYPES_FLOAT,
        decomposition=_bernoulli,
        differentiable=False,
        samples="random",
        out=OUT_ELEMENTWISE,
        notes="input holds the probabilities; with p, input gives only the shape (PyTorch)",
    ),
    OpDef(
        "bernoulli_(Tensor self, Tensor p=0.5, *, Generator? generator=None) -> Tensor",
        Kind.RANDOM,
        None,
        decomposition=_bernoulli_,
        function=False,
        differentiable=False,
        samples="random",
        notes="p is a float or a tensor of probabilities broadcast to self",
    ),
    OpDef(
        "multinomial(Tensor input, int num_samples, bool replacement=False, *, "
        "Generator? generator=None) -> Tensor",
        Kind.RANDOM,
        None,
        dtypes=DTYPES_FLOAT,
        decomposition=_multinomial,
        differentiable=False,
        samples="random",
        out=OUT_EXACT,
    ),
    OpDef(
        "randperm(int n, *, Generator? generator=None, ScalarType? dtype=None, "
        "Device? device=None) -> Tensor",
        Kind.RANDOM,
        None,
        dtypes=DTYPES_NUMERIC,
        decomposition=_randperm,
        frontend=True,
        method=False,
        differentiable=False,
        samples="random",
        out=OUT_FROM_OUT,
    ),
]
