"""PyTorch's in-place samplers of the classic distributions: Tensor.cauchy_, exponential_,
geometric_ and log_normal_. Each transforms the draws of ember's own samplers (rand's uniform,
normal_'s Gaussian) by the distribution's inverse CDF, as PyTorch's CPU kernels do, so they
use ember's generator: ``manual_seed`` repeats them and every device draws the same numbers."""

from __future__ import annotations

import math

import ember

from ..opdef import DTYPES_FLOAT, DTYPES_NUMERIC, Kind, OpDef


def _work_dtype(x):
    """Where the transform is computed: float32 or float64 (halves and integers widen)."""
    wide = x.dtype is ember.float64 or not x.dtype.is_floating_point
    return ember.float64 if wide else ember.float32


def _uniform(x, generator):
    """Draws in [0, 1), one per element of x, in the transform's dtype."""
    return ember.rand(x.shape, dtype=_work_dtype(x), device=x.device, generator=generator)


def _positive(name: str, label: str, value) -> None:
    if not value > 0:
        raise RuntimeError(f"{name} expects {label} > 0.0, but found {label}={value:g}")


def _cauchy_(self, median=0.0, sigma=1.0, generator=None):
    _positive("cauchy_", "sigma", sigma)
    u = _uniform(self, generator)
    return self.copy_(median + sigma * ember.tan(math.pi * (u - 0.5)))


def _exponential_(self, lambd=1.0, generator=None):
    _positive("exponential_", "lambda", lambd)
    u = _uniform(self, generator)
    return self.copy_(-ember.log1p(-u) / lambd)


def _geometric_(self, p, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    u = 1 - _uniform(self, generator)  # in (0, 1]: the number of trials to the first success
    trials = ember.ceil(ember.log(u) / math.log1p(-p))
    return self.copy_(ember.clamp(trials, min=1))


def _log_normal_(self, mean=1.0, std=2.0, generator=None):
    _positive("log_normal_", "std", std)
    z = ember.empty(self.shape, dtype=_work_dtype(self), device=self.device)
    z.normal_(mean, std, generator=generator)
    return self.copy_(ember.exp(z))


def _sampler(schema: str, decomposition, dtypes=DTYPES_FLOAT, notes: str = "") -> OpDef:
    return OpDef(
        schema,
        Kind.RANDOM,
        None,
        dtypes=dtypes,
        decomposition=decomposition,
        function=False,
        differentiable=False,
        samples="random",
        notes=notes,
    )


ROWS = [
    _sampler(
        "cauchy_(Tensor self, float median=0.0, float sigma=1.0, *, Generator? generator=None) "
        "-> Tensor",
        _cauchy_,
        notes="median + sigma * tan(pi * (u - 1/2)), u uniform",
    ),
    _sampler(
        "exponential_(Tensor self, float lambd=1.0, *, Generator? generator=None) -> Tensor",
        _exponential_,
        notes="-log(1 - u) / lambd, u uniform",
    ),
    _sampler(
        "geometric_(Tensor self, float p, *, Generator? generator=None) -> Tensor",
        _geometric_,
        dtypes=DTYPES_NUMERIC,
        notes="ceil(log(u) / log(1 - p)), u uniform in (0, 1]: trials to the first success",
    ),
    _sampler(
        "log_normal_(Tensor self, float mean=1.0, float std=2.0, *, Generator? generator=None) "
        "-> Tensor",
        _log_normal_,
        notes="exp of normal_(mean, std)",
    ),
]
