"""View ops share storage: values against numpy, metadata against PyTorch where installed."""

from __future__ import annotations

import numpy as np
import pytest

import ember

I8 = np.dtype(np.int64).itemsize


def _strided(a, shape, strides, offset):
    flat = a.reshape(-1)[offset:]
    return np.lib.stride_tricks.as_strided(flat, shape, [s * I8 for s in strides])


def _window(a, dim, size, step):
    return np.moveaxis(np.lib.stride_tricks.sliding_window_view(a, size, axis=dim), dim, dim)[
        (slice(None),) * dim + (slice(None, None, step),)
    ]


# (id, view of a (2, 3, 4) tensor (same call for ember and torch), the numpy equivalent)
VIEWS = [
    ("view", lambda x: x.view(6, 4), lambda a: a.reshape(6, 4)),
    ("view-infer", lambda x: x.view(-1), lambda a: a.reshape(-1)),
    ("view-tuple", lambda x: x.view((4, 6)), lambda a: a.reshape(4, 6)),
    ("view-split-dim", lambda x: x[:, 1].view(2, 2, 2), lambda a: a[:, 1].reshape(2, 2, 2)),
    ("reshape", lambda x: x.reshape(4, -1), lambda a: a.reshape(4, -1)),
    ("permute", lambda x: x.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    ("permute-negative", lambda x: x.permute(-1, 0, 1), lambda a: a.transpose(2, 0, 1)),
    ("transpose", lambda x: x.transpose(0, 2), lambda a: a.swapaxes(0, 2)),
    ("T-matrix", lambda x: x[0].T, lambda a: a[0].T),
    ("mT", lambda x: x.mT, lambda a: a.swapaxes(-2, -1)),
    ("t", lambda x: x[1].t(), lambda a: a[1].T),
    ("expand", lambda x: x[:, :1].expand(2, 3, 4), lambda a: np.broadcast_to(a[:, :1], (2, 3, 4))),
    ("expand-new-dim", lambda x: x.expand(5, 2, 3, 4), lambda a: np.broadcast_to(a, (5, 2, 3, 4))),
    ("expand-keep", lambda x: x[:1].expand(-1, 3, 4), lambda a: a[:1]),
    ("narrow", lambda x: x.narrow(1, 1, 2), lambda a: a[:, 1:3]),
    ("narrow-negative-start", lambda x: x.narrow(-1, -3, 2), lambda a: a[..., 1:3]),
    ("squeeze", lambda x: x[:, :1].squeeze(), lambda a: a[:, 0]),
    ("squeeze-dim", lambda x: x[:, :1].squeeze(1), lambda a: a[:, 0]),
    ("squeeze-not-one", lambda x: x.squeeze(0), lambda a: a),
    ("squeeze-dims", lambda x: x[:1, :1].squeeze((0, 1)), lambda a: a[0, 0]),
    ("unsqueeze", lambda x: x.unsqueeze(1), lambda a: a[:, None]),
    ("unsqueeze-last", lambda x: x.unsqueeze(-1), lambda a: a[..., None]),
    (
        "unsqueeze-strided",
        lambda x: x.transpose(0, 1).unsqueeze(2),
        lambda a: a.swapaxes(0, 1)[:, :, None],
    ),
    ("flatten", lambda x: x.flatten(), lambda a: a.reshape(-1)),
    ("flatten-from", lambda x: x.flatten(1), lambda a: a.reshape(2, 12)),
    ("flatten-range", lambda x: x.flatten(0, 1), lambda a: a.reshape(6, 4)),
    ("unflatten", lambda x: x.unflatten(2, (2, 2)), lambda a: a.reshape(2, 3, 2, 2)),
    ("unflatten-infer", lambda x: x.unflatten(-1, (-1, 2)), lambda a: a.reshape(2, 3, 2, 2)),
    (
        "as_strided",
        lambda x: x.as_strided((3, 3), (1, 2), 1),
        lambda a: _strided(a, (3, 3), (1, 2), 1),
    ),
    (
        "as_strided-own-offset",
        lambda x: x[1].as_strided((2, 2), (4, 1)),
        lambda a: _strided(a, (2, 2), (4, 1), 12),
    ),
    ("contiguous-already", lambda x: x.contiguous(), lambda a: a),
    ("slices-with-steps", lambda x: x[:, ::2, 1::3], lambda a: a[:, ::2, 1::3]),
    ("int", lambda x: x[1], lambda a: a[1]),
    ("negative-ints", lambda x: x[-1, -2], lambda a: a[-1, -2]),
    ("none", lambda x: x[None, :, None], lambda a: a[None, :, None]),
    ("ellipsis", lambda x: x[..., 1], lambda a: a[..., 1]),
    ("int-ellipsis-none", lambda x: x[0, ..., None], lambda a: a[0, ..., None]),
    ("empty-slice", lambda x: x[:, 3:1], lambda a: a[:, 3:1]),
    ("clamped-slice", lambda x: x[:, -10:10], lambda a: a[:, -10:10]),
    ("everything", lambda x: x[...], lambda a: a[...]),
    ("colon", lambda x: x[:], lambda a: a[:]),
    ("select", lambda x: x.select(1, -1), lambda a: a[:, -1]),
    ("diagonal", lambda x: x[0].diagonal(), lambda a: a[0].diagonal()),
    ("diagonal-offset", lambda x: x.diagonal(1, 1, 2), lambda a: a.diagonal(1, 1, 2)),
    ("unfold", lambda x: x.unfold(2, 2, 1), lambda a: _window(a, 2, 2, 1)),
    ("movedim", lambda x: x.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1)),
    ("detach", lambda x: x.detach(), lambda a: a),
    ("swapaxes", lambda x: x.swapaxes(0, 1), lambda a: a.swapaxes(0, 1)),
    ("unbind", lambda x: x.unbind(1)[2], lambda a: a[:, 2]),
    ("split", lambda x: x.split(2, 2)[1], lambda a: a[:, :, 2:4]),
    ("chunk", lambda x: x.chunk(2, 1)[1], lambda a: a[:, 2:]),
    ("expand-as", lambda x: x[:1].expand_as(x), lambda a: np.broadcast_to(a[:1], (2, 3, 4))),
    ("0d-view", lambda x: x[1, 2, 3].view(1, 1), lambda a: a[1, 2, 3].reshape(1, 1)),
    ("0d-unsqueeze", lambda x: x[1, 2, 3].unsqueeze(0), lambda a: a[1, 2, 3][None]),
    ("0d-expand", lambda x: x[1, 2, 3].expand(3), lambda a: np.broadcast_to(a[1, 2, 3], (3,))),
    ("empty-view", lambda x: x[:, :0].view(2, 0, 2, 2), lambda a: a[:, :0].reshape(2, 0, 2, 2)),
]
IDS = [v[0] for v in VIEWS]


def _base():
    return ember.arange(24).view(2, 3, 4), np.arange(24).reshape(2, 3, 4)


@pytest.mark.parametrize("view, reference", [v[1:] for v in VIEWS], ids=IDS)
def test_view_shares_storage(view, reference):
    x, a = _base()
    v = view(x)
    assert v.untyped_storage() is x.untyped_storage()
    expected = reference(a)
    assert tuple(v.shape) == expected.shape
    assert v.tolist() == expected.tolist()
    assert v.data_ptr() == x.untyped_storage().data_ptr() + v.storage_offset() * I8
    if v.numel() and 0 not in v.stride():
        v.fill_(-1)  # writes through the view land in the base, exactly where it points
        a.reshape(-1)[expected.reshape(-1)] = -1  # the base's values are their own positions
        assert x.tolist() == a.tolist()


@pytest.mark.parametrize("view", [v[1] for v in VIEWS], ids=IDS)
def test_view_metadata_matches_torch(view):
    torch = pytest.importorskip("torch")
    ours = view(ember.arange(24).view(2, 3, 4))
    theirs = view(torch.arange(24).view(2, 3, 4))
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert tuple(ours.stride()) == tuple(theirs.stride())
    assert ours.is_contiguous() == theirs.is_contiguous()
    if ours.numel():
        assert ours.storage_offset() == theirs.storage_offset()


def test_T_reverses_every_dim():
    x = ember.arange(24).view(2, 3, 4)
    assert x.T.shape == (4, 3, 2) and x.T.stride() == (1, 4, 12)
    assert ember.arange(3).T.shape == (3,)


def test_contiguous_copies_only_when_needed():
    x = ember.arange(6).view(2, 3)
    assert x.contiguous() is x
    t = x.T
    assert not t.is_contiguous()
    c = t.contiguous()
    assert c.is_contiguous() and c.stride() == (2, 1)
    assert c.untyped_storage() is not x.untyped_storage()
    assert c.tolist() == [[0, 3], [1, 4], [2, 5]]


@pytest.mark.parametrize(
    "make, contiguous",
    [
        (lambda: ember.zeros(2, 3), True),
        (lambda: ember.zeros(2, 3).T, False),
        (lambda: ember.zeros(2, 3)[:, :1], False),
        (lambda: ember.zeros(2, 3)[:1], True),
        (lambda: ember.zeros(3, 1).expand(3, 4), False),
        (lambda: ember.zeros(1, 4).expand(1, 4), True),
        (lambda: ember.zeros(4, 1)[:, 0], True),  # the column of a (4, 1) tensor has stride 1
        (lambda: ember.zeros(2, 0, 3).transpose(0, 2), True),
        (lambda: ember.zeros(()), True),
    ],
)
def test_is_contiguous(make, contiguous):
    assert make().is_contiguous() is contiguous


def test_reshape_copies_only_when_it_must():
    x = ember.arange(12).view(3, 4)
    assert x.reshape(4, 3).untyped_storage() is x.untyped_storage()
    t = x.T
    r = t.reshape(-1)
    assert r.untyped_storage() is not x.untyped_storage()
    assert r.tolist() == np.arange(12).reshape(3, 4).T.reshape(-1).tolist()
    r.fill_(0)
    assert x[0, 1].item() == 1  # the copy does not write back


@pytest.mark.parametrize(
    "make, shape",
    [
        (lambda: ember.arange(12).view(3, 4).T, (12,)),
        (lambda: ember.arange(12).view(3, 4)[:, 1:3], (6,)),
        (lambda: ember.arange(24).view(2, 3, 4).permute(1, 0, 2), (6, 4)),
    ],
)
def test_view_refuses_incompatible_strides(make, shape):
    x = make()
    with pytest.raises(RuntimeError) as info:
        x.view(shape)
    message = str(info.value)
    assert "view size is not compatible with input tensor's size and stride" in message
    assert f"input shape {list(x.shape)}" in message and "Use .reshape(...) instead" in message
    assert x.reshape(shape).tolist() == np.array(x.tolist()).reshape(shape).tolist()


def test_view_allows_compatible_non_contiguous_strides():
    x = ember.arange(24).view(2, 3, 4).permute(1, 0, 2)  # (3, 2, 4), strides (4, 12, 1)
    v = x.view(3, 2, 2, 2)
    assert v.stride() == (4, 12, 2, 1)
    assert v.untyped_storage() is x.untyped_storage()
    every_other = ember.arange(12).view(3, 4)[:, ::2]  # strides (4, 2): the dims still merge
    assert every_other.view(6).stride() == (2,)
    assert every_other.view(6).tolist() == [0, 2, 4, 6, 8, 10]


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda x: x.view(5, 5), RuntimeError, r"shape '\[5, 5\]' is invalid for input of size 24"),
        (lambda x: x.view(-1, -1), RuntimeError, "only one dimension can be inferred"),
        (lambda x: x.view(-2, 12), RuntimeError, r"invalid shape dimension -2 at index 0 of shape"),
        (lambda x: x.view("a"), TypeError, "size must be a sequence of ints"),
        (lambda x: x.permute(0, 1), RuntimeError, "number of dims don't match in permute"),
        (lambda x: x.permute(0, 1, 1), RuntimeError, r"duplicate dims are not allowed"),
        (
            lambda x: x.transpose(0, 3),
            IndexError,
            r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)",
        ),
        (
            lambda x: x.expand(2, 5, 4),
            RuntimeError,
            r"expanded size of the tensor \(5\) must match the existing size \(3\)",
        ),
        (
            lambda x: x.expand(4),
            RuntimeError,
            r"number of sizes provided \(1\) must be greater or equal",
        ),
        (
            lambda x: x.narrow(1, 2, 2),
            RuntimeError,
            r"start \(2\) \+ length \(2\) exceeds dimension size \(3\)",
        ),
        (
            lambda x: x.unflatten(2, (3, 2)),
            RuntimeError,
            r"shape '\[3, 2\]' is invalid for input of size 4",
        ),
        (lambda x: x.flatten(2, 1), RuntimeError, "start_dim cannot come after end_dim"),
        (lambda x: x.squeeze(3), IndexError, "Dimension out of range"),
        (lambda x: x.unsqueeze(4), IndexError, "Dimension out of range"),
        (
            lambda x: x.select(1, 3),
            IndexError,
            "index 3 is out of bounds for dimension 1 with size 3",
        ),
        (
            lambda x: x.as_strided((5,), (6,)),
            RuntimeError,
            "reach outside the storage of 192 bytes",
        ),
        (lambda x: x.as_strided((2,), (1, 1)), RuntimeError, "mismatch in length of strides"),
        (lambda x: x.diagonal(0, 1, 1), RuntimeError, "diagonal dimensions cannot be identical"),
        (lambda x: x.unfold(2, 5, 1), RuntimeError, "maximum size for tensor at dimension 2 is 4"),
        (lambda x: x[0, 0].mT, RuntimeError, r"tensor.mT is only supported on matrices.*Got 1-D"),
        (lambda x: x.t(), RuntimeError, r"t\(\) expects a tensor with <= 2 dimensions"),
    ],
)
def test_view_errors(make, error, message):
    with pytest.raises(error, match=message):
        make(ember.arange(24).view(2, 3, 4))


def test_metadata_accessors():
    x = ember.arange(24).view(2, 3, 4)[1, :, 1:]
    assert x.shape == (3, 3) and x.size() == (3, 3) and x.size(-1) == 3
    assert x.stride() == (4, 1) and x.stride(0) == 4
    assert x.storage_offset() == 13
    assert x.dim() == x.ndim == x.ndimension() == 2
    assert x.numel() == x.nelement() == 9
    assert x.nbytes == 72 and x.element_size() == 8
    assert len(x) == 3
    assert x.untyped_storage().nbytes() == 192
    with pytest.raises(IndexError, match=r"size\(\): Dimension out of range"):
        x.size(2)
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(ember.tensor(1))


def test_views_see_later_writes_to_the_base():
    x = ember.zeros(2, 3)
    row, col, flat = x[1], x[:, 2], x.view(-1)
    x.fill_(0)
    x[1, 2] = 5
    assert row.tolist() == [0.0, 0.0, 5.0]
    assert col.tolist() == [0.0, 5.0]
    assert flat[5].item() == 5.0


def test_size_behaves_like_a_tuple():
    size = ember.zeros(2, 3).shape
    assert isinstance(size, tuple) and size == (2, 3) and size[1] == 3
    assert repr(size) == "ember.Size([2, 3])"
    assert size.numel() == 6
