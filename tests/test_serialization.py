"""ember.save / ember.load (PyTorch's zip format, both ways), pickling tensors, bad files."""

import collections
import copy
import io
import os
import pathlib
import pickle
import zipfile

import numpy as np
import pluggy
import pytest

import ember
from ember._dtype import ALL

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "torch_state_dict.pt"
ALL_DTYPES = ALL  # every dtype, in code order


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def values(t):
    """Comparable numpy values of an ember or torch tensor (bfloat16 through float32)."""
    if hasattr(t, "detach") and str(t.dtype).endswith("bfloat16"):
        t = t.float() if hasattr(t, "float") else t
    return np.asarray(t.detach().numpy() if hasattr(t, "detach") else t).astype(np.float64)


def sample(dtype, shape=(3, 4)):
    return (ember.arange(int(np.prod(shape))).reshape(shape) % 5).to(dtype)


def roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return ember.load(buf, **load_kwargs)


def rewrite(data: bytes, edit) -> bytes:
    """The archive with ``edit(name, payload)`` applied to every record."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            dst.writestr(info.filename, edit(info.filename, src.read(info)))
    return out.getvalue()


def archive(records: dict) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, payload in records.items():
            zf.writestr(f"archive/{name}", payload)
    return out.getvalue()


def saved(obj) -> bytes:
    buf = io.BytesIO()
    ember.save(obj, buf)
    return buf.getvalue()


# ---- ember -> ember ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_roundtrip_every_dtype(dtype):
    t = sample(dtype)
    out = roundtrip({"t": t})["t"]
    assert out.dtype is dtype and out.shape == t.shape
    np.testing.assert_array_equal(values(out), values(t))


def test_roundtrip_shapes_and_views_keep_sharing():
    base = ember.arange(24, dtype=ember.float32).reshape(4, 6)
    obj = {
        "base": base,
        "t": base.t(),
        "row": base[2],
        "cols": base[:, 1:5:2],
        "scalar": ember.tensor(3.5),
        "empty": ember.zeros(0, 3),
    }
    out = roundtrip(obj)
    for key, t in obj.items():
        assert out[key].shape == t.shape and out[key].stride() == t.stride()
        np.testing.assert_array_equal(out[key].numpy(), t.numpy())
    assert out["t"]._storage is out["base"]._storage is out["cols"]._storage
    out["base"][2, 0] = -1.0  # still views of one storage
    assert out["row"][0].item() == -1.0 and out["t"][0, 2].item() == -1.0


def test_roundtrip_containers_and_python_values():
    t = ember.ones(2)
    obj = [
        collections.OrderedDict(a=t, b=(t, t)),
        {1, 2, 3},
        frozenset({"x"}),
        ("text", b"bytes", None, True, 3, 2.5, 1 + 2j),
        ember.float16,
        ember.device("cpu"),
        ember.Size([2, 3]),
    ]
    out = roundtrip(obj)
    assert type(out[0]) is collections.OrderedDict
    assert out[0]["b"][0] is out[0]["a"]  # the same tensor object stays one object
    assert out[1:] == obj[1:]
    assert out[4] is ember.float16 and isinstance(out[6], ember.Size)


def test_requires_grad_and_negative_strides():
    t = ember.ones(3, requires_grad=True)
    flipped = ember.from_numpy(np.arange(5.0)[::-1])
    out = roundtrip({"t": t, "flipped": flipped})
    assert out["t"].requires_grad
    np.testing.assert_array_equal(out["flipped"].numpy(), [4.0, 3.0, 2.0, 1.0, 0.0])


def test_paths_and_file_objects(tmp_path):
    t = ember.arange(5)
    ember.save(t, tmp_path / "a.pt")
    ember.save(t, str(tmp_path / "b.pt"))
    with open(tmp_path / "c.pt", "wb") as f:
        ember.save(t, f)
    for name in "abc":
        assert ember.load(tmp_path / f"{name}.pt").tolist() == [0, 1, 2, 3, 4]
    with open(tmp_path / "c.pt", "rb") as f:
        assert ember.load(f).tolist() == [0, 1, 2, 3, 4]


def test_records_are_aligned_and_stored():
    data = saved({"a": ember.ones(3), "b": ember.zeros(5, dtype=ember.int8)})
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = zf.namelist()
        assert names[0] == "archive/data.pkl" and "archive/byteorder" in names
        assert zf.read("archive/version") == b"3\n"
        for info in zf.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            if info.filename.startswith("archive/data/"):
                start = info.header_offset + 30 + len(info.filename) + len(info.extra)
                assert start % 64 == 0
    assert saved({"a": ember.ones(3)}) == saved({"a": ember.ones(3)})  # deterministic


# ---- PyTorch <-> ember ---------------------------------------------------------------------


def test_fixture_written_by_torch():
    state = ember.load(FIXTURE)
    weight = np.arange(12, dtype=np.float32).reshape(3, 4) / 8
    expected = {
        "linear.weight": weight,
        "linear.weight_t": weight.T,
        "linear.row": weight[1],
        "linear.bias": np.array([0.5, -1.5, 2.25]),
        "steps": np.array(7),
        "mask": np.array([True, False, True]),
        "half": np.arange(4) / 4,
        "bf16": np.arange(4) - 2,
        "bytes": np.arange(5) * 50,
        "small": np.arange(-3, 3),
        "short": np.arange(3) * -1000,
        "int": np.arange(3) * 100000,
    }
    dtypes = {"linear.bias": ember.float64, "steps": ember.int64, "mask": ember.bool}
    dtypes.update(half=ember.float16, bf16=ember.bfloat16, bytes=ember.uint8, small=ember.int8)
    dtypes.update(short=ember.int16, int=ember.int32)
    assert list(state) == list(expected)
    for key, want in expected.items():
        assert state[key].dtype is dtypes.get(key, ember.float32)
        np.testing.assert_array_equal(values(state[key]), want)
    assert state["linear.weight_t"]._storage is state["linear.weight"]._storage
    assert state["linear.row"].storage_offset() == 4
    assert not state["linear.weight_t"].is_contiguous()
    assert state._metadata == {"linear": {"version": 1}}  # BUILD on an OrderedDict is allowed


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_torch_reads_ember_checkpoints(torch, dtype):
    base = sample(dtype, (4, 5))
    buf = io.BytesIO(saved({"base": base, "t": base.t(), "row": base[1]}))
    out = torch.load(buf, weights_only=True)
    assert str(out["base"].dtype) == f"torch.{dtype.name}"
    for key, t in (("base", base), ("t", base.t()), ("row", base[1])):
        np.testing.assert_array_equal(values(out[key]), values(t))
        assert out[key].stride() == t.stride()
    assert out["t"].untyped_storage().data_ptr() == out["base"].untyped_storage().data_ptr()


def test_torch_reads_ember_python_values(torch):
    obj = {"dtype": ember.bfloat16, "device": ember.device("cpu"), "size": ember.Size([2]), "n": 1}
    out = torch.load(io.BytesIO(saved(obj)), weights_only=True)
    assert out == {"dtype": torch.bfloat16, "device": torch.device("cpu"), "size": (2,), "n": 1}
    assert isinstance(out["size"], torch.Size)


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_ember_reads_torch_checkpoints(torch, protocol):
    base = torch.arange(20, dtype=torch.float32).reshape(4, 5)
    obj = {
        "nested": [{"t": base.t()}, (base[2], torch.ones(2, dtype=torch.bfloat16))],
        "base": base,
        "meta": (torch.float64, torch.Size([1, 2]), "name", 7, b"raw"),
    }
    buf = io.BytesIO()
    torch.save(obj, buf, pickle_protocol=protocol)
    buf.seek(0)
    out = ember.load(buf)
    np.testing.assert_array_equal(out["nested"][0]["t"].numpy(), base.t().numpy())
    np.testing.assert_array_equal(out["nested"][1][0].numpy(), base[2].numpy())
    assert out["nested"][1][1].dtype is ember.bfloat16
    assert out["nested"][0]["t"]._storage is out["base"]._storage
    assert out["meta"] == (ember.float64, ember.Size([1, 2]), "name", 7, b"raw")


def test_ember_reads_torch_module_state_dict_and_parameters(torch):
    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 2)
    buf = io.BytesIO()
    torch.save({"state": layer.state_dict(), "param": layer.weight}, buf)
    buf.seek(0)
    out = ember.load(buf)
    np.testing.assert_array_equal(out["state"]["weight"].numpy(), layer.weight.detach().numpy())
    assert type(out["param"]) is ember.nn.Parameter and out["param"].requires_grad
    assert "version" in out["state"]._metadata[""]


def test_parameters_stay_parameters(torch):
    weight = ember.nn.Parameter(ember.ones(2, 3))
    data = saved({"weight": weight, "again": weight})
    theirs = torch.load(io.BytesIO(data), weights_only=True)
    assert isinstance(theirs["weight"], torch.nn.Parameter) and theirs["again"] is theirs["weight"]
    ours = ember.load(io.BytesIO(data))
    assert type(ours["weight"]) is ember.nn.Parameter and ours["weight"].requires_grad
    assert ours["again"] is ours["weight"]


def _with_attributes(lib):
    t = lib.ones(2)
    t.note = {"step": 3}
    p = lib.nn.Parameter(lib.ones(2))
    p.tag = "encoder"
    return {"t": t, "p": p, "b": lib.nn.Buffer(lib.ones(1), persistent=False), "plain": lib.ones(1)}


def _attributes(loaded: dict) -> dict:
    return {k: (type(v).__name__, dict(v.__dict__)) for k, v in loaded.items()}


def test_python_attributes_are_saved_as_torch_saves_them(torch):
    """torch.save keeps a tensor's (and a parameter's) attributes; a Buffer is a tensor marked
    _is_buffer. Files cross both ways, weights-only loads included."""
    buf = io.BytesIO()
    torch.save(_with_attributes(torch), buf)
    want = _attributes(torch.load(io.BytesIO(buf.getvalue()), weights_only=True))
    assert want["t"] == ("Tensor", {"note": {"step": 3}})  # the expectation holds in torch
    ours = saved(_with_attributes(ember))
    assert _attributes(torch.load(io.BytesIO(ours), weights_only=True)) == want
    assert _attributes(ember.load(io.BytesIO(ours))) == want
    assert _attributes(ember.load(io.BytesIO(buf.getvalue()))) == want


def test_autograd_bookkeeping_is_not_saved(torch):
    x = ember.ones(2, requires_grad=True) * 2
    x.retain_grad()
    x.register_hook(lambda g: g)
    loaded = torch.load(io.BytesIO(saved({"x": x})), weights_only=True)["x"]
    assert loaded.__dict__ == {} and type(loaded) is torch.Tensor


class NamedTensor(ember.Tensor):
    """A tensor subclass of the user's own: saved by reference, loaded with weights_only=False."""


def test_tensor_subclasses_keep_their_type():
    t = ember.arange(3.0).as_subclass(NamedTensor)
    t.names = ("x",)
    data = saved(t)
    with pytest.raises(pickle.UnpicklingError, match="refuses"):
        ember.load(io.BytesIO(data))
    loaded = ember.load(io.BytesIO(data), weights_only=False)
    assert type(loaded) is NamedTensor and loaded.names == ("x",) and loaded.tolist() == [0, 1, 2]


def test_module_state_dicts_cross_both_ways(torch):
    ours = ember.nn.Linear(3, 2)
    theirs = torch.nn.Linear(3, 2)
    theirs.load_state_dict(torch.load(io.BytesIO(saved(ours.state_dict())), weights_only=True))
    np.testing.assert_array_equal(theirs.weight.detach().numpy(), ours.weight.detach().numpy())
    with torch.no_grad():
        theirs.bias.fill_(0.25)
    buf = io.BytesIO()
    torch.save(theirs.state_dict(), buf)
    buf.seek(0)
    ours.load_state_dict(ember.load(buf))
    assert ours.bias.tolist() == [0.25, 0.25]
    whole = saved(ours)  # a whole module needs weights_only=False, like in PyTorch
    with pytest.raises(pickle.UnpicklingError, match=r"refuses ember\.nn\.modules"):
        ember.load(io.BytesIO(whole))
    assert ember.load(io.BytesIO(whole), weights_only=False).bias.tolist() == [0.25, 0.25]


def test_unsupported_torch_dtype_is_named(torch):
    buf = io.BytesIO()
    torch.save({"d": torch.complex32}, buf)  # complex64/128 load now; complex32 does not
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match=r"no equivalent of torch\.complex32"):
        ember.load(buf)


def test_legacy_torch_format_is_explained(torch):
    buf = io.BytesIO()
    torch.save(torch.ones(2), buf, _use_new_zipfile_serialization=False)
    buf.seek(0)
    with pytest.raises(RuntimeError, match="legacy checkpoint format"):
        ember.load(buf)


# ---- weights_only --------------------------------------------------------------------------


class Evil:
    def __reduce__(self):
        return (os.system, ("touch ember_was_here",))


def test_weights_only_refuses_globals_without_running_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = saved({"w": ember.ones(1), "payload": Evil()})
    with pytest.raises(pickle.UnpicklingError, match=r"refuses (posix|os|nt)\.system"):
        ember.load(io.BytesIO(data))
    assert not (tmp_path / "ember_was_here").exists()


def test_weights_only_false_allows_other_globals():
    data = saved({"counts": collections.defaultdict(list, a=[1])})
    with pytest.raises(pickle.UnpicklingError, match=r"collections\.defaultdict"):
        ember.load(io.BytesIO(data))
    assert ember.load(io.BytesIO(data), weights_only=False)["counts"] == {"a": [1]}


def test_weights_only_allows_what_torch_allows(torch):
    """torch.load's weights-only default also reads Counters and tensors with attributes."""
    t = torch.arange(3.0)
    t.note = {"step": 2}
    t._storage = "not a storage"  # a saved attribute never replaces ember's own slots
    buf = io.BytesIO()
    torch.save({"counts": collections.Counter("aab"), "t": t}, buf)
    buf.seek(0)
    out = ember.load(buf)
    assert (
        out["counts"] == collections.Counter("aab") and type(out["counts"]) is collections.Counter
    )
    assert out["t"].tolist() == [0.0, 1.0, 2.0] and out["t"].note == {"step": 2}
    assert type(out["t"]) is ember.Tensor


def test_weights_only_refuses_build_outside_dicts():
    # set() with BUILD setting an attribute: pickle would call setattr on the object.
    payload = b"\x80\x02c__builtin__\nset\n]\x85R}X\x01\x00\x00\x00aK\x01sb."
    with pytest.raises(pickle.UnpicklingError, match="refuses to set the state of a set"):
        ember.load(io.BytesIO(archive({"data.pkl": payload})))


def test_weights_only_refuses_unusual_codecs():
    payload = b"\x80\x02c_codecs\nencode\nX\x01\x00\x00\x00aX\x05\x00\x00\x00rot13\x86R."
    with pytest.raises(RuntimeError, match="encoding 'rot13' is not allowed"):
        ember.load(io.BytesIO(archive({"data.pkl": payload})))


# ---- map_location --------------------------------------------------------------------------


def on_fake_device() -> bytes:
    """A checkpoint whose storage claims to come from a device no backend provides."""
    data = saved({"t": ember.arange(4.0)})
    old, new = b"cpu", b"fakedev:0"
    old_str = b"X" + len(old).to_bytes(4, "little") + old
    new_str = b"X" + len(new).to_bytes(4, "little") + new
    return rewrite(data, lambda name, payload: payload.replace(old_str, new_str))


def test_unavailable_saved_device_suggests_map_location():
    with pytest.raises(RuntimeError, match=r"saved on fakedev:0 .*map_location='cpu'"):
        ember.load(io.BytesIO(on_fake_device()))


@pytest.mark.parametrize(
    "map_location",
    [
        "cpu",
        ember.device("cpu"),
        {"fakedev:0": "cpu"},
        lambda storage, location: storage,
        lambda storage, location: "cpu",
    ],
    ids=["str", "device", "dict", "callable-storage", "callable-device"],
)
def test_map_location_forms(map_location):
    out = ember.load(io.BytesIO(on_fake_device()), map_location=map_location)
    assert out["t"].device == ember.device("cpu") and out["t"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_map_location_callable_sees_location_and_none_means_default():
    seen = []
    ember.load(io.BytesIO(saved(ember.ones(1))), map_location=lambda s, loc: seen.append(loc))
    assert seen == ["cpu"]
    with pytest.raises(TypeError, match="map_location"):
        ember.load(io.BytesIO(saved(ember.ones(1))), map_location=3)


# ---- tensors on another device -------------------------------------------------------------


class HostRuntime:
    """A device type backed by host memory (numpy buffers): enough to move bytes in and out."""

    host_memory = True
    cache_min_bytes = 1 << 30

    def device_count(self):
        return 1

    def alloc(self, nbytes, index=None):
        return np.empty(max(nbytes, 1), np.uint8)

    def free(self, handle, index=None):
        pass

    def address(self, handle):
        return handle.ctypes.data

    def copy_in(self, handle, offset, src, index=None):
        data = np.frombuffer(memoryview(src).cast("B"), np.uint8)
        handle[offset : offset + data.size] = data

    def copy_out(self, dst, handle, offset, index=None):
        out = np.frombuffer(memoryview(dst).cast("B"), np.uint8)
        out[...] = handle[offset : offset + out.size]


class SideDevicePlugin:
    hookimpl = pluggy.HookimplMarker("ember")

    @hookimpl
    def ember_backend_info(self):
        return {"name": "side", "device_types": ["side"], "version": "0"}

    @hookimpl
    def ember_backend_load(self, device_type):
        return {"runtime": HostRuntime(), "kernels": {"copy_": {"*": None}}}


@pytest.fixture
def side_device():
    """A second device type, "side", served by an in-memory plugin for one test."""
    import ember_backend_cpu

    from ember.dispatcher.devices import REGISTRY
    from ember.dispatcher.plugins import BACKENDS_GROUP, extension

    plugins = [extension("cpu", ember_backend_cpu), extension("side", SideDevicePlugin())]
    REGISTRY.reset(extensions={BACKENDS_GROUP: plugins})
    yield ember.device("side", 0)
    REGISTRY.reset()


def test_other_devices_save_from_a_cpu_copy_and_load_back_there(side_device):
    base = ember.arange(12.0).reshape(3, 4).to(side_device)
    data = saved({"base": base, "row": base[1]})
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert b"side:0" in zf.read("archive/data.pkl")
    out = ember.load(io.BytesIO(data))
    assert out["base"].device == side_device and out["row"]._storage is out["base"]._storage
    np.testing.assert_array_equal(out["row"].cpu().numpy(), [4.0, 5.0, 6.0, 7.0])
    on_cpu = ember.load(io.BytesIO(data), map_location="cpu")
    assert on_cpu["base"].device == ember.device("cpu")
    np.testing.assert_array_equal(on_cpu["base"].numpy(), np.arange(12.0).reshape(3, 4))
    moved = ember.load(io.BytesIO(saved(ember.ones(2))), map_location={"cpu": "side:0"})
    assert moved.device == side_device and moved.cpu().tolist() == [1.0, 1.0]


def test_other_devices_pickle_and_safetensors_through_the_host(side_device):
    from ember import safetensors

    t = ember.arange(6).reshape(2, 3).to(side_device)
    unpickled = pickle.loads(pickle.dumps(t))  # rebuilt on its device, as torch does
    assert unpickled.device == side_device and unpickled.tolist() == t.cpu().tolist()
    assert safetensors.load(safetensors.save({"t": t}))["t"].tolist() == t.cpu().tolist()


# ---- bad files -----------------------------------------------------------------------------


def corrupt_crc(data: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        info = zf.getinfo("archive/data/0")
        start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    return data[:start] + bytes([data[start] ^ 0xFF]) + data[start + 1 :]


def shape_too_big(name, payload):
    # The 4-element tensor's size tuple (BININT1 4, TUPLE1) becomes (9,).
    return payload.replace(b"K\x04\x85", b"K\x09\x85") if name.endswith("data.pkl") else payload


BAD_FILES = {
    "empty": (lambda data: b"", "the file is empty"),
    "garbage": (lambda data: b"not a checkpoint at all", "not a zip archive"),
    "truncated": (lambda data: data[: len(data) // 2], "not a zip archive, or it is truncated"),
    "no data.pkl": (lambda data: archive({"version": b"3\n"}), "no data.pkl record"),
    "short storage": (
        lambda data: rewrite(data, lambda n, p: p[:-3] if n.endswith("data/0") else p),
        r"record archive/data/0 holds 13 bytes, but its storage is 4 float32 elements",
    ),
    "missing storage": (
        lambda data: archive(
            {"data.pkl": zipfile.ZipFile(io.BytesIO(data)).read("archive/data.pkl")}
        ),
        "record archive/data/0 is missing",
    ),
    "bad crc": (corrupt_crc, r"record archive/data/0 is corrupt \(Bad CRC-32"),
    "bad pickle": (
        lambda data: rewrite(data, lambda n, p: b"\x80\x02q" if n.endswith(".pkl") else p),
        "data.pkl is corrupt",
    ),
    "view out of bounds": (
        lambda data: rewrite(data, shape_too_big),
        r"shape \[9\], stride \[1\] and offset 0 does not fit its storage of 16 bytes",
    ),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_bad_files_raise_clear_errors(tmp_path, case):
    make, message = BAD_FILES[case]
    path = tmp_path / "model.pt"
    path.write_bytes(make(saved({"t": ember.arange(4.0)})))
    with pytest.raises(RuntimeError, match=message) as caught:
        ember.load(path)
    assert str(path) in str(caught.value)


# ---- pickle --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_pickle_tensor(dtype):
    t = sample(dtype)
    for view in (t, t.t(), t[1], t[0, 0]):
        out = pickle.loads(pickle.dumps(view))
        assert out.dtype is dtype and out.shape == view.shape and out.is_contiguous()
        np.testing.assert_array_equal(values(out), values(view))
        out.fill_(1)  # owns writable memory


def test_pickle_keeps_requires_grad_and_deepcopy_copies():
    t = ember.ones(2, requires_grad=True)
    assert pickle.loads(pickle.dumps(t)).requires_grad
    c = copy.deepcopy({"a": t})["a"]
    assert c.requires_grad and c._storage is not t._storage
    assert pickle.loads(pickle.dumps(ember.zeros(0, 2))).shape == (0, 2)


def test_pickle_keeps_the_device(device):
    t = ember.arange(6.0, device=device).reshape(2, 3).requires_grad_()
    for obj in (t, t.detach().t(), ember.nn.Parameter(t.detach())):
        out = pickle.loads(pickle.dumps(obj))
        assert out.device == obj.device and type(out) is type(obj)
        assert out.requires_grad == obj.requires_grad and out.is_leaf
        np.testing.assert_array_equal(out.detach().cpu().numpy(), obj.detach().cpu().numpy())


def test_pickle_keeps_python_attributes(torch):
    for lib in (ember, torch):
        t = lib.ones(2)
        t.note = {"step": 3}
        assert pickle.loads(pickle.dumps(t)).note == {"step": 3}
    buffer = pickle.loads(pickle.dumps(ember.nn.Buffer(ember.ones(1), persistent=False)))
    assert type(buffer) is ember.nn.Buffer and buffer.persistent is False


def test_unpickling_on_a_missing_device_says_so():
    from ember._serialization import _rebuild_tensor

    data = pickle.dumps(
        Reduced(_rebuild_tensor, (bytes(8), ember.float32, (2,), False, None, "fakedev:0"))
    )
    with pytest.raises(RuntimeError, match="deserialize a tensor on device fakedev:0"):
        pickle.loads(data)


class Reduced:
    def __init__(self, *reduction):
        self.reduction = reduction

    def __reduce__(self):
        return self.reduction


def test_save_load_keeps_the_device_and_honours_map_location(device):
    base = ember.arange(12.0, device=device).reshape(3, 4)
    data = saved({"base": base, "row": base[1]})
    out = ember.load(io.BytesIO(data))
    assert out["base"].device == base.device and out["row"]._storage is out["base"]._storage
    np.testing.assert_array_equal(out["row"].cpu().numpy(), [4.0, 5.0, 6.0, 7.0])
    location = str(base.device)
    for target in ("cpu", ember.device("cpu"), {location: "cpu"}, lambda s, loc: "cpu"):
        on_cpu = ember.load(io.BytesIO(data), map_location=target)
        assert on_cpu["base"].device == ember.device("cpu")
        assert on_cpu["row"]._storage is on_cpu["base"]._storage
    moved = ember.load(io.BytesIO(saved(ember.ones(2))), map_location={"cpu": location})
    assert moved.device == base.device and moved.cpu().tolist() == [1.0, 1.0]
    assert ember.load(io.BytesIO(saved(ember.ones(2))), map_location=device).device == base.device


# ---- deepcopy ------------------------------------------------------------------------------


def storage_key(t):
    """Which storage a tensor of either library uses (ember: the Storage object; torch: its
    data pointer)."""
    return t._storage if isinstance(t, ember.Tensor) else t.untyped_storage().data_ptr()


def sharing(tensors) -> list:
    """For each tensor, the index of the first tensor with the same storage."""
    keys = [storage_key(t) for t in tensors]
    return [next(i for i, k in enumerate(keys) if k is key or k == key) for key in keys]


def views(lib, device="cpu"):
    base = lib.arange(12.0, device=device).reshape(3, 4)
    other = lib.arange(3.0, device=device)
    return [base, base[1:], base.t(), base[:, 2], other, other[::2], base]


def test_deepcopy_keeps_views_sharing_one_new_storage(torch, device):
    ours, theirs = views(ember, device), views(torch)
    copied, expected = copy.deepcopy(ours), copy.deepcopy(theirs)
    assert sharing(copied) == sharing(expected) == [0, 0, 0, 0, 4, 4, 0]
    assert copied[0] is copied[-1]
    for c, t, original in zip(copied, expected, ours):
        assert c._storage is not original._storage and c.device == original.device
        assert (c.stride(), c.storage_offset(), c.shape) == (
            t.stride(),
            t.storage_offset(),
            t.shape,
        )
        np.testing.assert_array_equal(c.cpu().numpy(), t.numpy())
    copied[0][1, 0] = -1.0  # the copies are views of each other, not of the originals
    assert copied[1][0, 0].item() == -1.0 and copied[2][0, 1].item() == -1.0
    assert ours[1][0, 0].item() == 4.0


def test_deepcopy_of_dicts_and_modules_keeps_sharing(torch):
    def build(lib):
        module = lib.nn.Module()
        module.register_buffer("table", lib.arange(8.0))
        module.register_buffer("tail", module.table[4:])
        return {"module": module, "head": module.table[:2]}

    ours, theirs = copy.deepcopy(build(ember)), copy.deepcopy(build(torch))
    tensors = [ours["module"].table, ours["module"].tail, ours["head"]]
    expected = [theirs["module"].table, theirs["module"].tail, theirs["head"]]
    assert sharing(tensors) == sharing(expected) == [0, 0, 0]


def test_deepcopy_keeps_leaf_state_and_refuses_non_leaves(torch):
    t = ember.ones(2, requires_grad=True)
    t.grad = ember.full((2,), 3.0)
    t.note = {"self": t}
    c = copy.deepcopy(t)
    assert c.requires_grad and c.is_leaf and c.grad.tolist() == [3.0, 3.0]
    assert c.grad._storage is not t.grad._storage and c.note["self"] is c
    with pytest.raises(RuntimeError, match=r"graph leaves\) support the deepcopy"):
        copy.deepcopy(t * 2)
    with pytest.raises(RuntimeError, match=r"graph leaves\) support the deepcopy"):
        copy.deepcopy(torch.ones(2, requires_grad=True) * 2)
    buffer = copy.deepcopy(ember.nn.Buffer(ember.ones(1), persistent=False))
    assert type(buffer) is ember.nn.Buffer and buffer.persistent is False


def test_save_and_load_take_torchs_pickle_arguments():
    """torch.save/torch.load's pickle_module, _disable_byteorder_record and pickle_load_args:
    the standard pickle module is accepted (and, given to load, means weights_only=False as in
    PyTorch), other modules and the pre-1.6 format are refused by name."""
    import warnings

    torch = pytest.importorskip("torch")
    buffer = io.BytesIO()
    ember.save({"w": ember.ones(2)}, buffer, pickle, 2, _disable_byteorder_record=True)
    assert "byteorder" not in [n.rsplit("/", 1)[-1] for n in zipfile.ZipFile(buffer).namelist()]
    buffer.seek(0)
    assert torch.load(buffer)["w"].tolist() == [1.0, 1.0]  # torch reads it
    for kwargs in ({"pickle_module": pickle}, {"weights_only": False, "encoding": "latin1"}):
        buffer.seek(0)
        assert ember.load(buffer, **kwargs)["w"].tolist() == [1.0, 1.0]
    messages = []
    for lib in (ember, torch):
        buffer.seek(0)
        with pytest.raises(RuntimeError) as error:
            lib.load(buffer, pickle_module=pickle, weights_only=True)
        messages.append(str(error.value))
        buffer.seek(0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.load(buffer, weights_only=True, encoding="latin1")
        assert any("pickle_load_args only works" in str(w.message) for w in caught)
    assert messages[0] == messages[1]
    with pytest.raises(NotImplementedError, match=r"pre-1\.6"):
        ember.save({}, io.BytesIO(), _use_new_zipfile_serialization=False)
    with pytest.raises(NotImplementedError, match="pickle_module='json'"):
        import json

        ember.save({}, io.BytesIO(), pickle_module=json)
