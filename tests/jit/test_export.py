"""ember.export next to torch.export: signature, lifted state, Dim ranges and guards, the
specialization error, module() over the zoo at other batch sizes, save/load."""

from __future__ import annotations

import io

import pytest
import torch

import ember
import ember.nn as nn
from ember.export import Dim, export

from .test_trace import assert_same
from .zoo import CASES


def model(lib):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 4)
            self.register_buffer("b", lib.ones(4))
            self.register_buffer("scratch", lib.zeros(4), persistent=False)

        def forward(self, x):
            return self.lin(x).relu() + self.b + self.scratch

    return M()


def _export(lib, **kw):
    batch = lib.export.Dim("batch", min=1, max=64)
    return lib.export.export(model(lib), (lib.randn(4, 3),), dynamic_shapes={"x": {0: batch}}, **kw)


def test_signature_matches_torch_export():
    ours, theirs = _export(ember), _export(torch)
    describe = lambda ep: [  # noqa: E731
        (s.kind.name, s.arg.name, s.target, s.persistent) for s in ep.graph_signature.input_specs
    ]
    assert describe(ours) == describe(theirs)
    assert list(ours.state_dict) == list(theirs.state_dict)
    assert sorted(ours.constants) == sorted(theirs.constants) == ["scratch"]
    assert [str(v) for v in ours.range_constraints.values()] == [
        str(v) for v in theirs.range_constraints.values()
    ]
    assert ours.graph_signature.parameters == theirs.graph_signature.parameters
    assert ours.graph_signature.buffers == theirs.graph_signature.buffers
    assert ours.graph_signature.user_inputs == theirs.graph_signature.user_inputs


def test_graph_is_op_table_ops_with_lifted_placeholders():
    ep = _export(ember)
    nodes = list(ep.graph.nodes)
    assert [n.name for n in nodes if n.op == "placeholder"] == [
        "p_lin_weight", "p_lin_bias", "b_b", "b_scratch", "x",
    ]  # fmt: skip
    assert not [n for n in nodes if n.op == "get_attr"]
    calls = [n.target for n in nodes if n.op == "call_function"]
    assert all(isinstance(t, type(ember.ops.add)) for t in calls)
    assert "ember.ops.linear(" in ep.graph_module.code
    assert str(ep).startswith("ExportedProgram:")
    assert "Range constraints: {s0: VR[1, 64]}" in str(ep)


def test_module_runs_and_checks_guards_like_torch():
    ours, theirs = _export(ember), _export(torch)
    module = ours.module()
    assert sorted(module.state_dict()) == ["b", "lin.bias", "lin.weight"]
    x = ember.randn(7, 3)
    assert_same(module(x), model_like(ours)(x))
    for shape in [(100, 3), (4, 5)]:
        with pytest.raises(AssertionError) as ember_error:
            module(ember.randn(*shape))
        with pytest.raises(AssertionError) as torch_error:
            theirs.module()(torch.randn(*shape))
        assert str(ember_error.value) == str(torch_error.value)
    with pytest.raises(RuntimeError, match="Unable to call ExportedProgram directly"):
        ours(x)


def model_like(ep):
    """The eager computation of ``model`` with the exported state."""
    state = ep.state_dict
    return lambda x: (x @ state["lin.weight"].t() + state["lin.bias"]).relu() + state["b"]


def test_specialized_dynamic_dim_is_refused():
    class Reshapes(nn.Module):
        def forward(self, x):
            return x.view(4, -1)

    with pytest.raises(ember.export.ConstraintViolationError, match=r"Constraints violated \(s0\)"):
        export(Reshapes(), (ember.randn(4, 3),), dynamic_shapes={"x": {0: Dim("n")}})

    class Branches(nn.Module):
        def forward(self, x):
            return x * 2 if x.shape[0] > 3 else x

    with pytest.raises(ember.export.ConstraintViolationError, match="specialized"):
        export(Branches(), (ember.randn(4, 3),), dynamic_shapes=({0: Dim("n", max=8)},))


def test_shared_dims_and_bad_examples():
    class Adds(nn.Module):
        def forward(self, a, b):
            return a + b

    n = Dim("n")
    ep = export(Adds(), (ember.randn(3, 2), ember.randn(3, 2)),
                dynamic_shapes={"a": {0: n}, "b": {0: n}})  # fmt: skip
    assert len(ep.range_constraints) == 1
    out = ep.module()(ember.ones(5, 2), ember.ones(5, 2))
    assert out.shape == (5, 2)
    with pytest.raises(AssertionError, match="Guard failed"):
        ep.module()(ember.ones(5, 2), ember.ones(6, 2))
    with pytest.raises(ember.export.ConstraintViolationError):
        export(Adds(), (ember.randn(3, 2), ember.randn(3, 2)),
               dynamic_shapes={"a": {0: Dim("m", max=2)}, "b": None})  # fmt: skip
    with pytest.raises(ValueError, match="Expecting `args` to be a tuple"):
        export(Adds(), ember.randn(3, 2))


@pytest.mark.parametrize("name", sorted(CASES))
def test_zoo_exports_with_a_dynamic_batch_and_round_trips(name):
    case = CASES[name]
    batch = Dim("batch", max=64)
    shapes = [{0: batch}] + [None] * (len(case.example) - 1)
    if name in ("rnn", "gru"):
        shapes[1] = {1: batch}  # hidden state: (layers, batch, hidden)
    if name == "lstm":
        shapes[1] = ({1: batch}, {1: batch})
    ep = export(case.model, case.example, dynamic_shapes=tuple(shapes))
    buffer = io.BytesIO()
    ember.export.save(ep, buffer)
    loaded = ember.export.load(io.BytesIO(buffer.getvalue()))
    for program in (ep, loaded):
        module = program.module()
        assert_same(module(*case.example), case.model(*case.example))
        assert_same(module(*case.others[0]), case.model(*case.others[0]))  # another batch
    assert str(loaded.graph_signature) == str(ep.graph_signature)


def test_hostile_exported_program_is_refused():
    import json
    import zipfile

    buffer = io.BytesIO()
    ember.export.save(_export(ember), buffer)
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as zf:
        records = {n: zf.read(n) for n in zf.namelist()}
    model_json = json.loads(records["archive/model.json"])
    model_json["inputs"][0][0] = "EVIL"
    records["archive/model.json"] = json.dumps(model_json).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for n, data in records.items():
            zf.writestr(n, data)
    with pytest.raises(ember.jit.ArchiveError, match="malformed exported program"):
        ember.export.load(io.BytesIO(out.getvalue()))
    with pytest.raises(ember.jit.ArchiveError, match=r"not an ember\.export archive"):
        ember.export.load(io.BytesIO(_jit_archive()))


def _jit_archive() -> bytes:
    buffer = io.BytesIO()
    ember.jit.save(ember.jit.trace(nn.Linear(2, 2), ember.ones(1, 2)), buffer)
    return buffer.getvalue()


def test_a_module_whose_input_is_named_input_exports_and_runs():
    # nn.Linear's forward takes `input`, a builtin's name: its placeholder is renamed
    linear = nn.Linear(4, 3)
    x = ember.randn(2, 4)
    program = export(linear, (x,))
    assert_same(program.module()(x), linear(x))
