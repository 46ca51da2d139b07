"""Third-party ops (``ember.library``) are differentiable like table ops: their formulas pass
gradcheck and gradgradcheck on broadcast and non-contiguous inputs, Tensor[] arguments and
multiple outputs work, saved tensors carry the version check, and graphs free by reference
counting alone."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import ember
from ember import library
from ember.autograd import gradcheck, gradgradcheck
from ember.dispatcher import registry
from ember.dispatcher.devices import REGISTRY

f64 = ember.float64


@pytest.fixture
def lib(monkeypatch):
    """A fresh library for one test: the ops it defines disappear afterwards."""
    monkeypatch.setattr(library, "LIBRARY", library.Library())
    monkeypatch.setattr(registry, "EXTRA", registry.ExtraKernels())
    yield library
    monkeypatch.undo()
    REGISTRY.reset()


def _define(lib, schema: str, shape, kernel, backward, setup):
    name = schema.split("(")[0]
    lib.define(schema, dtypes=[f64])
    lib.register_shape(name, shape)
    lib.impl(name, "cpu", [f64])(kernel)
    lib.register_autograd(name, backward, setup_context=setup)
    return getattr(ember.ops.mylib, name.split("::")[1])


def _save_inputs(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def mulsin(lib):
    """``a * sin(b)``: saves both inputs; its backward is in ember ops, so differentiable."""

    def kernel(out, a, b):
        np.multiply(a.numpy(), np.sin(b.numpy()), out=out.numpy())

    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b.sin(), g * a * b.cos()

    return _define(
        lib,
        "mylib::mulsin(Tensor a, Tensor b) -> Tensor",
        lambda a, b: a,
        kernel,
        backward,
        _save_inputs,
    )


def test_gradcheck_and_gradgradcheck_on_odd_layouts(lib):
    fn = mulsin(lib)
    rng = np.random.default_rng(0)
    a = ember.tensor(rng.uniform(-1, 1, (5, 3)), requires_grad=True)
    b = ember.tensor(rng.uniform(-1, 1, (3, 5)), requires_grad=True)
    row = ember.tensor(rng.uniform(-1, 1, (1, 3)), requires_grad=True)
    assert gradcheck(lambda a, b: fn(a, b.t()), (a, b))  # non-contiguous
    assert gradcheck(lambda a, r: fn(a, r.expand(5, 3)), (a, row))  # broadcast (stride 0)
    assert gradcheck(lambda a, b: fn(a[1:4], b.t()[::2]), (a, b))  # views
    assert gradgradcheck(lambda a, b: fn(a, b.t()), (a, b))


def test_tensor_list_argument(lib):
    def kernel(out, xs, scale):
        out.numpy()[...] = scale * sum(x.numpy() for x in xs)

    def backward(ctx, g):
        return [g * ctx.scale if need else None for need in ctx.needs] if ctx.needs else None, None

    def setup(ctx, inputs, output):
        ctx.scale = inputs[1]
        ctx.needs = [x.requires_grad for x in inputs[0]]

    fn = _define(
        lib,
        "mylib::wsum(Tensor[] xs, float scale) -> Tensor",
        lambda xs, s: xs[0],
        kernel,
        backward,
        setup,
    )
    x, y = (ember.rand(4, dtype=f64, requires_grad=True) for _ in range(2))
    z = ember.rand(4, dtype=f64)  # needs no gradient: its edge is None
    assert gradcheck(lambda x, y: fn([x, z, y], 3.0), (x, y))
    fn([x, z, y], 3.0).sum().backward()
    assert x.grad.tolist() == y.grad.tolist() == [3.0] * 4


def test_multiple_outputs_and_unused_output(lib):
    def kernel(lo, hi, x):
        lo.numpy()[...] = np.sin(x.numpy())
        hi.numpy()[...] = np.cos(x.numpy())

    def backward(ctx, g_sin, g_cos):
        (x,) = ctx.saved_tensors
        return g_sin * x.cos() - g_cos * x.sin()

    fn = _define(
        lib,
        "mylib::sincos(Tensor x) -> (Tensor, Tensor)",
        lambda x: (x, x),
        kernel,
        backward,
        _save_inputs,
    )
    x = ember.rand(3, 2, dtype=f64, requires_grad=True)
    assert gradcheck(lambda x: fn(x), (x,))
    s, c = fn(x)
    assert s.grad_fn is c.grad_fn and c.grad_fn.name() == "MylibSincosBackward0"
    c.sum().backward()  # the missing gradient of `s` is materialised as zeros
    np.testing.assert_allclose(x.grad.numpy(), -np.sin(x.detach().numpy()))


def test_modified_saved_input_names_the_node_and_versions(lib):
    fn = mulsin(lib)
    a = ember.tensor([0.5, 1.0, 1.5], dtype=f64, requires_grad=True)
    b = ember.tensor([1.0, 2.0, 3.0], dtype=f64)
    y = fn(a, b)
    b.add_(1.0)
    message = r"saved by MylibMulsinBackward0, is at version 1; expected version 0"
    with pytest.raises(RuntimeError, match=message):
        y.sum().backward()


def test_saved_output_makes_no_reference_cycle(lib):
    def kernel(out, x):
        np.exp(x.numpy(), out=out.numpy())

    def setup(ctx, inputs, output):
        ctx.save_for_backward(output)

    def backward(ctx, g):
        (result,) = ctx.saved_tensors
        return g * result

    fn = _define(lib, "mylib::exp(Tensor x) -> Tensor", lambda x: x, kernel, backward, setup)
    x = ember.rand(4, dtype=f64, requires_grad=True)
    assert gradgradcheck(fn, (x,))
    was = gc.isenabled()
    gc.disable()
    try:
        y = fn(x)
        node = weakref.ref(y.grad_fn)
        (g,) = ember.autograd.grad(y.sum(), x, create_graph=True)
        del y, g
        assert node() is None, "the library op's node is kept alive by a reference cycle"
    finally:
        if was:
            gc.enable()


def test_anomaly_mode_names_the_library_op(lib):
    def backward(ctx, g):
        return g * float("nan"), None

    def setup(ctx, inputs, output):
        pass

    fn = _define(
        lib,
        "mylib::scale(Tensor x, float factor) -> Tensor",
        lambda x, f: x,
        lambda out, x, f: np.multiply(x.numpy(), f, out=out.numpy()),
        backward,
        setup,
    )
    x = ember.rand(2, dtype=f64, requires_grad=True)
    with ember.autograd.detect_anomaly(), pytest.raises(RuntimeError) as info:
        fn(x, 2.0).sum().backward()
    assert str(info.value).startswith("Function 'MylibScaleBackward0' returned nan values")
    assert "The forward call of 'mylib::scale' that created it:" in str(info.value)
