"""ember.jit.trace over the nn zoo against eager ember, and the tracer's behaviour next to
PyTorch's: TracerWarnings, check_trace, errors, symbolic sizes, module scopes."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.jit import pytree

from .zoo import CASES


def flat(tree):
    return pytree.flatten(tree)[0]


def assert_same(got, want, atol=1e-5):
    got, want = flat(got), flat(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-5, atol=atol)


@pytest.fixture(scope="module")
def traced():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ember.jit.TracerWarning)  # the zoo traces cleanly
        return {name: ember.jit.trace(case.model, case.example) for name, case in CASES.items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_zoo_matches_eager_at_traced_and_other_sizes(name, traced):
    case, module = CASES[name], traced[name]
    assert isinstance(module, ember.jit.ScriptModule)
    module.graph.lint()
    for args in [case.example, *case.others]:
        assert_same(module(*args), case.model(*args))


@pytest.mark.parametrize("name", sorted(CASES))
def test_zoo_graph_and_code_are_readable(name, traced):
    module = traced[name]
    text = str(module.graph)
    assert text.startswith("graph(%") and "return (" in text
    assert "prim::GetAttr" in text and "ember::" in text
    assert module.code.startswith("def forward(self, ")
    assert "ops." in module.code and "self." in module.code
    assert module.original_name == type(CASES[name].model).__name__


def test_trace_shares_the_modules_parameters(traced):
    case = CASES["mlp"]
    module = traced["mlp"]
    assert module.fc1.weight is case.model.fc1.weight
    before = module(*case.example)
    with ember.no_grad():
        case.model.fc1.weight.mul_(2.0)
    try:
        after = module(*case.example)
        assert_same(after, case.model(*case.example))
        assert not np.allclose(after.detach().numpy(), before.detach().numpy())
    finally:
        with ember.no_grad():
            case.model.fc1.weight.div_(2.0)


def test_sizes_read_from_inputs_stay_symbolic():
    def flatten(x):
        return x.view(x.size(0), -1).relu() * x.shape[1]

    fn = ember.jit.trace(flatten, ember.randn(2, 3, 4))
    assert isinstance(fn, ember.jit.ScriptFunction)
    kinds = [n.kind() for n in fn.graph.nodes()]
    assert "prim::size" in kinds and "prim::ListConstruct" in kinds
    x = ember.randn(5, 2, 2)
    assert_same(fn(x), flatten(x))


def test_sizes_of_parameters_are_constants(traced):
    sizes = traced["mlp"].graph.findAllNodes("prim::size")
    assert all(n.inputsAt(0).node().kind() != "prim::GetAttr" for n in sizes)


def test_nodes_carry_module_scopes_and_user_source_lines(traced):
    nodes = [n for n in traced["cnn"].graph.nodes() if n.kind() == "ember::conv2d"]
    assert [n.scopeName() for n in nodes] == ["features.0", "features.4"]
    assert all(n.sourceRange().endswith(".py:" + n.sourceRange().rsplit(":", 1)[1]) for n in nodes)
    assert "zoo.py" in nodes[0].sourceRange()


def test_nested_inputs_outputs_and_keywords():
    def fn(pair, scale, *, bias):
        a, b = pair
        return {"sum": a + b * scale, "both": (a * bias, b)}

    args = ((ember.randn(2, 3), ember.randn(2, 3)), ember.randn(3))
    kwargs = {"bias": ember.randn(2, 3)}
    traced_fn = ember.jit.trace(fn, args, example_kwarg_inputs=kwargs, strict=False)
    assert [v.debugName() for v in traced_fn.graph.inputs()] == [
        "pair.0",
        "pair.1",
        "scale",
        "bias",
    ]
    assert_same(traced_fn(*args, **kwargs), fn(*args, **kwargs))
    with pytest.raises(TypeError, match="expected arguments structured as"):
        traced_fn(ember.randn(2, 3), ember.randn(3), bias=kwargs["bias"])


def test_trace_module_traces_several_methods():
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(x)

        def double(self, x):
            return self.lin(x) * 2

    model = Two()
    x = ember.randn(4, 3)
    traced_model = ember.jit.trace_module(model, {"forward": x, "double": x})
    assert traced_model.method_names() == ["double", "forward"]
    assert_same(traced_model.double(x), model.double(x))
    assert_same(traced_model(x), model(x))
    assert_same(ember.jit.trace(model.double, x)(x), model.double(x))


def test_untraced_submodule_forward_says_what_to_do(traced):
    with pytest.raises(RuntimeError, match="trace_module"):
        traced["mlp"].fc1(ember.randn(2, 6))


# ---- warnings and errors, next to PyTorch's -------------------------------------------------
def _data_dependent(lib):
    def fn(x):
        if x.sum() > 0:
            return x * 2
        return x

    return fn


WARNING_CASES = {
    "bool": lambda lib: _data_dependent(lib),
    "number": lambda lib: lambda x: x + x.sum().item(),
    "integer": lambda lib: lambda x: x * int(x.sum()),
    "float": lambda lib: lambda x: x * float(x.sum()),
    "iterate": lambda lib: lambda x: lib.stack([row * 2 for row in x]),
    "tensor constant": lambda lib: lambda x: x + lib.tensor([1.0, 2.0]),
    "len": lambda lib: lambda x: x * len(x),
}


def _tracer_messages(lib, fn, example):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib.jit.trace(fn, example, check_trace=False)
    category = lib.jit.TracerWarning
    return [str(w.message) for w in caught if issubclass(w.category, category)]


@pytest.mark.parametrize("what", sorted(WARNING_CASES))
def test_tracer_warnings_match_pytorch(what):
    ours = _tracer_messages(ember, WARNING_CASES[what](ember), ember.ones(2))
    theirs = _tracer_messages(torch, WARNING_CASES[what](torch), torch.ones(2))
    assert ours == [m.replace("torch.tensor", "ember.tensor") for m in theirs]


def test_list_output_warns_unless_not_strict():
    fn = lambda x: [x, x * 2]  # noqa: E731
    with pytest.warns(ember.jit.TracerWarning, match="Encountering a list at the output"):
        ember.jit.trace(fn, ember.ones(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = ember.jit.trace(fn, ember.ones(2), strict=False)(ember.ones(3))
    assert isinstance(out, list) and out[1].tolist() == [2.0, 2.0, 2.0]


def test_check_trace_catches_control_flow_that_changes_the_graph():
    fn = _data_dependent(ember)
    differed = pytest.raises(ember.jit.TracingCheckError, match="Graphs differed across")
    with differed, warnings.catch_warnings():
        warnings.simplefilter("ignore", ember.jit.TracerWarning)
        ember.jit.trace(fn, ember.ones(2), check_inputs=[(-ember.ones(2),)])


def test_check_trace_warns_about_random_nodes():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).train()
    with pytest.warns(ember.jit.TracerWarning, match="Trace had nondeterministic nodes"):
        traced_model = ember.jit.trace(model, ember.randn(64, 4))
    assert any(n.isNondeterministic() for n in traced_model.graph.nodes())


def test_non_tensor_inputs_and_outputs_are_refused_like_pytorch():
    with pytest.raises(RuntimeError, match="Type 'int' cannot be traced"):
        ember.jit.trace(lambda x, n: x * n, (ember.ones(2), 3))
    message = "Only tensors, lists, tuples of tensors, or dictionary of tensors can be output"
    with pytest.raises(RuntimeError, match=re.escape(message)):
        ember.jit.trace(lambda x: 3, ember.ones(2))
    with pytest.raises(RuntimeError, match=re.escape(message)):
        torch.jit.trace(lambda x: 3, torch.ones(2))


def test_captured_tensor_that_requires_grad_is_refused_like_pytorch():
    w = ember.ones(2, requires_grad=True)
    message = "Cannot insert a Tensor that requires grad as a constant"
    with pytest.raises(RuntimeError, match=message):
        ember.jit.trace(lambda x: x * w, ember.ones(2))
    theirs = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=message):
        torch.jit.trace(lambda x: x * theirs, torch.ones(2))


def test_captured_tensor_becomes_a_constant():
    c = ember.tensor([1.0, 2.0])
    fn = ember.jit.trace(lambda x: x * c, ember.ones(2))
    constants = [n for n in fn.graph.nodes() if n.kind() == "prim::Constant"]
    assert any(n["value"] is c for n in constants)


def test_is_tracing_and_no_layer_left_behind():
    seen = []

    def fn(x):
        seen.append(ember.jit.is_tracing())
        return x + 1

    ember.jit.trace(fn, ember.ones(1), check_trace=False)
    assert seen == [True] and not ember.jit.is_tracing()
    from ember.dispatcher.layers import STACK

    assert not any(layer.name == "tracing" for layer in STACK.layers)
    assert ember.Tensor.__dict__["shape"].fget.__module__ == "ember._tensor"


def test_tracing_does_not_leak_into_other_threads():
    import threading

    other = []

    def fn(x):
        thread = threading.Thread(target=lambda: other.append(ember.ones(2) + 1))
        thread.start()
        thread.join()
        return x * 2

    fn_traced = ember.jit.trace(fn, ember.ones(2), check_trace=False)
    assert [n.kind() for n in fn_traced.graph.nodes()] == ["prim::Constant", "ember::mul"]
    assert other[0].tolist() == [2.0, 2.0]


def test_moving_a_traced_module_moves_its_baked_devices(device):
    import copy

    case = CASES["gpt"]
    model = copy.deepcopy(case.model)  # a traced module shares its parameters with the model
    traced = ember.jit.trace(model, case.example).to(device)
    arange = traced.graph.findNode("ember::arange")
    assert arange.inputsAt(4).node()["value"].type == device
    out = traced(case.example[0].to(device))
    assert out.device.type == device
    assert_same(out.cpu(), case.model(*case.example), atol=1e-4)


def test_gradients_flow_through_a_traced_module():
    import copy

    model = copy.deepcopy(CASES["cnn"].model).train()
    model.head[1].p = 0.0  # deterministic: compare gradients with eager
    x = ember.randn(3, 1, 8, 8)
    traced = ember.jit.trace(model, x, check_trace=False)
    grads = []
    for run in (model, traced):
        model.zero_grad()
        run(x).square().sum().backward()
        grads.append([p.grad.clone() for p in model.parameters()])
    for ours, eager in zip(*grads):
        assert_same(ours, eager, atol=1e-4)
