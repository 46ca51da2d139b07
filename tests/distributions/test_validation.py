"""Argument and sample validation: same errors and messages as torch.distributions."""

from __future__ import annotations

import pytest
import torch

import ember
import ember.distributions as ed
from ember.distributions import constraints

# (name, kwargs with an invalid parameter) as float32 lists: the messages print the tensors.
INVALID_PARAMS = [
    ("Normal", {"loc": [0.0], "scale": [-1.0]}),
    ("Laplace", {"loc": [float("nan")], "scale": [1.0]}),
    ("Exponential", {"rate": [0.0, 1.0]}),
    ("Uniform", {"low": [2.0], "high": [1.0]}),
    ("Bernoulli", {"probs": [1.5]}),
    ("Categorical", {"probs": [[0.5, -0.1]]}),
    ("HalfNormal", {"scale": [-2.0]}),
]


@pytest.fixture(autouse=True)
def torch_validates():
    """torch's own default (validation on): torch._dynamo switches it off for the whole process
    when it patches torch (tests/compile and tests/jit use torch.compile and torch.export in
    the same worker), and then torch raises nothing to compare with."""
    before = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    yield
    torch.distributions.Distribution.set_default_validate_args(before)


def _message(fn):
    """The ValueError's message, with torch's type names spelled as ember's (torch.Size)."""
    with pytest.raises(ValueError) as info:
        fn()
    return str(info.value).replace("torch.", "ember.")


def _build(lib, name, kwargs, **extra):
    module = ed if lib is ember else torch.distributions
    params = {k: lib.tensor(v) for k, v in kwargs.items()}
    return getattr(module, name)(**params, **extra)


@pytest.mark.parametrize("name,kwargs", INVALID_PARAMS, ids=[n for n, _ in INVALID_PARAMS])
def test_invalid_parameter_message_matches_torch(name, kwargs):
    expected = _message(lambda: _build(torch, name, kwargs))
    assert _message(lambda: _build(ember, name, kwargs)) == expected
    _build(ember, name, kwargs, validate_args=False)  # no check when switched off


def test_invalid_sample_message_matches_torch():
    e = ed.Exponential(ember.tensor([1.0, 2.0]))
    t = torch.distributions.Exponential(torch.tensor([1.0, 2.0]))
    expected = _message(lambda: t.log_prob(torch.tensor([-1.0, 1.0])))
    assert _message(lambda: e.log_prob(ember.tensor([-1.0, 1.0]))) == expected


def test_event_shape_and_broadcast_errors_match_torch():
    e = ed.Categorical(probs=ember.tensor([[0.5, 0.5], [0.3, 0.7]]))
    t = torch.distributions.Categorical(probs=torch.tensor([[0.5, 0.5], [0.3, 0.7]]))
    expected = _message(lambda: t.log_prob(torch.tensor([0, 1, 1])))
    actual = _message(lambda: e.log_prob(ember.tensor([0, 1, 1])))
    assert actual == expected
    oh = ed.OneHotCategorical(probs=ember.tensor([0.5, 0.5]))
    with pytest.raises(ValueError, match="The right-most size of value must match event_shape"):
        oh.log_prob(ember.tensor([1.0, 0.0, 0.0]))
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        ed.Normal(0.0, 1.0).log_prob(0.5)


def test_probs_and_logits_are_exclusive():
    for name in ("Bernoulli", "Categorical", "Geometric"):
        cls = getattr(ed, name)
        with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified"):
            cls()
        with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified"):
            cls(probs=ember.tensor([0.5]), logits=ember.tensor([0.0]))
    with pytest.raises(ValueError, match="`probs` parameter must be at least one-dimensional"):
        ed.Categorical(probs=ember.tensor(0.5))


def test_set_default_validate_args():
    try:
        ed.Distribution.set_default_validate_args(False)
        ed.Normal(ember.tensor([0.0]), ember.tensor([-1.0]))  # not checked
        assert ed.Normal(0.0, 1.0)._validate_args is False
    finally:
        ed.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        ed.Normal(ember.tensor([0.0]), ember.tensor([-1.0]))
    with pytest.raises(ValueError):
        ed.Distribution.set_default_validate_args("yes")


def test_sample_n_warns_and_samples():
    with pytest.warns(FutureWarning, match="sample_n will be deprecated"):
        assert tuple(ed.Normal(ember.zeros(2), ember.ones(2)).sample_n(3).shape) == (3, 2)


def test_geometric_zero_probs_message_matches_torch():
    expected = _message(lambda: torch.distributions.Geometric(probs=torch.tensor([0.0, 0.5])))
    actual = _message(lambda: ed.Geometric(probs=ember.tensor([0.0, 0.5])))
    assert actual == expected


CONSTRAINT_CASES = [
    ("real", [0.0, float("nan"), float("inf")]),
    ("positive", [0.0, 1.0, -1.0]),
    ("nonnegative", [0.0, 1.0, -1.0]),
    ("unit_interval", [0.0, 1.0, 1.5]),
    ("boolean", [0.0, 1.0, 0.5]),
    ("nonnegative_integer", [0.0, 3.0, 1.5]),
    ("positive_integer", [0.0, 3.0, 1.5]),
    ("simplex", [[0.2, 0.8], [0.5, 0.6]]),
    ("one_hot", [[0.0, 1.0], [1.0, 1.0]]),
    ("real_vector", [[0.0, 1.0], [float("nan"), 1.0]]),
    ("lower_cholesky", [[[1.0, 0.0], [2.0, 3.0]], [[1.0, 1.0], [0.0, 1.0]]]),
    ("lower_triangular", [[[1.0, 0.0], [2.0, 3.0]], [[1.0, 1.0], [0.0, 1.0]]]),
    ("square", [[[1.0, 0.0], [2.0, 3.0]]]),
    # Symmetric up to torch's atol 1e-6; an indefinite one; a singular semidefinite one.
    ("symmetric", [[[1.0, 2.0], [2.0 + 5e-7, 3.0]], [[1.0, 2.0], [2.1, 3.0]]]),
    ("positive_definite", [[[2.0, 1.0], [1.0 + 5e-7, 2.0]], [[1.0, 2.0], [2.0, 1.0]]]),
    ("positive_semidefinite", [[[1.0, 1.0], [1.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]]),
]


@pytest.mark.parametrize("name,value", CONSTRAINT_CASES, ids=[n for n, _ in CONSTRAINT_CASES])
def test_constraint_check_matches_torch(name, value):
    e = getattr(constraints, name)
    t = getattr(torch.distributions.constraints, name)
    assert e.event_dim == t.event_dim
    assert e.is_discrete == t.is_discrete
    assert repr(e) == repr(t)
    assert e.check(ember.tensor(value)).tolist() == t.check(torch.tensor(value)).tolist()


def test_parameterized_constraints_match_torch():
    tc = torch.distributions.constraints
    pairs = [
        (constraints.interval(0.0, 2.0), tc.interval(0.0, 2.0)),
        (constraints.half_open_interval(0.0, 2.0), tc.half_open_interval(0.0, 2.0)),
        (constraints.greater_than(1.0), tc.greater_than(1.0)),
        (constraints.greater_than_eq(1.0), tc.greater_than_eq(1.0)),
        (constraints.less_than(1.0), tc.less_than(1.0)),
        (constraints.integer_interval(0, 2), tc.integer_interval(0, 2)),
        (constraints.independent(constraints.positive, 1), tc.independent(tc.positive, 1)),
    ]
    value = [[0.0, 1.0, 2.0], [0.5, 1.5, 3.0]]
    for e, t in pairs:
        assert repr(e) == repr(t)
        assert e.check(ember.tensor(value)).tolist() == t.check(torch.tensor(value)).tolist()
    assert constraints.is_dependent(constraints.dependent)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        constraints.dependent.check(ember.zeros(1))


def test_reachable_as_an_attribute_like_torch_distributions():
    import subprocess
    import sys

    code = "import ember; print(ember.distributions.Normal(0.0, 1.0).batch_shape)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ember.Size([])"
