"""``ember.hub``: models from a local directory's ``hubconf.py`` and checkpoints from URLs,
as ``torch.hub``.

ember never downloads code: ``source="local"`` (a directory holding ``hubconf.py``) is the way in,
and ``source="github"`` raises a RuntimeError that says so. A ``hubconf.py`` written for
``torch.hub`` works unchanged when it imports ember: its public callables are the entry points,
its ``dependencies`` list names modules that must import.

Checkpoints are data, not code: ``load_state_dict_from_url`` downloads one (``urllib``: http,
https, file URLs) into ``<hub_dir>/checkpoints`` once and reads it with ``ember.load``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import re
import sys
import urllib.parse
import urllib.request
import warnings
import zipfile
from pathlib import Path

from ._atomic import atomic_write
from .serialization import load as _load_checkpoint

# matches bfd8deac from resnet18-bfd8deac.pth
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
ENV_EMBER_HOME = "EMBER_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
MODULE_HUBCONF = "hubconf.py"
VAR_DEPENDENCY = "dependencies"
READ_DATA_CHUNK = 128 * 1024
_hub_dir = {"value": None}


def get_dir() -> str:
    """Where hub files live: ``set_dir``'s path, else ``$EMBER_HOME/hub``.

    ``$EMBER_HOME`` defaults to ``$XDG_CACHE_HOME/ember``, and ``$XDG_CACHE_HOME`` to
    ``~/.cache`` (as ``$TORCH_HOME`` and ``torch.hub.get_dir``).
    """
    if _hub_dir["value"] is not None:
        return _hub_dir["value"]
    cache = os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR)
    home = os.path.expanduser(os.getenv(ENV_EMBER_HOME, os.path.join(cache, "ember")))
    return os.path.join(home, "hub")


def set_dir(d) -> None:
    """Use ``d`` as the hub directory."""
    _hub_dir["value"] = os.path.expanduser(os.fspath(d))


@contextlib.contextmanager
def _on_sys_path(path):
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _hubconf(repo_dir, source: str):
    """The imported ``hubconf.py`` module of ``repo_dir``."""
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github" and not os.path.isdir(os.fspath(repo_dir)):
        raise RuntimeError(
            f"ember.hub does not download code: cannot fetch {repo_dir!r} from GitHub. Clone the "
            'repository yourself and pass its directory with source="local".'
        )
    repo_dir = os.fspath(repo_dir)
    path = os.path.join(repo_dir, MODULE_HUBCONF)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} not found: a hub directory needs a {MODULE_HUBCONF}")
    with _on_sys_path(repo_dir):
        spec = importlib.util.spec_from_file_location("hubconf", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    missing = [
        name for name in getattr(module, VAR_DEPENDENCY, None) or []
        if importlib.util.find_spec(name) is None
    ]  # fmt: skip
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return module


def _entry(module, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    func = getattr(module, model, None)
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False,
         verbose=True, skip_validation=False, **kwargs):  # fmt: skip
    """Call entry point ``model`` of ``repo_or_dir``'s ``hubconf.py`` with ``*args, **kwargs``.

    ``source="local"`` reads the directory ``repo_or_dir``; ``trust_repo``, ``force_reload``,
    ``verbose`` and ``skip_validation`` are accepted for PyTorch's signature and concern
    downloads, which ember does not do.

    Raises:
        ValueError: ``source`` is neither "github" nor "local", or ``model`` is not a string.
        RuntimeError: ``source="github"`` (no downloads), a missing dependency, or no callable
            ``model`` in the hubconf.
        FileNotFoundError: the directory has no ``hubconf.py``.

    Example:
        >>> net = ember.hub.load("path/to/repo", "resnet18", source="local", pretrained=False)
    """
    with _on_sys_path(os.fspath(repo_or_dir)) if source == "local" else contextlib.nullcontext():
        return _entry(_hubconf(repo_or_dir, source), model)(*args, **kwargs)


def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True):
    """The entry points (public callables) of a hub directory's ``hubconf.py``.

    ``github`` must be a local directory here (ember does not download repositories).
    """
    module = _hubconf(github, "github")
    return [f for f in dir(module) if callable(getattr(module, f)) and not f.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check"):
    """The docstring of entry point ``model`` of a hub directory's ``hubconf.py``."""
    return _entry(_hubconf(github, "github"), model).__doc__


class _Progress:
    """torch.hub's stand-in for tqdm (not a dependency of ember): the share downloaded so far,
    or the byte count when the size is unknown, on one stderr line."""

    def __init__(self, total: int | None, disable: bool):
        self.total = total
        self.disable = disable
        self.n = 0

    def update(self, n: int) -> None:
        if self.disable:
            return
        self.n += n
        if self.total is None:
            sys.stderr.write(f"\r{self.n:.1f} bytes")
        else:
            sys.stderr.write(f"\r{100 * self.n / float(self.total):.1f}%")
        sys.stderr.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if not self.disable:
            sys.stderr.write("\n")


def download_url_to_file(
    url: str, dst: str, hash_prefix: str | None = None, progress: bool = True
) -> None:
    """Download the object at ``url`` to the local path ``dst``.

    The bytes go to a temporary file in ``dst``'s folder that replaces ``dst`` only once the
    download is complete (and its hash checked), so a broken download never overwrites a
    working checkpoint and leaves nothing behind.

    Args:
        url: what to download (any scheme ``urllib.request`` opens: http, https, file, ...).
        dst: full path where the object is saved, e.g. ``/tmp/temporary_file``.
        hash_prefix: if not None, the SHA256 of the downloaded file must start with it.
        progress: show the progress on stderr.

    Raises:
        RuntimeError: the file's SHA256 does not start with ``hash_prefix``.
        urllib.error.URLError: the URL cannot be opened (HTTPError for an HTTP error status).

    Example:
        >>> ember.hub.download_url_to_file("https://example.com/w-5c106cde.pth", "/tmp/w.pth")
    """
    dst = os.path.expanduser(dst)
    request = urllib.request.Request(url, headers={"User-Agent": "ember.hub"})
    with atomic_write(dst) as f, urllib.request.urlopen(request) as response:
        length = response.info().get_all("Content-Length")
        sha256 = hashlib.sha256() if hash_prefix is not None else None
        with _Progress(int(length[0]) if length else None, disable=not progress) as bar:
            while buffer := response.read(READ_DATA_CHUNK):
                f.write(buffer)
                if sha256 is not None:
                    sha256.update(buffer)
                bar.update(len(buffer))
        if sha256 is not None:
            digest = sha256.hexdigest()
            if digest[: len(hash_prefix)] != hash_prefix:
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')


def load_state_dict_from_url(
    url: str,
    model_dir: str | None = None,
    map_location=None,
    progress: bool = True,
    check_hash: bool = False,
    file_name: str | None = None,
    weights_only: bool = False,
) -> dict:
    """Load the checkpoint at ``url``, downloading it into ``model_dir`` unless already there.

    A file of that name in ``model_dir`` is read without downloading. A zip file holding a single
    file (a checkpoint zipped by hand, PyTorch's legacy layout) is extracted into ``model_dir``
    first, with a FutureWarning.

    Args:
        url: where the checkpoint is (see ``download_url_to_file``).
        model_dir: the folder to save it in; default ``<hub_dir>/checkpoints`` (``get_dir()``).
        map_location: where tensors go, as for ``ember.load``.
        progress: show the download's progress on stderr.
        check_hash: the file name must follow ``name-<sha256 prefix>.ext`` (eight or more hex
            digits); a download whose SHA256 does not start with that prefix raises.
        file_name: the name to save under; default the last part of the URL's path.
        weights_only: allow only tensors, containers and plain values, as for ``ember.load``
            (recommended for untrusted sources).

    Returns:
        The saved object (usually a state dict), with tensors as ember tensors.

    Raises:
        RuntimeError: ``check_hash`` and the download's SHA256 does not match the name.

    Example:
        >>> state = ember.hub.load_state_dict_from_url("https://example.com/w-5c106cde.pth")
        >>> model.load_state_dict(state)
    """
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = os.path.basename(urllib.parse.urlparse(url).path)
    if file_name is not None:
        filename = file_name
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
        match = HASH_REGEX.search(filename) if check_hash else None
        download_url_to_file(url, cached_file, match.group(1) if match else None, progress=progress)
    if _is_legacy_zip_format(cached_file):
        cached_file = _extract_legacy_zip(cached_file, model_dir)
    return _load_checkpoint(cached_file, map_location=map_location, weights_only=weights_only)


def _is_legacy_zip_format(filename: str) -> bool:
    """A zip of one file: a checkpoint zipped by hand (a checkpoint itself zips many files)."""
    if not zipfile.is_zipfile(filename):
        return False
    with zipfile.ZipFile(filename) as zf:
        members = zf.infolist()
    return len(members) == 1 and not members[0].is_dir()


def _extract_legacy_zip(filename: str, model_dir: str) -> str:
    """Extracts the zip's one file into ``model_dir`` (overwriting); its path."""
    warnings.warn(
        "Falling back to the old format < 1.6. This support will be deprecated in favor of "
        "default zipfile format introduced in 1.6. Please redo ember.save() (or torch.save()) "
        "to save it in the new zipfile format.",
        FutureWarning,
        stacklevel=3,
    )
    with zipfile.ZipFile(filename) as zf:
        (member,) = zf.infolist()
        _check_inside(member.filename, model_dir)
        zf.extract(member, model_dir)
    return os.path.join(model_dir, member.filename)


def _check_inside(entry: str, folder: str) -> None:
    """Refuses a zip entry that would land outside ``folder`` (zip slip), as torch.hub does."""
    name = os.path.normpath(entry)
    if name.startswith(("/", "\\")) or (name[1:2] == ":" and name[:1].isalpha()):
        raise ValueError(f"Archive entry has absolute path: {entry}")
    if ".." in re.split(r"[/\\]", name):
        raise ValueError(f"Archive entry contains directory traversal: {entry}")
    root = Path(folder).resolve(strict=False)
    if not (root / name).resolve(strict=False).is_relative_to(root):
        raise ValueError(f"Archive entry escapes target directory: {entry}")
