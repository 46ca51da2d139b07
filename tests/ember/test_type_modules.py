"""``ember.types`` and ``ember.nn.common_types``: the annotation modules programs import from
torch's paths hold torch's names (the Sym and dispatch types aside: ember has no symbolic ints
or dispatch keys), and each size alias admits what torch's admits."""

import typing

import torch.nn.common_types
import torch.types

import ember.nn.common_types
import ember.types

# torch.types names that describe what ember does not have: symbolic ints, dispatch keys,
# quantization schemes, its storage classes and typing re-exports
NOT_IN_EMBER = {
    "DispatchKey", "PySymType", "SymBool", "SymFloat", "SymInt", "Storage", "_dispatchkey",
    "_qscheme", "py_sym_types", "_TensorOrTensorsOrGradEdge", "Any", "IO", "Self", "Sequence",
    "Size", "TYPE_CHECKING", "Tensor", "TypeAlias", "Union", "os", "_device", "_dtype",
    "_layout",
}  # fmt: skip


def _public(module) -> set:
    return {n for n in vars(module) if not n.startswith("__")}


def test_types_module_has_torch_names():
    missing = _public(torch.types) - _public(ember.types) - NOT_IN_EMBER
    assert not missing


def test_common_types_has_torch_names():
    wanted = {n for n in _public(torch.nn.common_types) if n.endswith("_t")}
    assert wanted <= _public(ember.nn.common_types)


def test_size_aliases_admit_what_torch_admits():
    for name in ("_size_1_t", "_size_2_t", "_size_3_t", "_size_2_opt_t", "_ratio_2_t"):
        ours = typing.get_args(getattr(ember.nn.common_types, name))
        theirs = typing.get_args(getattr(torch.nn.common_types, name))
        assert [repr(a) for a in ours] == [repr(a) for a in theirs], name
