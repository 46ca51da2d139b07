"""PyTorch's top-level spellings of nn functions (aten's argument orders, integer reductions,
the RNN cells) and of in-place ops, view copies and deprecated names (ember/_nn_entry.py,
ember/_torch_entry.py), each called as ``torch.<name>`` is, against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(0)


def _r(*shape):
    return RNG.standard_normal(shape)


def _both(value):
    """(ember value, torch value) of a numpy array (float64), or the value itself."""
    if isinstance(value, np.ndarray):
        return ember.tensor(value), torch.tensor(value)
    if isinstance(value, tuple) and value and isinstance(value[0], str):
        return ember.tensor(value[1], dtype=ember.int64), torch.tensor(value[1], dtype=torch.int64)
    if isinstance(value, (list, tuple)) and any(isinstance(v, np.ndarray) for v in value):
        pairs = [_both(v) for v in value]
        return type(value)(p[0] for p in pairs), type(value)(p[1] for p in pairs)
    return value, value


def _long(values):
    return ("long", np.asarray(values))


def _close(got, want):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
        return
    if isinstance(want, torch.Tensor):
        assert tuple(got.shape) == tuple(want.shape), (got.shape, want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-7, atol=1e-9)
        return
    assert got == want


CASES = {
    "conv1d": lambda: (_r(2, 3, 7), _r(4, 3, 3), _r(4), 2, 1),
    "conv2d": lambda: (_r(1, 2, 5, 5), _r(3, 2, 3, 3), None, 1, 1, 1, 1),
    "conv3d": lambda: (_r(1, 2, 4, 4, 4), _r(3, 2, 2, 2, 2)),
    "conv_transpose1d": lambda: (_r(1, 3, 5), _r(3, 2, 3), None, 2, 1, 1),
    "conv_transpose2d": lambda: (_r(1, 3, 4, 4), _r(3, 2, 3, 3)),
    "conv_transpose3d": lambda: (_r(1, 2, 3, 3, 3), _r(2, 2, 2, 2, 2)),
    "convolution": lambda: (_r(1, 2, 6), _r(3, 2, 2), _r(3), [2], [1], [1], False, [0], 1),
    "avg_pool1d": lambda: (_r(2, 3, 8), 3, 2),
    "adaptive_avg_pool1d": lambda: (_r(2, 3, 8), 3),
    "adaptive_max_pool1d": lambda: (_r(2, 3, 8), 3),
    "max_pool1d": lambda: (_r(2, 3, 9), 3),
    "max_pool2d": lambda: (_r(1, 2, 6, 6), [2, 2], [], 0, 1, True),
    "max_pool3d": lambda: (_r(1, 2, 4, 4, 4), 2),
    "max_pool1d_with_indices": lambda: (_r(2, 3, 9), 2, [1]),
    "pixel_shuffle": lambda: (_r(1, 8, 2, 2), 2),
    "pixel_unshuffle": lambda: (_r(1, 2, 4, 4), 2),
    "channel_shuffle": lambda: (_r(1, 6, 2, 2), 3),
    "native_channel_shuffle": lambda: (_r(1, 6, 2, 2), 2),
    "cosine_similarity": lambda: (_r(4, 5), _r(4, 5), 1, 1e-8),
    "pairwise_distance": lambda: (_r(4, 5), _r(4, 5), 1.5),
    "pdist": lambda: (_r(4, 5), 3),
    "prelu": lambda: (_r(2, 3, 4), np.array([0.1, 0.2, 0.3])),
    "selu": lambda: (_r(5),),
    "celu": lambda: (_r(5), 0.7),
    "threshold": lambda: (_r(6), 0.1, -2.0),
    "hardshrink": lambda: (_r(6), 0.3),
    "rms_norm": lambda: (_r(2, 4), [4], _r(4), 1e-6),
    "bilinear": lambda: (_r(3, 2), _r(3, 4), _r(5, 2, 4), _r(5)),
    "embedding": lambda: (_r(6, 3), _long([[0, 2], [5, 2]]), 2),
    "batch_norm": lambda: (
        _r(4, 3, 2),
        _r(3),
        _r(3),
        _r(3),
        np.abs(_r(3)) + 0.5,
        False,
        0.1,
        1e-5,
        False,
    ),
    "group_norm": lambda: (_r(2, 4, 3), 2, _r(4), _r(4), 1e-5),
    "instance_norm": lambda: (_r(2, 3, 5), _r(3), _r(3), None, None, True, 0.1, 1e-5, False),
    "kl_div": lambda: (np.log(np.abs(_r(3, 4)) + 0.1), np.abs(_r(3, 4)), 2),
    "binary_cross_entropy_with_logits": lambda: (_r(3, 4), RNG.random((3, 4)), None, None, 0),
    "cosine_embedding_loss": lambda: (_r(4, 3), _r(4, 3), np.array([1.0, -1, 1, -1]), 0.2, 2),
    "hinge_embedding_loss": lambda: (_r(5), np.array([1.0, -1, 1, -1, 1]), 0.5, 1),
    "margin_ranking_loss": lambda: (_r(5), _r(5), np.array([1.0, -1, 1, -1, 1]), 0.1),
    "margin_ranking_loss-default": lambda: (_r(5), _r(5), np.array([1.0, -1, 1, -1, 1])),
    "kl_div-default": lambda: (np.log(np.abs(_r(3, 4)) + 0.1), np.abs(_r(3, 4))),
    "poisson_nll_loss": lambda: (_r(5), np.abs(_r(5)), True, False, 1e-8, 1),
    "triplet_margin_loss": lambda: (_r(4, 3), _r(4, 3), _r(4, 3), 1.0, 2.0, 1e-6, True, 0),
    "rnn_tanh_cell": lambda: (_r(3, 4), _r(3, 5), _r(5, 4), _r(5, 5), _r(5), _r(5)),
    "rnn_relu_cell": lambda: (_r(3, 4), _r(3, 5), _r(5, 4), _r(5, 5)),
    "gru_cell": lambda: (_r(3, 4), _r(3, 5), _r(15, 4), _r(15, 5), _r(15), _r(15)),
    "lstm_cell": lambda: (_r(3, 4), (_r(3, 5), _r(3, 5)), _r(20, 4), _r(20, 5), _r(20), _r(20)),
    "grid_sampler": lambda: (_r(1, 2, 4, 4), RNG.uniform(-1, 1, (1, 3, 3, 2)), 0, 1, False),
    "affine_grid_generator": lambda: (_r(2, 2, 3), [2, 1, 4, 5], False),
    "select_copy": lambda: (_r(3, 4), 1, 2),
    "slice_copy": lambda: (_r(5, 4), 0, 1, 4, 2),
    "split_copy": lambda: (_r(5, 4), 2),
    "unsafe_split_with_sizes": lambda: (_r(5, 4), [2, 3]),
    "detach_copy": lambda: (_r(3),),
    "view_as_real_copy": "complex",
    "is_same_size": lambda: (_r(2, 3), _r(2, 3)),
    "row_stack": lambda: ([_r(2, 3), _r(1, 3)],),
    "vander": lambda: (_r(4), 3, True),
    "frobenius_norm": lambda: (_r(3, 4, 5), [0, 2], True),
    "nuclear_norm": lambda: (_r(3, 4), True),
    "adjoint": lambda: (_r(2, 3, 4),),
    "ger": lambda: (_r(3), _r(4)),
    "norm_except_dim": lambda: (_r(3, 4, 5), 3, 1),
}


@pytest.mark.filterwarnings("ignore:at::.*is deprecated")
@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    make = CASES[name]
    if make == "complex":
        values = _r(3, 2) + 1j * _r(3, 2)
        args_e, args_t = (ember.tensor(values),), (torch.tensor(values),)
    else:
        pairs = [_both(a) for a in make()]
        args_e, args_t = tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
    want = getattr(torch, name.split("-")[0])(*args_t)
    got = getattr(ember, name.split("-")[0])(*args_e)
    _close(got, want)


INPLACE = ["abs_", "exp_", "relu_", "sigmoid_", "fix_", "negative_", "arccos_", "clip_", "sinc_",
           "square_", "nan_to_num_", "rad2deg_", "trunc_", "frac_", "expm1_"]  # fmt: skip


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_functions_write_their_input(name):
    values = RNG.uniform(-0.9, 0.9, (3, 4))
    e, t = ember.tensor(values), torch.tensor(values)
    extra = (-0.5, 0.5) if name == "clip_" else ()
    got = getattr(ember, name)(e, *extra)
    want = getattr(torch, name)(t, *extra)
    assert got is e
    _close(e, want)
    method = getattr(ember.tensor(values), name)(*extra)  # the method spelling too
    _close(method, want)


def test_dropouts_train_flag_and_in_place_forms():
    x = ember.ones(200, 50)
    for name in ("dropout", "alpha_dropout", "feature_dropout", "feature_alpha_dropout"):
        assert getattr(ember, name)(x, 0.5, False) is x
        assert getattr(torch, name)(torch.ones(2), 0.5, False) is not None
    y = ember.dropout(x, 0.25, True)
    assert 0.7 < float((y != 0).float().mean()) < 0.8 and float(y.max()) == pytest.approx(4 / 3)
    channels = ember.feature_dropout(ember.ones(4, 100, 3), 0.5, True)
    assert ((channels == 0).all(-1) | (channels != 0).all(-1)).all()  # whole channels
    z = ember.ones(100, 10)
    assert ember.dropout_(z, 0.5, True) is z and float((z == 0).float().mean()) > 0.3
    out, mask = ember.native_dropout(x, 0.5, None)
    assert mask.dtype is ember.bool and np.array_equal(out.numpy() != 0, mask.numpy())
    out, mask = ember.native_dropout(x, 0.5, False)
    assert mask.all() and out is not x


def test_predicates_sym_functions_and_deprecated_names():
    for dtype in ("bool", "uint8", "int8", "int64", "float16", "float64", "complex64"):
        e = ember.ones(1, dtype=getattr(ember, dtype))
        t = torch.ones(1, dtype=getattr(torch, dtype))
        assert ember.is_signed(e) == torch.is_signed(t) == e.is_signed(), dtype
    assert ember.get_device(ember.ones(1)) == torch.get_device(torch.ones(1)) == -1
    for name, args in [("sym_max", (3, 5)), ("sym_min", (3, 5)), ("sym_not", (True,)),
                       ("sym_ite", (False, 1, 2)), ("sym_int", (3.7,)), ("sym_float", (2,)),
                       ("sym_sum", ([1, 2, 3],)), ("sym_sum", (1, 2)), ("sym_sqrt", (4,)),
                       ("sym_max", (3, 2.0)), ("sym_min", (1.0, 2))]:  # fmt: skip
        got, want = getattr(ember, name)(*args), getattr(torch, name)(*args)
        assert got == want and type(got) is type(want), name
    a, b, c = _r(2, 3), _r(3, 4), _r(4, 2)
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        got = ember.chain_matmul(*(ember.tensor(m) for m in (a, b, c)))
    np.testing.assert_allclose(got.numpy(), a @ b @ c, rtol=1e-12)
    assert ember.get_autocast_cpu_dtype() is ember.bfloat16 and not ember.is_autocast_cpu_enabled()
    ember.set_autocast_cpu_dtype(ember.float16)
    try:
        assert ember.get_autocast_dtype("cpu") is ember.float16
    finally:
        ember.set_autocast_cpu_dtype(ember.bfloat16)
    with pytest.warns(UserWarning, match="frobenius_norm is deprecated"):
        ember.frobenius_norm(ember.ones(2, 2), [0])
    with pytest.raises(RuntimeError, match="one-dimensional"):
        ember.vander(ember.ones(2, 2))
    with pytest.raises(RuntimeError, match="is not a valid value for reduction"):
        ember.kl_div(ember.ones(2), ember.ones(2), 7)


def test_embedding_renorm_scales_the_named_rows_in_place():
    values = _r(5, 3) * 3
    e, t = ember.tensor(values), torch.tensor(values)
    assert ember.embedding_renorm_(e, ember.tensor([0, 2, 2]), 1.0, 2.0) is e
    torch.embedding_renorm_(t, torch.tensor([0, 2, 2]), 1.0, 2.0)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-7)
