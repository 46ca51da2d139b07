"""User classes in scripted code against torch.jit.script: errors word for word where both
refuse, and the runtime object survives save/load (the class itself is not needed)."""

from __future__ import annotations

import io

import pytest
import torch

import ember

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")


def late_field(lib):
    class Box:
        def __init__(self, n: int):
            self.n = n

        def grow(self):
            self.extra = self.n + 1

    def use(n: int):
        box = Box(n)
        box.grow()
        return box.n

    return use


def test_setting_a_field_outside_init_is_refused_as_torch_does():
    with pytest.raises(RuntimeError) as mine:
        ember.jit.script(late_field(ember))
    with pytest.raises(RuntimeError) as theirs:
        torch.jit.script(late_field(torch))
    want = (
        "Tried to set nonexistent attribute: extra. Did you forget to initialize it in __init__()?"
    )
    assert want in str(mine.value) and want in str(theirs.value)


def test_loaded_graph_builds_objects_without_the_class():
    class Acc:
        def __init__(self):
            self.items = ember.jit.annotate(list[float], [])

        def add(self, v: float):
            self.items.append(v * 2)

    def collect(n: int):
        acc = Acc()
        for i in range(n):
            acc.add(float(i))
        return acc.items

    scripted = ember.jit.script(collect)
    buffer = io.BytesIO()
    scripted.save(buffer)
    loaded = ember.jit.load(io.BytesIO(buffer.getvalue()))
    assert loaded(3) == scripted(3) == [0.0, 2.0, 4.0]
    assert "prim::CreateObject" in str(loaded.graph)
