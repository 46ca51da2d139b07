"""nn.init (fans, gains, the statistics of each initialiser, layers' default initialisation) and
nn.utils (gradient clipping, parameter vectors) against PyTorch."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.nn.init as init

from .oracle import assert_close, to_ember, to_numpy, to_torch

torch = pytest.importorskip("torch")
tinit = torch.nn.init


@pytest.mark.parametrize("shape", [(3, 4), (5, 3, 2, 2), (2, 3, 4), (7, 1, 3), (4, 6, 1, 1, 2)])
def test_fans_match_torch(shape):
    ours = init._calculate_fan_in_and_fan_out(ember.empty(*shape))
    assert ours == tinit._calculate_fan_in_and_fan_out(torch.empty(*shape))


def test_fans_need_two_dims():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(ember.empty(3))


@pytest.mark.parametrize(
    "nonlinearity, param",
    [
        ("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
        ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", math.sqrt(5)), ("selu", None),
        ("conv_transpose1d", None),
    ],
)  # fmt: skip
def test_gains_match_torch(nonlinearity, param):
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(
        tinit.calculate_gain(nonlinearity, param)
    )


def test_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")


# name -> (kwargs, shape): both frameworks initialise the same shape; statistics must agree.
STATS = [
    ("uniform_", {"a": -0.3, "b": 0.7}, (300, 400)),
    ("normal_", {"mean": 0.5, "std": 2.0}, (300, 400)),
    ("xavier_uniform_", {}, (300, 200)),
    ("xavier_uniform_", {"gain": 2.0}, (64, 32, 3, 3)),
    ("xavier_normal_", {}, (300, 200)),
    ("kaiming_uniform_", {}, (300, 200)),
    ("kaiming_uniform_", {"a": math.sqrt(5)}, (64, 32, 3, 3)),
    ("kaiming_uniform_", {"mode": "fan_out", "nonlinearity": "relu"}, (300, 200)),
    ("kaiming_normal_", {}, (300, 200)),
    ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "relu"}, (64, 32, 3, 3)),
    ("trunc_normal_", {}, (300, 400)),
    ("trunc_normal_", {"mean": 1.0, "std": 0.5, "a": 0.5, "b": 2.0}, (300, 400)),
    ("orthogonal_", {}, (120, 80)),
    ("orthogonal_", {"gain": 2.0}, (40, 3, 3, 3)),
]


@pytest.mark.parametrize("name, kwargs, shape", STATS, ids=lambda v: str(v))
def test_initialiser_statistics(device, name, kwargs, shape):
    ours = getattr(init, name)(ember.empty(*shape, device=device), **kwargs)
    theirs = getattr(tinit, name)(torch.empty(*shape), **kwargs)
    a, b = to_numpy(ours).astype(np.float64), to_numpy(theirs).astype(np.float64)
    n = a.size
    scale = b.std()
    assert abs(a.mean() - b.mean()) < 6 * scale / math.sqrt(n) + 1e-7, "mean"
    assert abs(a.std() - b.std()) < 0.03 * scale, "std"
    if name.startswith(("uniform", "xavier_uniform", "kaiming_uniform", "trunc_normal")):
        spread = b.max() - b.min()  # bounded: both fill (almost) the same interval
        assert b.min() - 0.01 * spread <= a.min() <= b.min() + 0.01 * spread, "lower bound"
        assert b.max() - 0.01 * spread <= a.max() <= b.max() + 0.01 * spread, "upper bound"
    if name == "trunc_normal_":
        assert a.min() >= kwargs.get("a", -2.0) and a.max() <= kwargs.get("b", 2.0)


@pytest.mark.parametrize("shape", [(6, 6), (4, 9), (9, 4), (5, 2, 3)])
def test_orthogonal_is_orthogonal(device, shape):
    w = to_numpy(init.orthogonal_(ember.empty(*shape, device=device), gain=1.5))
    flat = w.reshape(shape[0], -1)
    small = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
    np.testing.assert_allclose(small, 2.25 * np.eye(small.shape[0]), atol=1e-5)


@pytest.mark.parametrize(
    "name, args, shape",
    [
        ("zeros_", (), (3, 4)),
        ("ones_", (), (3, 4)),
        ("constant_", (0.25,), (2, 3, 4)),
        ("eye_", (), (3, 5)),
        ("dirac_", (), (4, 3, 3, 3)),
        ("dirac_", (2,), (4, 2, 3)),
    ],
)
def test_deterministic_initialisers(device, name, args, shape):
    ours = getattr(init, name)(ember.empty(*shape, device=device), *args)
    theirs = getattr(tinit, name)(torch.empty(*shape), *args)
    np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))


def test_init_runs_without_autograd_and_returns_its_argument(device):
    p = ember.nn.Parameter(ember.empty(3, 4, device=device))
    for fn in (init.uniform_, init.normal_, init.xavier_uniform_, init.kaiming_normal_,
               init.trunc_normal_, init.orthogonal_, init.zeros_):  # fmt: skip
        assert fn(p) is p
        assert p.is_leaf and p.grad_fn is None and p.requires_grad


def test_kaiming_on_zero_elements_is_a_no_op():
    for fn in (init.kaiming_uniform_, init.kaiming_normal_):
        with pytest.warns(UserWarning, match="zero-element"):
            assert fn(ember.empty(3, 0)).shape == (3, 0)


def test_init_generator_reproducible(device):
    a = init.kaiming_uniform_(
        ember.empty(5, 4, device=device), generator=ember.Generator().manual_seed(3)
    )
    b = init.kaiming_uniform_(
        ember.empty(5, 4, device=device), generator=ember.Generator().manual_seed(3)
    )
    np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


@pytest.mark.parametrize(
    "name, args",
    [
        ("Linear", (400, 300)),
        ("Conv2d", (16, 32, 3)),
        ("Conv1d", (16, 8, 5)),
        ("ConvTranspose2d", (16, 8, 3)),
        ("Bilinear", (30, 20, 50)),
        ("Embedding", (300, 50)),
        ("LSTM", (30, 40)),
        ("GRUCell", (30, 40)),
        ("MultiheadAttention", (64, 4)),
    ],
)
def test_default_layer_init_matches_torch(name, args):
    """Each parameter's default distribution matches PyTorch's: spread and bounds, pooled over
    several constructions so that small parameters (biases) give usable statistics."""
    ember.manual_seed(0)
    torch.manual_seed(0)

    def pooled(nn):
        layers = [getattr(nn, name)(*args) for _ in range(10)]
        names = [k for k, _ in layers[0].named_parameters()]
        return {k: np.concatenate([to_numpy(dict(m.named_parameters())[k]).ravel() for m in layers])
                for k in names}  # fmt: skip

    ours, theirs = pooled(ember.nn), pooled(torch.nn)
    assert list(ours) == list(theirs)
    for key, b in theirs.items():
        a = ours[key].astype(np.float64)
        if b.std() == 0:
            np.testing.assert_array_equal(a, b, key)
            continue
        assert abs(a.std() - b.std()) < (0.05 if b.size >= 2000 else 0.15) * b.std(), key
        assert np.abs(a).max() <= np.abs(b).max() * (1.02 if b.size >= 2000 else 1.15), key


# ---- nn.utils --------------------------------------------------------------------------------
def _params_with_grads(rng, device):
    shapes = [(3, 4), (5,), (2, 2, 2)]
    grads = [rng.standard_normal(s).astype(np.float32) * 3 for s in shapes]
    ours, theirs = [], []
    for g in grads:
        p = ember.nn.Parameter(ember.zeros(g.shape, device=device))
        p.grad = to_ember(g, device)
        q = torch.nn.Parameter(torch.zeros(g.shape))
        q.grad = to_torch(g)
        ours.append(p)
        theirs.append(q)
    ours.append(ember.nn.Parameter(ember.zeros(2, device=device)))  # no grad: skipped
    theirs.append(torch.nn.Parameter(torch.zeros(2)))
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm(device, rng, norm_type, max_norm):
    ours, theirs = _params_with_grads(rng, device)
    total_ours = ember.nn.utils.clip_grad_norm_(ours, max_norm, norm_type)
    total_theirs = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert_close(total_ours, total_theirs, "total norm")
    for a, b in zip(ours[:-1], theirs[:-1]):
        assert_close(a.grad, b.grad, "clipped gradient")


def test_clip_grad_norm_single_tensor_and_errors(device):
    p = ember.nn.Parameter(ember.ones(4, device=device))
    p.grad = ember.full((4,), 2.0, device=device)
    total = ember.nn.utils.clip_grad_norm_(p, 1.0)
    assert float(total) == pytest.approx(4.0)
    assert float(p.grad.norm()) == pytest.approx(1.0, rel=1e-5)
    p.grad = ember.tensor([float("nan"), 1.0, 1.0, 1.0], device=device)
    with pytest.raises(RuntimeError, match="non-finite"):
        ember.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert float(ember.nn.utils.clip_grad_norm_([], 1.0)) == 0.0


def test_clip_grad_value(device, rng):
    ours, theirs = _params_with_grads(rng, device)
    ember.nn.utils.clip_grad_value_(ours, 0.7)
    torch.nn.utils.clip_grad_value_(theirs, 0.7)
    for a, b in zip(ours[:-1], theirs[:-1]):
        assert_close(a.grad, b.grad, "clipped gradient")


def test_parameters_vector_round_trip(device):
    ours = ember.nn.Sequential(ember.nn.Linear(3, 2), ember.nn.Linear(2, 1)).to(device)
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    from .oracle import copy_state

    copy_state(theirs, ours, device)
    vec = ember.nn.utils.parameters_to_vector(ours.parameters())
    assert_close(vec, torch.nn.utils.parameters_to_vector(theirs.parameters()), "vector")
    new = np.arange(vec.shape[0], dtype=np.float32)
    weight = ours[0].weight
    ember.nn.utils.vector_to_parameters(to_ember(new, device), ours.parameters())
    torch.nn.utils.vector_to_parameters(to_torch(new), theirs.parameters())
    for a, b in zip(ours.parameters(), theirs.parameters()):
        assert_close(a, b, "parameter")
    assert ours[0].weight is weight and weight.requires_grad
    with pytest.raises(TypeError, match="Tensor"):
        ember.nn.utils.vector_to_parameters([1.0], ours.parameters())


def test_the_names_torch_nn_and_its_init_export():
    # torch.nn's public names a script reaches (UninitializedParameter for lazy modules' checks,
    # the deprecated init spellings) exist in ember.nn, all but torch's quantization packages.
    import torch

    quantization = {"intrinsic", "qat", "quantizable", "quantized"}
    internal = {"common_types", "factory_kwargs", "grad"}
    names = {n for n in dir(torch.nn) if not n.startswith("_")} - quantization - internal
    assert sorted(n for n in names if not hasattr(ember.nn, n)) == []
    init_names = {n for n in dir(torch.nn.init) if not n.startswith("_") and n.islower()}
    missing = sorted(n for n in init_names if callable(getattr(torch.nn.init, n))
                     and not hasattr(ember.nn.init, n) and n not in ("warnings",))  # fmt: skip
    assert missing == []
    assert isinstance(ember.nn.LazyLinear(3).weight, ember.nn.UninitializedParameter)
