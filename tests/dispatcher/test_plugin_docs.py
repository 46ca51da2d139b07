"""docs/plugins.md: its generated sections match the code, and its library example runs."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import ember

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _generator():
    spec = importlib.util.spec_from_file_location("plugins_md", DOCS / "plugins_md.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_sections_are_current():
    generator = _generator()
    text = generator.DOC.read_text()
    assert set(re.findall(r"<!-- generated: (\w+) -->", text)) == set(generator.SECTIONS)
    assert generator.render(text) == text, "docs/plugins.md is stale: run python docs/plugins_md.py"


def test_library_example_runs(lib):
    text = (DOCS / "plugins.md").read_text()
    example = re.search(r"```python\n(import ember\nimport ember.library as L\n.*?)```", text, re.S)
    namespace: dict = {}
    exec(compile(example.group(1), "docs/plugins.md", "exec"), namespace)
    y = namespace["y"]
    assert y.tolist() == [3.0, 3.0, 3.0]
    y.sum().backward()
    assert isinstance(y.grad_fn, ember.autograd.Node)
