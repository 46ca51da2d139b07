"""torch.storage's surface on ember: ``tensor.untyped_storage()`` with PyTorch's methods,
``ember.UntypedStorage(...)``, and the deprecated ``tensor.storage()`` (``TypedStorage``),
each against torch's answers on the same values."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

DTYPES = ["float32", "float64", "int64", "int16", "uint8", "bool"]


def _pair(dtype: str, values=(0, 1, 2, 3, 250, 7)):
    array = np.array(values).astype(dtype)
    return ember.tensor(array), torch.tensor(array)


@pytest.mark.parametrize("dtype", DTYPES)
def test_untyped_storage_bytes_match_torch(dtype, device):
    ours, theirs = _pair(dtype)
    ours = ours.to(device)
    s, t = ours.untyped_storage(), theirs.untyped_storage()
    assert isinstance(s, ember.UntypedStorage) and isinstance(s, ember.storage.UntypedStorage)
    assert s.nbytes() == t.nbytes() == len(s) == s.size()
    assert s.element_size() == t.element_size() == 1
    assert s.dtype == ember.uint8
    assert s.tolist() == t.tolist()
    assert [s[i] for i in (0, 1, -1, -len(t))] == [t[i] for i in (0, 1, -1, -len(t))]
    assert list(s) == list(t)
    assert s.device == ours.device and s.is_cuda == (ours.device.type == "cuda")
    assert s.type() == "ember.storage.UntypedStorage" and t.type() == "torch.storage.UntypedStorage"
    assert s.data_ptr() == ours.data_ptr() or ours.device.type != "cpu"


def test_untyped_storage_writes_reach_the_tensor(device):
    x = ember.zeros(4, dtype=ember.int32, device=device)
    y = torch.zeros(4, dtype=torch.int32)
    for storage in (x.untyped_storage(), y.untyped_storage()):
        storage[4] = 9
        storage[15] = 1
    assert x.tolist() == y.tolist() == [0, 9, 0, 1 << 24]
    x.untyped_storage().fill_(1)
    y.untyped_storage().fill_(1)
    assert x.tolist() == y.tolist()
    assert x.untyped_storage().fill_(0) is x.untyped_storage()


def test_views_share_one_storage():
    x = ember.arange(12.0).reshape(3, 4)
    v = x[1:, ::2]
    assert v.untyped_storage() is x.untyped_storage()
    assert v.untyped_storage().nbytes() == x.untyped_storage().nbytes() == 48


def test_clone_copy_and_devices(device):
    x = ember.arange(6, dtype=ember.int16, device=device)
    s = x.untyped_storage()
    c = s.clone()
    assert c.tolist() == s.tolist() and c.device == s.device
    c[0] = 5
    assert x[0].item() == 0  # the clone does not alias
    s.copy_(c)
    assert x[0].item() == 5
    assert s.cpu().tolist() == s.tolist() and s.cpu().device.type == "cpu"
    assert s.to(device=device) is s


def test_constructors_match_torch():
    assert ember.UntypedStorage(5).nbytes() == torch.UntypedStorage(5).nbytes() == 5
    assert ember.UntypedStorage().nbytes() == 0
    assert ember.UntypedStorage([1, 2, 255]).tolist() == torch.UntypedStorage([1, 2, 255]).tolist()
    with pytest.raises(TypeError):
        ember.UntypedStorage(1, 2)


def test_errors_match_torch():
    ours, theirs = ember.UntypedStorage(3), torch.UntypedStorage(3)
    for key, kind in (("a", TypeError), (5, IndexError), (-4, IndexError)):
        with pytest.raises(kind) as mine:
            ours[key]
        with pytest.raises(kind) as reference:
            theirs[key]
        assert str(mine.value) == str(reference.value).replace("torch", "ember")
    with pytest.raises(RuntimeError) as mine:
        ours.copy_(ember.UntypedStorage(5))
    with pytest.raises(RuntimeError) as reference:
        theirs.copy_(torch.UntypedStorage(5))
    assert str(mine.value) == str(reference.value)


def test_resize_keeps_the_first_bytes_and_tensors_follow():
    x = ember.arange(4, dtype=ember.uint8)
    s = x.untyped_storage()
    s.resize_(6)
    assert s.nbytes() == 6 and s.tolist()[:4] == [0, 1, 2, 3]
    assert x.data_ptr() == s.data_ptr() and x.tolist() == [0, 1, 2, 3]
    s.resize_(2)
    assert s.nbytes() == 2 and s.tolist() == [0, 1]
    s.resize_(0)  # FSDP frees a parameter's memory this way, then resizes it back
    s.resize_(4)
    assert s.nbytes() == 4
    with pytest.raises(RuntimeError, match="not resizable"):
        ember.from_numpy(np.zeros(3, np.uint8)).untyped_storage().resize_(8)


@pytest.mark.parametrize("dtype", DTYPES)
def test_typed_storage_matches_torch(dtype):
    ours, theirs = _pair(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s, t = ours[2:].storage(), theirs[2:].storage()
    assert isinstance(s, ember.TypedStorage)
    assert (s.size(), len(s), s.nbytes(), s.element_size()) == (
        t.size(),
        len(t),
        t.nbytes(),
        t.element_size(),
    )
    assert s.tolist() == t.tolist()
    assert [s[i] for i in (0, -1)] == [t[i] for i in (0, -1)]
    assert type(s[0]) is type(t[0])
    assert s.type() == t.type().replace("torch", "ember")
    assert repr(s).replace("ember", "torch") == repr(t)
    assert s.untyped() is ours.untyped_storage()
    assert s.data_ptr() == ours.untyped_storage().data_ptr()
    s[1] = 1
    t[1] = 1
    assert ours.tolist() == theirs.tolist()
    with pytest.raises(IndexError) as mine:
        s[99]
    with pytest.raises(IndexError) as reference:
        t[99]
    assert str(mine.value) == str(reference.value)


def test_typed_storage_warns_as_torch():
    ember.storage._reset_warn_typed_storage_removal()
    torch.storage._reset_warn_typed_storage_removal()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ember.ones(2).storage()
        torch.ones(2).storage()
    ours, theirs = (str(w.message) for w in caught)
    assert ours == theirs and "TypedStorage is deprecated" in ours
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ember.ones(2).storage()
    assert not caught  # once per process, as PyTorch


def test_typed_storage_constructors():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = ember.TypedStorage([1.0, 2.5], dtype=ember.float64)
        t = torch.TypedStorage([1.0, 2.5], dtype=torch.float64)
        assert s.tolist() == t.tolist() and s.dtype == ember.float64
        wrapped = ember.TypedStorage(wrap_storage=s.untyped(), dtype=ember.float32)
    assert wrapped.size() == 4 and wrapped.untyped() is s.untyped()
    assert s.clone().tolist() == s.tolist() and s.clone().untyped() is not s.untyped()
