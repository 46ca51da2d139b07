"""tests/pycache_prefix.py: with bytecode writing forbidden, the run's processes write it under
the temp dir instead; a prefix the user chose, or bytecode writing left on, is kept as it is."""

from __future__ import annotations

import os
import sys

from .pycache_prefix import cache_bytecode_outside_the_tree


def _forbid(monkeypatch, prefix=None):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.setattr(sys, "pycache_prefix", prefix)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    if prefix is None:
        monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    else:
        monkeypatch.setenv("PYTHONPYCACHEPREFIX", prefix)


def test_forbidden_bytecode_goes_to_a_prefix_that_subprocesses_inherit(monkeypatch, tmp_path):
    _forbid(monkeypatch)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    cache_bytecode_outside_the_tree()
    assert sys.dont_write_bytecode is False
    assert sys.pycache_prefix.startswith(str(tmp_path))
    assert os.environ["PYTHONPYCACHEPREFIX"] == sys.pycache_prefix
    assert "PYTHONDONTWRITEBYTECODE" not in os.environ


def test_a_prefix_the_user_chose_is_kept(monkeypatch, tmp_path):
    _forbid(monkeypatch, str(tmp_path / "mine"))
    cache_bytecode_outside_the_tree()
    assert sys.dont_write_bytecode is True
    assert sys.pycache_prefix == str(tmp_path / "mine")


def test_bytecode_writing_left_on_is_left_alone(monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    cache_bytecode_outside_the_tree()
    assert sys.pycache_prefix is None
    assert "PYTHONPYCACHEPREFIX" not in os.environ
