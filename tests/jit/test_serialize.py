"""ember.jit.save/load: round trips of the zoo, loading in a fresh process that never imports
the model classes, map_location, and archives that are corrupt or hostile (a clear error,
nothing run)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember import safetensors
from ember.jit import ArchiveError, pytree

from .test_trace import assert_same
from .zoo import CASES, ROOT


def _archive(module) -> bytes:
    buffer = io.BytesIO()
    ember.jit.save(module, buffer)
    return buffer.getvalue()


def _load(data: bytes, **kwargs):
    return ember.jit.load(io.BytesIO(data), **kwargs)


@pytest.fixture(scope="module")
def archives():
    return {name: _archive(ember.jit.trace(c.model, c.example)) for name, c in CASES.items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_round_trip_in_process(name, archives):
    case = CASES[name]
    loaded = _load(archives[name])
    assert isinstance(loaded, ember.jit.RecursiveScriptModule)
    assert loaded.original_name == type(case.model).__name__
    ours = dict(loaded.state_dict())
    theirs = case.model.state_dict()
    assert sorted(ours) == sorted(theirs)
    for key, value in theirs.items():
        np.testing.assert_array_equal(ours[key].numpy(), value.numpy())
    for args in [case.example, *case.others]:
        assert_same(loaded(*args), case.model(*args))
    assert not loaded.training


def test_loads_in_a_fresh_process_without_the_model_classes(tmp_path, archives):
    """The subprocess imports ember only: no tests package, no examples/train_gpt.py."""
    tensors = {}
    for name, case in CASES.items():
        (tmp_path / f"{name}.pt").write_bytes(archives[name])
        args = flat_args(case.others[0])
        for i, t in enumerate(args):
            tensors[f"{name}.in.{i}"] = t.contiguous()
        for i, t in enumerate(pytree.flatten(case.model(*case.others[0]))[0]):
            tensors[f"{name}.out.{i}"] = t.detach().contiguous()
    safetensors.save_file(tensors, tmp_path / "io.safetensors")
    script = textwrap.dedent(
        f"""
        import sys
        import ember
        from ember import safetensors
        from ember.jit import pytree
        data = safetensors.load_file({str(tmp_path / "io.safetensors")!r})
        for name in {sorted(CASES)!r}:
            model = ember.jit.load({str(tmp_path)!r} + "/" + name + ".pt")
            spec = model._methods["forward"].in_spec
            count = pytree.num_leaves(spec)
            leaves = [data[f"{{name}}.in.{{i}}"] for i in range(count)]
            args, kwargs = pytree.unflatten(leaves, spec)
            outputs = pytree.flatten(model(*args, **kwargs))[0]
            for i, got in enumerate(outputs):
                want = data[f"{{name}}.out.{{i}}"]
                assert (got - want).abs().max().item() < 1e-5, name
        assert not any(m.startswith(("tests", "train_gpt")) for m in sys.modules), "imported"
        print("ok", len({sorted(CASES)!r}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"ok {len(CASES)}"


def flat_args(args):
    return pytree.flatten((tuple(args), {}))[0]


def test_map_location_meta_keeps_shapes_without_data(archives):
    loaded = _load(archives["gpt"], map_location="meta")
    assert all(p.device.type == "meta" for p in loaded.parameters())
    out = loaded(ember.randint(0, 32, (3, 8)).to("meta"))
    assert out.shape == (3, 8, 32) and out.device.type == "meta"
    arange = [n for n in loaded.graph.nodes() if n.kind() == "ember::arange"]
    assert arange and arange[0].inputsAt(4).node()["value"] == ember.device("meta")


def test_map_location_string_and_device(archives):
    for where in ("cpu", ember.device("cpu")):
        assert next(_load(archives["mlp"], map_location=where).parameters()).device.type == "cpu"
    with pytest.raises(TypeError, match="map_location"):
        _load(archives["mlp"], map_location={"cpu": "cpu"})


def test_tied_weights_stay_tied():
    model = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 10, bias=False))
    model[1].weight = model[0].weight
    traced = ember.jit.trace(model, ember.randint(0, 10, (2, 3)))
    loaded = _load(_archive(traced))
    assert getattr(loaded, "0").weight is getattr(loaded, "1").weight
    assert len(list(loaded.parameters())) == 1


def test_function_extra_files_and_path(tmp_path):
    fn = ember.jit.trace(lambda x, y: (x * y).sum(0), (ember.ones(2, 3), ember.ones(2, 3)))
    path = tmp_path / "fn.pt"
    fn.save(path, _extra_files={"meta.txt": "hello"})
    extra = {"meta.txt": b""}
    loaded = ember.jit.load(str(path), _extra_files=extra)
    assert extra["meta.txt"] == b"hello"
    x = ember.randn(4, 5)
    assert_same(loaded(x, x), (x * x).sum(0))


def test_save_needs_a_script_module():
    with pytest.raises(TypeError, match="expected a ScriptModule or ScriptFunction"):
        ember.jit.save(nn.Linear(2, 2), io.BytesIO())


def test_unsaveable_constant_names_its_node():
    generator = ember.Generator().manual_seed(0)
    fn = ember.jit.trace(lambda x: x + ember.rand(2, generator=generator), ember.ones(2),
                         check_trace=False)  # fmt: skip
    with pytest.raises(TypeError, match="can't save a constant of type Generator"):
        ember.jit.save(fn, io.BytesIO())


# ---- hostile archives -----------------------------------------------------------------------
def _records(data: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def _zip(records: dict) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in records.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def _edit(data: bytes, change) -> bytes:
    records = _records(data)
    model = json.loads(records["archive/model.json"])
    change(model)
    records["archive/model.json"] = json.dumps(model).encode()
    return _zip(records)


def _forward_nodes(model):
    return model["methods"]["forward"]["graph"]["nodes"]


def _set(path, value):
    def change(model):
        target = model
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def _first_op(model):
    return next(n for n in _forward_nodes(model) if n["kind"].startswith("ember::"))


LEAF = {"type": "leaf"}
HOSTILE = {
    "unknown op": (lambda m: _first_op(m).update(kind="ember::no_such_op"), "no_such_op"),
    "foreign library op": (lambda m: _first_op(m).update(kind="evil::op"), "evil::op"),
    "unknown prim": (lambda m: _first_op(m).update(kind="prim::PythonOp"), "unknown prim"),
    "dangling reference": (lambda m: _first_op(m).update(inputs=[10**6]), "undefined value"),
    "use before definition": (
        lambda m: _first_op(m)["inputs"].__setitem__(0, _last(m)),
        "undefined value",
    ),
    "wrong arity": (lambda m: _first_op(m)["inputs"].pop(), "inputs for a schema"),
    "attribute it lacks": (
        lambda m: next(n for n in _forward_nodes(m) if n["kind"] == "prim::GetAttr")[
            "attrs"
        ].update(name="__class__"),
        "which the module lacks",
    ),
    "attribute on an op": (lambda m: _first_op(m).update(attrs={"value": 1}), "attributes"),
    "parameter named like a method": (
        lambda m: m["module"]["children"]["fc1"]["parameters"].update(
            forward=m["module"]["children"]["fc1"]["parameters"]["weight"]
        ),
        "already exists|malformed module tree",
    ),
    "newer version": (_set(["version"], 99), "newer than this ember reads"),
    "not ours": (_set(["format"], "something.else"), "not an ember.jit archive"),
    "bad tensor type": (
        lambda m: m["methods"]["forward"]["graph"]["inputs"][0].update(
            type={"tensor": {"dtype": "complex512"}}
        ),
        "unknown dtype",
    ),
    "deep constant": (
        lambda m: next(n for n in _forward_nodes(m) if n["kind"] == "prim::Constant")[
            "attrs"
        ].update(value=_deep(200)),
        "nested too deeply",
    ),
    "structure mismatch": (
        _set(["methods", "forward", "in_spec"], {"type": "tuple", "children": [LEAF, LEAF]}),
        "input structure",
    ),
    "missing tensor": (lambda m: m["tensors"].pop("fc1.weight"), "tensor list"),
}


def _last(model):
    return model["methods"]["forward"]["graph"]["outputs"][0]


def _deep(n):
    value = [1]
    for _ in range(n):
        value = [value]
    return value


@pytest.fixture(scope="module")
def mlp_archive(archives):
    return archives["mlp"]


@pytest.mark.parametrize("what", sorted(HOSTILE))
def test_hostile_model_json_is_refused(what, mlp_archive):
    change, message = HOSTILE[what]
    with pytest.raises(ArchiveError, match=message):
        _load(_edit(mlp_archive, change))


def test_injected_names_never_run(mlp_archive, tmp_path):
    marker = tmp_path / "pwned"
    payload = f"x\nimport os; os.system('touch {marker}')  # __import__('os')"

    def change(model):
        model["methods"]["forward"]["graph"]["inputs"][0]["name"] = payload
        for node in _forward_nodes(model):
            for out in node["outputs"]:
                out["name"] = payload
        model["module"]["type"] = payload

    loaded = _load(_edit(mlp_archive, change))
    assert_same(loaded(*CASES["mlp"].example), CASES["mlp"].model(*CASES["mlp"].example))
    assert "import os" not in loaded.code
    assert not marker.exists()


def test_corrupt_files_are_refused(mlp_archive, tmp_path):
    records = _records(mlp_archive)
    cases = {
        "empty": b"",
        "not a zip": b"print('hello')" * 10,
        "truncated": mlp_archive[: len(mlp_archive) // 2],
        "no model": _zip({k: v for k, v in records.items() if not k.endswith("model.json")}),
        "bad json": _zip({**records, "archive/model.json": b"{not json"}),
        "bad tensors": _zip({**records, "archive/tensors.safetensors": b"\xff" * 64}),
    }
    for what, data in cases.items():
        with pytest.raises(ArchiveError):
            _load(data)
        path = tmp_path / f"{what}.pt"
        path.write_bytes(data)
        with pytest.raises(ArchiveError, match=str(path)):
            ember.jit.load(path)


def test_declared_sizes_are_checked_before_reading(mlp_archive):
    """A record that claims more bytes than the archive holds (a zip bomb's lie)."""
    data = bytearray(mlp_archive)
    with zipfile.ZipFile(io.BytesIO(mlp_archive)) as zf:
        info = zf.getinfo("archive/tensors.safetensors")
    # The uncompressed size of the record's central directory entry (46-byte header, then
    # the name; the size is at offset 24 of the header).
    entry = data.find(b"archive/tensors.safetensors", data.find(b"PK\x01\x02"))
    size_field = entry - 46 + 24
    data[size_field : size_field + 4] = (info.file_size * 1000).to_bytes(4, "little")
    with pytest.raises(ArchiveError, match="corrupt"):
        _load(bytes(data))


@pytest.mark.parametrize("name", ["cnn", "gpt"])
def test_load_onto_each_device(name, device, archives):
    """Traced on the CPU, loaded with map_location onto every available device."""
    case = CASES[name]
    loaded = _load(archives[name], map_location=device)
    assert all(p.device.type == device for p in loaded.parameters())
    args = [a.to(device) for a in case.others[0]]
    got = loaded(*args)
    assert got.device.type == device
    assert_same(got.cpu(), case.model(*case.others[0]), atol=1e-4)
