"""ember.fx next to torch.fx: the same model written once against either library gives the same
graph (ops, targets' names, args, printing, generated code), and graph passes written the way
PyTorch users write them work: insertion, replacement, erasure, recompile, Interpreter,
Transformer, wrap, Tracer subclasses. The nn zoo traces and matches eager."""

from __future__ import annotations

import contextlib
import io
import operator

import pytest
import torch

import ember
import ember.fx
import ember.nn as nn

from .test_trace import assert_same
from .zoo import CASES


def model(lib):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 4)
            self.scale = lib.nn.Parameter(lib.ones(4))

        def forward(self, x, y=2):
            a = self.lin(x).relu()
            b = lib.nn.functional.gelu(a) + y * self.scale
            return lib.cat([a, b], 1).sum(dim=1), x.shape[0]

    return M()


def _canonical_target(target) -> str:
    if isinstance(target, str):
        return target
    return {"gelu": "gelu", "cat": "cat"}.get(target.__name__, f"operator.{target.__name__}")


def test_graph_matches_torch_fx():
    ours = ember.fx.symbolic_trace(model(ember)).graph
    theirs = torch.fx.symbolic_trace(model(torch)).graph
    describe = lambda g: [  # noqa: E731
        (n.op, n.name, _canonical_target(n.target), str(n.args), str(n.kwargs), len(n.users))
        for n in g.nodes
    ]
    assert describe(ours) == describe(theirs)
    lines = lambda g: [line for line in str(g).splitlines() if "gelu" not in line]  # noqa: E731
    their_lines = [line.replace("torch.", "ember.") for line in lines(theirs)]
    assert lines(ours) == their_lines


def test_generated_code_matches_torch_fx():
    ours = ember.fx.symbolic_trace(model(ember)).code
    theirs = torch.fx.symbolic_trace(model(torch)).code

    def normalize(code):
        code = code.replace("torch._C._nn.gelu", "ember.nn.functional.gelu")
        return code.replace("torch.", "ember.").strip()

    assert normalize(ours) == normalize(theirs)


def test_print_tabular_matches_torch_fx():
    outputs = []
    for lib in (ember, torch):
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            lib.fx.symbolic_trace(model(lib)).graph.print_tabular()
        outputs.append(buffer.getvalue().splitlines())
    ours, theirs = outputs
    assert ours[0].split() == theirs[0].split() and len(ours) == len(theirs)
    for mine, other in zip(ours[2:], theirs[2:]):
        assert mine.split()[:2] == other.split()[:2]  # opcode and name; targets print as objects


@pytest.mark.parametrize("name", sorted(CASES))
def test_zoo_traces_and_matches_eager(name):
    case = CASES[name]
    gm = ember.fx.symbolic_trace(case.model)
    gm.graph.lint()
    assert isinstance(gm, ember.fx.GraphModule)
    for args in [case.example, *case.others]:
        assert_same(gm(*args), case.model(*args))


def test_node_kinds_targets_and_users():
    gm = ember.fx.symbolic_trace(model(ember))
    nodes = {n.name: n for n in gm.graph.nodes}
    assert [n.op for n in gm.graph.nodes] == [
        "placeholder", "placeholder", "call_module", "call_method", "call_function",
        "get_attr", "call_function", "call_function", "call_function", "call_method",
        "call_function", "call_function", "output",
    ]  # fmt: skip
    assert nodes["lin"].target == "lin" and nodes["scale"].target == "scale"
    assert nodes["gelu"].target is ember.nn.functional.gelu
    assert nodes["add"].target is operator.add and nodes["cat"].target is ember.cat
    assert nodes["sum_1"].kwargs == {"dim": 1}
    assert set(nodes["relu"].users) == {nodes["gelu"], nodes["cat"]}
    assert nodes["cat"].all_input_nodes == [nodes["relu"], nodes["add"]]


def test_graph_edits_and_recompile():
    m = model(ember)
    gm = ember.fx.symbolic_trace(m)
    graph = gm.graph
    relu = next(n for n in graph.nodes if n.name == "relu")
    with graph.inserting_after(relu):
        doubled = graph.call_function(operator.mul, (relu, 2.0))
    relu.replace_all_uses_with(doubled, delete_user_cb=lambda user: user is not doubled)
    assert doubled.args == (relu, 2.0)
    graph.lint()
    gm.recompile()
    assert "mul_1 = relu * 2.0" in gm.code
    x = ember.randn(2, 3)
    a = m.lin(x).relu() * 2.0
    want = ember.cat([a, ember.nn.functional.gelu(a) + 2 * m.scale], 1).sum(dim=1)
    assert_same(gm(x)[0], want)
    with pytest.raises(RuntimeError, match="Tried to erase Node relu but it still had 1 users"):
        graph.erase_node(relu)
    getitem = next(n for n in graph.nodes if n.name == "getitem")
    output = next(n for n in graph.nodes if n.op == "output")
    output.args = ((output.args[0][0],),)
    graph.erase_node(getitem)
    assert graph.eliminate_dead_code()  # the shape read before the getitem went too
    gm.recompile()
    assert "shape" not in gm.code and len(gm(x)) == 1


def test_lint_catches_broken_graphs():
    gm = ember.fx.symbolic_trace(model(ember))
    graph = gm.graph
    relu = next(n for n in graph.nodes if n.name == "relu")
    lin = next(n for n in graph.nodes if n.name == "lin")
    lin.prepend(relu)
    with pytest.raises(RuntimeError, match="used before defined"):
        graph.lint()
    gm = ember.fx.symbolic_trace(model(ember))
    next(n for n in gm.graph.nodes if n.op == "call_module").target = "missing"
    with pytest.raises(RuntimeError, match="nonexistent attribute missing"):
        gm.graph.lint()


def test_interpreter_and_transformer():
    m = model(ember)
    gm = ember.fx.symbolic_trace(m)
    x = ember.randn(3, 3)
    seen = []

    class Counting(ember.fx.Interpreter):
        def call_function(self, target, args, kwargs):
            seen.append(target)
            return super().call_function(target, args, kwargs)

    result = Counting(gm).run(x)
    assert_same(result[0], gm(x)[0]) and result[1] == 3
    assert operator.add in seen and ember.cat in seen

    class ReluToSigmoid(ember.fx.Transformer):
        def call_method(self, target, args, kwargs):
            if target == "relu":
                return super().call_function(ember.sigmoid, args, kwargs)
            return super().call_method(target, args, kwargs)

    changed = ReluToSigmoid(gm).transform()
    assert "ember.sigmoid(lin)" in changed.code and "relu" not in changed.code
    a = m.lin(x).sigmoid()
    want = ember.cat([a, ember.nn.functional.gelu(a) + 2 * m.scale], 1).sum(dim=1)
    assert_same(changed(x)[0], want)


def helper(x):
    """Python control flow on a value: fails as traced code, fine as a wrapped leaf."""
    return x * 2 if x.sum() > 0 else x


ember.fx.wrap("helper")


def test_wrap_records_a_call_instead_of_tracing_it():
    def fn(x):
        return helper(x) + 1

    gm = ember.fx.symbolic_trace(fn)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets[0] is helper
    for x in (ember.ones(2), -ember.ones(2)):
        assert_same(gm(x), fn(x))


def test_control_flow_on_proxies_raises():
    def fn(x):
        return x if x.sum() > 0 else -x

    with pytest.raises(ember.fx.TraceError, match="control flow"):
        ember.fx.symbolic_trace(fn)


def test_tracer_subclass_decides_leaves():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x).tanh()

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.head = nn.Linear(4, 2)

        def forward(self, x):
            return self.head(self.block(x))

    class LeafBlocks(ember.fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, Block) or super().is_leaf_module(m, qualname)

    class NoLeaves(ember.fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return False

    net = Net()
    leaves = LeafBlocks().trace(net)
    assert [n.target for n in leaves.nodes if n.op == "call_module"] == ["block", "head"]
    flat = NoLeaves().trace(net)
    assert [n.op for n in flat.nodes].count("call_module") == 0
    assert {n.target for n in flat.nodes if n.op == "get_attr"} >= {"block.lin.weight"}
    x = ember.randn(3, 4)
    for graph in (leaves, flat):
        assert_same(ember.fx.GraphModule(net, graph)(x), net(x))


def test_graph_module_from_a_dict_and_built_by_hand():
    graph = ember.fx.Graph()
    x = graph.placeholder("x")
    w = graph.get_attr("weights.w")
    out = graph.call_function(ember.matmul, (x, w))
    graph.output(graph.call_method("relu", (out,)))
    w_value = ember.randn(3, 2)
    gm = ember.fx.GraphModule({"weights.w": w_value}, graph)
    x_value = ember.randn(4, 3)
    assert_same(gm(x_value), (x_value @ w_value).relu())
    import copy

    clone = copy.deepcopy(gm)
    assert clone.code == gm.code
    assert_same(clone(x_value), gm(x_value))


def test_an_input_named_after_a_builtin_is_renamed_as_torch_fx_renames_it():
    """``forward(self, input)``: the placeholder's node is ``input_1`` and the generated code
    binds it from the parameter, word for word as torch.fx writes it."""

    def traced(lib, trace):
        class M(lib.nn.Module):
            def forward(self, input):
                return input + 1

        return trace(M())

    ours = traced(ember, ember.fx.symbolic_trace)
    assert ours.code.strip() == traced(torch, torch.fx.symbolic_trace).code.strip()
    assert ours(ember.ones(2)).tolist() == [2.0, 2.0]
