"""ember.cond, ember.while_loop and ember._higher_order_ops.map against PyTorch 2.13: values,
gradients, the errors (types and texts), inside ember.compile and ember.export
(compiler/control_flow.py, docs/control_flow.md)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch._higher_order_ops import map as torch_map

import ember
import ember._dynamo.exc as eexc
from ember._higher_order_ops import map as ember_map
from ember.autograd import gradcheck
from tests.ember.same_error import assert_same_error

LIBS = {"ember": ember, "torch": torch}


def _pair(array):
    """The same values as an ember and a torch tensor."""
    array = np.asarray(array)
    return ember.tensor(array), torch.tensor(array)


def _close(got, want, tol=1e-6):
    got = got.detach().numpy() if isinstance(got, ember.Tensor) else np.asarray(got)
    np.testing.assert_allclose(got, want.detach().numpy(), rtol=tol, atol=tol)


def _same_tree(got, want):
    """Same structure (tuple/list/dict), tensors close, ints equal."""
    assert type(got) is type(want) or (
        isinstance(got, ember.Tensor) and isinstance(want, torch.Tensor)
    )
    if isinstance(want, dict):
        assert list(got) == list(want)
        for key in want:
            _same_tree(got[key], want[key])
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same_tree(g, w)
    elif isinstance(want, torch.Tensor):
        assert str(got.dtype).replace("ember", "torch") == str(want.dtype)
        assert tuple(got.shape) == tuple(want.shape)
        _close(got, want)
    else:
        assert got == want


X = np.array([0.5, -1.25, 2.0], dtype=np.float32)
X64 = X.astype(np.float64)


# ---- cond: values ------------------------------------------------------------------------------
@pytest.mark.parametrize("pred", [True, False, 1, 0, 0.0, 2.5, "t", "f", "t1", "i", "f0"])
def test_cond_picks_the_branch_torch_picks(pred):
    tensors = {"t": np.array(True), "f": np.array(False), "t1": np.array([True]),
               "i": np.array(3), "f0": np.array([0.0])}  # fmt: skip
    results = []
    for lib in (ember, torch):
        p = lib.tensor(tensors[pred]) if isinstance(pred, str) else pred
        x = lib.tensor(X)
        results.append(lib.cond(p, lambda x: x.cos() * 2, lambda x: x.sin() - 1, (x,)))
    _same_tree(*results)


def test_cond_pytree_operands_and_outputs():
    def run(lib, pred):
        a, b = lib.tensor(X), lib.tensor(X * 3)
        ops = ({"a": a, "bs": [b, (a * 2,)]}, b)

        def true_fn(d, c):
            return {"sum": d["a"] + d["bs"][0], "pair": (c * 2, d["bs"][1][0].exp())}

        def false_fn(d, c):
            return {"sum": d["a"] - c, "pair": (c.neg(), d["bs"][1][0] * 0.5)}

        return lib.cond(lib.tensor(pred), true_fn, false_fn, ops)

    for pred in (True, False):
        _same_tree(run(ember, pred), run(torch, pred))
    # a list of operands, no operands, int outputs
    for lib_pred in (True, False):
        got = ember.cond(ember.tensor(lib_pred), lambda a, b: a + b, lambda a, b: a * b,
                         [ember.tensor(X), ember.tensor(X)])  # fmt: skip
        want = torch.cond(torch.tensor(lib_pred), lambda a, b: a + b, lambda a, b: a * b,
                          [torch.tensor(X), torch.tensor(X)])  # fmt: skip
        _same_tree(got, want)
    _same_tree(
        ember.cond(ember.tensor(False), lambda: ember.ones(2), lambda: ember.zeros(2)),
        torch.cond(torch.tensor(False), lambda: torch.ones(2), lambda: torch.zeros(2)),
    )
    assert ember.cond(ember.tensor(False), lambda x: 1, lambda x: 2, (ember.ones(1),)) == 2


def test_cond_branches_may_differ_in_size():
    """PyTorch merges differing sizes into unbacked symbols: the taken branch's tensor."""
    for lib in (ember, torch):
        out = lib.cond(lib.tensor(False), lambda x: x * 1, lambda x: x[:2] * 1, (lib.ones(3),))
        assert tuple(out.shape) == (2,)


def test_nested_cond_and_cond_inside_while_body():
    def run(lib, p, q):
        def inner_true(x):
            return lib.cond(lib.tensor(q), lambda y: y * 3, lambda y: y - 3, (x,))

        def body(i, x):
            return i + 1, lib.cond(i % 2 == 0, lambda y: y * 2, lambda y: y + 1, (x,))

        out = lib.cond(lib.tensor(p), inner_true, lambda x: x.exp(), (lib.tensor(X),))
        looped = lib.while_loop(lambda i, x: i < 5, body, (lib.tensor(0), lib.tensor(X)))
        return out, looped

    for p in (True, False):
        for q in (True, False):
            _same_tree(run(ember, p, q), run(torch, p, q))


# ---- cond: errors ------------------------------------------------------------------------------
def _cond_call(lib, pred, *, true_fn=None, false_fn=None, operands=None):
    x = lib.tensor(X)
    return lambda: lib.cond(
        pred(lib) if callable(pred) else pred,
        true_fn or (lambda x: x + 1),
        false_fn or (lambda x: x - 1),
        operands(lib, x) if operands else (x,),
    )


@pytest.mark.parametrize(
    "case",
    [
        dict(pred=lambda lib: lib.tensor([True, False])),
        dict(pred=lambda lib: lib.tensor([])),
        dict(pred="a"),
        dict(pred=None),
        dict(pred=lambda lib: lib.tensor(True), true_fn=1),
        dict(pred=lambda lib: lib.tensor(True), operands=lambda lib, x: x),
        dict(pred=lambda lib: lib.tensor(True), operands=lambda lib, x: (x, 1)),
        dict(pred=lambda lib: lib.tensor(True), operands=lambda lib, x: ({"a": x, "n": None},)),
    ],
    ids=[
        "multi-element",
        "empty",
        "str",
        "None",
        "not-callable",
        "operands-tensor",
        "operands-int",
        "operands-None",
    ],
)
def test_cond_argument_errors_are_torchs(case):
    assert_same_error(_cond_call(ember, **case), _cond_call(torch, **case))


def _raises_like(call_ember, call_torch, texts):
    """The same exception class (ember._dynamo.exc's for torch._dynamo.exc's), and each of
    ``texts`` ("torch" read as "ember") in both messages."""
    with pytest.raises(Exception) as theirs:
        call_torch()
    with pytest.raises(Exception) as mine:
        call_ember()
    expected = getattr(eexc, type(theirs.value).__name__, None) or type(theirs.value)
    assert type(mine.value) is expected
    for text in texts:
        assert text in str(theirs.value)
        assert text.replace("torch", "ember") in str(mine.value)


BRANCH_MISMATCHES = [
    (lambda x: x.double(), "expected same dtype but got torch.float32 and torch.float64"),
    (lambda x: x.sum(), "expected same dim but got 1 and 0"),
    (lambda x: (x * 1, x * 2), "Unmatched output spec from torch.cond branches"),
    (lambda x: [x * 1, x * 2], "Expected branches to return the same pytree structure"),
    (lambda x: {"b": x * 1}, "Expected branches to return the same pytree structure"),
    (lambda x: 1, "expected both a and b to be FakeTensor"),
    (lambda x: 1.5, "body's output must consist of tensors or ints/bools only"),
    (lambda x: None, "Constants returned from branches must be ints"),
    (lambda x: x.reshape(3, 1).expand(3, 2).t().contiguous().t(), "sorted order of strides"),
]


@pytest.mark.parametrize("other, text", BRANCH_MISMATCHES)
@pytest.mark.parametrize("pred", [True, False])
def test_branch_mismatch_is_found_whichever_branch_runs(other, text, pred):
    def call(lib):
        shape_of = {"expected same dim": 1}
        x = lib.tensor(X)
        if "strides" in text:
            first = lambda x: x.reshape(3, 1).expand(3, 2) * 1  # noqa: E731
        elif "pytree" in text and isinstance(other(x), dict):
            first = lambda x: {"a": x * 1}  # noqa: E731
        elif "pytree" in text:
            first = lambda x: (x * 1, x * 2)  # noqa: E731
        else:
            first = lambda x: x * shape_of.get(text[:18], 1)  # noqa: E731
        return lambda: lib.cond(lib.tensor(pred), first, other, (x,))

    _raises_like(call(ember), call(torch), [text])


def test_bool_output_and_float_output():
    for out, name in ((True, "TorchRuntimeError"), (1.0, "UncapturedHigherOrderOpError")):
        branch = lambda x, out=out: out  # noqa: E731
        with pytest.raises(RuntimeError) as info:
            ember.cond(ember.tensor(True), branch, branch, (ember.ones(1),))
        assert type(info.value).__name__ == name
        assert type(info.value).__module__ == "ember.compiler.exc"


@pytest.mark.parametrize(
    "branch, text",
    [
        (lambda x: x, "Encountered aliasing during higher order op tracing"),
        (lambda x: x.view(3), "Encountered aliasing during higher order op tracing"),
        (lambda x: x.add_(1) * 1, "Encountered input mutation during higher order op tracing"),
    ],
)
def test_aliasing_and_mutation_refused_with_grad_mode_allowed_without(branch, text):
    def call(lib):
        return lambda: lib.cond(lib.tensor(True), branch, lambda x: x + 1, (lib.tensor(X),))

    _raises_like(call(ember), call(torch), [text, "Higher Order Operator: torch.cond"])
    results = []
    for lib in (ember, torch):
        with lib.no_grad():
            results.append(call(lib)())
    _same_tree(*results)


def test_outputs_aliasing_each_other_refused():
    def call(lib):
        return lambda: lib.cond(
            lib.tensor(True), lambda x: (x + 1,) * 2, lambda x: (x + 1, x + 2), (lib.tensor(X),)
        )

    _raises_like(call(ember), call(torch), ["Encountered aliasing"])


def test_the_branch_not_taken_runs_on_meta_only():
    """Checking the other branch neither draws random numbers nor writes tensors it reaches."""
    buf = ember.zeros(3)

    def other(x):
        buf.add_(1)
        return x + ember.randn(3)

    state = ember.get_rng_state()
    ember.cond(ember.tensor(True), lambda x: x * 2, other, (ember.tensor(X),))
    assert ember.equal(ember.get_rng_state(), state)
    assert buf.tolist() == [0.0, 0.0, 0.0]


def test_a_branch_that_cannot_run_on_meta_is_not_checked():
    """A data read in the branch not taken: PyTorch's trace refuses it, ember runs the call."""
    out = ember.cond(
        ember.tensor(True), lambda x: x * 2, lambda x: x * x.sum().item(), (ember.tensor(X),)
    )
    _close(out, torch.tensor(X) * 2)


# ---- cond: gradients ---------------------------------------------------------------------------
def _cond_fn(lib, pred):
    def f(x, y):
        return lib.cond(
            lib.tensor(pred),
            lambda a, b: (a.sin() * b, (a * b).sum()),
            lambda a, b: (a.exp() + b * b, a.sum() * 3),
            (x, y),
        )

    return f


@pytest.mark.parametrize("pred", [True, False])
def test_cond_gradcheck_float64(pred):
    x = ember.tensor(X64, requires_grad=True)
    y = ember.tensor(X64[::-1].copy() * 0.5, requires_grad=True)
    assert gradcheck(_cond_fn(ember, pred), (x, y))


@pytest.mark.parametrize("pred", [True, False])
def test_cond_gradients_match_torch_operands_and_parameters(pred):
    ember.manual_seed(0)
    lin = ember.nn.Linear(3, 2).double()
    tlin = torch.nn.Linear(3, 2).double()
    with torch.no_grad():
        tlin.weight.copy_(torch.tensor(lin.weight.detach().numpy()))
        tlin.bias.copy_(torch.tensor(lin.bias.detach().numpy()))
    grads = []
    for lib, layer in ((ember, lin), (torch, tlin)):
        x = lib.tensor(X64, requires_grad=True)
        y = lib.tensor(X64 * 2, requires_grad=True)
        a, s = _cond_fn(lib, pred)(x, y)
        out = lib.cond(
            lib.tensor(pred), lambda v, m=layer: m(v).tanh(), lambda v, m=layer: m(v * 2), (a,)
        )
        (out.sum() + s).backward()
        grads.append([x.grad, y.grad, layer.weight.grad, layer.bias.grad])
    for got, want in zip(*grads):
        _close(got, want, 1e-10)


# ---- while_loop --------------------------------------------------------------------------------
def test_while_loop_values_and_structures():
    def run(lib):
        x = lib.tensor(X)
        return [
            lib.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2), (lib.tensor(0), x)),
            lib.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2), (0, x)),
            lib.while_loop(lambda i, x: i < 3, lambda i, x: [i + 1, x * 2], (lib.tensor(0), x)),
            lib.while_loop(lambda i, x: i < 0, lambda i, x: [i + 1, x * 2], (lib.tensor(0), x)),
            lib.while_loop(lambda x: x.sum() < 10, lambda x: x + 1, (lib.zeros(2),)),
            lib.while_loop(lambda x: x.sum() < 10, lambda x: (x + 1,), (lib.zeros(2),)),
            lib.while_loop(lambda i, x: False, lambda i, x: (i + 1, x * 2), (lib.tensor(0), x)),
            lib.while_loop(
                lambda d: d["i"] < 3,
                lambda d: ({"i": d["i"] + 1, "y": d["x"] * 2},),
                ({"i": lib.tensor(0), "x": x},),
            ),
        ]

    _same_tree(run(ember), run(torch))


def test_while_loop_without_iterations_returns_copies():
    x = ember.tensor(X)
    _, out = ember.while_loop(lambda i, x: i < 0, lambda i, x: (i + 1, x * 2), (ember.tensor(0), x))
    assert out is not x and out._storage is not x._storage


@pytest.mark.parametrize(
    "cond_fn, body_fn, carried, text",
    [
        (lambda i, x: i < 3, lambda i, x: (i + 1, x.double()), "int",
         "pair[1] differ in 'dtype: torch.float64 vs torch.float32'"),
        (lambda i, x: i < 3, lambda i, x: (i + 1, x[:2] * 2), "int",
         "pair[1] differ in 'shape: torch.Size([2]) vs torch.Size([3])'"),
        (lambda i, x: i < 3, lambda i, x: (i + 1,), "int",
         "Expected body_fn_output and carried_inputs to have same number of outputs"),
        (lambda i, x: i < 0, lambda i, x: (i + 1, x.double()), "int",
         "pair[1] differ in 'dtype: torch.float64 vs torch.float32'"),
        (lambda i, x: (i < 3).reshape(1), lambda i, x: (i + 1, x * 2), "int",
         "Expected cond_fn to return a scalar tensor or a bool but got torch.Size([1])."),
        (lambda i, x: i * 1, lambda i, x: (i - 1, x * 2), "int",
         "Expected cond_fn to return a scalar tensor or a bool but got torch.Size([])."),
        (lambda i, x: i < 3, lambda i, x: (i + 1, x), "int", "Encountered aliasing"),
        (lambda i, x: i < 3, lambda i, x: (i + 1, x.add_(1) * 1), "int",
         "Encountered input mutation"),
    ],
)  # fmt: skip
def test_while_loop_errors_like_torchs(cond_fn, body_fn, carried, text):
    def call(lib):
        return lambda: lib.while_loop(cond_fn, body_fn, (lib.tensor(0), lib.tensor(X)))

    _raises_like(call(ember), call(torch), [text])


def test_while_loop_argument_errors():
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="Expect cond_fn and body_fn to be callable"):
            lib.while_loop(1, lambda x: x, (lib.ones(1),))
        with pytest.raises(AssertionError, match="can only be of"):
            lib.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x), (0.5, lib.ones(1)))
        with pytest.raises(TypeError):
            lib.while_loop(lambda i: i < 3, lambda i: i + 1, (lib.tensor(0),), ())


def test_while_loop_gradients_match_torch():
    grads = []
    for lib in LIBS.values():
        x = lib.tensor(X64, requires_grad=True)
        w = lib.tensor(X64[::-1].copy(), requires_grad=True)
        _, y = lib.while_loop(
            lambda i, x: i < 3, lambda i, x, w=w: (i + 1, (x * w).sin()), (lib.tensor(0), x)
        )
        y.sum().backward()
        grads.append([x.grad, w.grad])
    for got, want in zip(*grads):
        _close(got, want, 1e-10)
    x = ember.tensor(X64, requires_grad=True)
    assert gradcheck(
        lambda x: ember.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v.sin() * 2), (0, x)),
        (x,),
    )


# ---- map ---------------------------------------------------------------------------------------
def test_map_values_and_errors():
    xs_e, xs_t = _pair(np.arange(6.0).reshape(3, 2))
    y_e, y_t = _pair([1.0, 2.0])
    _same_tree(ember_map(lambda a, b: (a * b, a.sum()), xs_e, y_e),
               torch_map(lambda a, b: (a * b, a.sum()), xs_t, y_t))  # fmt: skip
    _same_tree(
        ember_map(lambda d: d["a"] + d["b"], {"a": xs_e, "b": xs_e * 2}),
        torch_map(lambda d: d["a"] + d["b"], {"a": xs_t, "b": xs_t * 2}),
    )
    assert_same_error(lambda: ember_map(lambda a: a, 1), lambda: torch_map(lambda a: a, 1))
    assert_same_error(
        lambda: ember_map(lambda a, b: a + b, (ember.ones(3, 2), ember.ones(4, 2))),
        lambda: torch_map(lambda a, b: a + b, (torch.ones(3, 2), torch.ones(4, 2))),
    )
    assert_same_error(
        lambda: ember_map(lambda a: a * 2, ember.ones(0, 2)),
        lambda: torch_map(lambda a: a * 2, torch.ones(0, 2)),
    )


# ---- inside ember.compile and ember.export -----------------------------------------------------
class Gate(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = ember.nn.Linear(3, 3)
        self.down = ember.nn.Linear(3, 3)

    def forward(self, x):
        h = x.relu() * 2
        y = ember.cond(h.sum() > 1, lambda v: self.up(v).tanh(), lambda v: self.down(v), (h,))
        return y * 3


def test_compiled_cond_follows_the_predicate_at_every_call():
    ember.manual_seed(0)
    model = Gate()
    compiled = ember.compile(model)
    for scale in (1.0, -1.0, 2.0, -3.0, 0.5, -0.5):
        x = ember.tensor(X * scale, dtype=ember.float32)
        _close(compiled(x), model(x).detach())


def test_compiled_cond_gradients_equal_eager():
    ember.manual_seed(0)
    model = Gate().double()
    compiled = ember.compile(model)
    for scale in (1.0, -1.0, 1.0):
        grads = []
        for fn in (model, compiled):
            model.zero_grad()
            x = ember.tensor(X64 * scale, requires_grad=True)
            fn(x).sum().backward()
            grads.append([x.grad, model.up.weight.grad, model.down.weight.grad])
        for got, want in zip(*grads):
            if want is None:
                assert got is None
            else:
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_fullgraph_names_cond_and_while_loop():
    def f(x):
        return ember.cond(x.sum() > 0, lambda v: v.cos(), lambda v: v.sin(), (x,))

    def g(x):
        return ember.while_loop(lambda v: v.sum() < 10, lambda v: v * 2, (x,))

    with pytest.raises(eexc.Unsupported, match=r"ember\.cond") as info:
        ember.compile(f, fullgraph=True)(ember.ones(3))
    assert info.value.gb_type == "Data-dependent branching in ember.cond"
    with pytest.raises(eexc.Unsupported, match=r"ember\.while_loop"):
        ember.compile(g, fullgraph=True)(ember.ones(3))
    explained = ember._dynamo.explain(f)(ember.ones(3))
    assert explained.graph_break_count == 1
    assert "ember.cond" in explained.break_reasons[0].reason
    _close(
        ember.compile(g)(ember.ones(3)),
        torch.while_loop(lambda v: v.sum() < 10, lambda v: v * 2, (torch.ones(3),)),
    )


def test_a_python_predicate_compiles_whole():
    """A size comparison or a Python bool needs no break: the capture specialises on it."""

    @ember.compile(fullgraph=True)
    def f(x):
        return ember.cond(x.shape[0] > 2, lambda v: v.cos(), lambda v: v.sin(), (x,))

    for n in (3, 2, 4):
        x = ember.arange(float(n))
        _close(f(x), torch.arange(float(n)).cos() if n > 2 else torch.arange(float(n)).sin())


def test_export_refuses_a_tensor_predicate_and_specialises_a_python_one():
    model = Gate()
    with pytest.raises(eexc.Unsupported, match=r"ember\.cond with a tensor predicate"):
        ember.export.export(model, (ember.ones(3),))

    class Fixed(ember.nn.Module):
        def forward(self, x):
            return ember.cond(x.shape[0] > 2, lambda v: v.cos(), lambda v: v.sin(), (x,))

    with pytest.warns(UserWarning, match="Pred is a Python constant"):
        program = ember.export.export(Fixed(), (ember.ones(3),))
    _close(program.module()(ember.tensor(X)), torch.tensor(X).cos())
