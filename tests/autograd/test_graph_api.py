"""The backward graph as a program sees it, against PyTorch: node names, next_functions,
_saved_* attributes, node hooks, saved-tensor hooks, Module full backward hooks, Variable and
the autograd.profiler aliases."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ember


def _leaves(lib):
    x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
    w = lib.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.25]], requires_grad=True)
    b = lib.tensor([0.1, 0.2], requires_grad=True)
    return x, w, b


EXPRESSIONS = {
    "add scalar": lambda lib, x, w, b: x + 1,
    "mul scalar": lambda lib, x, w, b: x * 2,
    "mul": lambda lib, x, w, b: x * x,
    "div": lambda lib, x, w, b: x / 2,
    "sum": lambda lib, x, w, b: x.sum(),
    "sum dim": lambda lib, x, w, b: x.sum(0),
    "mean": lambda lib, x, w, b: x.mean(),
    "mean dim": lambda lib, x, w, b: w.mean(1),
    "pow scalar": lambda lib, x, w, b: x**2,
    "pow tensor": lambda lib, x, w, b: x.pow(x),
    "rpow": lambda lib, x, w, b: 2**x,
    "rsub": lambda lib, x, w, b: 1 - x,
    "clamp": lambda lib, x, w, b: x.clamp(0, 1),
    "where": lambda lib, x, w, b: lib.where(x > 0, x, 0.0),
    "linear": lambda lib, x, w, b: lib.nn.functional.linear(x.view(1, 3), w, b),
    "linear 1d": lambda lib, x, w, b: lib.nn.functional.linear(x, w, b),
    "linear 3d": lambda lib, x, w, b: lib.nn.functional.linear(x.view(1, 1, 3), w, b),
    "linear no bias": lambda lib, x, w, b: lib.nn.functional.linear(x.view(1, 3), w),
    "linear module": lambda lib, x, w, b: _module(lib, w, b)(x.view(1, 3)),
    "addmm": lambda lib, x, w, b: lib.addmm(b, x.view(1, 3), w.t()),
    "mse_loss": lambda lib, x, w, b: lib.nn.functional.mse_loss(x, x.detach() * 2),
    "l1_loss": lambda lib, x, w, b: lib.nn.functional.l1_loss(x, x.detach() * 2),
    "smooth_l1_loss": lambda lib, x, w, b: lib.nn.functional.smooth_l1_loss(x, x.detach()),
    "huber_loss": lambda lib, x, w, b: lib.nn.functional.huber_loss(x, x.detach() * 2),
    "bce": lambda lib, x, w, b: lib.nn.functional.binary_cross_entropy(
        x.sigmoid(), x.detach().sigmoid()
    ),
    "bce logits": lambda lib, x, w, b: lib.nn.functional.binary_cross_entropy_with_logits(
        x, (x > 0).to(x.dtype), pos_weight=b.detach()[:1]
    ),
    "nll_loss": lambda lib, x, w, b: lib.nn.functional.nll_loss(w, lib.tensor([0, 2])),
    "nll_loss 2d": lambda lib, x, w, b: lib.nn.functional.nll_loss(
        w.view(1, 2, 3, 1), lib.tensor([[[0], [1], [1]]])
    ),
    "conv1d": lambda lib, x, w, b: lib.nn.functional.conv1d(x.view(1, 1, 3), w.view(2, 1, 3)),
    "conv2d bias": lambda lib, x, w, b: lib.nn.functional.conv2d(
        x.view(1, 1, 3, 1), w.view(2, 1, 3, 1), b
    ),
    "conv_transpose2d": lambda lib, x, w, b: lib.nn.functional.conv_transpose2d(
        x.view(1, 1, 3, 1), w.view(1, 2, 3, 1)
    ),
    "group_norm": lambda lib, x, w, b: lib.nn.functional.group_norm(w.view(1, 2, 3), 1),
    "group_norm affine": lambda lib, x, w, b: lib.nn.functional.group_norm(
        w.view(1, 2, 3), 2, b, b
    ),
    "mv": lambda lib, x, w, b: w @ x,
    "dot": lambda lib, x, w, b: x @ x,
    "mm": lambda lib, x, w, b: w @ w.t(),
    "gather": lambda lib, x, w, b: x.gather(0, lib.tensor([2, 0])),
    "index_select": lambda lib, x, w, b: x.index_select(0, lib.tensor([1])),
    "var": lambda lib, x, w, b: x.var(),
    "norm": lambda lib, x, w, b: x.norm(),
    "softmax": lambda lib, x, w, b: x.softmax(0),
    "layer_norm": lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (3,)),
    "unbind": lambda lib, x, w, b: w.unbind()[1],
    "stack": lambda lib, x, w, b: lib.stack([x, x]),
    "cat": lambda lib, x, w, b: lib.cat([x, x]),
    "view": lambda lib, x, w, b: x.view(3, 1),
    "flatten": lambda lib, x, w, b: w.flatten(),
    "select": lambda lib, x, w, b: x[0],
    "slice": lambda lib, x, w, b: x[1:],
    "transpose": lambda lib, x, w, b: w.t(),
    "expand": lambda lib, x, w, b: x.expand(2, 3),
    "to": lambda lib, x, w, b: x.to(lib.float64),
    "relu": lambda lib, x, w, b: x.relu(),
    "square": lambda lib, x, w, b: x.square(),
    "squeeze dim": lambda lib, x, w, b: x.view(1, 3).squeeze(0),
    "max dim": lambda lib, x, w, b: w.max(1)[0],
    "cumsum": lambda lib, x, w, b: x.cumsum(0),
    "custom chain": lambda lib, x, w, b: ((x * 2).exp() + b.sum()).sin(),
}


def _module(lib, w, b):
    layer = lib.nn.Linear(3, 2)
    with lib.no_grad():
        layer.weight.copy_(w)
        layer.bias.copy_(b)
    return layer


def _describe(t, depth=3):
    """The graph below ``t`` as nested (name, [children or None]) to ``depth`` levels."""

    def node(fn, level):
        if fn is None:
            return None
        name = fn.name()
        if level == 0:
            return name
        return (name, [node(child, level - 1) for child, _ in fn.next_functions])

    return node(t.grad_fn, depth)


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_graph_names_and_next_functions_match_torch(name):
    ours = _describe(EXPRESSIONS[name](ember, *_leaves(ember)))
    theirs = _describe(EXPRESSIONS[name](torch, *_leaves(torch)))
    assert ours == theirs


def test_cross_entropy_node_is_nll_loss():
    """PyTorch's cross_entropy is nll_loss over log_softmax, and ember's (class targets)."""
    for lib in (ember, torch):
        _, w, _ = _leaves(lib)
        names = [
            lib.nn.functional.cross_entropy(w.view(*shape), lib.tensor(t)).grad_fn.name()
            for shape, t in (((2, 3), [0, 2]), ((1, 2, 3), [[1, 0, 1]]))
        ]
        assert names == ["NllLossBackward0", "NllLoss2DBackward0"]


def test_next_functions_index_and_leaves():
    x, w, _ = _leaves(ember)
    y = w.max(1)
    node = (y[0] * y[0]).grad_fn
    assert node.next_functions[0] == (y[0].grad_fn, 0)
    acc = (x * 2).grad_fn.next_functions[0][0]
    assert (
        acc.name() == "torch::autograd::AccumulateGrad"
        and acc.variable is x
        and acc.next_functions == ()
    )


def test_saved_attributes_match_torch():
    for lib in (ember, torch):
        x, w, _ = _leaves(lib)
        y = x.exp()
        result = y.grad_fn._saved_result
        assert result is not y and result.tolist() == y.tolist()
        m = x * w
        assert m.grad_fn._saved_self is x and m.grad_fn._saved_other is w
        s = w.sum(1, keepdim=True)
        assert s.grad_fn._saved_dim == (1,) and s.grad_fn._saved_keepdim is True
        with pytest.raises(AttributeError):
            _ = (x + w).grad_fn._saved_self  # add saves nothing
        z = (x * x).sum()
        saved = z.grad_fn.next_functions[0][0]
        z.backward()
        with pytest.raises(RuntimeError, match="after they have already been freed"):
            _ = saved._saved_self


# Outputs PyTorch's node keeps: a composite's (std, logsumexp, cdist) and a table op's
# second output (sort's and min's indices, max_pool2d's result1)
KEPT_OUTPUTS = {
    "std": (lambda lib, w: w.std(), "_saved_result"),
    "logsumexp": (lambda lib, w: w.logsumexp(1), "_saved_result"),
    "cdist": (lambda lib, w: lib.cdist(w, w), "_saved_result"),
    "prod": (lambda lib, w: w.prod(1), "_saved_result"),
    "sort": (lambda lib, w: w.sort(1)[0], "_saved_indices"),
    "min": (lambda lib, w: w.min(1)[0], "_saved_indices"),
    "topk": (lambda lib, w: w.topk(2)[0], "_saved_indices"),
    "max_pool2d": (
        lambda lib, w: lib.nn.functional.max_pool2d(w.view(1, 1, 2, 3), 1),
        "_saved_result1",
    ),
}


@pytest.mark.parametrize("name", sorted(KEPT_OUTPUTS))
def test_saved_outputs_match_torch(name):
    """The kept output has the output's values; a float one has the node as its grad_fn (a
    copy of the output, not the output), indices none; after backward it is freed."""
    make, attribute = KEPT_OUTPUTS[name]
    seen = []
    for lib in (ember, torch):
        _, w, _ = _leaves(lib)
        y = make(lib, w)
        node = y.grad_fn
        saved = getattr(node, attribute)
        own = saved.grad_fn is node if saved.dtype.is_floating_point else saved.grad_fn is None
        seen.append((saved.detach().numpy(), str(saved.dtype).split(".")[1], own, saved is y))
        y.sum().backward()
        with pytest.raises(RuntimeError, match="after they have already been freed"):
            getattr(node, attribute)
    (ours, *facts), (theirs, *expected) = seen
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    assert facts == expected


def test_instance_norm_node_is_batch_norms():
    """PyTorch's instance norm is batch norm over a (1, N * C, H, W) view: ember's node shows
    the same name, inputs and saved values (its mean and invstd computed when asked)."""
    seen, names = [], ()
    for lib in (torch, ember):  # ember's node answers the names PyTorch's lists
        gen = np.random.default_rng(0)
        m = lib.tensor(gen.normal(size=(2, 3, 4, 4)), requires_grad=True)
        node = lib.nn.functional.instance_norm(m).grad_fn.next_functions[0][0]
        inputs = tuple(None if n is None else n.name() for n, _ in node.next_functions)
        names = names or [a for a in dir(node) if a.startswith("_saved_")]
        saved = {a: getattr(node, a) for a in names}
        arrays = {a: v.detach().numpy() for a, v in saved.items() if isinstance(v, lib.Tensor)}
        plain = {a: v for a, v in saved.items() if a not in arrays}
        seen.append((node.name(), inputs, plain, arrays))
    (*theirs, their_arrays), (*ours, our_arrays) = seen
    assert ours == theirs and our_arrays.keys() == their_arrays.keys()
    for name, array in their_arrays.items():
        np.testing.assert_allclose(our_arrays[name], array, rtol=1e-12, err_msg=name)


def test_raw_saved_tensor_hooks():
    x, _, _ = _leaves(ember)
    y = x.exp()
    calls = []
    y.grad_fn._raw_saved_result.register_hooks(
        lambda t: calls.append("pack") or t * 2, lambda t: calls.append("unpack") or t
    )
    assert calls == ["pack"]
    y.sum().backward()
    assert calls == ["pack", "unpack"]
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(x.detach().numpy()), rtol=1e-6)


def test_node_hooks_match_torch():
    results = []
    for lib in (ember, torch):
        x, _, _ = _leaves(lib)
        y = (x * 3).sin()
        seen = []

        def pre(go, seen=seen):
            seen.append(("pre", go[0].tolist()))
            return (go[0] * 2,)

        y.grad_fn.register_prehook(pre)
        handle = y.grad_fn.register_hook(
            lambda gi, go, seen=seen: seen.append(("post", gi[0].tolist()))
        )
        y.sum().backward()
        handle.remove()
        x.grad = None
        y2 = (x * 3).sin()
        y2.sum().backward()
        flat = [v for _, grads in seen for v in grads] + x.grad.tolist()
        results.append(np.array(flat))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)


def test_saved_tensors_hooks_and_save_on_cpu():
    x, _, _ = _leaves(ember)
    packed = []

    def pack(t):
        packed.append(tuple(t.shape))
        return ("box", t.clone())

    with ember.autograd.graph.saved_tensors_hooks(pack, lambda box: box[1]):
        y = (x.exp() * x).sum()
    assert packed  # every saved tensor went through the hook
    y.backward()
    expected = np.exp(x.detach().numpy()) * (1 + x.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)
    x.grad = None
    with ember.autograd.graph.save_on_cpu():
        y = (x.exp() * x).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)


def test_disable_saved_tensors_hooks():
    hooks = ember.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)
    disabled = ember.autograd.graph.disable_saved_tensors_hooks("no hooks here")
    with disabled, pytest.raises(RuntimeError, match="no hooks here"), hooks:
        pass
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        pass  # allowed again outside


def _hooked_linear(lib, log):
    lin = lib.nn.Linear(3, 2)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.25]]))
        lin.bias.copy_(lib.tensor([0.5, -0.5]))

    def as_lists(grads):
        return [None if g is None else np.round(g.detach().numpy(), 5).tolist() for g in grads]

    def hook(module, grad_input, grad_output):
        log.append(("full", as_lists(grad_input), as_lists(grad_output)))
        return None if grad_input[0] is None else (grad_input[0] * 2,)

    def pre_hook(module, grad_output):
        log.append(("pre", as_lists(grad_output)))
        return (grad_output[0] * 3,)

    lin.register_full_backward_hook(hook)
    lin.register_full_backward_pre_hook(pre_hook)
    return lin


def test_module_full_backward_hooks_match_torch():
    logs = []
    for lib in (ember, torch):
        log = []
        lin = _hooked_linear(lib, log)
        x = lib.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
        y = lin(x)
        log.append(("grad_fn", y.grad_fn.name()))
        (y * lib.tensor([[1.0, 2.0]])).sum().backward()
        log.append(("grads", x.grad.tolist(), lin.weight.grad.tolist()))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the hook fires on the outputs: PyTorch warns
            lin(lib.tensor([[1.0, 2.0, 3.0]])).sum().backward()
        logs.append(log)
    assert logs[0] == logs[1]


def test_variable_is_the_legacy_tensor():
    x = ember.ones(2)
    v = ember.autograd.Variable(x, requires_grad=True)
    assert isinstance(v, ember.Tensor) and isinstance(x, ember.autograd.Variable)
    assert v is not x and v.requires_grad and not x.requires_grad and v.grad_fn is None
    with pytest.warns(UserWarning, match="volatile was removed"):
        ember.autograd.Variable(x, volatile=True)
    with pytest.raises(TypeError, match="Variable data has to be a tensor"):
        ember.autograd.Variable([1, 2])


def test_autograd_profiler_aliases():
    assert ember.autograd.profiler.profile is ember.profiler.profile
    assert ember.autograd.profiler.record_function is ember.profiler.record_function
    with (
        ember.autograd.profiler.profile() as prof,
        ember.autograd.profiler.record_function("block"),
    ):
        ember.ones(3).sum()
    assert "block" in prof.key_averages().table()


def _multi_grad_calls(lib, mode, run):
    """What ``register_multi_grad_hook`` over (a, b, a non-leaf) reports in one backward."""
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0], requires_grad=True)
    c = a * b
    calls = []

    def fn(grads):
        if mode == "any":
            calls.append(grads.tolist())
        else:
            calls.append([None if g is None else g.tolist() for g in grads])

    handle = lib.autograd.graph.register_multi_grad_hook((a, b, c), fn, mode=mode)
    run(lib, a, b, c)
    run(lib, a, b, c)  # a second pass reports again
    handle.remove()
    run(lib, a, b, c)
    return calls


MULTI_GRAD_RUNS = {
    "all reached": lambda lib, a, b, c: (c * c).sum().backward(retain_graph=True),
    "one leaf": lambda lib, a, b, c: (a * 2).sum().backward(),
    "grad of a": lambda lib, a, b, c: lib.autograd.grad((c * 2).sum(), a, retain_graph=True),
    "leaves only": lambda lib, a, b, c: (a.sum() + b.sum()).backward(),
}


@pytest.mark.parametrize("mode", ["all", "any"])
@pytest.mark.parametrize("run", sorted(MULTI_GRAD_RUNS))
def test_register_multi_grad_hook_matches_torch(mode, run):
    fn = MULTI_GRAD_RUNS[run]
    if run == "grad of a" and mode == "all":  # PyTorch refuses leaves under autograd.grad
        for lib in (ember, torch):
            with pytest.raises(RuntimeError, match="A leaf node was passed to _will_engine"):
                _multi_grad_calls(lib, mode, fn)
        return
    ours = _multi_grad_calls(ember, mode, fn)
    assert ours == _multi_grad_calls(torch, mode, fn)
    assert len(ours) == 2


def test_register_multi_grad_hook_non_leaves_under_autograd_grad():
    calls = {}
    for lib in (ember, torch):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        c, d = a * 2, a * 3
        found = calls.setdefault(lib.__name__, [])
        lib.autograd.graph.register_multi_grad_hook(
            (c, d), lambda grads, found=found: found.append([g is not None for g in grads])
        )
        lib.autograd.grad((c * d).sum(), a, retain_graph=True)
        lib.autograd.grad(c.sum(), a)
    assert calls["ember"] == calls["torch"] == [[True, True], [True, False]]


def test_register_multi_grad_hook_errors_match_torch():
    for lib in (ember, torch):
        x = lib.ones(2, requires_grad=True)
        with pytest.raises(ValueError, match="Expects mode to be one of"):
            lib.autograd.graph.register_multi_grad_hook((x,), print, mode="some")


def _mutate_saved(lib, inside: bool, views: bool = False):
    x = lib.tensor([0.5, 1.0, 2.0], requires_grad=True)
    a = x.clone()
    y = a.sin().sum() + a.exp().sum() + (a * a).sum()  # saves a and an output
    if views:
        view = a[1:]
        y = y + (view * view).sum()
        view.add_(1)
    a.mul_(2)
    if inside:
        y.backward()
    return x, y


def test_allow_mutation_on_saved_tensors_matches_torch():
    grads = []
    for lib in (ember, torch):
        with lib.autograd.graph.allow_mutation_on_saved_tensors() as ctx:
            x, _ = _mutate_saved(lib, inside=True)
            with (
                pytest.raises(RuntimeError, match="cannot be nested"),
                lib.autograd.graph.allow_mutation_on_saved_tensors(),
            ):
                pass
        assert ctx is not None
        grads.append(x.grad.numpy())
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            _, y = _mutate_saved(lib, inside=False)
        with pytest.raises(
            AssertionError, match="outside of the 'allow_mutation_on_saved_tensors'"
        ):
            y.backward()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            _mutate_saved(lib, inside=True)
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


def test_allow_mutation_on_saved_views_gives_the_saved_values():
    """A view saved and its base changed (or the view through another view): ember clones any
    saved tensor of the written storage, so the gradient is the unmutated computation's.
    (PyTorch files saved tensors by view geometry and version, and misses these.)"""
    with ember.autograd.graph.allow_mutation_on_saved_tensors():
        x, _ = _mutate_saved(ember, inside=True, views=True)
    v = np.array([0.5, 1.0, 2.0])
    want = np.cos(v) + np.exp(v) + 2 * v + np.array([0.0, 2.0, 4.0])
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)
