"""``ember.hub``: load models from a local directory's ``hubconf.py``, as ``torch.hub``.

ember never downloads code: ``source="local"`` (a directory holding ``hubconf.py``) is the way in,
and ``source="github"`` raises a RuntimeError that says so. A ``hubconf.py`` written for
``torch.hub`` works unchanged when it imports ember: its public callables are the entry points,
its ``dependencies`` list names modules that must import.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys

MODULE_HUBCONF = "hubconf.py"
VAR_DEPENDENCY = "dependencies"
_hub_dir = {"value": None}


def get_dir() -> str:
    """Where hub files live: ``set_dir``'s path, else ``$EMBER_HOME/hub`` (``~/.cache/ember``)."""
    if _hub_dir["value"] is not None:
        return _hub_dir["value"]
    home = os.getenv("EMBER_HOME", os.path.join(os.path.expanduser("~"), ".cache", "ember"))
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
