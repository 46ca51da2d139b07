"""Scripted modules with run-time state, against torch.jit.script on the same source:
``self.training`` read when the code runs (train()/eval() after scripting), attributes that
methods assign, ``jit.Attribute``, buffers updated in place; save/load keeps the state."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

import ember

from .script_constructs import stateful

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
X = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)


def scripted_pair(name):
    mine, theirs = stateful(ember)[name](), stateful(torch)[name]()
    with torch.no_grad():
        for key, value in mine.state_dict().items():
            theirs.state_dict()[key].copy_(torch.from_numpy(value.numpy().copy()))
    return ember.jit.script(mine), torch.jit.script(theirs)


def assert_same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
    elif isinstance(want, torch.Tensor):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-6)
    else:
        assert got == want, (got, want)


def roundtrip(module):
    buffer = io.BytesIO()
    module.save(buffer)
    return ember.jit.load(io.BytesIO(buffer.getvalue()))


def test_attributes_assigned_in_forward_persist_across_calls_as_torch():
    mine, theirs = scripted_pair("counter")
    for _ in range(4):
        assert_same(mine(ember.tensor(X)), theirs(torch.tensor(X)))
    assert mine.calls == theirs.calls == 4 and mine.scale == theirs.scale == 2.0
    assert mine.log == list(theirs.log) == [f"call {i}" for i in range(1, 5)]
    kinds = {node.kind() for node in mine.graph.all_nodes()}
    assert {"prim::ModuleAttr", "prim::SetModuleAttr", "ember::add_"} <= kinds


def test_state_is_saved_and_restored():
    mine, theirs = scripted_pair("counter")
    for _ in range(2):
        mine(ember.tensor(X)), theirs(torch.tensor(X))
    loaded = roundtrip(mine)
    assert loaded.calls == 2 and loaded.log == ["call 1", "call 2"]
    for _ in range(2):
        assert_same(loaded(ember.tensor(X)), theirs(torch.tensor(X)))


def test_training_flag_is_read_at_run_time_as_torch():
    mine, theirs = scripted_pair("modal")
    for mode in (True, False, True, False):
        mine.train(mode)
        theirs.train(mode)
        assert_same(mine(ember.tensor(X)), theirs(torch.tensor(X)))
        assert_same(roundtrip(mine)(ember.tensor(X)), theirs(torch.tensor(X)))


def _dropping_net(nn):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.5)
            self.rnn = nn.GRU(4, 4, num_layers=2, dropout=0.5)

        def forward(self, x):
            out, _ = self.rnn(self.drop(x).unsqueeze(1))
            return out

    return Net()


@pytest.mark.parametrize("scripted_in_training", [True, False])
def test_library_dropout_follows_train_and_eval_after_scripting(scripted_in_training):
    """nn.Dropout and the dropout between RNN layers read the flag at run time, as PyTorch's
    scripted modules do: eval() after scripting in training mode stops dropping, train() after
    scripting in eval mode starts; the archive keeps the switch."""
    eager = _dropping_net(ember.nn).train(scripted_in_training)
    scripted = ember.jit.script(eager)
    x = ember.tensor(np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32))
    for module in (scripted, roundtrip(scripted)):
        module.eval()
        want = eager.eval()(x).detach().numpy()
        np.testing.assert_allclose(module(x).detach().numpy(), want, atol=1e-6)
        module.train()
        first, second = module(x).detach().numpy(), module(x).detach().numpy()
        assert not np.array_equal(first, second), "train(): dropout draws a new mask per call"


def test_freeze_inlines_the_training_flag():
    mine, theirs = scripted_pair("modal")
    frozen = ember.jit.freeze(mine.eval())
    assert "prim::ModuleAttr" not in str(frozen.graph)
    assert_same(frozen(ember.tensor(X)), theirs.eval()(torch.tensor(X)))


def test_frozen_module_keeps_the_attributes_it_writes():
    mine, theirs = scripted_pair("counter")
    frozen = ember.jit.freeze(mine.eval())
    for _ in range(3):
        assert_same(frozen(ember.tensor(X))[1], theirs(torch.tensor(X))[1])


def test_an_assigned_buffer_survives_save_and_load():
    # TorchScript allows assigning a buffer slot (tests/jit/test_script_scopes.py compares the
    # effect with torch); the archive keeps the assignment
    class Reset(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("total", ember.zeros(1))

        def forward(self, x):
            self.total = x.sum().reshape(1)
            return self.total * 2

    scripted = ember.jit.script(Reset())
    buffer = io.BytesIO()
    scripted.save(buffer)
    buffer.seek(0)
    loaded = ember.jit.load(buffer)
    for module in (scripted, loaded):
        out = module(ember.tensor([1.0, 2.0]))
        assert out.numpy().tolist() == [6.0]
        assert module.total.numpy().tolist() == [3.0]


def test_hostile_attribute_names_are_refused_on_load():
    import json
    import zipfile

    mine, _ = scripted_pair("counter")
    buffer = io.BytesIO()
    mine.save(buffer)
    source = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    forged = io.BytesIO()
    with zipfile.ZipFile(forged, "w") as out:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename.endswith("model.json"):
                model = json.loads(data)
                model["module"]["attributes"]["forward"] = 1
                data = json.dumps(model).encode()
            out.writestr(info, data)
    with pytest.raises(ember.jit.ArchiveError, match="forward"):
        ember.jit.load(io.BytesIO(forged.getvalue()))
