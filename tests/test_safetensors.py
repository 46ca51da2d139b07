"""ember.safetensors: the format by hand, interop with the safetensors package, bad files."""

import itertools
import json
import struct

import numpy as np
import pytest

import ember
from ember import safetensors as st

DTYPES = {
    "BOOL": (ember.bool, np.bool_),
    "U8": (ember.uint8, np.uint8),
    "I8": (ember.int8, np.int8),
    "I16": (ember.int16, np.int16),
    "I32": (ember.int32, np.int32),
    "I64": (ember.int64, np.int64),
    "F16": (ember.float16, np.float16),
    "BF16": (ember.bfloat16, ember.bfloat16.np),
    "F32": (ember.float32, np.float32),
    "F64": (ember.float64, np.float64),
}


def tensors():
    return {
        code: (ember.arange(6).reshape(2, 3) % 4).to(dtype) for code, (dtype, _) in DTYPES.items()
    } | {"scalar": ember.tensor(2.5), "empty": ember.zeros(0, 7)}


def by_hand(entries: dict, metadata=None) -> bytes:
    """A file built from the spec: name -> numpy array, in the given order."""
    header, chunks, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, (code, array) in entries.items():
        raw = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
        header[name] = {
            "dtype": code,
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def parse(blob: bytes):
    (n,) = struct.unpack("<Q", blob[:8])
    return json.loads(blob[8 : 8 + n]), blob[8 + n :], n


def test_roundtrip_bytes_and_files(tmp_path):
    original = tensors()
    st.save_file(original, tmp_path / "m.safetensors")
    for loaded in (st.load(st.save(original)), st.load_file(tmp_path / "m.safetensors")):
        assert set(loaded) == set(original)
        for name, t in original.items():
            assert loaded[name].dtype is t.dtype and loaded[name].shape == t.shape
            np.testing.assert_array_equal(np.asarray(loaded[name]), np.asarray(t))


def test_written_bytes_follow_the_spec():
    blob = st.save(tensors(), metadata={"format": "pt"})
    header, data, n = parse(blob)
    assert n % 8 == 0 and header.pop("__metadata__") == {"format": "pt"}
    spans = sorted(info["data_offsets"] for info in header.values())
    assert spans[0][0] == 0 and spans[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))  # no gaps, no overlaps
    for name, info in header.items():
        if name in DTYPES:
            np_dtype = DTYPES[name][1]
            begin, end = info["data_offsets"]
            assert begin % np.dtype(np_dtype).itemsize == 0  # every tensor is aligned
            got = np.frombuffer(data[begin:end], np_dtype).reshape(info["shape"])
            np.testing.assert_array_equal(got, (np.arange(6).reshape(2, 3) % 4).astype(np_dtype))


def test_reads_a_file_made_by_hand():
    blob = by_hand(
        {
            "w": ("F32", np.linspace(0, 1, 6, dtype=np.float32).reshape(3, 2)),
            "idx": ("I64", np.array([5, -7])),
            "flag": ("BOOL", np.array([True])),
        },
        metadata={"source": "hand"},
    )
    out = st.load(blob)
    np.testing.assert_array_equal(
        out["w"].numpy(), np.linspace(0, 1, 6, dtype=np.float32).reshape(3, 2)
    )
    assert out["idx"].tolist() == [5, -7] and out["flag"].tolist() == [True]


def test_safe_open(tmp_path):
    path = tmp_path / "m.safetensors"
    st.save_file({"b": ember.ones(2), "a": ember.zeros(3)}, path, metadata={"k": "v"})
    with st.safe_open(path, framework="pt") as f:
        assert f.keys() == ["a", "b"] and f.metadata() == {"k": "v"}
        assert f.get_tensor("b").tolist() == [1.0, 1.0]
        with pytest.raises(st.SafetensorError, match="no tensor named 'c'"):
            f.get_tensor("c")


def test_loaded_tensors_own_their_memory():
    out = st.load(st.save({"a": ember.ones(2), "b": ember.ones(2)}))
    assert out["a"]._storage is not out["b"]._storage
    st.save(out)  # so they can be saved again


@pytest.mark.parametrize("code", list(DTYPES))
def test_interop_with_the_safetensors_package(tmp_path, code):
    torch = pytest.importorskip("torch")
    package = pytest.importorskip("safetensors.torch")
    dtype = DTYPES[code][0]
    ours = {"x": (ember.arange(12).reshape(3, 4) % 3).to(dtype), "s": ember.ones(())}
    theirs = package.load(st.save(ours, metadata={"m": "1"}))
    for name, t in ours.items():
        assert str(theirs[name].dtype) == f"torch.{t.dtype.name}"
        np.testing.assert_array_equal(theirs[name].float().numpy(), np.asarray(t.float()))
    path = tmp_path / "theirs.safetensors"
    package.save_file({"x": theirs["x"], "y": torch.arange(3.0)}, path)
    back = st.load_file(path)
    assert back["x"].dtype is dtype and back["y"].tolist() == [0.0, 1.0, 2.0]
    np.testing.assert_array_equal(np.asarray(back["x"].float()), np.asarray(ours["x"].float()))


def test_save_checks_its_input():
    base = ember.ones(4, 4)
    with pytest.raises(ValueError, match="non contiguous tensor: `t`"):
        st.save({"t": base.t()})
    with pytest.raises(RuntimeError, match="share memory"):
        st.save({"a": base, "b": base[1]})
    with pytest.raises(ValueError, match="Expected a dict"):
        st.save([base])
    with pytest.raises(ValueError, match="Key `x` is invalid"):
        st.save({"x": np.ones(2)})
    with pytest.raises(TypeError, match="metadata"):
        st.save({"a": base}, metadata={"n": 1})


def header_only(header: dict, data: bytes = b"") -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


F32_2 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
BAD = {
    "too short": (b"\x01\x00", "header too small"),
    "header past the end": (struct.pack("<Q", 1000) + b"{}", "invalid header length 1000"),
    "huge header": (struct.pack("<Q", 200_000_000), "header too large"),
    "not json": (struct.pack("<Q", 3) + b"{x}", "invalid JSON header"),
    "not an object start": (struct.pack("<Q", 2) + b"[]", "does not start with"),
    "duplicate key": (
        struct.pack("<Q", 15) + b'{"a":1, "a":2 }',
        "duplicate keys",
    ),
    "unknown dtype": (
        header_only({"c": {"dtype": "F4", "shape": [1], "data_offsets": [0, 2]}}, bytes(2)),
        "dtype F4, which ember does not support",
    ),
    "size mismatch": (
        header_only({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, bytes(8)),
        "needs 12 bytes, its offsets give 8",
    ),
    "gap": (
        header_only({"a": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, bytes(12)),
        "starts at byte 4, expected 0",
    ),
    "overlap": (
        header_only(
            {"a": F32_2, "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, bytes(12)
        ),
        "starts at byte 4, expected 8",
    ),
    "trailing bytes": (header_only({"a": F32_2}, bytes(9)), "cover 8 bytes but the data has 9"),
    "truncated data": (header_only({"a": F32_2}, bytes(5)), "cover 8 bytes but the data has 5"),
    "negative shape": (
        header_only({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, bytes(8)),
        "invalid shape or offsets",
    ),
    "missing field": (header_only({"a": {"dtype": "F32", "shape": [2]}}, bytes(8)), "lacks"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_buffers_raise(tmp_path, case):
    blob, message = BAD[case]
    with pytest.raises(st.SafetensorError, match=message):
        st.load(blob)
    path = tmp_path / "bad.safetensors"
    path.write_bytes(blob)
    with pytest.raises(st.SafetensorError, match=message):
        st.load_file(path)
