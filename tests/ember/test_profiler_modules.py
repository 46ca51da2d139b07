"""ember.profiler's nn.Module scopes (with_modules, and with_stack as PyTorch's Python tracer)
against what torch 2.13 records for the same model."""

from __future__ import annotations

import json

import pytest

import ember
from ember import _profiler_modules

torch = pytest.importorskip("torch")


def _model(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.act = nn.ReLU()

        def forward(self, x):
            return self.act(self.fc(x))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.b1, self.b2 = Block(), Block()
            self.head = nn.Sequential(nn.Linear(4, 2), nn.Tanh())

        def forward(self, x):
            return self.head(self.b2(self.b1(x)))

    return Net()


def _scopes(stack):
    return [frame for frame in stack if frame.startswith("nn.Module: ")]


def _profile(lib, tmp_path, **options):
    """(op -> module scopes of each call, innermost first; the trace) for one forward."""
    model, x = _model(lib), lib.randn(3, 4)
    if lib is torch:  # torch keeps op stacks only in its verbose mode, and scopes with with_stack
        verbose = torch.profiler._ExperimentalConfig(verbose=True)
        options = {"with_stack": True, "experimental_config": verbose}
    with lib.profiler.profile(**options) as prof:
        model(x)
    path = tmp_path / f"{lib.__name__}.json"
    prof.export_chrome_trace(str(path))
    scopes = {}
    for event in prof.events():
        name = event.key.removeprefix("aten::")
        if name in ("linear", "relu", "tanh"):
            scopes.setdefault(name, []).extend([_scopes(event.stack)] * event.count)
    return scopes, json.loads(path.read_text())


@pytest.mark.parametrize(
    "options",
    [{"with_modules": True}, {"with_stack": True}, {"with_modules": True, "with_stack": True}],
)
def test_op_stacks_hold_torchs_module_scopes(options, tmp_path):
    theirs, _ = _profile(torch, tmp_path)
    ours, doc = _profile(ember, tmp_path, **options)
    assert sorted(ours) == sorted(theirs) == ["linear", "relu", "tanh"]
    for name in theirs:
        assert sorted(ours[name]) == sorted(theirs[name])
    assert ["nn.Module: Linear_2", "nn.Module: Sequential_0", "nn.Module: Net_0"] in ours["linear"]
    assert doc["with_modules"] == int(bool(options.get("with_modules")))
    assert not _profiler_modules.RECORDERS  # Module.__call__ is back to its plain path


def _module_tree(doc):
    """Each module scope's (name, "Python module id", enclosing scope) in the trace."""
    calls = [e for e in doc["traceEvents"] if e.get("cat") == "python_function"]
    ids = {e["args"]["Python id"]: e for e in calls}

    def scope_above(event):
        up = ids.get(event["args"]["Python parent id"])
        while up is not None and not up["name"].startswith("nn.Module: "):
            up = ids.get(up["args"]["Python parent id"])
        return up and up["name"]

    modules = [e for e in calls if e["name"].startswith("nn.Module: ")]
    return [(e["name"], e["args"]["Python module id"], scope_above(e)) for e in modules]


def test_trace_scopes_nest_as_torchs(tmp_path):
    _, theirs = _profile(torch, tmp_path)
    _, ours = _profile(ember, tmp_path, with_modules=True)
    assert _module_tree(ours) == _module_tree(theirs)
    assert ("nn.Module: Linear_1", 1, "nn.Module: Block_1") in _module_tree(ours)
    # each op lies inside its innermost scope, as Perfetto draws it
    ops = [e for e in ours["traceEvents"] if e.get("cat") == "cpu_op" and e["name"] == "relu"]
    relus = [e for e in ours["traceEvents"] if e["name"].startswith("nn.Module: ReLU")]
    for op, scope in zip(ops, relus):
        assert scope["ts"] <= op["ts"] and op["ts"] + op["dur"] <= scope["ts"] + scope["dur"]
        assert op["args"]["Call stack"].startswith(scope["name"] + ";")


def _module_calls(prof) -> list:
    """The scope names of every module call (ember's events are per name, with a count)."""
    events = [e for e in prof.events() if e.key.startswith("nn.Module")]
    return sorted(name for e in events for name in [e.key] * e.count)


def test_numbers_count_instances_per_class_in_call_order():
    """torch numbers an instance by when this profile first saw it called; a module called
    twice keeps its number; the count starts again in the next profile."""
    names = []
    for lib in (torch, ember):
        shared, other = lib.nn.Linear(2, 2), lib.nn.Linear(2, 2)
        x = lib.ones(1, 2)
        with lib.profiler.profile(with_stack=True, with_modules=True) as prof:
            other(shared(shared(x)))
        with lib.profiler.profile(with_stack=True, with_modules=True) as again:
            shared(x)
        names.append([_module_calls(p) for p in (prof, again)])
    assert names[1] == names[0]


def test_group_by_stack_n_groups_by_module():
    model, x = _model(ember), ember.randn(3, 4)
    with ember.profiler.profile(with_modules=True) as prof:
        model(x)
    relus = [e for e in prof.key_averages(group_by_stack_n=2) if e.key == "relu"]
    assert sorted(e.stack for e in relus) == [
        ["nn.Module: ReLU_0", "nn.Module: Block_0"],
        ["nn.Module: ReLU_1", "nn.Module: Block_1"],
    ]
    assert all(e.count == 1 for e in relus)


def test_scope_of_a_failing_forward_is_closed_and_plain_calls_are_untouched():
    class Broken(ember.nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    with ember.profiler.profile(with_modules=True) as prof:
        with pytest.raises(ValueError, match="boom"):
            Broken()(ember.ones(1))
        ember.ones(1) + 1
    (add,) = [e for e in prof.events() if e.key == "add"]
    assert add.stack == []  # the failed call's scope did not stay open
    assert "nn.Module: Broken_0" in {e.key for e in prof.events()}
    with ember.profiler.profile() as plain:
        ember.nn.ReLU()(ember.ones(1))
    assert not any(e.key.startswith("nn.Module") for e in plain.events())
