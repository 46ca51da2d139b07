"""ember.utils.checkpoint: both variants give the gradients of the plain computation (dropout
included: the RNG state is replayed), keep no activations, and behave as PyTorch's (warnings,
errors, keyword arguments, context_fn, autograd.grad)."""

from __future__ import annotations

import contextlib
import logging
import warnings

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as TC

import ember
from ember.utils import checkpoint as EC


def _model():
    ember.manual_seed(0)
    nn = ember.nn
    return nn.Sequential(
        nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.3), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2)
    )


def _grads(model, x, run) -> list:
    model.zero_grad(set_to_none=True)
    x.grad = None
    ember.manual_seed(1)
    run().pow(2).sum().backward()
    return [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("reentrant", [True, False])
def test_gradients_equal_the_plain_computation(reentrant):
    model = _model()
    x = ember.randn(5, 4, requires_grad=True)
    plain = _grads(model, x, lambda: model(x))
    runs = [
        lambda: EC.checkpoint(model, x, use_reentrant=reentrant),
        lambda: EC.checkpoint_sequential(model, 3, x, use_reentrant=reentrant),
        lambda: EC.checkpoint(
            lambda a: EC.checkpoint(model, a, use_reentrant=reentrant), x, use_reentrant=reentrant
        ),
    ]
    for run in runs:
        for got, want in zip(_grads(model, x, run), plain):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_nonreentrant_keeps_no_activations():
    model = _model()
    x = ember.randn(5, 4, requires_grad=True)
    out = EC.checkpoint(model, x, use_reentrant=False)
    kept, seen, stack = [], set(), [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        saved = getattr(node.ctx, "_saved", None) if node.ctx is not None else None
        for value in (saved or {}).values():
            items = value if isinstance(value, tuple) else (value,)
            kept.extend(item.tensor for item in items if item.tensor is not None)
        stack.extend(edge[0] for edge in node.edges if edge is not None)
    assert len(seen) > 5 and not kept


def test_nonreentrant_works_with_autograd_grad_and_kwargs():
    x = ember.randn(3, requires_grad=True)
    out = EC.checkpoint(lambda a, scale: (a.sin() * scale).sum(), x, scale=2.0, use_reentrant=False)
    (g,) = ember.autograd.grad(out, x)
    np.testing.assert_allclose(g.numpy(), 2 * np.cos(x.detach().numpy()), rtol=1e-6)


def test_context_fn_runs_in_forward_and_recomputation():
    entered = []

    @contextlib.contextmanager
    def tag(name):
        entered.append(name)
        yield

    x = ember.randn(3, requires_grad=True)
    out = EC.checkpoint(
        lambda a: a.exp().sum(),
        x,
        use_reentrant=False,
        context_fn=lambda: (tag("forward"), tag("recompute")),
    )
    assert entered == ["forward"]
    out.backward()
    assert entered == ["forward", "recompute"]


def test_changed_recomputation_is_reported():
    calls = []

    def grows(a):
        calls.append(1)
        return (a.repeat(len(calls)).exp()).sum()

    out = EC.checkpoint(grows, ember.randn(3, requires_grad=True), use_reentrant=False)
    with pytest.raises(EC.CheckpointError, match="different metadata than during the forward"):
        out.backward()


def _error(lib_checkpoint, call):
    try:
        call(lib_checkpoint)
    except Exception as exc:  # the comparison is the point: any error type
        return f"{type(exc).__name__}: {exc}"
    return "no error"


@pytest.mark.parametrize(
    "name",
    ["kwargs with reentrant", "context_fn with reentrant", "grad through reentrant"],
)
def test_errors_match_torch(name):
    def call(lib, module):
        x = lib.ones(3, requires_grad=True)
        fn = lambda a, **kw: (a * 2).sum()  # noqa: E731
        if name == "kwargs with reentrant":
            return module.checkpoint(fn, x, use_reentrant=True, extra=1)
        if name == "context_fn with reentrant":
            return module.checkpoint(
                fn, x, use_reentrant=True, context_fn=lambda: (contextlib.nullcontext(),) * 2
            )
        out = module.checkpoint(fn, x, use_reentrant=True)
        return lib.autograd.grad(out, x)

    ours = _error(EC, lambda m: call(ember, m))
    theirs = _error(TC, lambda m: call(torch, m))
    assert ours == theirs


def test_warnings_match_torch():
    messages = []
    for lib, module in ((ember, EC), (torch, TC)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module.checkpoint(lambda a: a * 2, lib.ones(3))
            module.checkpoint_sequential([lambda a: a * 2, lambda a: a + 1], 2, lib.ones(3))
        messages.append([str(w.message) for w in caught])
    assert messages[0] == messages[1]


def _recomputed_steps(lib, checkpoint_module, early_stop, enable=None) -> list:
    """Which steps of the block the recomputation ran (the forward's are cleared)."""
    steps = []

    def block(x):
        y = x.sin()  # the last tensor backward needs is saved here
        steps.append("after sin")
        return y * 2

    x = lib.tensor([0.5, 1.0], requires_grad=True)
    context = (
        contextlib.nullcontext()
        if enable is None
        else checkpoint_module.set_checkpoint_early_stop(enable)
    )
    with context:
        out = checkpoint_module.checkpoint(block, x, use_reentrant=False, early_stop=early_stop)
    steps.clear()
    out.sum().backward()
    return steps


@pytest.mark.parametrize("early_stop", [True, False])
@pytest.mark.parametrize("enable", [None, True, False])
def test_early_stop_and_its_global_override_match_torch(early_stop, enable):
    ours = _recomputed_steps(ember, EC, early_stop, enable)
    assert ours == _recomputed_steps(torch, TC, early_stop, enable)
    stops = early_stop if enable is None else enable
    assert ours == ([] if stops else ["after sin"])


def test_default_device_type_as_torch():
    from ember._accelerator import current_accelerator

    default = current_accelerator() or "cpu"  # as PyTorch: the accelerator's type, else cpu
    assert EC.DefaultDeviceType.get_device_type() == default
    try:
        EC.DefaultDeviceType.set_device_type("xpu")
        assert EC.DefaultDeviceType.get_device_type() == "xpu"
    finally:
        EC.DefaultDeviceType.set_device_type(None)
    assert EC.DefaultDeviceType.get_device_type() == default


def test_each_backward_of_a_retained_graph_recomputes_as_torch():
    counts = []
    for lib, module in ((ember, EC), (torch, TC)):
        calls = []

        def block(x, calls=calls):
            calls.append(1)
            return x.sin().exp()

        x = lib.tensor([0.5, 1.0], requires_grad=True)
        out = module.checkpoint(block, x, use_reentrant=False).sum()
        out.backward(retain_graph=True)
        out.backward()
        counts.append((len(calls), x.grad.tolist()))
    assert counts[0][0] == counts[1][0] == 3
    np.testing.assert_allclose(counts[0][1], counts[1][1], rtol=1e-6)


def _diverging(lib, module, debug, enable):
    """A block whose recomputation saves a tensor of another shape than its forward did."""
    runs = []

    def block(x):
        runs.append(1)
        return (x.reshape(2, 1) if len(runs) > 1 else x).sin().sum()

    x = lib.tensor([0.5, 1.0], requires_grad=True)
    context = (
        contextlib.nullcontext() if enable is None else module.set_checkpoint_debug_enabled(enable)
    )
    with context:
        out = module.checkpoint(block, x, use_reentrant=False, debug=debug)
    with pytest.raises(module.CheckpointError) as caught:
        out.sum().backward()
    return str(caught.value)


@pytest.mark.parametrize(("debug", "enable"), [(True, None), (False, True), (True, False)])
def test_debug_mode_dumps_both_runs_as_torch(debug, enable):
    ours = _diverging(ember, EC, debug, enable)
    # PyTorch logs the ops through `logging` with records that pytest's capture cannot format
    torch_log = logging.getLogger("LoggingTensor")
    torch_log.propagate = False
    try:
        theirs = _diverging(torch, TC, debug, enable)
    finally:
        torch_log.propagate = True
    dumped = enable if enable is not None else debug
    for message in (ours, theirs):
        assert ("Operations executed during the original forward:" in message) is dumped
        assert ("Detected non-determinism" in message) is dumped
    if dumped:
        forward, recompute = ours.split("Operations executed during recomputation:")
        forward = forward.split("Operations executed during the original forward:")[1]
        recompute = recompute.split("+---")[0]
        assert "sin(" in forward
        assert "reshape(" not in forward and "view(" not in forward
        assert "reshape(" in recompute or "view(" in recompute
        assert "test_checkpoint.py" in ours  # where the program called the ops


def test_debug_refuses_a_context_fn_as_torch():
    for lib, module in ((ember, EC), (torch, TC)):
        x = lib.ones(2, requires_grad=True)
        with pytest.raises(ValueError, match="debug=True is incompatible with non-default"):
            module.checkpoint(
                lambda t: t.sin(),
                x,
                use_reentrant=False,
                debug=True,
                context_fn=lambda: (contextlib.nullcontext(), contextlib.nullcontext()),
            )


def test_device_states_round_trip(device):
    x = ember.ones(3, device=device)
    ids, states = EC.get_device_states(x, [x, 1.0])
    if x.device.type == "cpu":  # as PyTorch: only tensors off the CPU count
        assert (ids, states) == ([], []) == TC.get_device_states(torch.ones(3), [torch.ones(3)])
        return
    assert ids == [x.get_device()] * 2 and len(states) == 2
    first = ember.rand(4, device=device).cpu().numpy()
    EC.set_device_states(ids, states, device_type=x.device.type)
    np.testing.assert_array_equal(ember.rand(4, device=device).cpu().numpy(), first)
