"""Issue 16: operations on unnarrowed Union/Any values in scripted code, against
torch.jit.script on the same source: the same results where it scripts them, both refusing
where it does not."""

import pytest
import torch

import ember

from . import script_unions as programs

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")

CALLS = {
    "u_str": [(3,), ("ab",)],
    "u_list": [(3,), ("ab",)],
    "u_tuple": [(3,), ("ab",)],
    "u_dict": [(3,), ("ab",)],
    "u_pass": [(3,), ("ab",)],
    "a_list": [(3,), ("ab",)],
    "a_str": [(3,), (2.5,), ("ab",)],
    "a_isinstance": [(3,), (2.5,), ("ab",), (True,)],
    "a_is_none": [(3,), (None,)],
    "num_neg": [(3,), (2.5,)],
    "num_abs": [(-3,), (-2.5,)],
    "num_compare": [(1,), (2.5,), (-2,)],
    "num_max": [(1,), (2.5,), (3,)],
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_unnarrowed_values_match_torch_script(name):
    fn = getattr(programs, name)
    mine, theirs = ember.jit.script(fn), torch.jit.script(fn)
    for args in CALLS[name]:
        want, got = theirs(*args), mine(*args)
        assert got == want and type(got) is type(want), (args, got, want)


@pytest.mark.parametrize(
    ("name", "theirs"),
    [
        ("u_eq", "Arguments for call are not valid"),
        ("a_eq", "Arguments for call are not valid"),
        ("u_in", "Arguments for call are not valid"),
        ("a_add", "Arguments for call are not valid"),
        ("u_bool", "Could not cast value of type Union[float, int] to bool"),
    ],
)
def test_refused_by_both(name, theirs):
    fn = getattr(programs, name)
    with pytest.raises(RuntimeError) as caught:
        torch.jit.script(fn)
    assert str(caught.value).strip("\n").startswith(theirs)
    with pytest.raises(RuntimeError) as caught:
        ember.jit.script(fn)
    assert str(caught.value).startswith(theirs)
