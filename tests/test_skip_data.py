"""``ember.serialization.skip_data`` against ``torch.serialization.skip_data``: archives saved
inside it have torch's record layout (every storage record reserved: its size, zero bytes, CRC
0) and load in either library with the structure of the state saved; a later pass can fill the
reserved bytes in place; loading inside it builds the tensors without reading their bytes."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
import torch

import ember
from ember._checkpoint_load import CheckpointError
from ember._checkpoint_mmap import data_offset


def _state(lib):
    """Two storages of two dtypes, a view sharing the first, a parameter-like int tensor."""
    w = lib.arange(12.0).reshape(3, 4)
    return {"w": w, "row": w[1], "b": lib.ones(5, dtype=lib.float16), "n": lib.tensor([7, 8])}


def _saved(lib, skip: bool) -> io.BytesIO:
    buffer = io.BytesIO()
    if skip:
        with lib.serialization.skip_data():
            lib.save(_state(lib), buffer)
    else:
        lib.save(_state(lib), buffer)
    buffer.seek(0)
    return buffer


def _records(buffer) -> list:
    """(name, size, CRC, bytes start % 64, bytes) of every record, in file order."""
    found = []
    with zipfile.ZipFile(buffer) as zf:
        for info in sorted(zf.infolist(), key=lambda i: i.header_offset):
            start = data_offset(zf.fp, info)
            zf.fp.seek(start)
            data = zf.fp.read(info.file_size)
            found.append((info.filename, info.file_size, info.CRC, start % 64, data))
    buffer.seek(0)
    return found


def _structure(loaded) -> dict:
    return {k: (tuple(v.shape), str(v.dtype).split(".")[1]) for k, v in loaded.items()}


def test_record_layout_is_torchs():
    ours, theirs = _records(_saved(ember, True)), _records(_saved(torch, True))
    # torch also writes .data/serialization_id, a random id ember does not write
    theirs = [r for r in theirs if r[0] != "archive/.data/serialization_id"]
    assert [r[:4] for r in ours] == [r[:4] for r in theirs]
    assert ours == theirs  # data.pkl included: the same pickle
    storages = [r for r in ours if r[0].startswith("archive/data/")]
    assert len(storages) == 3
    assert all(crc == 0 and data == bytes(size) for _, size, crc, _, data in storages)


@pytest.mark.parametrize("weights_only", [True, False])
def test_ember_archive_loads_in_torch_as_torchs_does(weights_only):
    ours = torch.load(_saved(ember, True), weights_only=weights_only)
    theirs = torch.load(_saved(torch, True), weights_only=weights_only)
    assert _structure(ours) == _structure(theirs)
    assert ours["row"].untyped_storage().data_ptr() == ours["w"].untyped_storage().data_ptr()
    for key in theirs:
        torch.testing.assert_close(ours[key], theirs[key])  # zeros in both


def test_torch_archive_loads_in_ember_as_in_torch():
    loaded = ember.load(_saved(torch, True))
    want = torch.load(_saved(torch, True))
    assert _structure(loaded) == _structure(want)
    for key in want:
        assert loaded[key].tolist() == want[key].tolist()


def test_a_later_pass_fills_the_reserved_bytes():
    buffer = _saved(ember, True)
    values = {"archive/data/0": np.arange(12.0, dtype=np.float32), "archive/data/2": None}
    raw = bytearray(buffer.getvalue())
    with zipfile.ZipFile(io.BytesIO(bytes(raw))) as zf:
        info = zf.getinfo("archive/data/0")
        start = data_offset(zf.fp, info)
    raw[start : start + info.file_size] = values["archive/data/0"].tobytes()
    for lib in (torch, ember):
        loaded = lib.load(io.BytesIO(bytes(raw)))
        assert loaded["w"].tolist() == np.arange(12.0).reshape(3, 4).tolist()
        assert loaded["row"].tolist() == [4.0, 5.0, 6.0, 7.0]


def test_load_inside_skip_data_reads_no_bytes():
    raw = bytearray(_saved(ember, False).getvalue())
    with zipfile.ZipFile(io.BytesIO(bytes(raw))) as zf:
        info = zf.getinfo("archive/data/0")
        start = data_offset(zf.fp, info)
    raw[start] ^= 0xFF  # corrupt the storage's bytes: reading them fails the CRC check
    with pytest.raises(CheckpointError, match="corrupt"):
        ember.load(io.BytesIO(bytes(raw)))
    with ember.serialization.skip_data():
        loaded = ember.load(io.BytesIO(bytes(raw)))
    with torch.serialization.skip_data():
        want = torch.load(_saved(torch, False))
    assert _structure(loaded) == _structure(want)


def test_the_state_is_restored_on_exit():
    with ember.serialization.skip_data(materialize_fake_tensors=True):
        with ember.serialization.skip_data():
            pass
        buffer = io.BytesIO()
        ember.save({"t": ember.ones(2)}, buffer)
    assert _records(buffer)[4][2] == 0  # still skipping inside the outer block
    buffer = io.BytesIO()
    ember.save({"t": ember.ones(2)}, buffer)
    assert ember.load(io.BytesIO(buffer.getvalue()))["t"].tolist() == [1.0, 1.0]
