"""``ember.hub.load_state_dict_from_url`` and ``download_url_to_file`` against ``torch.hub``'s,
over a local HTTP server and ``file://`` URLs (no network): the same files, messages and tensors.
"""

from __future__ import annotations

import collections
import fractions
import hashlib
import http.server
import os
import pickle
import threading
import types
import urllib.error
import zipfile

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.fixture
def server(tmp_path, monkeypatch):
    """Serves ``tmp_path/served`` on 127.0.0.1 and counts the GET requests per path."""
    monkeypatch.setenv("no_proxy", "*")  # a proxy set in the environment must not see these
    root = tmp_path / "served"
    root.mkdir()
    requests = collections.Counter()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def do_GET(self):
            requests[self.path] += 1
            super().do_GET()

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield types.SimpleNamespace(
        root=root, url=f"http://127.0.0.1:{httpd.server_port}", requests=requests
    )
    httpd.shutdown()
    httpd.server_close()
    thread.join()


@pytest.fixture
def hubs(tmp_path, monkeypatch):
    """Separate hub folders for ember and torch under tmp_path."""
    monkeypatch.setitem(ember.hub._hub_dir, "value", str(tmp_path / "ember_hub"))
    monkeypatch.setattr(torch.hub, "_hub_dir", str(tmp_path / "torch_hub"))
    return types.SimpleNamespace(
        ember=tmp_path / "ember_hub" / "checkpoints", torch=tmp_path / "torch_hub" / "checkpoints"
    )


def _serve_linear(folder, name: str) -> torch.nn.Linear:
    """Saves a torch Linear's state dict as ``folder/name`` (torch.save); the model."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    torch.save(model.state_dict(), folder / name)
    return model


def _sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _assert_same_state(ours, theirs):
    assert list(ours) == list(theirs)
    for key in theirs:
        np.testing.assert_array_equal(ours[key].numpy(), theirs[key].numpy())


def test_download_into_checkpoints_then_reuse(server, hubs):
    model = _serve_linear(server.root, "linear.pt")
    url = f"{server.url}/linear.pt"
    state = ember.hub.load_state_dict_from_url(url, progress=False)
    assert (hubs.ember / "linear.pt").read_bytes() == (server.root / "linear.pt").read_bytes()
    assert server.requests["/linear.pt"] == 1
    again = ember.hub.load_state_dict_from_url(url, progress=False)
    assert server.requests["/linear.pt"] == 1  # the cached file, not a second download
    _assert_same_state(again, state)
    theirs = torch.hub.load_state_dict_from_url(url, progress=False)
    assert server.requests["/linear.pt"] == 2
    _assert_same_state(state, theirs)
    ours = ember.nn.Linear(4, 3)
    ours.load_state_dict(state)
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_allclose(
        ours(ember.tensor(x)).detach().numpy(),
        model(torch.tensor(x)).detach().numpy(),
        rtol=1e-6,
    )


def test_existing_file_is_read_without_downloading(server, hubs):
    _serve_linear(server.root, "linear.pt")
    hubs.ember.mkdir(parents=True)
    torch.save({"cached": torch.ones(2)}, hubs.ember / "linear.pt")
    state = ember.hub.load_state_dict_from_url(f"{server.url}/linear.pt", progress=False)
    assert list(state) == ["cached"] and server.requests["/linear.pt"] == 0


def test_file_url(tmp_path, hubs):
    model = _serve_linear(tmp_path, "local.pt")
    url = (tmp_path / "local.pt").as_uri()
    ember.hub.download_url_to_file(url, str(tmp_path / "copy.pt"), progress=False)
    assert (tmp_path / "copy.pt").read_bytes() == (tmp_path / "local.pt").read_bytes()
    state = ember.hub.load_state_dict_from_url(url, progress=False)
    assert (hubs.ember / "local.pt").is_file()
    _assert_same_state(state, model.state_dict())


def test_file_name_and_model_dir(server, hubs, tmp_path):
    _serve_linear(server.root, "linear.pt")
    url = f"{server.url}/linear.pt?version=2"
    folder = tmp_path / "mine" / "deeper"
    ember.hub.load_state_dict_from_url(url, model_dir=str(folder), progress=False)
    assert os.listdir(folder) == ["linear.pt"]  # the URL's path, not its query
    ember.hub.load_state_dict_from_url(
        url, model_dir=str(folder), file_name="renamed.bin", progress=False
    )
    assert sorted(os.listdir(folder)) == ["linear.pt", "renamed.bin"]
    assert server.requests["/linear.pt?version=2"] == 2
    assert not hubs.ember.exists()


def test_check_hash_accepts_a_matching_prefix(server, hubs):
    _serve_linear(server.root, "linear.pt")
    digest = _sha256(server.root / "linear.pt")
    name = f"linear-{digest[:10]}.pt"
    os.rename(server.root / "linear.pt", server.root / name)
    state = ember.hub.load_state_dict_from_url(
        f"{server.url}/{name}", check_hash=True, progress=False
    )
    assert set(state) == {"weight", "bias"} and (hubs.ember / name).is_file()


def test_check_hash_mismatch_raises_torchs_error_and_leaves_nothing(server, hubs):
    _serve_linear(server.root, "linear-deadbeef.pt")
    url = f"{server.url}/linear-deadbeef.pt"
    messages = []
    for hub, folder in ((ember.hub, hubs.ember), (torch.hub, hubs.torch)):
        with pytest.raises(RuntimeError, match="invalid hash value") as info:
            hub.load_state_dict_from_url(url, check_hash=True, progress=False)
        messages.append(str(info.value))
        assert os.listdir(folder) == []  # no checkpoint and no partial download
    digest = _sha256(server.root / "linear-deadbeef.pt")
    assert messages[0] == messages[1] == f'invalid hash value (expected "deadbeef", got "{digest}")'
    # without check_hash the name's hex part is only a name
    ember.hub.load_state_dict_from_url(url, progress=False)
    assert os.listdir(hubs.ember) == ["linear-deadbeef.pt"]


def test_download_hash_mismatch_keeps_the_old_file(server, tmp_path):
    (server.root / "blob").write_bytes(b"new contents")
    dst = tmp_path / "blob"
    dst.write_bytes(b"old contents")
    with pytest.raises(RuntimeError, match='expected "0000"'):
        ember.hub.download_url_to_file(f"{server.url}/blob", str(dst), "0000", progress=False)
    assert dst.read_bytes() == b"old contents" and os.listdir(tmp_path) == ["blob", "served"]
    prefix = _sha256(server.root / "blob")[:12]
    ember.hub.download_url_to_file(f"{server.url}/blob", str(dst), prefix, progress=False)
    assert dst.read_bytes() == b"new contents"


def test_http_error_leaves_nothing(server, tmp_path):
    with pytest.raises(urllib.error.HTTPError, match="404"):
        ember.hub.download_url_to_file(f"{server.url}/missing", str(tmp_path / "x"))
    assert os.listdir(tmp_path) == ["served"]


def test_map_location_and_weights_only_reach_load(server, hubs):
    torch.save({"w": torch.arange(3.0), "f": fractions.Fraction(1, 3)}, server.root / "mixed.pt")
    url = f"{server.url}/mixed.pt"
    seen = []

    def where(storage, location):
        seen.append(location)
        return storage

    state = ember.hub.load_state_dict_from_url(url, map_location=where, progress=False)
    assert seen == ["cpu"] and state["f"] == fractions.Fraction(1, 3)
    assert state["w"].tolist() == [0.0, 1.0, 2.0]
    for hub in (ember.hub, torch.hub):
        with pytest.raises(pickle.UnpicklingError, match="Fraction"):
            hub.load_state_dict_from_url(url, weights_only=True, progress=False)


def test_progress_matches_torchs_fallback(server, hubs, capsys):
    (server.root / "blob").write_bytes(bytes(300_000))
    url = f"{server.url}/blob"
    outputs = []
    for hub, folder in ((ember.hub, hubs.ember), (torch.hub, hubs.torch)):
        folder.mkdir(parents=True)
        hub.download_url_to_file(url, str(folder / "blob"))
        outputs.append(capsys.readouterr())
    assert outputs[0].err == outputs[1].err
    assert outputs[0].err.endswith("\r100.0%\n") and outputs[0].err.count("\r") == 3
    ember.hub.download_url_to_file(url, str(hubs.ember / "quiet"), progress=False)
    assert capsys.readouterr().err == ""
    torch.save({}, server.root / "empty.pt")
    ember.hub.load_state_dict_from_url(f"{server.url}/empty.pt", progress=False)
    out = capsys.readouterr().out
    assert out == f'Downloading: "{server.url}/empty.pt" to {hubs.ember / "empty.pt"}\n'


def test_zip_holding_one_checkpoint_is_extracted(server, hubs, tmp_path):
    model = _serve_linear(tmp_path, "inner.pt")
    with zipfile.ZipFile(server.root / "zipped.zip", "w") as zf:
        zf.write(tmp_path / "inner.pt", "inner.pt")
    url = f"{server.url}/zipped.zip"
    with pytest.warns(FutureWarning, match="Falling back to the old format < 1.6"):
        state = ember.hub.load_state_dict_from_url(url, progress=False)
    assert sorted(os.listdir(hubs.ember)) == ["inner.pt", "zipped.zip"]
    with pytest.warns(FutureWarning):
        theirs = torch.hub.load_state_dict_from_url(url, progress=False)
    _assert_same_state(state, theirs)
    _assert_same_state(state, model.state_dict())


def test_zip_slip_is_refused_as_torch(server, hubs):
    with zipfile.ZipFile(server.root / "evil.zip", "w") as zf:
        zf.writestr("../evil.pt", b"x")
    messages = []
    for hub in (ember.hub, torch.hub):
        with pytest.warns(FutureWarning), pytest.raises(ValueError) as info:
            hub.load_state_dict_from_url(f"{server.url}/evil.zip", progress=False)
        messages.append(str(info.value))
    assert messages[0] == messages[1] == "Archive entry contains directory traversal: ../evil.pt"
    assert not (hubs.ember.parent / "evil.pt").exists()


def test_get_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setitem(ember.hub._hub_dir, "value", None)
    monkeypatch.delenv("EMBER_HOME", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert ember.hub.get_dir() == str(tmp_path / "home" / ".cache" / "ember" / "hub")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert ember.hub.get_dir() == str(tmp_path / "xdg" / "ember" / "hub")
    monkeypatch.setenv("EMBER_HOME", "~/eh")
    assert ember.hub.get_dir() == str(tmp_path / "home" / "eh" / "hub")
    ember.hub.set_dir("~/chosen")
    assert ember.hub.get_dir() == str(tmp_path / "home" / "chosen")
    assert ember.hub.HASH_REGEX.pattern == torch.hub.HASH_REGEX.pattern
