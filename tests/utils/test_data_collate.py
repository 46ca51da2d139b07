"""default_collate and default_convert against PyTorch's on the same samples."""

import collections

import numpy as np
import pytest

import ember
from ember.utils.data import collate, default_collate, default_convert

torch = pytest.importorskip("torch")
Point = collections.namedtuple("Point", ["x", "y"])


def plain(value):
    """A comparable form of a (nested) batch from either library."""
    if isinstance(value, (ember.Tensor, torch.Tensor)):
        array = np.asarray(value.float() if value.dtype == torch.bfloat16 else value)
        return ("tensor", str(value.dtype).split(".")[-1], array.shape, array.tolist())
    if isinstance(value, Point):
        return ("Point", *map(plain, value))
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [plain(v) for v in value])
    return value


def twin(sample):
    """The same sample with torch tensors in place of ember tensors."""
    if isinstance(sample, ember.Tensor):
        return torch.from_numpy(sample.numpy().copy())
    if isinstance(sample, Point):
        return Point(*map(twin, sample))
    if isinstance(sample, dict):
        return {k: twin(v) for k, v in sample.items()}
    if isinstance(sample, (list, tuple)):
        return type(sample)(map(twin, sample))
    return sample


SAMPLES = {
    "tensors": [ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0])],
    "int tensors 0-d": [ember.tensor(1), ember.tensor(2)],
    "floats": [1.5, 2.5, 3.0],
    "ints": [1, 2, 3],
    "bools": [True, False],
    "strings": ["a", "bb"],
    "bytes": [b"a", b"b"],
    "numpy arrays": [np.ones((2, 2), np.float32), np.zeros((2, 2), np.float32)],
    "numpy scalars": [np.float32(1.5), np.float32(2.5)],
    "numpy int64 scalars": [np.int64(3), np.int64(4)],
    "tuples": [(ember.tensor([1]), 0, "x"), (ember.tensor([2]), 1, "y")],
    "lists": [[1, 2.0], [3, 4.0]],
    "dicts": [{"a": ember.tensor(1.0), "b": [1, 2]}, {"a": ember.tensor(2.0), "b": [3, 4]}],
    "namedtuples": [Point(1, ember.tensor([1.0])), Point(2, ember.tensor([2.0]))],
    "nested": [
        {"img": np.arange(4, dtype=np.int32), "meta": ("id", {"k": 1.0})},
        {"img": np.arange(4, dtype=np.int32) + 1, "meta": ("id2", {"k": 2.0})},
    ],
    "non-contiguous": [ember.arange(6).reshape(2, 3).t(), ember.arange(6).reshape(2, 3).t()],
}


@pytest.mark.parametrize("name", list(SAMPLES))
def test_default_collate_matches_torch(name):
    batch = SAMPLES[name]
    ours = default_collate(batch)
    theirs = torch.utils.data.default_collate([twin(s) for s in batch])
    assert plain(ours) == plain(theirs)


@pytest.mark.parametrize("name", list(SAMPLES))
def test_default_convert_matches_torch(name):
    sample = SAMPLES[name][0]
    ours = default_convert(sample)
    theirs = torch.utils.data.default_convert(twin(sample))
    assert plain(ours) == plain(theirs)


def test_collate_keeps_mapping_and_sequence_types():
    batch = [collections.OrderedDict(a=1, b=2.0), collections.OrderedDict(a=3, b=4.0)]
    assert type(default_collate(batch)) is collections.OrderedDict
    assert type(default_convert(collections.OrderedDict(a=np.zeros(1)))) is collections.OrderedDict


def test_collate_errors_like_torch():
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="found <class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="default_collate"):
        default_collate([np.array(["a"]), np.array(["b"])])
    strings = np.array(["a", "b"])
    assert default_convert(strings) is strings


def test_collate_fn_map_extends_leaves():
    def as_count(batch, *, collate_fn_map):
        return len(batch)

    batch = [{"x": ember.zeros(2), "n": 1}, {"x": ember.zeros(2), "n": 2}]
    out = collate(batch, collate_fn_map={ember.Tensor: as_count, int: as_count})
    assert out == {"x": 2, "n": 2}


def test_collate_dtypes_survive():
    for dtype in (ember.bfloat16, ember.float16, ember.bool, ember.uint8, ember.int8):
        out = default_collate([ember.zeros(3, dtype=dtype), ember.ones(3, dtype=dtype)])
        assert out.dtype is dtype and out.shape == (2, 3)
