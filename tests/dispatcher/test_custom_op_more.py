"""``ember.library`` register_vmap, get_ctx and impl_abstract against ``torch.library``'s: the
custom-ops examples (numpy bodies torch and ember cannot see into) with a vmap rule that counts
its calls, under ``vmap`` of both libraries. Each test defines its ops under a namespace of its
own (ops are process-wide in both libraries)."""

# No ``from __future__ import annotations``: custom_op reads real annotations, as users write them.
import itertools
import warnings

import numpy as np
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import ember
from ember import library
from ember.autograd import batch_rules

_names = itertools.count()
_RNG = np.random.default_rng(0)


def _ns() -> str:
    return f"embertestmore{next(_names)}"


def _tensor(lib, values):
    return lib.from_numpy(np.ascontiguousarray(values))


def _numpy_mul(lib, ns: str, calls: list, by_name: bool = False):
    """torch.library.register_vmap's example: x * y in numpy, batched by moving the batch dims
    last; every call of the rule is recorded as ``(info, in_dims)``."""

    @lib.library.custom_op(f"{ns}::numpy_mul", mutates_args=())
    def numpy_mul(x: lib.Tensor, y: lib.Tensor) -> lib.Tensor:
        calls.append("body")
        return lib.from_numpy(x.numpy() * y.numpy())

    def numpy_mul_vmap(info, in_dims, x, y):
        calls.append((tuple(info), in_dims))
        x_bdim, y_bdim = in_dims
        x = x.movedim(x_bdim, -1) if x_bdim is not None else x.unsqueeze(-1)
        y = y.movedim(y_bdim, -1) if y_bdim is not None else y.unsqueeze(-1)
        return (x * y).movedim(-1, 0), 0

    if by_name:
        lib.library.register_vmap(f"{ns}::numpy_mul")(numpy_mul_vmap)
    else:
        numpy_mul.register_vmap(numpy_mul_vmap)
    return numpy_mul


def _numpy_cube(lib, ns: str, calls: list):
    """The other example: two outputs, a rule that calls the op itself on the batch."""

    @lib.library.custom_op(f"{ns}::numpy_cube", mutates_args=())
    def numpy_cube(x: lib.Tensor) -> tuple[lib.Tensor, lib.Tensor]:
        calls.append("body")
        x_np = x.numpy()
        return lib.from_numpy(x_np**3), lib.from_numpy(3 * x_np**2)

    def numpy_cube_vmap(info, in_dims, x):
        calls.append((tuple(info), in_dims))
        return numpy_cube(x), (in_dims[0], in_dims[0])

    library_of = ember.library if lib is ember else torch.library
    library_of.register_vmap(numpy_cube, numpy_cube_vmap)
    return numpy_cube


def _rule_calls(calls: list) -> int:
    return sum(1 for c in calls if c != "body")


IN_DIMS = [((0, 0), (3, 4), (3, 4)), ((0, None), (3, 4), (4,)), ((None, 1), (4,), (4, 3)),
           ((1, 0), (4, 3), (3, 4)), ((1, 1), (2, 3), (2, 3))]  # fmt: skip


@pytest.mark.parametrize("by_name", [False, True])
@pytest.mark.parametrize("in_dims, x_shape, y_shape", IN_DIMS)
def test_the_vmap_rule_runs_once_per_vmap_call_with_torchs_values(
    in_dims, x_shape, y_shape, by_name
):
    ns = _ns()
    ours, theirs = [], []
    ember_op = _numpy_mul(ember, ns, ours, by_name)
    torch_op = _numpy_mul(torch, ns, theirs, by_name)
    x = _RNG.standard_normal(x_shape).astype(np.float32)
    y = _RNG.standard_normal(y_shape).astype(np.float32)
    got = ember.func.vmap(ember_op, in_dims=in_dims)(_tensor(ember, x), _tensor(ember, y))
    want = torch.func.vmap(torch_op, in_dims=in_dims)(_tensor(torch, x), _tensor(torch, y))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert ours.count("body") == theirs.count("body") == 0
    assert _rule_calls(ours) == _rule_calls(theirs) == 1
    # ember's physical tensors have their batch dim in front: the dims differ where torch's
    # are not 0, the batched arguments and the VmapInfo do not
    (info, dims), (torch_info, torch_dims) = ours[0], theirs[0]
    assert info == torch_info == (got.shape[0], "error")
    assert [d is None for d in dims] == [d is None for d in torch_dims]


def _numpy_add_last(lib, vmap, ns: str, out_dims: int, x, y):
    """An op with a float argument whose rule returns its batch dim last; returns the vmap's
    result and the rule's in_dims."""
    calls = []

    @lib.library.custom_op(f"{ns}::numpy_add", mutates_args=())
    def numpy_add(x: lib.Tensor, y: lib.Tensor, alpha: float = 1.0) -> lib.Tensor:
        return lib.from_numpy(x.numpy() + alpha * y.numpy())

    @numpy_add.register_vmap
    def _(info, in_dims, x, y, alpha):
        calls.append(in_dims)
        x = x.movedim(in_dims[0], -1) if in_dims[0] is not None else x.unsqueeze(-1)
        y = y.movedim(in_dims[1], -1) if in_dims[1] is not None else y.unsqueeze(-1)
        out = x + alpha * y
        return out, out.dim() - 1  # the batch dim last

    f = vmap(lambda a, b: numpy_add(a, b, 0.5), in_dims=(0, None), out_dims=out_dims)
    return f(_tensor(lib, x), _tensor(lib, y)).numpy(), calls


@pytest.mark.parametrize("out_dims", [0, 1, -1])
def test_vmap_out_dims_and_a_rule_returning_its_batch_dim_last(out_dims):
    ns = _ns()
    x = _RNG.standard_normal((5, 2, 3)).astype(np.float32)
    y = _RNG.standard_normal((2, 3)).astype(np.float32)
    got, ours = _numpy_add_last(ember, ember.func.vmap, ns, out_dims, x, y)
    want, theirs = _numpy_add_last(torch, torch.func.vmap, ns, out_dims, x, y)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert ours == theirs == [(0, None, None)]


def test_a_rule_returning_several_outputs_and_nested_vmap_count_as_torchs():
    ns = _ns()
    ours, theirs = [], []
    ember_op, torch_op = _numpy_cube(ember, ns, ours), _numpy_cube(torch, ns, theirs)
    x = _RNG.standard_normal((4, 3)).astype(np.float32)
    got = ember.func.vmap(ember_op)(_tensor(ember, x))
    want = torch.func.vmap(torch_op)(_tensor(torch, x))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
    # the rule calls the op on the whole batch: one body call, no per-sample calls
    assert ours == theirs == [((4, "error"), (0,)), "body"]
    ours.clear(), theirs.clear()
    # the inner level's rule calls the op on tensors batched at the outer level: its rule runs
    got = ember.func.vmap(ember.func.vmap(ember_op))(_tensor(ember, x))
    want = torch.func.vmap(torch.func.vmap(torch_op))(_tensor(torch, x))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
    assert ours == theirs == [((3, "error"), (0,)), ((4, "error"), (0,)), "body"]


def test_nested_vmap_of_the_elementwise_rule_matches_torch():
    ns = _ns()
    ours, theirs = [], []
    ember_op, torch_op = _numpy_mul(ember, ns, ours), _numpy_mul(torch, ns, theirs)
    x = _RNG.standard_normal((3,)).astype(np.float32)
    y = _RNG.standard_normal((4, 3)).astype(np.float32)
    inner_e = ember.func.vmap(ember_op, in_dims=(0, None))
    inner_t = torch.func.vmap(torch_op, in_dims=(0, None))
    got = ember.func.vmap(inner_e, in_dims=(None, 0))(_tensor(ember, x), _tensor(ember, y))
    want = torch.func.vmap(inner_t, in_dims=(None, 0))(_tensor(torch, x), _tensor(torch, y))
    assert tuple(got.shape) == tuple(want.shape) == (4, 3, 3)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert ours == theirs == [((3, "error"), (0, None))]  # the rule's mul batches outside


def test_without_a_rule_the_body_runs_per_sample_and_registering_replaces_that():
    ns = _ns()
    calls = []

    @library.custom_op(f"{ns}::numpy_neg", mutates_args=())
    def numpy_neg(x: ember.Tensor) -> ember.Tensor:
        calls.append("body")
        return ember.from_numpy(-x.numpy())

    x = ember.from_numpy(_RNG.standard_normal((3, 2)).astype(np.float32))
    with pytest.warns(UserWarning, match="performance drop"):  # the per-sample fallback
        np.testing.assert_array_equal(ember.func.vmap(numpy_neg)(x).numpy(), -x.numpy())
    assert calls == ["body"] * 3
    assert batch_rules.rule_for(numpy_neg._op) in (batch_rules.loop, batch_rules.decompose)

    @numpy_neg.register_vmap
    def _(info, in_dims, x):
        calls.append(info.batch_size)
        return numpy_neg(x), in_dims[0]

    calls.clear()
    np.testing.assert_array_equal(ember.func.vmap(numpy_neg)(x).numpy(), -x.numpy())
    assert calls == [3, "body"]  # the cached default rule was replaced


def _keywords_seen(lib, vmap, ns: str):
    """What the rule of an op with a keyword-only float receives: (info, in_dims, number of
    positional arguments, keywords)."""
    seen = []

    @lib.library.custom_op(f"{ns}::numpy_scale", mutates_args=())
    def numpy_scale(x: lib.Tensor, *, factor: float = 2.0) -> lib.Tensor:
        return lib.from_numpy(x.numpy() * factor)

    def rule(info, in_dims, *args, **kwargs):
        seen.append((tuple(info), in_dims, len(args), kwargs))
        return args[0] * kwargs["factor"], in_dims[0]

    lib.library.register_vmap(numpy_scale, rule)
    x = _tensor(lib, np.arange(6, dtype=np.float32).reshape(3, 2))
    out = vmap(lambda t: numpy_scale(t, factor=3.0), randomness="same")(x)
    np.testing.assert_array_equal(out.numpy(), np.arange(6).reshape(3, 2) * 3.0)
    return seen


def test_the_rule_sees_keywords_and_randomness_as_torchs_does():
    ns = _ns()
    ours = _keywords_seen(ember, ember.func.vmap, ns)
    theirs = _keywords_seen(torch, torch.func.vmap, ns)
    assert ours == theirs == [((3, "same"), (0,), 1, {"factor": 3.0})]


def _bad_rule_error(lib, vmap, ns: str) -> str:
    @lib.library.custom_op(f"{ns}::numpy_id", mutates_args=())
    def numpy_id(x: lib.Tensor) -> lib.Tensor:
        return lib.from_numpy(x.numpy().copy())

    numpy_id.register_vmap(lambda info, in_dims, x: x.clone())
    with pytest.raises(RuntimeError) as got:
        vmap(numpy_id)(_tensor(lib, np.ones((2, 3), np.float32)))
    return str(got.value).split("Got a")[0]  # up to the type, which names each library's Tensor


def test_a_rule_not_returning_outputs_and_dims_raises_torchs_error():
    ns = _ns()
    ours = _bad_rule_error(ember, ember.func.vmap, ns)
    assert ours == _bad_rule_error(torch, torch.func.vmap, ns)
    assert "two returns" in ours


def test_register_vmap_refuses_what_is_not_a_custom_op():
    with pytest.raises(ValueError, match="not a custom op"):
        library.register_vmap("nosuchns::nosuchop", lambda info, in_dims, x: (x, 0))


def test_register_vmap_refuses_kwarg_only_tensors_with_torchs_message():
    ns = _ns()

    @library.custom_op(f"{ns}::numpy_add_kw", mutates_args=())
    def numpy_add_kw(x: ember.Tensor, *, y: ember.Tensor) -> ember.Tensor:
        return ember.from_numpy(x.numpy() + y.numpy())

    with pytest.raises(NotImplementedError, match="register_vmap with kwarg-only Tensor args"):
        library.register_vmap(f"{ns}::numpy_add_kw", lambda info, in_dims, x, y: (x + y, 0))


# ---- get_ctx ------------------------------------------------------------------------------------
def test_get_ctx_is_none_outside_a_fake_impl_as_in_torch():
    assert torch.library.get_ctx() is None
    assert library.get_ctx() is None


def _dynamic(lib, ns: str, seen: list, dynamic: bool):
    @lib.library.custom_op(f"{ns}::numpy_nonzero", mutates_args=())
    def numpy_nonzero(x: lib.Tensor) -> lib.Tensor:
        return lib.from_numpy(np.stack(np.nonzero(x.numpy()), axis=1))

    @numpy_nonzero.register_fake
    def _(x):
        ctx = lib.library.get_ctx()
        seen.append(type(ctx).__name__)
        rows = ctx.new_dynamic_size() if dynamic else x.numel()
        return x.new_empty([rows, x.dim()], dtype=lib.int64)

    return numpy_nonzero


def test_get_ctx_inside_a_fake_impl_is_its_context():
    ns = _ns()
    ours, theirs = [], []
    got = _dynamic(ember, ns, ours, dynamic=False)(ember.empty(2, 3, device="meta"))
    with FakeTensorMode() as mode:
        want = _dynamic(torch, ns, theirs, dynamic=False)(mode.from_tensor(torch.empty(2, 3)))
    assert tuple(got.shape) == tuple(want.shape) == (6, 2)
    assert got.dtype == ember.int64
    assert ours == theirs == ["FakeImplCtx"]
    assert library.get_ctx() is None  # reset after the fake impl


def test_new_dynamic_size_raises_torchs_error_without_dynamic_shapes():
    ns = _ns()
    ours, theirs = [], []
    with FakeTensorMode() as mode:
        fake = mode.from_tensor(torch.empty(2, 3))
        with pytest.raises(RuntimeError) as want:
            _dynamic(torch, ns, theirs, dynamic=True)(fake)
    with pytest.raises(RuntimeError) as got:
        _dynamic(ember, ns, ours, dynamic=True)(ember.empty(2, 3, device="meta"))
    assert type(got.value).__name__ == type(want.value).__name__ == "DynamicOutputShapeException"
    assert "new_dynamic_size" in str(got.value) and "data-dependent" in str(got.value)
    assert got.value.func == f"{ns}::numpy_nonzero"
    assert library.get_ctx() is None


def test_create_unbacked_symint_is_deprecated_as_in_torch():
    ctx = ember._fake_impl.FakeImplCtx("x::y")
    deprecated = pytest.warns(FutureWarning, match="`create_unbacked_symint` is deprecated")
    with deprecated, pytest.raises(RuntimeError, match="new_dynamic_size"):
        ctx.create_unbacked_symint()


# ---- impl_abstract ------------------------------------------------------------------------------
def _torch_warning(call) -> str:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    (warning,) = [w for w in caught if w.category is FutureWarning]
    return str(warning.message)


def _numpy_twice(lib, ns: str):
    @lib.library.custom_op(f"{ns}::numpy_twice", mutates_args=())
    def numpy_twice(x: lib.Tensor) -> lib.Tensor:
        return lib.from_numpy(np.concatenate([x.numpy(), x.numpy()]))

    return numpy_twice


@pytest.mark.parametrize("as_decorator", [True, False])
def test_impl_abstract_is_register_fake_with_torchs_future_warning(as_decorator):
    ns = _ns()
    ops = {lib.__name__: _numpy_twice(lib, ns) for lib in (ember, torch)}

    def fake(x):
        return x.new_empty([2 * x.shape[0], *x.shape[1:]])

    def register(module):
        name = f"{ns}::numpy_twice"
        if as_decorator:
            return lambda: module.impl_abstract(name)(fake)
        return lambda: module.impl_abstract(name, fake)

    want = _torch_warning(register(torch.library))
    with pytest.warns(FutureWarning) as record:
        register(library)()
    assert [str(w.message) for w in record] == [want]
    assert record[0].filename == __file__  # points at the caller, as torch's does
    got = ops["ember"](ember.empty(3, 2, device="meta"))
    assert tuple(got.shape) == (6, 2)
    with FakeTensorMode() as mode:
        assert tuple(ops["torch"](mode.from_tensor(torch.empty(3, 2))).shape) == (6, 2)
