"""Names crossing blocks, ``hash()`` and ``del`` of attributes in ember.jit.script, next to
torch.jit.script on the same source (tests/jit/script_scopes.py): refused code raises
TorchScript's error word for word, accepted code gives TorchScript's values."""

from __future__ import annotations

import io
import math
import re

import pytest
import torch

import ember

from .script_checks import roundtrip
from .script_scopes import (
    accepted,
    attribute_modules,
    deleting_module,
    refused,
    submodule_modules,
    tensor_slot_modules,
    unhashable,
)

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
EMBER_REFUSED, TORCH_REFUSED = refused(ember), refused(torch)
EMBER_OK, TORCH_OK = accepted(ember), accepted(torch)


def _error(script, fn) -> BaseException:
    with pytest.raises(Exception) as info:
        script(fn)
    return info.value


def _same_error(mine, theirs) -> None:
    assert isinstance(mine, RuntimeError) and isinstance(theirs, RuntimeError)
    assert str(mine).strip("\n") == str(theirs).strip("\n")


@pytest.mark.parametrize("name", sorted(TORCH_REFUSED))
def test_refused_with_torch_scripts_text(name):
    _same_error(
        _error(ember.jit.script, EMBER_REFUSED[name]),
        _error(torch.jit.script, TORCH_REFUSED[name]),
    )


def test_del_of_a_module_attribute_is_refused_as_torch():
    _same_error(
        _error(ember.jit.script, deleting_module(ember)),
        _error(torch.jit.script, deleting_module(torch)),
    )


@pytest.mark.parametrize("name", ["new", "wrong_type"])
def test_refused_attribute_assignment_is_torchs(name):
    _same_error(
        _error(ember.jit.script, attribute_modules(ember)[name]()),
        _error(torch.jit.script, attribute_modules(torch)[name]()),
    )


@pytest.mark.parametrize("name", ["makes_parameter", "assigns_int"])
def test_refused_tensor_slot_assignment_is_torchs(name):
    mine = _error(ember.jit.script, tensor_slot_modules(ember)[name]())
    theirs = _error(torch.jit.script, tensor_slot_modules(torch)[name]())
    if type(theirs) is RuntimeError:  # torch.jit.Error: ember's ScriptError is one
        assert isinstance(mine, RuntimeError)
    else:
        assert type(mine).__name__ == type(theirs).__name__ == "FrontendError"
    assert str(mine).strip("\n") == str(theirs).strip("\n")


def _pair(name):
    """The module scripted by both libraries, ember's holding torch's initial values."""
    theirs = tensor_slot_modules(torch)[name]()
    mine = tensor_slot_modules(ember)[name]()
    state = {k: ember.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    mine.load_state_dict(state)
    return ember.jit.script(mine), torch.jit.script(theirs), mine


def _state(module) -> dict:
    return {k: v.detach().numpy().tolist() for k, v in module.state_dict().items()}


def test_assigned_buffer_and_numbers_after_calls_are_torchs():
    mine, theirs, eager = _pair("counts")
    for step in range(3):
        values = [0.5 * step, 1.0, -2.0]
        out = mine(ember.tensor(values, dtype=ember.float64))
        expected = theirs(torch.tensor(values, dtype=torch.float64))
        assert out.numpy().tolist() == expected.numpy().tolist()
        assert _state(mine) == _state(theirs)
        assert (mine.count, mine.scale) == (theirs.count, theirs.scale)
    assert _state(eager)["total"] == [0.0, 0.0, 0.0]  # the original module keeps its own


def test_assigned_parameter_is_read_after_the_assignment_as_torch():
    mine, theirs, _ = _pair("replaces_weight")
    values = [1.0, 2.0, 3.0]
    out = mine(ember.tensor(values, dtype=ember.float64))
    expected = theirs(torch.tensor(values, dtype=torch.float64))
    assert out.detach().numpy().tolist() == expected.detach().numpy().tolist()
    assert _state(mine) == _state(theirs)


@pytest.mark.parametrize("flag", [False, True])
def test_assigned_submodule_parameter_is_torchs(flag):
    mine, theirs, _ = _pair("sets_submodule_bias")
    values = [1.0, -2.0, 0.5]
    out = mine(ember.tensor(values, dtype=ember.float64), flag)
    expected = theirs(torch.tensor(values, dtype=torch.float64), flag)
    assert out.detach().numpy().tolist() == pytest.approx(expected.detach().numpy().tolist())
    assert _state(mine)["lin.bias"] == _state(theirs)["lin.bias"]


def test_a_mismatch_names_the_inferred_parameter_and_both_places():
    text = str(_error(ember.jit.script, EMBER_REFUSED["mixed"]))
    assert "type int in the true branch and type Tensor (inferred) in the false" in text
    assert text.count("<--- HERE") == 2 and "and was used here:" in text


def _tensor(lib, dtype="float64"):
    return lib.tensor(3, dtype=getattr(lib, dtype))


@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize(
    "name, dtype",
    [("mixed_unused", "float64"), ("rebind_to_int", "int64"), ("annotated_optional", "float64")],
)
def test_branch_values_match_torch(name, dtype, flag):
    mine = ember.jit.script(EMBER_OK[name])(_tensor(ember, dtype), flag)
    theirs = torch.jit.script(TORCH_OK[name])(_tensor(torch, dtype), flag)
    _same_value(mine, theirs)


@pytest.mark.parametrize("n", [0, 2])
def test_loop_rebinding_converts_as_torch(n):
    mine = ember.jit.script(EMBER_OK["rebind_to_float"])(_tensor(ember), n)
    theirs = torch.jit.script(TORCH_OK["rebind_to_float"])(_tensor(torch), n)
    assert type(mine) is type(theirs) is float and mine == theirs


def _same_value(mine, theirs) -> None:
    if theirs is None or isinstance(theirs, (int, float)):
        assert type(mine) is type(theirs) and mine == theirs
    else:
        assert mine.dtype == ember.float64
        assert mine.numpy().tolist() == theirs.numpy().tolist()


HASHED = {
    "hash_int": [0, 5, -1, -(2**63), 2**62],
    "hash_float": [0.0, -0.0, 1.5, -1.0, 1e300, 1e-310, math.inf, -math.inf, math.nan],
    "hash_str": ["", "a", "abcdefgh", "abcdefghi", "héllo wörld, a longer string"],
    "hash_bool": [True, False],
    "hash_tuple": [(1, 2.5, "x"), (0, 0.0, ""), (-7, 1e10, "ember")],
    "hash_optional": [None, 3],
}


@pytest.mark.parametrize("name", sorted(HASHED))
def test_hash_is_torch_scripts(name):
    mine, theirs = ember.jit.script(EMBER_OK[name]), torch.jit.script(TORCH_OK[name])
    for value in HASHED[name]:
        assert mine(value) == theirs(value), value


def test_hash_of_a_tensor_is_its_identity():
    # TorchScript hashes the tensor's address: equal for the same tensor, distinct for two
    # live tensors with equal values; nothing else is promised
    a, b = _tensor(ember), _tensor(ember)
    mine = ember.jit.script(EMBER_OK["hash_tensor"])(a, b)
    theirs = torch.jit.script(TORCH_OK["hash_tensor"])(_tensor(torch), _tensor(torch))
    assert mine == theirs == (True, False)


DEVICES = ["cpu", "cuda", "cuda:3", "xpu", "xpu:0", "meta", "mps"]


@pytest.mark.parametrize("saved", [False, True], ids=["scripted", "loaded"])
def test_hash_of_a_device_is_torch_scripts(saved):
    """std::hash<c10::Device>: the device type's number and the index (255 for none)."""
    mine, theirs = (
        ember.jit.script(EMBER_OK["hash_device"]),
        torch.jit.script(TORCH_OK["hash_device"]),
    )
    made = ember.jit.script(EMBER_OK["hash_devices"])
    if saved:
        mine, made = roundtrip(mine), roundtrip(made)
    mine_arg, their_arg = ember.jit.script(_hash_ember_device), torch.jit.script(_hash_torch_device)
    if saved:
        mine_arg = roundtrip(mine_arg)
    for name in DEVICES:
        assert mine(name) == theirs(name), name
        assert mine_arg(ember.device(name)) == their_arg(torch.device(name)) == theirs(name)
    their_made = torch.jit.script(TORCH_OK["hash_devices"])
    for kind, index in (("cpu", 0), ("cuda", 2), ("xpu", 1)):
        want = their_made(_tensor(torch), kind, index)
        assert made(_tensor(ember), kind, index) == want


def _hash_ember_device(d: ember.device) -> int:
    return hash(d)


def _hash_torch_device(d: torch.device) -> int:
    return hash(d)


EMBER_UNHASHABLE, TORCH_UNHASHABLE = unhashable(ember), unhashable(torch)


def _run_error(script, fn, argument) -> BaseException:
    compiled = script(fn)
    with pytest.raises(RuntimeError) as info:
        compiled(argument)
    return info.value


@pytest.mark.parametrize(
    "name", ["hash_object", "hash_list", "hash_dict", "hash_nested", "hash_complex"]
)
def test_hash_of_an_unhashable_type_compiles_and_fails_as_torchs(name):
    """TorchScript names the object's class with its compilation unit's address: ember says
    the same without the address."""
    (mine, argument), (theirs, _) = EMBER_UNHASHABLE[name], TORCH_UNHASHABLE[name]
    mine = str(_run_error(ember.jit.script, mine, argument))
    theirs = str(_run_error(torch.jit.script, theirs, argument)).splitlines()[-1]
    theirs = re.sub(r" \(of Python compilation unit at: 0x[0-9a-f]+\)", "", theirs)
    assert "RuntimeError: " + mine == theirs


def test_explicit_dunder_hash_is_a_method_call_as_torchs():
    (mine, _), (theirs, _) = EMBER_UNHASHABLE["hash_method"], TORCH_UNHASHABLE["hash_method"]
    assert ember.jit.script(mine)(3) == torch.jit.script(theirs)(3) == 21


@pytest.mark.parametrize("name", ["object_keys", "tuple_keys", "optional_keys"])
def test_dict_keys_torchscript_does_not_hash_are_refused_with_its_text(name):
    (mine, _), (theirs, _) = EMBER_UNHASHABLE[name], TORCH_UNHASHABLE[name]
    mine, theirs = _error(ember.jit.script, mine), _error(torch.jit.script, theirs)
    theirs = re.sub(r" \(of Python compilation unit at: 0x[0-9a-f]+\)", "", str(theirs))
    assert isinstance(mine, RuntimeError) and str(mine) == theirs


@pytest.mark.parametrize(
    "shape, dtype, message",
    [
        ((2,), "int64", "Cannot input a tensor of dimension other than 0 as a scalar argument"),
        ((), "float64", "Cannot input a tensor of type Double as an integral argument"),
    ],
)
def test_implicit_conversion_refusals_are_torchs(shape, dtype, message):
    mine = ember.jit.script(EMBER_OK["rebind_to_int"])
    theirs = torch.jit.script(TORCH_OK["rebind_to_int"])
    with pytest.raises(RuntimeError) as info:
        theirs(torch.ones(shape, dtype=getattr(torch, dtype)), True)
    assert message in str(info.value)
    with pytest.raises(RuntimeError, match=message):
        mine(ember.ones(shape, dtype=getattr(ember, dtype)), True)


def test_freezing_keeps_an_assigned_slot_as_torch():
    class Accumulates:
        def __init__(self, lib):
            class Module(lib.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("total", lib.zeros(1))

                def forward(self, x):
                    self.total = self.total + x.sum().reshape(1)
                    return self.total * 2

            self.module = Module().eval()

    mine = ember.jit.freeze(ember.jit.script(Accumulates(ember).module))
    theirs = torch.jit.freeze(torch.jit.script(Accumulates(torch).module))
    for _ in range(3):
        out = mine(ember.tensor([1.0, 0.5]))
        assert out.numpy().tolist() == theirs(torch.tensor([1.0, 0.5])).numpy().tolist()


def _submodule_pair(name, copies: int = 1):
    """torch's module scripted, and ``copies`` scripted ember modules holding its values."""
    theirs = submodule_modules(torch)[name]()
    state = {k: ember.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    mine = []
    for _ in range(copies):
        mine.append(submodule_modules(ember)[name]())
        mine[-1].load_state_dict(state)
    return [ember.jit.script(m) for m in mine], torch.jit.script(theirs)


def _saved_and_loaded(module):
    buffer = io.BytesIO()
    ember.jit.save(module, buffer)
    buffer.seek(0)
    return ember.jit.load(buffer)


@pytest.mark.parametrize("name", ["swaps", "nested"])
def test_assigned_submodule_runs_as_torchs(name):
    """The slot holds the other module from then on: each call's result is TorchScript's,
    also after save and load and after freezing."""
    (mine, other), theirs = _submodule_pair(name, copies=2)
    copies = [_saved_and_loaded(mine), ember.jit.freeze(other.eval())]
    theirs.eval()
    for flag in [False, True, True, False, True]:
        a = [[0.5, -1.0, 2.0]]
        want = theirs(torch.tensor(a, dtype=torch.float64), flag).detach().numpy().tolist()
        for module in [mine, *copies]:
            got = module(ember.tensor(a, dtype=ember.float64), flag)
            assert got.detach().numpy().tolist() == want


def test_assigned_submodule_is_the_slots_module_in_python_too():
    """After an odd number of swaps the scripted module's ``lin`` is the other Linear (torch's
    Python wrappers keep showing the old one, which its own graphs no longer run)."""
    (mine,), _ = _submodule_pair("swaps")
    lin, other = mine.lin, mine.other
    for flag in [True, False, True, True]:
        mine(ember.ones(1, 3, dtype=ember.float64), flag)
    assert mine.lin is other and mine.other is lin
    assert mine.state_dict()["lin.weight"].data_ptr() == other.weight.data_ptr()


def test_assigned_submodule_reads_both_modules_before_storing():
    (mine,), _ = _submodule_pair("swaps")
    kinds = [n.kind() for n in next(mine.graph.nodes()).blocks()[0].nodes()]
    assert kinds == ["prim::GetModule", "prim::GetModule", "prim::SetModule", "prim::SetModule"]


def _type_names(text: str) -> str:
    """TorchScript's module type names without the compilation unit's address and the name
    mangling of a second type of one class; ember's note on such a type; torch/ember paths."""
    text = re.sub(r" \(of Python compilation unit at: 0x[0-9a-f]+\)", "", text)
    text = re.sub(r"___torch_mangle_\d+\.", "", text)
    text = text.replace(" (with other constants, parameters or submodules)", "")
    return text.replace("__torch__.torch.", "__torch__.ember.")


@pytest.mark.parametrize("name", ["other_sizes", "other_class", "none", "new"])
def test_refused_submodule_assignment_is_torchs(name):
    mine = _error(ember.jit.script, submodule_modules(ember)[name]())
    theirs = _error(torch.jit.script, submodule_modules(torch)[name]())
    assert isinstance(mine, RuntimeError) and isinstance(theirs, RuntimeError)
    assert _type_names(str(mine)).strip("\n") == _type_names(str(theirs)).strip("\n")
