"""Transforms and TransformedDistribution against torch.distributions.transforms."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
import ember.distributions as ed
import ember.distributions.transforms as et

from .helpers import assert_close

tt = torch.distributions.transforms

# (name, args, input kind): "real" inputs are any reals, "positive" strictly positive.
TRANSFORMS = [
    ("ExpTransform", (), "real"),
    ("SigmoidTransform", (), "real"),
    ("TanhTransform", (), "real"),
    ("SoftplusTransform", (), "real"),
    ("AbsTransform", (), "positive"),
    ("AffineTransform", (1.5, -2.0), "real"),
    ("PowerTransform", (2.5,), "positive"),
    ("SoftmaxTransform", (), "real"),
    ("StickBreakingTransform", (), "real"),
    ("LowerCholeskyTransform", (), "real"),
    ("PositiveDefiniteTransform", (), "real"),
    ("CorrCholeskyTransform", (), "real"),  # (2, 3): two vectors of a 3 x 3 factor's lower part
    ("ReshapeTransform", ((3,), (3, 1)), "real"),
]
# Transforms of matrices: their inputs are (2, 3, 3).
MATRIX_INPUT = {"LowerCholeskyTransform", "PositiveDefiniteTransform"}


def _input(kind, shape=(2, 3)):
    x = np.random.default_rng(0).standard_normal(shape)
    return np.abs(x) + 0.1 if kind == "positive" else x


@pytest.mark.parametrize("name,args,kind", TRANSFORMS, ids=[t[0] for t in TRANSFORMS])
def test_transform_matches_torch(name, args, kind, device):
    shape = (2, 3, 3) if name in MATRIX_INPUT else (2, 3)
    x = _input(kind, shape)
    e, t = getattr(et, name)(*args), getattr(tt, name)(*args)
    ex, tx = ember.tensor(x, device=device), torch.tensor(x)
    ey, ty = e(ex), t(tx)
    assert_close(ey, ty, rtol=1e-12, atol=1e-12)
    assert_close(e.inv(ey), t.inv(ty), rtol=1e-10, atol=1e-12)
    assert repr(e.domain) == repr(t.domain)
    assert repr(e.codomain) == repr(t.codomain)
    assert e.bijective == t.bijective
    assert tuple(e.forward_shape(shape)) == tuple(t.forward_shape(shape))
    assert tuple(e.inverse_shape(tuple(ey.shape))) == tuple(t.inverse_shape(tuple(ty.shape)))
    try:
        expected = t.log_abs_det_jacobian(tx, ty)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            e.log_abs_det_jacobian(ex, ey)
        return
    assert_close(e.log_abs_det_jacobian(ex, ey), expected, rtol=1e-10, atol=1e-12)


def test_compose_and_independent_match_torch():
    x = _input("real")
    e = et.ComposeTransform([et.AffineTransform(0.5, 2.0), et.StickBreakingTransform()])
    t = tt.ComposeTransform([tt.AffineTransform(0.5, 2.0), tt.StickBreakingTransform()])
    ey, ty = e(ember.tensor(x)), t(torch.tensor(x))
    assert_close(ey, ty)
    assert_close(e.inv(ey), t.inv(ty))
    assert e.domain.event_dim == t.domain.event_dim == 1
    assert_close(
        e.log_abs_det_jacobian(ember.tensor(x), ey), t.log_abs_det_jacobian(torch.tensor(x), ty)
    )
    ei, ti = (
        et.IndependentTransform(et.ExpTransform(), 1),
        tt.IndependentTransform(tt.ExpTransform(), 1),
    )
    assert repr(ei) == repr(ti)
    ey, ty = ei(ember.tensor(x)), ti(torch.tensor(x))
    assert_close(
        ei.log_abs_det_jacobian(ember.tensor(x), ey), ti.log_abs_det_jacobian(torch.tensor(x), ty)
    )
    assert et.identity_transform(ember.tensor(x)) is not None


def _pair(build):
    """The same transform built over ember's and over torch's transforms module."""
    return build(et), build(tt)


# Transforms over pieces of their input: (id, builder over a transforms module, input shape).
STRUCTURED = [
    (
        "cat-dim0",
        lambda m: m.CatTransform([m.ExpTransform(), m.AffineTransform(1.0, 2.0)], 0, [1, 2]),
        (3, 2),
    ),
    (
        "cat-event",
        lambda m: m.CatTransform(
            [
                m.IndependentTransform(m.ExpTransform(), 1),
                m.IndependentTransform(m.TanhTransform(), 1),
            ],
            -1,
            [2, 2],
        ),
        (2, 4),
    ),
    ("stack-dim1", lambda m: m.StackTransform([m.ExpTransform(), m.TanhTransform()], 1), (3, 2)),
    (
        "stack-dim-1",
        lambda m: m.StackTransform([m.SigmoidTransform(), m.PowerTransform(1.0)], -1),
        (3, 2),
    ),
]


@pytest.mark.parametrize("build,shape", [s[1:] for s in STRUCTURED], ids=[s[0] for s in STRUCTURED])
def test_structured_transforms_match_torch(build, shape):
    e, t = _pair(build)
    x = np.abs(_input("real", shape)) + 0.1
    ex, tx = ember.tensor(x), torch.tensor(x)
    ey, ty = e(ex), t(tx)
    assert_close(ey, ty, rtol=1e-12, atol=1e-12)
    assert_close(e.inv(ey), t.inv(ty), rtol=1e-10, atol=1e-12)
    assert_close(e.log_abs_det_jacobian(ex, ey), t.log_abs_det_jacobian(tx, ty), rtol=1e-10)
    assert e.bijective == t.bijective
    assert e.event_dim == t.event_dim
    assert e.domain.event_dim == t.domain.event_dim
    assert_close(e.codomain.check(ey), t.codomain.check(ty))


def test_structured_transform_errors_match_torch():
    for m, lib in ((et, ember), (tt, torch)):
        bad = m.CatTransform([m.ExpTransform()], 0, [2])
        with pytest.raises(AssertionError, match=r"x.size\(0\) = 3 must equal length 2"):
            bad(lib.zeros(3))
        with pytest.raises(ValueError, match="different numbers of elements"):
            m.ReshapeTransform((2, 3), (4,))
        with pytest.raises(ValueError, match="Shape mismatch"):
            m.ReshapeTransform((2, 3), (6,)).forward_shape((5, 3, 2))


def test_cumulative_distribution_transform_matches_torch():
    loc, scale = np.array([0.3, -1.0]), np.array([1.5, 0.5])
    e = et.CumulativeDistributionTransform(ed.Normal(ember.tensor(loc), ember.tensor(scale)))
    t = tt.CumulativeDistributionTransform(
        torch.distributions.Normal(torch.tensor(loc), torch.tensor(scale))
    )
    x = _input("real", (3, 2))
    ey, ty = e(ember.tensor(x)), t(torch.tensor(x))
    assert_close(ey, ty)
    assert_close(e.inv(ey), t.inv(ty), rtol=1e-8)
    assert_close(
        e.log_abs_det_jacobian(ember.tensor(x), ey), t.log_abs_det_jacobian(torch.tensor(x), ty)
    )
    assert repr(e.domain) == repr(t.domain) and repr(e.codomain) == repr(t.codomain)


def test_cat_and_stack_constraints_map_piecewise_like_torch():
    for registry in ("biject_to", "transform_to"):
        e_reg, t_reg = getattr(ed, registry), getattr(torch.distributions, registry)
        ec, tc = ed.constraints, torch.distributions.constraints
        pairs = [
            (ec.cat([ec.positive, ec.real], 0, [2, 1]), tc.cat([tc.positive, tc.real], 0, [2, 1])),
            (
                ec.stack([ec.positive, ec.unit_interval], 1),
                tc.stack([tc.positive, tc.unit_interval], 1),
            ),
        ]
        x = _input("real", (3, 2))
        for e_con, t_con in pairs:
            ey = e_reg(e_con)(ember.tensor(x))
            assert_close(ey, t_reg(t_con)(torch.tensor(x)))
            assert bool(e_con.check(ey).all())


def test_transforms_exported_at_top_level_like_torch():
    assert set(torch.distributions.__all__) <= set(ed.__all__)
    for name in torch.distributions.transforms.__all__:
        assert getattr(ed, name) is getattr(et, name), name


def test_cache_returns_the_same_input():
    t = et.ExpTransform(cache_size=1)
    x = ember.tensor([0.1, 0.2])
    y = t(x)
    assert t.inv(y) is x
    assert et.ExpTransform().with_cache(1)._cache_size == 1
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        et.ExpTransform(cache_size=2)
    assert et.ExpTransform() == et.ExpTransform()
    assert et.ExpTransform().inv == et.ExpTransform().inv
    assert et.AffineTransform(1.0, 2.0) != et.AffineTransform(1.0, 3.0)


def test_transformed_distribution_matches_torch(device):
    loc, scale = np.array([0.1, -0.3]), np.array([0.5, 1.2])
    e = ed.TransformedDistribution(
        ed.Normal(ember.tensor(loc, device=device), ember.tensor(scale, device=device)),
        [et.AffineTransform(1.0, -2.0), et.SigmoidTransform()],
    )
    t = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(torch.tensor(loc), torch.tensor(scale)),
        [tt.AffineTransform(1.0, -2.0), tt.SigmoidTransform()],
    )
    v = np.array([0.3, 0.8])
    assert_close(e.log_prob(ember.tensor(v, device=device)), t.log_prob(torch.tensor(v)))
    # The affine map's negative scale flips the CDF.
    assert_close(e.cdf(ember.tensor(v, device=device)), t.cdf(torch.tensor(v)))
    assert_close(e.icdf(ember.tensor(v, device=device)), t.icdf(torch.tensor(v)))
    assert tuple(e.rsample((4,)).shape) == (4, 2)
    assert repr(e.support) == repr(t.support)


def test_transformed_distribution_over_a_vector_event():
    base_e = ed.Normal(ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64))
    base_t = torch.distributions.Normal(torch.zeros(3, dtype=torch.float64), torch.ones(3))
    e = ed.TransformedDistribution(base_e, et.StickBreakingTransform())
    t = torch.distributions.TransformedDistribution(base_t, tt.StickBreakingTransform())
    assert tuple(e.event_shape) == tuple(t.event_shape) == (4,)
    assert tuple(e.batch_shape) == tuple(t.batch_shape)
    v = np.array([0.1, 0.2, 0.3, 0.4])
    assert_close(e.log_prob(ember.tensor(v)), t.log_prob(torch.tensor(v)))
    sample = e.sample((5,))
    assert tuple(sample.shape) == (5, 4)
    assert bool(e.support.check(sample).all())


REGISTRY_CONSTRAINTS = [
    ("real", ()),
    ("positive", ()),
    ("nonnegative", ()),
    ("unit_interval", ()),
    ("simplex", ()),
    ("real_vector", ()),
    ("greater_than", (1.5,)),
    ("less_than", (-0.5,)),
    ("interval", (-1.0, 3.0)),
    ("lower_cholesky", ()),
    ("positive_definite", ()),
    ("positive_semidefinite", ()),
    ("corr_cholesky", ()),
]


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize(
    "name,args", REGISTRY_CONSTRAINTS, ids=[c[0] for c in REGISTRY_CONSTRAINTS]
)
def test_constraint_registry_matches_torch(registry, name, args):
    from ember.distributions import constraints

    e_con = getattr(constraints, name)
    t_con = getattr(torch.distributions.constraints, name)
    if args:
        e_con, t_con = e_con(*args), t_con(*args)
    t_registry = getattr(torch.distributions, registry)
    try:
        t_transform = t_registry(t_con)
    except NotImplementedError:
        with pytest.raises(NotImplementedError, match="Cannot transform"):
            getattr(ed, registry)(e_con)
        return
    e_transform = getattr(ed, registry)(e_con)
    square = ("lower_cholesky", "positive_definite", "positive_semidefinite")
    shape = (2, 3, 3) if name in square else (2, 3)
    x = _input("real", shape)
    ey = e_transform(ember.tensor(x))
    assert_close(ey, t_transform(torch.tensor(x)))
    assert bool(e_con.check(ey).all())
