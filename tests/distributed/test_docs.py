"""docs/distributed.md: its hook-spec section matches distributed/hookspecs.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_hook_section_is_current():
    spec = importlib.util.spec_from_file_location("distributed_md", DOCS / "distributed_md.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    text = generator.DOC.read_text()
    assert "### `ember_collective_backend_create(options)`" in text
    assert generator.render(text) == text, "run python docs/distributed_md.py"
