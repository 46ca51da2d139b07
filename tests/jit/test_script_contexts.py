"""Issue 16: ``with`` statements in scripted code against torch.jit.script on the same
source: script-class context managers (enter/exit order, ``as``, a return inside), autocast,
record_function, several items; the graphs save and load."""

import pytest
import torch

import ember

from . import script_contexts as programs

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")


@pytest.mark.parametrize(
    "name",
    [
        "user_context",
        "user_context_no_as",
        "user_context_return",
        "two_user_contexts",
        "logged_context",
    ],
)
def test_class_context_managers_match_torch_script(name):
    fn = getattr(programs, name)
    for n in (3, 5):
        assert ember.jit.script(fn)(n) == torch.jit.script(fn)(n)


def _same(got, want):
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    elif isinstance(want, torch.Tensor):
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        assert got.requires_grad == want.requires_grad
        assert got.float().tolist() == want.float().tolist()
    else:
        assert got == want


@pytest.mark.parametrize("name", sorted(programs.library(ember)))
def test_library_contexts_match_torch_script(name, tmp_path):
    data = [[1.0, 2.0], [3.0, 4.0]]
    want = torch.jit.script(programs.library(torch)[name])(torch.tensor(data, requires_grad=True))
    scripted = ember.jit.script(programs.library(ember)[name])
    _same(scripted(ember.tensor(data, requires_grad=True)), want)
    scripted.save(str(tmp_path / "f.pt"))
    loaded = ember.jit.load(str(tmp_path / "f.pt"))
    _same(loaded(ember.tensor(data, requires_grad=True)), want)
