"""Passes keep outputs: dead code, constant folding, CSE (alias-aware), freezing, conv+bn
folding, optimize_for_inference over the zoo, shape propagation on meta tensors."""

from __future__ import annotations

import pytest

import ember
import ember.nn as nn
from ember.jit.passes.constant_fold import fold_constants
from ember.jit.passes.cse import eliminate_common_subexpressions
from ember.jit.passes.dce import eliminate_dead_code
from ember.jit.passes.shape_prop import propagate_shapes
from ember.jit.passes.transposes import fold_double_transposes

from .test_trace import assert_same
from .zoo import CASES


def kinds(graph) -> list[str]:
    return [n.kind() for n in graph.all_nodes()]


def trace_fn(fn, *args):
    return ember.jit.trace(fn, args, check_trace=False)


def test_dead_code_goes_but_writes_and_draws_stay():
    def fn(x):
        unused = x * 3  # noqa: F841 - dead on purpose
        y = x.clone()
        y.add_(1)
        ember.rand(2)  # advances the generator: kept
        return x + 1

    graph = trace_fn(fn, ember.ones(2)).graph
    eliminate_dead_code(graph)
    assert "ember::mul" not in kinds(graph)
    assert "ember::add_" in kinds(graph) and "ember::uniform_" in kinds(graph)


def test_double_transposes_cancel_unless_written():
    def fn(x, w):
        return x.mm(w.t().t()) + w.t().t().sum()

    x, w = ember.randn(3, 4), ember.randn(4, 4)
    traced = trace_fn(fn, x, w)
    graph = traced.graph.copy()
    fold_double_transposes(graph)
    assert "ember::t" not in kinds(graph)
    from ember.jit.codegen import generate

    assert_same(generate(graph, method=False).fn(x, w)[0], traced(x, w))

    def written(w):
        v = w.t().t()
        v.mul_(2)  # writes through the pair: left alone
        return v

    graph = trace_fn(written, w.clone()).graph.copy()
    fold_double_transposes(graph)
    assert kinds(graph).count("ember::t") == 2


def test_constant_folding_and_what_it_leaves():
    c = ember.arange(4.0)

    def fn(x):
        scale = (c * 2).exp().sum()  # constants only: folds
        noise = ember.rand(4)  # random: never folds
        return x * scale + noise

    traced = trace_fn(fn, ember.ones(4))
    graph = traced.graph.copy()
    fold_constants(graph)
    assert "ember::exp" not in kinds(graph) and "ember::uniform_" in kinds(graph)
    ember.manual_seed(3)
    want = traced(ember.ones(4))
    ember.manual_seed(3)
    from ember.jit.codegen import generate

    assert_same(generate(graph, method=False).fn(ember.ones(4))[0], want)


def test_folding_respects_writes_into_constants():
    c = ember.zeros(3)

    def fn(x):
        view = c.view(3)
        before = view.sum()  # reads c before the write: must not be precomputed ...
        c.add_(1)  # ... because the graph writes into c
        return x + before

    graph = trace_fn(fn, ember.ones(3)).graph
    fold_constants(graph)
    assert "ember::sum" in kinds(graph)


def test_cse_merges_repeats_but_not_reads_around_a_write():
    def fn(x):
        a = (x * 2).relu()
        b = (x * 2).relu()
        y = x.clone()
        first = y.sum()
        y.mul_(3)
        second = y.sum()
        return a + b + first + second + 0.0 * -0.0

    traced = trace_fn(fn, ember.randn(4))
    graph = traced.graph.copy()
    eliminate_common_subexpressions(graph)
    assert kinds(graph).count("ember::relu") == 1
    assert kinds(graph).count("ember::sum") == 2
    x = ember.randn(4)
    from ember.jit.codegen import generate

    assert_same(generate(graph, method=False).fn(x)[0], fn(x))


def test_freeze_needs_eval_and_a_script_module():
    model = nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="expects a ScriptModule"):
        ember.jit.freeze(model)
    traced = ember.jit.trace(model, ember.ones(1, 2))
    with pytest.raises(RuntimeError, match=r"call \.eval\(\)"):
        ember.jit.freeze(traced)


@pytest.mark.parametrize("name", sorted(CASES))
def test_freeze_and_optimize_for_inference_keep_outputs(name):
    case = CASES[name]
    traced = ember.jit.trace(case.model, case.example)
    frozen = ember.jit.freeze(traced)
    optimized = ember.jit.optimize_for_inference(traced)
    assert "prim::GetAttr" not in kinds(frozen.graph) and not list(frozen.parameters())
    # linear is one op, so an MLP has nothing left to fold; folding itself is tested below
    assert len(kinds(optimized.graph)) <= len(kinds(traced.graph))
    for args in [case.example, *case.others]:
        assert_same(frozen(*args), case.model(*args))
        assert_same(optimized(*args), case.model(*args), atol=1e-4)


def test_freeze_preserves_what_it_is_asked_to():
    case = CASES["mlp"]
    traced = ember.jit.trace(case.model, case.example)
    frozen = ember.jit.freeze(traced, preserved_attrs=["fc2.weight"])
    assert [n["name"] for n in frozen.graph.findAllNodes("prim::GetAttr")] == ["fc2.weight"]
    assert frozen.fc2.weight is case.model.fc2.weight
    assert_same(frozen(*case.example), case.model(*case.example))


def test_batch_norm_folds_into_the_convolution():
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.Conv2d(8, 4, 3, bias=False, groups=2), nn.BatchNorm2d(4),
    ).eval()  # fmt: skip
    with ember.no_grad():
        for bn in (model[1], model[4]):
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            bn.weight.uniform_(0.5, 2)
            bn.bias.uniform_(-1, 1)
    x = ember.randn(2, 3, 9, 9)
    optimized = ember.jit.optimize_for_inference(ember.jit.trace(model, x))
    found = kinds(optimized.graph)
    assert sorted(set(found)) == ["ember::conv2d", "ember::relu", "prim::Constant"]
    assert found.count("ember::conv2d") == 2
    for batch in (x, ember.randn(5, 3, 11, 11)):
        assert_same(optimized(batch), model(batch), atol=1e-4)


def test_shape_propagation_reproduces_traced_types():
    for name, case in CASES.items():
        traced = ember.jit.trace(case.model, case.example)
        graph = traced.graph.copy()
        wanted = [v.type() for n in graph.all_nodes() for v in n.outputs()]
        for node in graph.all_nodes():  # forget every type but the inputs'
            for value in node.outputs():
                value.setType(ember.jit.types.AnyType)
        propagate_shapes(graph, module=traced)
        got = [v.type() for n in graph.all_nodes() for v in n.outputs()]
        assert got == wanted, name


def test_shape_propagation_at_other_sizes():
    case = CASES["gpt"]
    traced = ember.jit.trace(case.model, case.example)
    graph = traced.graph.copy()
    (out,) = propagate_shapes(graph, [ember.empty(5, 11, dtype=ember.int64, device="meta")], traced)
    assert out.shape == (5, 11, 32)
    assert str(graph.outputs()[0].type()) == "Float(5, 11, 32, requires_grad=1, device=cpu)"
