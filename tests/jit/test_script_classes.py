"""User classes in scripted code against torch.jit.script: errors word for word where both
refuse, and the runtime object survives save/load (the class itself is not needed)."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

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
    # torch.jit.script's refusal runs in a subprocess: when a class method fails to compile,
    # torch leaves the frame on its error-context stack, and later torch errors in this
    # process would quote it (test_script_errors compares those word for word).
    want = (
        "Tried to set nonexistent attribute: extra. Did you forget to initialize it in __init__()?"
    )
    with pytest.raises(RuntimeError) as mine:
        ember.jit.script(late_field(ember))
    assert want in str(mine.value)
    code = (
        "import torch, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "from tests.jit.test_script_classes import late_field\n"
        "try:\n"
        "    torch.jit.script(late_field(torch))\n"
        "except RuntimeError as e:\n"
        "    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert want in done.stdout, done.stderr


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
