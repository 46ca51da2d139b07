"""Selective activation checkpointing against PyTorch: gradients equal the plain computation's,
the policy sees every op of the forward once, saved outputs are reused (a saved random draw is
not drawn again), and PyTorch's errors (mutated cache, second backward, bad policy lists)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as TC

import ember
from ember.dispatcher.opdef import Kind
from ember.utils import checkpoint as EC

X = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
Y = np.linspace(0.5, -0.2, 16).reshape(4, 4)


def _block(x, y):
    return (x.mm(y).mm(y)).sigmoid() * y.sum()


def _grads(lib, module, policy=None):
    x = lib.tensor(X, requires_grad=True)
    y = lib.tensor(Y, requires_grad=True)
    if policy is None:
        out = _block(x, y)
    else:
        context_fn = functools.partial(module.create_selective_checkpoint_contexts, policy)
        out = module.checkpoint(_block, x, y, use_reentrant=False, context_fn=context_fn)
    out.sum().backward()
    return [x.grad.numpy(), y.grad.numpy()]


@pytest.mark.parametrize("policy", ["list", "save all", "recompute all", "bool"])
def test_gradients_equal_the_plain_computation(policy):
    def pick(lib, module):
        mm = ember.ops.mm if lib is ember else torch.ops.aten.mm.default
        policies = {
            "list": [mm],
            "save all": lambda ctx, op, *a: module.CheckpointPolicy.MUST_SAVE,
            "recompute all": lambda ctx, op, *a: module.CheckpointPolicy.PREFER_RECOMPUTE,
            "bool": lambda ctx, op, *a: op is mm,
        }
        return policies[policy]

    plain = _grads(torch, TC)
    for lib, module in ((ember, EC), (torch, TC)):
        for got, want in zip(_grads(lib, module, pick(lib, module)), plain):
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_policy_sees_each_forward_op_once():
    seen = []

    def policy(ctx, op, *args):
        assert isinstance(ctx, EC.SelectiveCheckpointContext) and not ctx.is_recompute
        seen.append((op.name, tuple(ctx.op_output.shape)))
        return EC.CheckpointPolicy.PREFER_RECOMPUTE

    _grads(ember, EC, policy)
    assert [name for name, _ in seen] == ["mm", "mm", "sigmoid", "sum", "mul"]
    assert seen[0][1] == (3, 4)


def _random_block(x):
    return x * ember.rand_like(x)


@pytest.mark.parametrize("save", [True, False])
def test_saved_outputs_are_not_recomputed(save):
    """Without RNG replay a recomputed draw differs; a saved one is the forward's."""
    x = ember.ones(200, requires_grad=True)
    context_fn = functools.partial(
        EC.create_selective_checkpoint_contexts,
        lambda ctx, op, *a: save and op.kind is Kind.RANDOM,
    )
    out = EC.checkpoint(
        _random_block, x, use_reentrant=False, context_fn=context_fn, preserve_rng_state=False
    )
    mask = out.detach().numpy().copy()
    out.sum().backward()
    assert np.array_equal(x.grad.numpy(), mask) is save


def _mutated(lib, module, allow):
    x = lib.tensor(X, requires_grad=True)
    kept = []

    def block(x):
        y = x.sin()
        kept.append(y)
        return y.exp()

    policy = [ember.ops.sin if lib is ember else torch.ops.aten.sin.default]
    context_fn = functools.partial(
        module.create_selective_checkpoint_contexts, policy, allow_cache_entry_mutation=allow
    )
    out = module.checkpoint(block, x, use_reentrant=False, context_fn=context_fn)
    with lib.no_grad():
        kept[0].add_(1)  # the cache holds the same storage
    out.sum().backward()


def test_mutated_cache_is_refused_as_torch():
    for lib, module in ((ember, EC), (torch, TC)):
        with pytest.raises(RuntimeError, match="has been mutated"):
            _mutated(lib, module, allow=False)
        _mutated(lib, module, allow=True)


def test_second_backward_is_refused_as_torch():
    for lib, module in ((ember, EC), (torch, TC)):
        x = lib.tensor(X, requires_grad=True)
        y = lib.tensor(Y, requires_grad=True)
        mm = ember.ops.mm if lib is ember else torch.ops.aten.mm.default
        context_fn = functools.partial(module.create_selective_checkpoint_contexts, [mm])
        out = module.checkpoint(_block, x, y, use_reentrant=False, context_fn=context_fn)
        out.sum().backward(retain_graph=True)
        with pytest.raises(RuntimeError, match="backward an extra time"):
            out.sum().backward()


def test_bad_policies_are_refused_as_torch():
    for module in (EC, TC):
        with pytest.raises(ValueError, match="Expected op in `op_list` to be an OpOverload"):
            module.create_selective_checkpoint_contexts(["mm"])
        with pytest.raises(TypeError, match="must be either a function or a list of ops"):
            module.create_selective_checkpoint_contexts(3)
