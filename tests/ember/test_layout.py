"""ember's layouts against PyTorch's: the constants, ``Tensor.layout``, ``layout=`` on every
factory PyTorch gives it to (strided made as PyTorch makes it, the other layouts refused with
NotImplementedError naming the op), and layouts inside checkpoints both ways."""

from __future__ import annotations

import io
import pickle
import warnings

import pytest
import torch

import ember

NAMES = (
    "strided",
    "sparse_coo",
    "sparse_csr",
    "sparse_csc",
    "sparse_bsr",
    "sparse_bsc",
    "_mkldnn",
    "jagged",
)


def _tensor(lib):
    return lib.arange(6.0).reshape(2, 3)


# (name, call): the same call on torch and on ember, ``layout`` passed through ``kw``
FACTORIES = [
    ("empty", lambda lib, **kw: lib.empty(2, 3, **kw)),
    ("zeros", lambda lib, **kw: lib.zeros(2, 3, **kw)),
    ("ones", lambda lib, **kw: lib.ones((2, 3), **kw)),
    ("full", lambda lib, **kw: lib.full((2, 3), 1.5, **kw)),
    ("rand", lambda lib, **kw: lib.rand(2, 3, **kw)),
    ("randn", lambda lib, **kw: lib.randn(2, 3, **kw)),
    ("randint", lambda lib, **kw: lib.randint(0, 5, (2, 3), **kw)),
    ("randperm", lambda lib, **kw: lib.randperm(5, **kw)),
    ("normal", lambda lib, **kw: lib.normal(0.0, 1.0, (4,), **kw)),
    ("arange", lambda lib, **kw: lib.arange(1, 7, 2, **kw)),
    ("range", lambda lib, **kw: lib.range(1, 4, 0.5, **kw)),
    ("linspace", lambda lib, **kw: lib.linspace(0, 1, 5, **kw)),
    ("logspace", lambda lib, **kw: lib.logspace(0, 2, 3, **kw)),
    ("eye", lambda lib, **kw: lib.eye(3, 2, **kw)),
    ("empty_strided", lambda lib, **kw: lib.empty_strided((2, 3), (1, 2), **kw)),
    ("empty_permuted", lambda lib, **kw: lib.empty_permuted((2, 3), (1, 0), **kw)),
    ("scalar_tensor", lambda lib, **kw: lib.scalar_tensor(3, **kw)),
    ("tril_indices", lambda lib, **kw: lib.tril_indices(3, 4, 1, **kw)),
    ("triu_indices", lambda lib, **kw: lib.triu_indices(4, 3, -1, **kw)),
    ("empty_like", lambda lib, **kw: lib.empty_like(_tensor(lib), **kw)),
    ("zeros_like", lambda lib, **kw: lib.zeros_like(_tensor(lib), **kw)),
    ("ones_like", lambda lib, **kw: lib.ones_like(_tensor(lib), **kw)),
    ("full_like", lambda lib, **kw: lib.full_like(_tensor(lib), 7, **kw)),
    ("rand_like", lambda lib, **kw: lib.rand_like(_tensor(lib), **kw)),
    ("randn_like", lambda lib, **kw: lib.randn_like(_tensor(lib), **kw)),
    ("randint_like", lambda lib, **kw: lib.randint_like(_tensor(lib), 3, **kw)),
    ("new_empty", lambda lib, **kw: _tensor(lib).new_empty((2,), **kw)),
    ("new_zeros", lambda lib, **kw: _tensor(lib).new_zeros((2,), **kw)),
    ("new_ones", lambda lib, **kw: _tensor(lib).new_ones(2, **kw)),
    ("new_full", lambda lib, **kw: _tensor(lib).new_full((2,), 4.0, **kw)),
    ("new_empty_strided", lambda lib, **kw: _tensor(lib).new_empty_strided((2,), (2,), **kw)),
    ("bartlett_window", lambda lib, **kw: lib.bartlett_window(5, **kw)),
    ("blackman_window", lambda lib, **kw: lib.blackman_window(5, **kw)),
    ("hamming_window", lambda lib, **kw: lib.hamming_window(5, **kw)),
    ("hann_window", lambda lib, **kw: lib.hann_window(5, **kw)),
    ("kaiser_window", lambda lib, **kw: lib.kaiser_window(5, **kw)),
    ("fftfreq", lambda lib, **kw: lib.fft.fftfreq(5, **kw)),
    ("rfftfreq", lambda lib, **kw: lib.fft.rfftfreq(5, **kw)),
]
# whose values are not the same in both libraries (uninitialised or random): shape and dtype only
UNVALUED = {
    "empty",
    "rand",
    "randn",
    "randint",
    "randperm",
    "normal",
    "empty_strided",
    "empty_permuted",
    "empty_like",
    "rand_like",
    "randn_like",
    "randint_like",
    "new_empty",
    "new_empty_strided",
}
IDS = [name for name, _ in FACTORIES]


def _quiet(call, lib, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch.range is deprecated, and says so
        return call(lib, **kw)


@pytest.mark.parametrize("name", NAMES)
def test_constants_print_as_pytorchs_and_pickle_as_themselves(name):
    value = getattr(ember, name)
    assert isinstance(value, ember.layout)
    assert repr(value) == str(getattr(torch, name)).replace("torch.", "ember.")
    assert pickle.loads(pickle.dumps(value)) is value


def test_every_tensor_is_strided():
    t = ember.arange(6.0).reshape(2, 3)
    for each in (t, t.t(), t[:, 1], ember.zeros(()), t.to(ember.int32)):
        assert each.layout is ember.strided
    assert t.is_sparse is torch.zeros(1).is_sparse is False
    assert t.is_sparse_csr is torch.zeros(1).is_sparse_csr is False


@pytest.mark.parametrize("layout", [None, "strided"])
@pytest.mark.parametrize("name, call", FACTORIES, ids=IDS)
def test_factory_takes_strided_as_pytorch(name, call, layout):
    want = _quiet(call, torch) if layout is None else _quiet(call, torch, layout=torch.strided)
    got = _quiet(call, ember) if layout is None else _quiet(call, ember, layout=ember.strided)
    assert got.layout is ember.strided and want.layout is torch.strided
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
    if name not in UNVALUED:
        torch.testing.assert_close(torch.from_numpy(got.numpy()), want)


@pytest.mark.parametrize("name, call", FACTORIES, ids=IDS)
@pytest.mark.parametrize("layout", ["sparse_coo", "sparse_csr", "sparse_bsc", "_mkldnn", "jagged"])
def test_factory_refuses_other_layouts_naming_the_op(name, call, layout):
    with pytest.raises(NotImplementedError, match=rf"^{name}\(\): layout=ember\.{layout} is not"):
        _quiet(call, ember, layout=getattr(ember, layout))


@pytest.mark.parametrize("name, call", FACTORIES, ids=IDS)
def test_factory_refuses_a_non_layout_as_pytorch(name, call):
    # torch's message is its single-overload one or, for overloaded factories, the list of
    # overloads; ember's factories have one signature, so always the first
    with pytest.raises(TypeError, match="layout"):
        _quiet(call, torch, layout="strided")
    with pytest.raises(TypeError, match=r"argument 'layout' must be torch\.layout, not str"):
        _quiet(call, ember, layout="strided")


@pytest.mark.parametrize("saver, loader", [(ember, torch), (torch, ember)], ids=["ember", "torch"])
def test_checkpoint_layouts_load_in_the_other_library(saver, loader):
    buffer = io.BytesIO()
    saver.save({"layout": saver.strided, "other": saver.sparse_csr, "t": saver.ones(2)}, buffer)
    for weights_only in (True, False):
        buffer.seek(0)
        loaded = loader.load(buffer, weights_only=weights_only)
        assert loaded["layout"] is loader.strided and loaded["other"] is loader.sparse_csr
        assert loaded["t"].tolist() == [1.0, 1.0]
