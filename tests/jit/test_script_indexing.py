"""Issue 16: advanced indexing in scripted code (tensor, list and mask indices; reads,
writes, augmented writes) and ``del`` of nested items, against torch.jit.script on the same
source: values, float64 gradients, the graph after saving and loading, and the passes."""

import pytest
import torch

import ember
from ember.jit.interpreter import GraphInterpreter
from ember.jit.passes.constant_fold import fold_constants
from ember.jit.passes.cse import eliminate_common_subexpressions
from ember.jit.passes.dce import eliminate_dead_code

from . import script_indexing as programs

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")

X = [[1.0, -2.0, 3.0], [-4.0, 5.0, 6.0], [7.0, 8.0, -9.0]]
IDX = [2, 0]
CALLS = {
    "by_tensor": ("x", "idx"),
    "by_mask": ("x",),
    "by_list": ("x",),
    "mixed": ("x", "idx"),
    "two_tensors": ("x", "idx", "idx"),
    "with_none": ("x", "idx"),
    "put": ("x", "idx", "v"),
    "put_mask": ("x",),
    "put_columns": ("x", "idx"),
    "put_then_read": ("x", "idx"),
    "aug": ("x", "idx"),
}


def arguments(lib, names, requires_grad=False):
    made = {
        "x": lib.tensor(X, dtype=lib.float64, requires_grad=requires_grad),
        "idx": lib.tensor(IDX),
        "v": lib.tensor(7.0, dtype=lib.float64),
    }
    return [made[n] for n in names]


@pytest.mark.parametrize("name", sorted(CALLS))
def test_indexing_matches_torch_script(name):
    fn = getattr(programs, name)
    want = torch.jit.script(fn)(*arguments(torch, CALLS[name]))
    got = ember.jit.script(fn)(*arguments(ember, CALLS[name]))
    assert got.dtype.__str__().split(".")[-1] == str(want.dtype).split(".")[-1]
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("name", ["by_tensor", "by_mask", "mixed", "put_columns", "aug"])
def test_indexing_gradients_match_torch(name):
    fn = getattr(programs, name)
    theirs = arguments(torch, CALLS[name], requires_grad=True)
    torch.jit.script(fn)(*theirs).sum().backward()
    mine = arguments(ember, CALLS[name], requires_grad=True)
    ember.jit.script(fn)(*mine).sum().backward()
    assert mine[0].grad.tolist() == theirs[0].grad.tolist()


@pytest.mark.parametrize("name", ["mixed", "put_then_read", "aug"])
def test_indexing_survives_save_load_and_freezing(name, tmp_path):
    fn = getattr(programs, name)
    want = torch.jit.script(fn)(*arguments(torch, CALLS[name])).tolist()
    scripted = ember.jit.script(fn)
    scripted.save(str(tmp_path / "f.pt"))
    loaded = ember.jit.load(str(tmp_path / "f.pt"))
    assert loaded(*arguments(ember, CALLS[name])).tolist() == want
    graph = scripted.graph.copy()  # the passes must not merge or move reads across a write
    eliminate_common_subexpressions(fold_constants(eliminate_dead_code(graph)))
    graph.lint()
    (got,) = GraphInterpreter(graph).run(*arguments(ember, CALLS[name]))
    assert got.tolist() == want


@pytest.mark.parametrize("name", ["del_nested", "del_nested_dict"])
def test_del_of_nested_items_matches_torch_script(name):
    fn = getattr(programs, name)
    assert ember.jit.script(fn)(5) == torch.jit.script(fn)(5) == fn(5)


@pytest.mark.parametrize("name", ["del_slice", "after_ellipsis"])
def test_refused_with_torch_scripts_message(name):
    """``del xs[1:3]``; ``x[..., idx]`` (TorchScript has no tensor index after ``...``)."""
    with pytest.raises(RuntimeError) as theirs:
        torch.jit.script(getattr(programs, name))
    with pytest.raises(RuntimeError) as mine:
        ember.jit.script(getattr(programs, name))
    assert str(mine.value).strip("\n") == str(theirs.value).strip("\n")
