"""Corrupt and malicious checkpoints: a clear error, never a crash, never code run, bounded memory.

Covers ``ember.load`` (PyTorch's zip format, and the legacy format it recognises and explains),
``ember.jit.load`` (graph archives) and ``ember.safetensors`` (``load``, ``load_file``,
``safe_open``). Random mutations come from a fixed seed, so a failure reproduces; the case's seed
and mutation are in the assertion message.
"""

import collections
import contextlib
import io
import json
import os
import pickle
import random
import struct
import subprocess
import tracemalloc
import zlib

import pytest

import ember
from ember import _checkpoint_load
from ember import _dtype as dt
from ember import safetensors as st
from ember._checkpoint_pickle import REBUILD_TENSOR, CheckpointPickler, StorageRef, TorchName

SEED = 1212
ALLOWED = (RuntimeError, ValueError, pickle.UnpicklingError)
MEMORY_BOUND = 64 << 20  # far above what any of these tiny files may need


class Named(io.BytesIO):
    name = "fuzzed.pt"


class Overallocation(BaseException):
    """Not an Exception, so no loader can wrap it into a clean-looking error."""


@pytest.fixture(autouse=True)
def bounded_allocation(monkeypatch):
    """Fails the test if a loader asks for a tensor bigger than MEMORY_BOUND."""
    for module in (_checkpoint_load, st):
        real = module.empty

        def guarded(shape, dtype, device, real=real):
            nbytes = dtype.itemsize
            for n in shape:
                nbytes *= n
            if nbytes > MEMORY_BOUND:
                raise Overallocation(f"allocated {nbytes} bytes before validating")
            return real(shape, dtype, device)

        monkeypatch.setattr(module, "empty", guarded)


@contextlib.contextmanager
def peak_memory_below(limit: int):
    tracemalloc.start()
    try:
        yield
        assert tracemalloc.get_traced_memory()[1] < limit
    finally:
        tracemalloc.stop()


def touch(obj) -> None:
    """Runs a kernel over every tensor in ``obj``, so a view outside its storage would show."""
    if isinstance(obj, ember.Tensor):
        obj.detach().clone().reshape(-1).tolist()
    elif isinstance(obj, dict):
        for value in obj.values():
            touch(value)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            touch(value)


def outcome(load, data: bytes, context: str) -> None:
    """``load(data)`` either works (and its tensors read back) or raises a clear error."""
    try:
        touch(load(data))
    except ALLOWED as error:
        assert "fuzzed" in str(error), f"{context}: message does not name the file: {error}"
    except Exception as error:
        raise AssertionError(f"{context}: {type(error).__name__}: {error}") from error


def load_zip(data: bytes):
    return ember.load(Named(data))


def mutations(data: bytes, rng: random.Random):
    """``(description, mutated bytes)``: truncations at many cut points, bit flips, byte runs."""
    step = max(1, len(data) // 600)
    for cut in range(0, len(data), step):
        yield f"truncated at {cut}", data[:cut]
    for _ in range(1000):
        at, bit = rng.randrange(len(data)), rng.randrange(8)
        yield f"bit {bit} of byte {at} flipped", _replace(data, at, bytes([data[at] ^ (1 << bit)]))
    for _ in range(300):
        at, run = rng.randrange(len(data)), rng.randrange(1, 9)
        value = rng.choice([b"\x00", b"\xff", b"\x7f", b"\x80"]) * run
        yield f"{run} bytes at {at} set to {value[:1]!r}", _replace(data, at, value)


def _replace(data: bytes, at: int, value: bytes) -> bytes:
    return data[:at] + value + data[at + len(value) :]


def checkpoint() -> bytes:
    base = ember.arange(12.0).reshape(3, 4)
    obj = {
        "w": base,
        "row": base[1],
        "col": base[:, 2],
        "i": ember.arange(5, dtype=ember.int64),
        "h": ember.ones(3, dtype=ember.bfloat16),
        "p": ember.nn.Parameter(ember.zeros(2)),
        "meta": collections.OrderedDict(step=3, name="x", lr=0.5, flags=(True, None)),
    }
    buf = io.BytesIO()
    ember.save(obj, buf)
    return buf.getvalue()


# ---- random damage ---------------------------------------------------------------------------


def test_damaged_zip_checkpoints():
    data = checkpoint()
    rng = random.Random(SEED)
    with peak_memory_below(MEMORY_BOUND):
        for what, mutated in mutations(data, rng):
            outcome(load_zip, mutated, f"seed {SEED}, {what}")


def test_damaged_torch_checkpoints():
    torch = pytest.importorskip("torch")
    rng = random.Random(SEED + 1)
    for legacy in (False, True):
        buf = io.BytesIO()
        state = {"w": torch.arange(6.0).reshape(2, 3), "n": torch.tensor([1, 2])}
        torch.save(state, buf, _use_new_zipfile_serialization=not legacy)
        for what, mutated in list(mutations(buf.getvalue(), rng))[::3]:
            outcome(load_zip, mutated, f"seed {SEED + 1}, legacy={legacy}, {what}")


def jit_archive() -> bytes:
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU(), ember.nn.Linear(4, 2))
    buf = io.BytesIO()
    ember.jit.save(ember.jit.trace(model, ember.ones(2, 3)), buf)
    return buf.getvalue()


def load_and_run_jit(data: bytes):
    """A loaded archive must also run: a damaged graph may only fail with a clear error."""
    loaded = ember.jit.load(Named(data))
    return loaded(ember.ones(2, 3))


def test_damaged_jit_archives():
    data = jit_archive()
    rng = random.Random(SEED + 3)
    with peak_memory_below(MEMORY_BOUND):
        for what, mutated in list(mutations(data, rng))[::2]:
            outcome(load_and_run_jit, mutated, f"seed {SEED + 3}, {what}")


def safetensors_blob() -> bytes:
    tensors = {
        "w": ember.arange(12.0).reshape(3, 4),
        "i": ember.arange(5, dtype=ember.int16),
        "b": ember.tensor([True, False]),
        "s": ember.tensor(2.5, dtype=ember.float64),
    }
    return st.save(tensors, metadata={"format": "pt"})


def load_safetensors_file(tmp_path):
    path = tmp_path / "fuzzed.safetensors"

    def load(data: bytes):
        path.write_bytes(data)
        if len(data) % 2:
            return st.load_file(path)
        with st.safe_open(path, "pt") as f:
            return {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118 - not a dict

    return load


def load_safetensors_bytes(data: bytes):
    try:
        return st.load(data)
    except st.SafetensorError as error:  # the bytes have no name: give them the test's
        raise st.SafetensorError(f"fuzzed {error}") from None


def test_damaged_safetensors(tmp_path):
    data = safetensors_blob()
    rng = random.Random(SEED + 2)
    on_disk = load_safetensors_file(tmp_path)
    with peak_memory_below(MEMORY_BOUND):
        for i, (what, mutated) in enumerate(mutations(data, rng)):
            load = on_disk if i % 4 == 0 else load_safetensors_bytes
            outcome(load, mutated, f"seed {SEED + 2}, {what}")


# ---- zip checkpoints whose headers lie ---------------------------------------------------------


class Raw:
    """Pickles as ``reduction`` (a (callable, args) pair), whatever it names."""

    def __init__(self, *reduction):
        self.reduction = reduction

    def __reduce__(self):
        return self.reduction


def tensor_pickle(numel, offset, size, stride, dtype=dt.float32) -> bytes:
    storage = StorageRef(dtype, "0", "cpu", numel)
    hooks = collections.OrderedDict()
    out = io.BytesIO()
    obj = Raw(REBUILD_TENSOR, (storage, offset, size, stride, False, hooks))
    CheckpointPickler(out, 2, None, None).dump(obj)
    return out.getvalue()


def raw_zip(entries) -> bytes:
    """A zip archive written by hand: ``(name, payload, method, declared size, declared
    compressed size, crc)`` per record, so declared sizes can lie (zip64 fields when big)."""
    out, central, offset = bytearray(), bytearray(), 0
    for name, payload, method, size, csize, crc in entries:
        raw_name = name.encode()
        if payload is None:  # only a directory entry, for the previous record's bytes
            central += central_entry(raw_name, offset, method, size, csize, crc)
            continue
        offset = len(out)
        zip64 = max(size, csize) >= 0xFFFFFFFF
        extra = struct.pack("<HHQQ", 1, 16, size, csize) if zip64 else b""
        small = (0xFFFFFFFF, 0xFFFFFFFF) if zip64 else (csize, size)
        local = struct.pack("<4s5H3I2H", b"PK\x03\x04", 45, 0, method, 0, 0x21, crc, *small,
                            len(raw_name), len(extra))  # fmt: skip
        out += local + raw_name + extra + payload
        central += central_entry(raw_name, offset, method, size, csize, crc)
    count = len(entries)
    end = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, count, count, len(central), len(out), 0)
    return bytes(out + central + end)


def central_entry(raw_name: bytes, offset: int, method: int, size: int, csize: int, crc: int):
    zip64 = max(size, csize) >= 0xFFFFFFFF
    extra = struct.pack("<HHQQ", 1, 16, size, csize) if zip64 else b""
    small = (0xFFFFFFFF, 0xFFFFFFFF) if zip64 else (csize, size)
    fields = (0x21, crc, *small, len(raw_name), len(extra), 0, 0, 0, 0, offset)
    header = struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 45, 45, 0, method, 0, *fields)
    return header + raw_name + extra


def lying_archive(pickled: bytes, storage: bytes, size=None, csize=None, method=0, order=b"little"):
    """A checkpoint of one storage record, whose declared sizes may lie."""
    payload = storage if method == 0 else _deflate(storage)
    size = len(storage) if size is None else size
    csize = len(payload) if csize is None else csize
    return raw_zip(
        [
            ("archive/data.pkl", pickled, 0, len(pickled), len(pickled), zlib.crc32(pickled)),
            ("archive/byteorder", order, 0, len(order), len(order), zlib.crc32(order)),
            ("archive/data/0", payload, method, size, csize, zlib.crc32(storage)),
        ]
    )


def _deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return packer.compress(data) + packer.flush()


FOUR = bytes(16)  # a 4-element float32 storage
PAIR = pickle.dumps(None)  # data.pkl of the overlap case (never reached)
TB = 1 << 40

LIES = {
    "storage larger than its record": (
        lambda: lying_archive(tensor_pickle(TB // 4, 0, (2,), (1,)), FOUR),
        "holds 16 bytes, but its storage is 274877906944 float32 elements",
    ),
    "record larger than the file (stored, zip64)": (
        lambda: lying_archive(tensor_pickle(TB // 4, 0, (2,), (1,)), FOUR, size=TB, csize=TB),
        "past the end of the archive's data",
    ),
    "record larger than the file (stored, 4 GB)": (
        lambda: lying_archive(tensor_pickle(2**30 - 1, 0, (2,), (1,)), FOUR, *(2**32 - 4,) * 2),
        "past the end of the archive's data",
    ),
    "data.pkl larger than the file": (
        lambda: raw_zip(
            [("archive/data.pkl", b"\x80\x02N.", 0, TB, TB, zlib.crc32(b"\x80\x02N."))]
        ),
        "record archive/data.pkl is corrupt .*past the end of the archive's data",
    ),
    "records sharing their bytes": (
        lambda: raw_zip(
            [
                ("archive/data.pkl", PAIR, 0, len(PAIR), len(PAIR), zlib.crc32(PAIR)),
                ("archive/data/0", FOUR, 0, 16, 16, zlib.crc32(FOUR)),
                ("archive/data/1", None, 0, 16, 16, zlib.crc32(FOUR)),
            ]
        ),
        "records archive/data/0 and archive/data/1 overlap in the file",
    ),
    "stored sizes that disagree": (
        lambda: lying_archive(tensor_pickle(TB // 4, 0, (2,), (1,)), FOUR, size=TB),
        "stored record of 1099511627776 bytes declares 16",
    ),
    "deflated record claiming a TB": (
        lambda: lying_archive(tensor_pickle(TB // 4, 0, (2,), (1,)), FOUR, size=TB, method=8),
        "deflated bytes cannot hold 1099511627776 bytes",
    ),
    "unknown compression": (
        lambda: lying_archive(tensor_pickle(4, 0, (2,), (1,)), FOUR, method=12),
        "compression method bzip2",
    ),
    "offset past the end": (
        lambda: lying_archive(tensor_pickle(4, 100, (2,), (1,)), FOUR),
        r"shape \[2\], stride \[1\] and offset 100 does not fit its storage of 16 bytes",
    ),
    "stride outside the storage": (
        lambda: lying_archive(tensor_pickle(4, 0, (2, 2), (3, 1)), FOUR),
        r"shape \[2, 2\], stride \[3, 1\] and offset 0 does not fit",
    ),
    "numel overflowing int64": (
        lambda: lying_archive(tensor_pickle(4, 0, (2**32, 2**32), (2**32, 1)), FOUR),
        r"numel: integer multiplication overflow \(tensor of size \[4294967296, 4294967296\]\)",
    ),
    "storage size overflowing int64": (
        lambda: lying_archive(tensor_pickle(4, 0, (3, 2), (2**62, 1)), FOUR),
        r"Storage size calculation overflowed with sizes=\[3, 2\] and strides=\[461168601842738",
    ),
    "negative size": (
        lambda: lying_archive(tensor_pickle(4, 0, (-1,), (1,)), FOUR),
        r"Trying to create tensor with negative dimension -1: \[-1\]",
    ),
    "negative stride": (
        lambda: lying_archive(tensor_pickle(4, 3, (2,), (-1,)), FOUR),
        r"negative strides \[-1\]",
    ),
    "negative offset": (
        lambda: lying_archive(tensor_pickle(4, -1, (2,), (1,)), FOUR),
        "invalid storage offset -1",
    ),
    "negative storage size": (
        lambda: lying_archive(tensor_pickle(-4, 0, (2,), (1,)), FOUR),
        "storage '0' has invalid size -4",
    ),
    "sizes that are not integers": (
        lambda: lying_archive(tensor_pickle(4, 0, (2.5,), (1,)), FOUR),
        r"size \(2.5,\), stride \(1,\) and offset 0 must be integers",
    ),
    "fewer strides than sizes": (
        lambda: lying_archive(tensor_pickle(4, 0, (2, 2), (1,)), FOUR),
        r"2 sizes \[2, 2\] but 1 strides",
    ),
}


@pytest.mark.parametrize("case", list(LIES))
def test_zip_headers_that_lie(case):
    make, message = LIES[case]
    with pytest.raises(RuntimeError, match=message) as caught:
        ember.load(Named(make()))
    assert "fuzzed.pt" in str(caught.value)


@pytest.mark.parametrize("method", [0, 8], ids=["stored", "deflated"])
def test_an_honest_hand_made_archive_loads(method):
    # The lies above differ from this archive only in the lie.
    values = struct.pack("<4f", 0, 1, 2, 3)
    data = lying_archive(tensor_pickle(4, 1, (3,), (1,)), values, method=method)
    assert ember.load(Named(data)).tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("order", [b"middle", b"", b"LITTLE", b"\xff"])
def test_unknown_byte_order_raises(order):
    data = lying_archive(tensor_pickle(4, 0, (4,), (1,)), FOUR, order=order)
    with pytest.raises(ValueError, match=r"fuzzed\.pt: Unknown endianness type"):
        ember.load(Named(data))


def test_big_endian_files_are_still_swapped():
    data = lying_archive(tensor_pickle(2, 0, (2,), (1,)), struct.pack(">2f", 1.5, -2), order=b"big")
    assert ember.load(Named(data)).tolist() == [1.5, -2.0]


# ---- malicious pickles -----------------------------------------------------------------------


class Arbitrary:
    """A class a weights-only load must never instantiate."""

    def __init__(self, *args):
        raise AssertionError("instantiated")

    def __reduce__(self):
        return (Arbitrary, ())


def gadgets(sentinel: str) -> dict:
    """name -> (data.pkl payload that would touch ``sentinel`` or run code if obeyed, the error
    expected instead)."""
    command = f"touch {sentinel}"
    reductions = {
        "os.system": (Raw(os.system, (command,)), r"refuses (posix|os)\.system"),
        "builtins.eval": (Raw(eval, (f"open({sentinel!r}, 'w')",)), r"refuses builtins\.eval"),
        "builtins.exec": (Raw(exec, (f"open({sentinel!r}, 'w')",)), r"refuses builtins\.exec"),
        "subprocess.Popen": (
            Raw(subprocess.Popen, (["touch", sentinel],)),
            r"refuses subprocess\.Popen",
        ),
        "builtins.getattr": (Raw(getattr, ("", "join")), r"refuses builtins\.getattr"),
        "arbitrary class": (object.__new__(Arbitrary), r"refuses \S*test_checkpoint_fuzz\.Arb"),
        "bytearray of a TB": (Raw(bytearray, (1 << 40,)), r"bytearray\(\) from a int is not"),
    }
    payloads = {}
    for name, (obj, expected) in reductions.items():
        for protocol in (0, 2, 4, 5):
            payloads[f"{name}, protocol {protocol}"] = (pickle.dumps([obj], protocol), expected)
    quoted = command.encode()
    payloads |= {
        "INST os.system": (b"(S'" + quoted + b"'\nios\nsystem\n.", r"refuses os\.system"),
        "OBJ posix.system": (
            b"\x80\x02(cposix\nsystem\nX" + _len(quoted) + quoted + b"o.",
            r"refuses posix\.system",
        ),
        "STACK_GLOBAL builtins.eval": (
            b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93\x8c\x04 1+1\x85R.",
            r"refuses builtins\.eval",
        ),
        "__builtin__.eval (python 2 name)": (
            b"\x80\x02c__builtin__\neval\nX\x03\x00\x00\x001+1\x85R.",
            r"refuses builtins\.eval",
        ),
        "unregistered extension": (b"\x80\x02\x82\x7f.", "unregistered extension code 127"),
        "BUILD on a tensor": (
            tensor_pickle(4, 0, (4,), (1,))[:-1] + b"}X\x01\x00\x00\x00aK\x01sb.",
            "refuses to set the state of a Tensor object",
        ),
        "NEWOBJ on a dtype": (b"\x80\x02ctorch\nfloat32\n)\x81.", "data.pkl is corrupt"),
        "persistent id that is not a storage": (
            b"\x80\x02X\x04\x00\x00\x00evilQ.",
            "unknown persistent id 'evil'",
        ),
        "rebuild with a forged storage": (_forged_rebuild(), "has no valid storage"),
        "_rebuild_from_type_v2 of a set": (
            _pickled(Raw(FROM_TYPE_V2, (set, TorchName("torch", "Tensor"), ((),), None))),
            "must rebuild a tensor as a tensor type",
        ),
    }
    return payloads


def _len(raw: bytes) -> bytes:
    return len(raw).to_bytes(4, "little")


FROM_TYPE_V2 = TorchName("torch._tensor", "_rebuild_from_type_v2")


def _pickled(obj) -> bytes:
    out = io.BytesIO()
    CheckpointPickler(out, 2, None, None).dump(obj)
    return out.getvalue()


def _forged_rebuild() -> bytes:
    hooks = collections.OrderedDict()
    fake = Raw(TorchName("torch", "Size"), ((4,),))  # a Size where a storage belongs
    return _pickled(Raw(REBUILD_TENSOR, (fake, 0, (4,), (1,), False, hooks)))


def test_malicious_pickles_are_refused_without_running(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sentinel = tmp_path / "pwned"
    for name, (payload, expected) in gadgets(str(sentinel)).items():
        with pytest.raises(ALLOWED, match=expected) as caught:
            ember.load(Named(lying_archive(payload, FOUR)))
        assert "fuzzed.pt" in str(caught.value), name
        assert not sentinel.exists(), f"{name} ran code"


def test_globals_are_refused_as_unpickling_errors():
    for name in ("os.system", "builtins.eval", "subprocess.Popen", "arbitrary class"):
        payload = gadgets("/nonexistent/sentinel")[f"{name}, protocol 2"][0]
        with pytest.raises(pickle.UnpicklingError, match="weights_only load refuses"):
            ember.load(Named(lying_archive(payload, FOUR)))


# ---- safetensors headers that lie ------------------------------------------------------------


def st_blob(header, data: bytes = bytes(16), length=None) -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def entry(shape, offsets, dtype="F32"):
    return {"t": {"dtype": dtype, "shape": shape, "data_offsets": offsets}}


ST_LIES = {
    "header length past the end": (st_blob(entry([4], [0, 16]), length=1 << 40), "header too"),
    "header length just past the end": (st_blob(b"{}", b"", length=3), "has only 10 bytes"),
    "offsets past the end": (st_blob(entry([8], [0, 32])), "cover 32 bytes but the data has 16"),
    "offsets reversed": (st_blob(entry([0], [16, 0])), "invalid shape or offsets"),
    "numel overflowing int64": (
        st_blob(entry([2**32, 2**32], [0, 16])),
        "numel: integer multiplication overflow",
    ),
    "huge shape matching huge offsets": (
        st_blob(entry([2**38], [0, 2**40])),
        "cover 1099511627776 bytes but the data has 16",
    ),
    "negative size": (st_blob(entry([-4], [0, 16])), "invalid shape or offsets"),
    "boolean size": (st_blob(entry([True, 4], [0, 16])), "invalid shape or offsets"),
    "shape and offsets disagree": (st_blob(entry([3], [0, 16])), "needs 12 bytes"),
    "deeply nested header": (
        st_blob(b'{"t": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
        "invalid JSON header",
    ),
    "metadata that is not a mapping": (
        st_blob({"__metadata__": [1], **entry([4], [0, 16])}),
        "__metadata__ must map strings to strings",
    ),
    "unknown dtype": (st_blob(entry([4], [0, 16], "F4")), "F4, which ember"),
    "entry that is not an object": (st_blob({"t": [1, 2]}), "malformed header entry"),
    "not UTF-8": (st_blob(b'{"\xff": 1}'), "invalid JSON header"),
}


@pytest.mark.parametrize("case", list(ST_LIES))
def test_safetensors_headers_that_lie(tmp_path, case):
    blob, message = ST_LIES[case]
    with pytest.raises(st.SafetensorError, match=message):
        st.load(blob)
    path = tmp_path / "lie.safetensors"
    path.write_bytes(blob)
    with pytest.raises(st.SafetensorError, match=message) as caught:
        st.load_file(path)
    assert str(path) in str(caught.value)
