"""The wheel ships every Python folder: pyproject.toml lists packages explicitly (the top-level
dispatcher/, autograd/ and nn/ folders are mapped under ember), so a new folder missing from the
list would work in an editable install and fail in a user's ``pip install .``."""

from __future__ import annotations

import pathlib

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAPPED = {"ember": "ember", "dispatcher": "ember.dispatcher", "autograd": "ember.autograd",
          "nn": "ember.nn", "distributed": "ember.distributed", "jit": "ember.jit",
          "linalg": "ember.linalg"}  # fmt: skip


def python_folders():
    for top, package in MAPPED.items():
        for folder in [ROOT / top, *(ROOT / top).rglob("*")]:
            if folder.is_dir() and folder.name != "__pycache__" and any(folder.glob("*.py")):
                relative = folder.relative_to(ROOT / top).parts
                yield ".".join((package, *relative))


def test_every_python_folder_is_a_listed_package():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    missing = sorted(set(python_folders()) - set(config["packages"]))
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {missing}"
