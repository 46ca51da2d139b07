"""``ember.library``: ops defined in-process, their kernels, shape rules, formulas and opcheck.

Every test gets a fresh library and table of extra kernels (the ``lib`` fixture), so ops defined
here never leak into other tests.
"""

from __future__ import annotations

import inspect

import numpy as np
import plugin_fakes as fakes
import pytest
from plugin_fakes import RefPlugin

import ember
from ember.dispatcher import coverage, registry
from ember.dispatcher.devices import REGISTRY
from ember.dispatcher.op import Op
from ember.dispatcher.opdef import Kind

f32, f64 = ember.float32, ember.float64
SCALE = "mylib::scale(Tensor x, float factor=2.0) -> Tensor"


def _scale_kernel(out, x, factor):
    out.numpy()[...] = x.numpy() * factor


def _setup_scale(ctx, inputs, output):
    ctx.factor = inputs[1]


def _scale_backward(ctx, g):
    return g * ctx.factor, None


def define_scale(lib, **kw):
    """``mylib::scale``: x * factor, with a CPU kernel for float32/float64 and a formula."""
    fn = lib.define(SCALE, dtypes=[f32, f64], reference=lambda x, factor: x * factor, **kw)
    lib.register_shape("mylib::scale", lambda x, factor: x)
    lib.impl("mylib::scale", "cpu", [f32, f64])(_scale_kernel)
    lib.register_autograd("mylib::scale", _scale_backward, setup_context=_setup_scale)
    return fn


# ---- define ---------------------------------------------------------------------------------
def test_defined_op_is_a_dispatcher_op_reachable_by_namespace(lib):
    fn = define_scale(lib)
    assert ember.ops.mylib.scale is fn
    assert "scale" in dir(ember.ops.mylib) and "mylib" in dir(ember.ops)
    op = fn._ember_op
    assert isinstance(op, Op) and op.kind is Kind.LIBRARY and op.name == "mylib::scale"
    assert str(inspect.signature(fn)) == "(x, factor=2.0)"
    x = ember.arange(3.0)
    assert fn(x).tolist() == [0.0, 2.0, 4.0]
    assert fn(x, factor=0.5).tolist() == [0.0, 0.5, 1.0]
    assert op(x, 3.0).tolist() == [0.0, 3.0, 6.0]  # the Op itself takes arguments positionally


def test_defined_op_goes_through_the_layer_stack(lib):
    fn = define_scale(lib)
    seen = []

    class Spy(ember.dispatcher.layers.Layer):
        name, priority = "spy", 350

        def wants(self, op, args):
            seen.append(op.name)
            return False

    x = ember.ones(2)
    with ember.dispatcher.layers.installed(Spy()):
        fn(x)
    assert seen == ["mylib::scale"]


@pytest.mark.parametrize(
    "schema, message",
    [
        ("scale(Tensor x) -> Tensor", "needs a namespace"),
        ("mylib::scale_(Tensor x) -> Tensor", "in-place library ops are not supported"),
        ("mylib::count(Tensor x) -> int", "must return Tensor"),
        ("add::scale(Tensor x) -> Tensor", "is the name of an ember op"),
        ("mylib::scale(Tensr x) -> Tensor", "unknown type 'Tensr'"),
    ],
)
def test_bad_schemas_are_refused(lib, schema, message):
    with pytest.raises(ValueError, match=message):
        lib.define(schema)


def test_defining_again_is_a_no_op_and_a_different_schema_a_conflict(lib):
    fn = lib.define(SCALE, provider="lib_a")
    assert lib.define(SCALE, provider="lib_a") is fn
    assert lib.define(SCALE, provider="lib_b") is fn  # the same definition is no conflict
    with pytest.raises(RuntimeError) as info:
        lib.define("mylib::scale(Tensor x) -> Tensor", provider="lib_b")
    assert str(info.value) == (
        "the schema of op 'mylib::scale' is registered by both 'lib_a' and 'lib_b'; uninstall or "
        "disable one of them"
    )
    with pytest.raises(
        RuntimeError, match=r"already defined by 'lib_a' as 'mylib::scale\(Tensor x, f"
    ):
        lib.define("mylib::scale(Tensor x) -> Tensor", provider="lib_a")
    assert ember.ops.mylib.scale is fn


def test_default_provider_is_the_calling_module(lib):
    lib.define(SCALE)
    assert lib.LIBRARY.provider("mylib::scale") == __name__


# ---- kernels and shape rules ----------------------------------------------------------------
def test_kernel_gets_outputs_then_contiguous_inputs_then_params(lib):
    calls = []
    lib.define("mylib::pair(Tensor a, Tensor b, *, int k=1) -> (Tensor, Tensor)")
    lib.register_shape("mylib::pair", lambda a, b, k: ((a.shape, a.dtype), ((k,), ember.int64)))

    @lib.impl("mylib::pair", "cpu")
    def pair(out0, out1, a, b, k):
        calls.append((out0._shape, out1._shape, out1._dtype, a._contig, b._requires_grad, k))
        out0.numpy()[...] = a.numpy() + b.numpy()
        out1.numpy()[...] = np.arange(k)

    a = ember.arange(6.0).view(2, 3).T  # strided
    b = ember.ones(3, 2, requires_grad=True)
    s, r = ember.ops.mylib.pair(a, b.detach(), k=4)
    assert s.tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]] and r.tolist() == [0, 1, 2, 3]
    assert calls == [((3, 2), (4,), ember.int64, True, False, 4)]
    assert lib.LIBRARY.ops["mylib::pair"].schema.returns_tuple


def test_zero_dim_cpu_tensor_moves_to_the_device_of_the_call(lib, plugins):
    plugins(("ref", RefPlugin()))
    seen = []
    lib.define("mylib::addc(Tensor x, Tensor c) -> Tensor", differentiable=False)
    lib.register_shape("mylib::addc", lambda x, c: x)

    @lib.impl("mylib::addc", "ref")
    def addc(out, x, c):
        seen.append(c.device.type)
        fakes.host_view(out)[...] = fakes.host_view(x) + fakes.host_view(c)

    out = ember.ops.mylib.addc(ember.ones(2, device="ref"), ember.tensor(2.0))
    assert out.device == "ref:0" and out.cpu().tolist() == [3.0, 3.0]
    assert seen == ["ref"]


def test_empty_outputs_skip_the_kernel(lib):
    define_scale(lib)
    lib.impl("mylib::scale", "cpu", provider="strict", priority=1)(_never_called)
    assert ember.ops.mylib.scale(ember.ones(0, 3)).shape == (0, 3)


def _never_called(*args):
    raise AssertionError("kernel called for an empty output")


@pytest.mark.parametrize(
    "rule, message",
    [
        (None, r"no shape rule to allocate its outputs; register one with "),
        (lambda x: [x, x], r"its shape rule gave 2 outputs, the schema returns 1"),
        (lambda x: x.shape, r"its shape rule must return \(shape, dtype\) or a TensorMeta"),
        (lambda x: ((-1,), x.dtype), r"its shape rule must return \(shape, dtype\)"),
    ],
    ids=["missing", "count", "no-dtype", "negative"],
)
def test_shape_rule_errors_name_the_op(lib, rule, message):
    lib.define("mylib::f(Tensor x) -> Tensor", differentiable=False)
    if rule is not None:
        lib.register_shape("mylib::f", rule)
    lib.impl("mylib::f", "cpu")(_never_called)
    with pytest.raises(RuntimeError, match=r"^mylib::f: " + message):
        ember.ops.mylib.f(ember.ones(2))


def test_shape_rule_sees_metadata_and_may_refuse(lib):
    seen = []

    def rule(x, n):
        seen.append((type(x).__name__, x.shape, x.dtype, x.device, x.ndim, x.numel(), n))
        raise RuntimeError("mylib::f: n must be positive")

    lib.define("mylib::f(Tensor x, int n) -> Tensor", differentiable=False)
    lib.register_shape("mylib::f", rule)
    lib.impl("mylib::f", "cpu")(_never_called)
    with pytest.raises(RuntimeError, match="n must be positive"):
        ember.ops.mylib.f(ember.ones(2, 3), -1)
    assert seen == [("TensorMeta", (2, 3), f32, ember.device("cpu"), 2, 6, -1)]


def test_dtypes_outside_the_definition_are_refused(lib):
    define_scale(lib)
    with pytest.raises(RuntimeError, match=r'"mylib::scale" not implemented for int64'):
        ember.ops.mylib.scale(ember.arange(3))
    with pytest.raises(ValueError, match=r"'mylib::scale' does not accept \['float16'\]"):
        lib.impl("mylib::scale", "cpu", ["float16"])
    with pytest.raises(ValueError, match="unknown dtype 'float17'"):
        lib.impl("mylib::scale", "cpu", ["float17"])


def test_missing_kernel_names_the_op_device_dtype_and_providers(lib):
    lib.define("mylib::f(Tensor x) -> Tensor", differentiable=False)
    lib.register_shape("mylib::f", lambda x: x)
    lib.impl("mylib::f", "cpu", ["float64"], provider="my_lib")(_scale_kernel)
    with pytest.raises(NotImplementedError) as info:
        ember.ops.mylib.f(ember.ones(2))
    assert "'mylib::f' is not implemented for device 'cpu' and dtype float32" in str(info.value)
    assert "Implemented by: my_lib (cpu: float64)" in str(info.value)


def test_kernel_conflicts_and_priorities(lib):
    define_scale(lib)
    other = lambda out, x, factor: _scale_kernel(out, x, -factor)  # noqa: E731
    with pytest.raises(RuntimeError, match=r"registered by both '.*test_library' and 'rival'"):
        lib.impl("mylib::scale", "cpu", ["float32"], provider="rival")(other)
    lib.impl("mylib::scale", "cpu", ["float32"], provider="rival")(_scale_kernel)  # same fn: no-op
    assert ember.ops.mylib.scale(ember.ones(1)).tolist() == [2.0]
    lib.impl("mylib::scale", "cpu", ["float32"], priority=5, provider="rival")(other)
    assert ember.ops.mylib.scale(ember.ones(1)).tolist() == [-2.0]  # the higher priority wins
    assert ember.ops.mylib.scale(ember.ones(1, dtype=f64)).tolist() == [2.0]


def test_decomposition_runs_where_there_is_no_kernel(lib):
    lib.define(
        "mylib::axpy(Tensor x, Tensor y, float a) -> Tensor",
        decomposition=lambda x, y, a: x * a + y,
    )
    lib.register_shape("mylib::axpy", lambda x, y, a: x)
    lib.impl("mylib::axpy", "cpu", ["float64"])(lambda out, x, y, a: out.numpy().fill(7.0))
    x = ember.ones(2, requires_grad=True)
    y = x.detach() * 3
    out = ember.ops.mylib.axpy(x, y, 2.0)  # float32: no kernel, and no formula: autograd decomposes
    assert out.tolist() == [5.0, 5.0]
    out.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    assert ember.ops.mylib.axpy(x.detach().double(), y.double(), 2.0).tolist() == [7.0, 7.0]


# ---- autograd -------------------------------------------------------------------------------
def test_gradient_through_a_library_op(lib):
    fn = define_scale(lib)
    x = ember.ones(3, requires_grad=True)
    y = fn(x, 3.0)
    assert type(y.grad_fn).__name__ == y.grad_fn.name() == "MylibScaleBackward0"
    (y * y).sum().backward()
    assert x.grad.tolist() == [18.0, 18.0, 18.0]


def test_backward_may_return_one_gradient_per_tensor_argument(lib):
    lib.define("mylib::mul(Tensor a, Tensor b, float unused) -> Tensor")
    lib.register_shape("mylib::mul", lambda a, b, unused: a)
    lib.impl("mylib::mul", "cpu")(
        lambda out, a, b, _: np.multiply(a.numpy(), b.numpy(), out.numpy())
    )

    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], inputs[1])

    def backward(ctx, g):
        a, b = ctx.saved_tensors
        seen.append(ctx.needs_input_grad)
        return g * b, g * a  # two tensors, no entry for the float

    seen = []
    lib.register_autograd("mylib::mul", backward, setup_context=setup)
    a = ember.tensor([2.0, 3.0], requires_grad=True)
    b = ember.tensor([5.0], requires_grad=False)  # broadcast: the engine sums the gradient
    ember.ops.mylib.mul(a, b.expand(2), 0.0).sum().backward()
    assert a.grad.tolist() == [5.0, 5.0]
    assert seen == [(True, False, False)]


def test_saved_output_allows_double_backward(lib):
    lib.define("mylib::exp(Tensor x) -> Tensor")
    lib.register_shape("mylib::exp", lambda x: x)
    lib.impl("mylib::exp", "cpu")(lambda out, x: np.exp(x.numpy(), out=out.numpy()))

    def setup(ctx, inputs, output):
        ctx.save_for_backward(output)

    def backward(ctx, g):
        (result,) = ctx.saved_tensors
        return g * result

    lib.register_autograd("mylib::exp", backward, setup_context=setup)
    x = ember.tensor([0.5, 1.0], requires_grad=True)
    (g,) = ember.autograd.grad(ember.ops.mylib.exp(x).sum(), x, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), np.exp([0.5, 1.0]), rtol=1e-6)


def test_missing_formula_names_the_fix_and_nondifferentiable_ops_pass(lib):
    lib.define("mylib::f(Tensor x) -> Tensor")
    lib.register_shape("mylib::f", lambda x: x)
    lib.impl("mylib::f", "cpu")(lambda out, x: out.numpy().fill(1.0))
    with pytest.raises(RuntimeError, match=r"register_autograd\('mylib::f', backward"):
        ember.ops.mylib.f(ember.ones(1, requires_grad=True))
    lib.define("mylib::g(Tensor x) -> Tensor", differentiable=False)
    lib.register_shape("mylib::g", lambda x: x)
    lib.impl("mylib::g", "cpu")(lambda out, x: out.numpy().fill(1.0))
    assert not ember.ops.mylib.g(ember.ones(1, requires_grad=True)).requires_grad


def test_shape_rules_and_formulas_belong_to_one_provider(lib):
    define_scale(lib)
    lib.register_shape(
        "mylib::scale", lib.LIBRARY.ops["mylib::scale"].info["shape"], provider="other"
    )
    with pytest.raises(
        RuntimeError, match=r"shape rule of op 'mylib::scale' is registered by both"
    ):
        lib.register_shape("mylib::scale", lambda x, factor: x, provider="other")
    with pytest.raises(RuntimeError, match=r"autograd formula of op 'mylib::scale' .* 'other'"):
        lib.register_autograd("mylib::scale", lambda ctx, g: g, provider="other")
    with pytest.raises(ValueError, match="'add' is a built-in op; its formula lives in the op"):
        lib.register_autograd("add", lambda ctx, g: g)
    with pytest.raises(KeyError, match="no op named 'mylib::nope'"):
        lib.register_shape("mylib::nope", lambda x: x)


# ---- other devices --------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:'(sum|mul)' has no ref kernel")  # the backward's ops
def test_cpu_kernel_serves_another_device_through_the_fallback(lib, plugins):
    plugins(("ref", RefPlugin()))
    fn = define_scale(lib)
    x = ember.ones(2, device="ref", requires_grad=True)
    with pytest.warns(registry.PerformanceWarning, match="'mylib::scale' has no ref kernel"):
        y = fn(x)
    assert y.device == "ref:0" and y.cpu().tolist() == [2.0, 2.0]
    y.sum().backward()
    assert x.grad.device == "ref:0"
    status = coverage.classify(fn._ember_op, REGISTRY.backend("ref"), REGISTRY.backend("cpu"))
    assert status == "cpu fallback"


def test_fallback_off_names_the_library_that_has_kernels(lib, plugins):
    plugins(("ref", RefPlugin()), policy=fakes.policy({"fallback": {"cpu": False}}))
    fn = define_scale(lib)
    with pytest.raises(NotImplementedError, match=r"test_library \(cpu: float32, float64\)"):
        fn(ember.ones(2, device="ref"))
    assert coverage.classify(fn._ember_op, REGISTRY.backend("ref"), None) == "missing"


# ---- opcheck --------------------------------------------------------------------------------
def test_opcheck_passes_and_reports_each_check(lib, plugins):
    plugins(("ref", RefPlugin()))
    fn = define_scale(lib)
    lib.impl("mylib::scale", "ref")(_ref_scale)
    lib.impl("mylib::scale", "cuda")(_ref_scale)  # claimed, but no cuda here
    report = lib.opcheck(fn, [(ember.randn(2, 3),), ((ember.randn(4),), {"factor": 0.5})])
    assert report["schema"] == report["shape"] == report["reference"] == "ok"
    assert report["gradients"] == report["device ref"] == "ok"
    assert report["device cuda"].startswith("skipped: ")
    assert lib.opcheck("mylib::scale", [(ember.ones(1),)], check_grad=False)["shape"] == "ok"


def _ref_scale(out, x, factor):
    fakes.host_view(out)[...] = fakes.host_view(x) * factor


def _wrong_backward(ctx, g):
    return g, None


@pytest.mark.parametrize(
    "breakage, check",
    [
        ("sample", "schema: argument 'x' is float"),
        ("reference", "reference: output 0 differs"),
        ("gradient", "gradients: GradcheckError"),
        ("device", "device ref: output 0 against cpu differs"),
        ("shape", r"shape: outputs are \[3\] float32, the shape rule says \[1\] float32"),
    ],
)
def test_opcheck_finds_each_kind_of_mistake(lib, plugins, breakage, check):
    plugins(("ref", RefPlugin()))
    fn = lib.define(
        SCALE,
        dtypes=[f32, f64],
        reference=(lambda x, f: x * f + (breakage == "reference")),
        decomposition=(lambda x, f: x * f) if breakage == "shape" else None,
    )
    if breakage == "shape":  # only the decomposition runs: the rule is never used to allocate
        lib.register_shape("mylib::scale", lambda x, f: ((1,), x.dtype))
    else:
        lib.register_shape("mylib::scale", lambda x, f: x)
        lib.impl("mylib::scale", "cpu")(_scale_kernel)
    if breakage == "device":
        lib.impl("mylib::scale", "ref")(lambda out, x, f: fakes.host_view(out).fill(0))
    backward = _wrong_backward if breakage == "gradient" else _scale_backward
    lib.register_autograd("mylib::scale", backward, setup_context=_setup_scale)
    sample = (1.5,) if breakage == "sample" else (ember.randn(3),)
    with pytest.raises(lib.OpCheckError, match=r"^opcheck\(mylib::scale\) sample 0, " + check):
        lib.opcheck(fn, [sample])
