"""``ember.library.custom_op`` against ``torch.library.custom_op``: PyTorch's custom-ops tutorial
(a numpy body, a fake impl, a gradient, opcheck), the schema it infers, the errors it raises,
and the op staying one node under jit.trace and ember.compile. Each test defines its ops under a
namespace of its own (ops are process-wide in both libraries)."""

# No ``from __future__ import annotations``: custom_op reads real annotations, as users write them.
import itertools

import numpy as np
import pytest
import torch

import ember
from ember import library

_names = itertools.count()


def _ns() -> str:
    return f"embertest{next(_names)}"


def _numpy_sin(lib, ns: str):
    """The tutorial's op: a body torch and ember cannot see into."""

    @lib.library.custom_op(f"{ns}::numpy_sin", mutates_args=())
    def numpy_sin(x: lib.Tensor, scale: float = 1.0) -> lib.Tensor:
        return lib.from_numpy(np.sin(x.numpy()) * scale)

    return numpy_sin


def _with_gradient(op) -> None:
    def setup_context(ctx, inputs, output):
        x, scale = inputs
        ctx.save_for_backward(x)
        ctx.scale = scale

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos() * ctx.scale, None

    op.register_autograd(backward, setup_context=setup_context)


def _fake(lib, op) -> None:
    @op.register_fake
    def _(x, scale=1.0):
        return lib.empty_like(x)


def _signatures(lib):
    T = lib.Tensor

    def plain(x: T, scale: float = 1.0) -> T: ...
    def many(a: T, b: list[T], c: int, d: float = 2.0, e: bool = False, s: str = "x",
             g: lib.dtype | None = None, h: int | None = None, *,
             k: float = 1.0) -> tuple[T, T]: ...  # fmt: skip
    def optional(x: T, y: T | None = None, sizes: list[int] | None = None) -> list[T]: ...
    def dtype_default(x: T, n: int = 2, *, dt: lib.dtype = lib.float64) -> tuple[T, T]: ...
    def mutating(x: T, *, out: T) -> None: ...
    def scalar(x: T, alpha: int | float | bool = 1) -> T: ...

    return {"plain": (plain, ()), "many": (many, ()), "optional": (optional, ()),
            "dtype_default": (dtype_default, ()), "mutating": (mutating, {"out"}),
            "unknown": (mutating, "unknown"), "scalar": (scalar, ())}  # fmt: skip


@pytest.mark.parametrize("case", list(_signatures(ember)))
def test_infer_schema_matches_torch(case):
    fn, mutates = _signatures(ember)[case]
    theirs, mutates = _signatures(torch)[case]
    assert library.infer_schema(fn, mutates_args=mutates) == torch.library.infer_schema(
        theirs, mutates_args=mutates
    )
    assert library.infer_schema(fn, mutates_args=mutates, op_name="f").startswith("f(")


def _unannotated(lib):
    def untyped(a): ...
    def mystery(x: lib.Tensor, y: dict) -> lib.Tensor: ...
    def returns_dict(x: lib.Tensor) -> dict: ...
    def missing(x: lib.Tensor) -> lib.Tensor: ...

    return {"untyped": (untyped, ()), "mystery": (mystery, ()), "returns_dict": (returns_dict, ()),
            "missing": (missing, {"y"})}  # fmt: skip


@pytest.mark.parametrize("case", list(_unannotated(ember)))
def test_infer_schema_refuses_what_torch_refuses(case):
    fn, mutates = _unannotated(ember)[case]
    theirs, _ = _unannotated(torch)[case]
    with pytest.raises(ValueError) as want:
        torch.library.infer_schema(theirs, mutates_args=mutates)
    with pytest.raises(ValueError) as got:
        library.infer_schema(fn, mutates_args=mutates)
    # the message up to the signature (which names each library's Tensor)
    assert str(got.value).split(". ")[0] == str(want.value).split(". ")[0]


def test_the_tutorial_op_gives_torchs_values_and_is_an_ember_op():
    ns = _ns()
    ours, theirs = _numpy_sin(ember, ns), _numpy_sin(torch, ns)
    values = np.random.default_rng(0).standard_normal(5).astype(np.float32)
    got = ours(ember.from_numpy(values), 2.0)
    want = theirs(torch.from_numpy(values), 2.0)
    np.testing.assert_allclose(got.numpy(), want.numpy())
    assert repr(ours) == f"<CustomOpDef({ns}::numpy_sin)>" == repr(theirs)
    assert ours._schema == "(Tensor x, float scale=1.0) -> Tensor"
    by_namespace = getattr(ember.ops, ns).numpy_sin(ember.from_numpy(values), scale=2.0)
    np.testing.assert_allclose(by_namespace.numpy(), want.numpy())


def test_backward_without_a_formula_raises_torchs_error():
    ns = _ns()
    ours, theirs = _numpy_sin(ember, ns), _numpy_sin(torch, ns)
    x, tx = ember.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    y, ty = ours(x), theirs(tx)
    assert y.requires_grad and ty.requires_grad  # as torch: the error comes at backward
    with pytest.raises(RuntimeError) as want:
        ty.sum().backward()
    with pytest.raises(RuntimeError) as got:
        y.sum().backward()
    assert str(got.value) == str(want.value)


def test_register_autograd_gives_the_gradient():
    ns = _ns()
    ours, theirs = _numpy_sin(ember, ns), _numpy_sin(torch, ns)
    _with_gradient(ours), _with_gradient(theirs)
    values = np.random.default_rng(1).standard_normal(4)
    x = ember.tensor(values, requires_grad=True)
    tx = torch.tensor(values, requires_grad=True)
    ours(x, 3.0).sum().backward()
    theirs(tx, 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    # and the gradient of the formula itself, which is written in ember ops
    x2 = ember.tensor(values, requires_grad=True)
    (g,) = ember.autograd.grad(ours(x2, 3.0).sum(), x2, create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(x2.grad.numpy(), -3.0 * np.sin(values))


def test_register_kernel_and_device_types():
    ns = _ns()

    @library.custom_op(f"{ns}::plus", mutates_args=(), device_types="cpu")
    def plus(x: ember.Tensor) -> ember.Tensor:
        return x + 1

    assert plus(ember.zeros(2)).tolist() == [1.0, 1.0]
    with pytest.raises(NotImplementedError, match=f"{ns}::plus: no kernel for device type 'ref'"):
        plus(ember.zeros(2, device="ref"))

    @plus.register_kernel("ref")
    def _(x):
        return x + 10

    assert plus(ember.zeros(2, device="ref")).cpu().tolist() == [10.0, 10.0]
    library.register_kernel(f"{ns}::plus", "cpu", lambda x: x + 100)  # torch's module-level form
    assert plus(ember.zeros(2)).tolist() == [100.0, 100.0]


def test_an_output_aliasing_an_input_raises_torchs_error():
    ns = _ns()
    made = {}
    for lib in (ember, torch):

        @lib.library.custom_op(f"{ns}::alias", mutates_args=())
        def alias(x: lib.Tensor) -> lib.Tensor:
            return x.view(-1)

        made[lib.__name__] = alias
    with pytest.raises(RuntimeError) as want:
        made["torch"](torch.ones(2))
    with pytest.raises(RuntimeError) as got:
        made["ember"](ember.ones(2))
    assert str(got.value).split(": ", 1)[1] == str(want.value).split(": ", 1)[1]


def test_several_outputs_keyword_only_arguments_and_dtype_defaults():
    ns = _ns()
    made = {}
    for lib in (ember, torch):

        @lib.library.custom_op(f"{ns}::pair", mutates_args=())
        def pair(
            x: lib.Tensor, n: int = 2, *, dt: lib.dtype = lib.float64
        ) -> tuple[lib.Tensor, lib.Tensor]:
            return x.clone(), (x * n).to(dt)

        made[lib.__name__] = pair
    for kwargs in ({}, {"dt": "float32"}):
        got = made["ember"](ember.ones(2), 3, **{k: getattr(ember, v) for k, v in kwargs.items()})
        want = made["torch"](torch.ones(2), 3, **{k: getattr(torch, v) for k, v in kwargs.items()})
        assert [t.tolist() for t in got] == [t.tolist() for t in want]
        assert [str(t.dtype).split(".")[1] for t in got] == [
            str(t.dtype).split(".")[1] for t in want
        ]


def test_the_op_is_one_node_under_trace_and_compile():
    ns = _ns()
    op = _numpy_sin(ember, ns)

    def f(x):
        return op(x * 2, 3.0) + 1

    traced = ember.jit.trace(f, (ember.randn(4),))
    assert f"{ns}::numpy_sin" in str(traced.graph)
    compiled = ember.compile(f, fullgraph=True)  # the numpy body would be a graph break
    for seed in range(3):
        x = ember.randn(4, generator=ember.Generator().manual_seed(seed))
        want = np.sin(x.numpy() * 2) * 3 + 1
        np.testing.assert_allclose(traced(x).numpy(), want, rtol=1e-6)
        np.testing.assert_allclose(compiled(x).numpy(), want, rtol=1e-6)


def test_fake_impl_serves_meta_tensors():
    ns = _ns()
    op = _numpy_sin(ember, ns)
    with pytest.raises(RuntimeError, match="There was no fake impl registered"):
        op(ember.empty(2, 3, device="meta"))
    _fake(ember, op)
    out = op(ember.empty(2, 3, device="meta"))
    assert out.device.type == "meta" and tuple(out.shape) == (2, 3)


def test_opcheck_as_torchs():
    ns = _ns()
    ours, theirs = _numpy_sin(ember, ns), _numpy_sin(torch, ns)
    with pytest.raises(Exception, match="fake impl"):
        torch.library.opcheck(theirs, (torch.randn(3), 2.0))
    with pytest.raises(library.OpCheckError, match="fake impl"):
        library.opcheck(ours, (ember.randn(3), 2.0))
    _fake(ember, ours), _fake(torch, theirs)
    _with_gradient(ours), _with_gradient(theirs)
    x, tx = ember.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    assert library.opcheck(ours, (x, 2.0)) == torch.library.opcheck(theirs, (tx, 2.0))


def test_opcheck_finds_a_wrong_fake_and_a_mutation():
    ns = _ns()

    @library.custom_op(f"{ns}::sneaky", mutates_args=())
    def sneaky(x: ember.Tensor) -> ember.Tensor:
        out = x.sum(0)
        x.add_(1)  # mutates although mutates_args=()
        return out

    sneaky.register_fake(lambda x: ember.empty_like(x))  # wrong: the op reduces dim 0
    report = library.opcheck(sneaky, (ember.ones(2, 3),), raise_exception=False)
    assert isinstance(report["test_schema"], library.OpCheckError)
    assert isinstance(report["test_faketensor"], library.OpCheckError)


def test_mutating_ops_are_refused_by_name():
    ns = _ns()
    with pytest.raises(NotImplementedError, match=r"mutates_args=\(\)"):

        @library.custom_op(f"{ns}::fill", mutates_args={"out"})
        def fill(x: ember.Tensor, out: ember.Tensor) -> None:
            out.copy_(x)


def test_mutates_args_is_required_as_in_torch():
    with pytest.raises(TypeError, match="mutates_args"):
        library.custom_op("embertest::nothing", lambda x: x)


def _adding(lib, ns: str, offset: float):
    @lib.library.custom_op(f"{ns}::again", mutates_args=())
    def again(x: lib.Tensor) -> lib.Tensor:
        return x + offset

    return again


def test_defining_it_again_replaces_the_body_as_in_torch():
    ns = _ns()
    for lib in (ember, torch):
        for offset in (1.0, 2.0):
            assert _adding(lib, ns, offset)(lib.zeros(1)).tolist() == [offset]
        assert getattr(lib.ops, ns).again(lib.zeros(1)).tolist() == [2.0]
