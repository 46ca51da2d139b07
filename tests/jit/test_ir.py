"""The graph IR by hand: building, printing, linting, copying, rewriting; structured control
flow (prim::If, prim::Loop) through code generation, the interpreter, folding and archives."""

from __future__ import annotations

import io

import pytest

import ember
from ember.jit import pytree
from ember.jit import types as T
from ember.jit.codegen import generate
from ember.jit.graph_utils import copy_graph
from ember.jit.interpreter import GraphInterpreter
from ember.jit.ir import Graph, GraphError
from ember.jit.passes.constant_fold import fold_constants
from ember.jit.script_module import Method, ScriptFunction
from ember.jit.trace import canonical_text


def _op(graph, name, *inputs, out_type=T.Tensor):
    node = graph.insert(f"ember::{name}", inputs)
    node.output().setType(out_type)
    return node.output()


def relu_add():
    graph = Graph()
    x = graph.addInput("x", T.TensorType(ember.float32, (2, 3)))
    y = graph.addInput("y")
    graph.registerOutput(_op(graph, "relu", _op(graph, "add", x, y)))
    return graph


def test_build_print_and_run():
    graph = relu_add()
    graph.lint()
    text = str(graph)
    assert text.splitlines()[0] == "graph(%x : Float(2, 3),"
    assert "ember::add(%x, %y)" in text and text.rstrip().endswith("return (%3)")
    fn = generate(graph, method=False).fn
    a, b = ember.randn(2, 3), ember.randn(2, 3)
    assert fn(a, b)[0].tolist() == (a + b).relu().tolist()
    assert GraphInterpreter(graph).run(a, b)[0].tolist() == (a + b).relu().tolist()


def test_method_names_of_torchscript():
    graph = relu_add()
    add = graph.findNode("ember::add")
    assert add.kind() == "ember::add" and add.op() is ember.ops.add
    assert [v.debugName() for v in add.inputs()] == ["x", "y"]
    assert add.output().uses()[0].user.kind() == "ember::relu"
    assert add.schema().name == "add"
    assert graph.findAllNodes("ember::relu")[0].inputsAt(0) is add.output()
    assert graph.inputs()[0].type().sizes() == (2, 3)


def test_rewrite_with_insert_point_and_replace_all_uses():
    graph = relu_add()
    add = graph.findNode("ember::add")
    with graph.insert_point_guard(add):
        doubled = _op(graph, "mul", graph.inputs()[0], graph.insertConstant(2.0))
    add.replaceInput(0, doubled)
    graph.lint()
    a, b = ember.ones(2, 3), ember.ones(2, 3)
    assert generate(graph, method=False).fn(a, b)[0].tolist() == [[3.0] * 3] * 2
    relu = graph.findNode("ember::relu")
    relu.output().replaceAllUsesWith(add.output())
    relu.destroy()
    assert str(graph).rstrip().endswith("return (%2)")
    with pytest.raises(RuntimeError, match="is used by"):
        add.destroy()


def test_copy_is_deep():
    graph = relu_add()
    copied = copy_graph(graph)
    assert str(copied) == str(graph)
    copied.findNode("ember::relu").setScope("changed")
    assert graph.findNode("ember::relu").scopeName() == ""


def test_lint_catches_broken_graphs():
    graph = relu_add()
    add = graph.findNode("ember::add")
    add.moveAfter(graph.findNode("ember::relu"))
    with pytest.raises(GraphError, match="used before it is defined"):
        graph.lint()
    graph = relu_add()
    graph.findNode("ember::add").removeInput(1)
    with pytest.raises(GraphError, match="inputs for a schema"):
        graph.lint()
    graph = relu_add()
    graph.insert("prim::Nope", ())
    with pytest.raises(GraphError, match="unknown prim"):
        graph.lint()


def if_graph():
    """``x * 2 if flag else x - 1`` with the flag an input: structured control flow."""
    graph = Graph()
    flag = graph.addInput("flag", T.BoolType)
    x = graph.addInput("x")
    node = graph.insert("prim::If", [flag], 1)
    then, other = node.addBlock(), node.addBlock()
    with graph.insert_point_guard(then):
        then.registerOutput(_op(graph, "mul", x, graph.insertConstant(2)))
    with graph.insert_point_guard(other):
        other.registerOutput(_op(graph, "sub", x, graph.insertConstant(1)))
    graph.registerOutput(node.output())
    return graph


def loop_graph():
    """``for i in range(n): x = x + i``: prim::Loop(max_trip, cond, x) body (i, x) -> (cond, x)."""
    graph = Graph()
    n = graph.addInput("n", T.IntType)
    x = graph.addInput("x")
    node = graph.insert("prim::Loop", [n, graph.insertConstant(True), x], 1)
    body = node.addBlock()
    i, carried = body.addInput("i", T.IntType), body.addInput("acc")
    with graph.insert_point_guard(body):
        body.registerOutput(graph.insertConstant(True))
        body.registerOutput(_op(graph, "add", carried, i))
    graph.registerOutput(node.output())
    return graph


@pytest.mark.parametrize("build, cases", [
    (if_graph, [((True, ember.ones(2)), [2.0, 2.0]), ((False, ember.ones(2)), [0.0, 0.0])]),
    (loop_graph, [((4, ember.zeros(2)), [6.0, 6.0]), ((0, ember.ones(2)), [1.0, 1.0])]),
])  # fmt: skip
def test_control_flow_runs_prints_and_survives_an_archive(build, cases):
    graph = build()
    graph.lint()
    assert "block0(" in str(graph) and "-> (" in str(graph)
    fn = generate(graph, method=False).fn
    in_spec = pytree.flatten(((0, 0), {}))[1]  # two positional arguments
    function = ScriptFunction("f", Method("f", graph, in_spec, {"type": "leaf"}, method=False))
    buffer = io.BytesIO()
    ember.jit.save(function, buffer)
    loaded = ember.jit.load(io.BytesIO(buffer.getvalue()))
    for args, want in cases:
        assert fn(*args)[0].tolist() == want
        assert GraphInterpreter(graph).run(*args)[0].tolist() == want
        assert loaded(*args).tolist() == want
    assert canonical_text(loaded.graph) == canonical_text(graph)


def test_constant_condition_is_inlined():
    graph = if_graph()
    flag = graph.inputs()[0]
    with graph.insert_point_guard(graph.findNode("prim::If")):
        flag.replaceAllUsesWith(graph.insertConstant(False))
    fold_constants(graph)
    assert graph.findNode("prim::If") is None and graph.findNode("ember::sub") is not None
    assert generate(graph, method=False).fn(True, ember.ones(1))[0].tolist() == [0.0]


def test_types_round_trip_through_json():
    for t in [
        T.TensorType(ember.bfloat16, (2, None, "batch"), ember.device("cpu"), True),
        T.ListType(T.OptionalType(T.Tensor)),
        T.TupleType([T.IntType, T.FloatType, T.ScalarTypeType]),
        T.DeviceObjType,
    ]:
        assert T.from_json(t.to_json()) == t
    assert str(T.TensorType(ember.int64, (2, None))) == "Long(2, *)"
    for bad in ["nope", {"tensor": {"dtype": "float128"}}, {"list": 3}, {"a": 1, "b": 2}]:
        with pytest.raises(ValueError):
            T.from_json(bad)
