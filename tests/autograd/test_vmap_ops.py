"""Every op of the table through vmap: the batched result equals the per-sample results stacked.

Samples come from the op suite (tests/ops/samples.py). A batch holds the sample's tensors and
two shuffles of their values (still valid indices, still in the op's domain), or two positive
multiples where a shuffle would leave the domain (positive definite matrices, factorizations), so
each sample differs. Three ways of batching: every tensor argument batched along dim 0, only the
first one (the others shared by all samples), and the first one batched along its last dim (a
strided physical tensor). In-place ops batch their target, which each sample writes into.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.autograd import batch_rules, jvp_rules
from ember.autograd.vmap import vmap
from ember.dispatcher.kinds import functional as functional_kind
from ember.dispatcher.opdef import Kind
from ember.dispatcher.optable import OPS

from ..conftest import device_op_params
from ..ops.samples import samples


def _resolved(t):
    """``t``'s values (lazy conjugate/negative views resolved), without history."""
    return t.detach().resolve_conj().resolve_neg()


BATCH = 3
SAMPLES_PER_OP = 3
DYNAMIC_SHAPE = {"nonzero", "masked_select", "_unique2"}
# Ops returning nothing (they write their arguments: GradScaler's unscale): PyTorch's vmap
# refuses them, as ember's.
NO_RESULT = sorted(name for name, op in OPS.items() if not op.schema.returns)
BATCHED = sorted(
    name
    for name, op in OPS.items()
    if op.schema.tensor_positions
    and (op.inplace_of or op).kind is not Kind.RANDOM
    and name not in DYNAMIC_SHAPE
    and name not in NO_RESULT
)
MODES = ("all", "first", "last_dim")


def _dtype(op):
    accepted = (op.inplace_of or op).dtypes
    for d in (ember.float64, ember.float32, ember.int64, ember.bool):
        if d in accepted:
            return d
    return sorted(accepted, key=lambda d: d.name)[0]


# Ops whose domain a shuffle leaves: a shuffled positive definite matrix is not one (Cholesky
# refuses it), and a shuffle moves LDL's zero upper triangle onto D's diagonal (D singular: the
# inf and nan that follow differ between LAPACK calls) and breaks the 2x2 blocks its pivots
# encode. Positive multiples stay positive definite, and keep a valid LDL factorization (L's
# multipliers and D scaled, the pivots as they are).
SCALED_NOT_SHUFFLED = frozenset(("cholesky", "linalg_cholesky", "linalg_ldl_solve"))
SCALES = (1.0, 1.5, 0.5)


def _variants(t: ember.Tensor, rng, scaled: bool = False) -> list:
    """The tensor and two shuffles of its values (same shape, dtype and multiset), or (scaled)
    two positive multiples of it, integers kept."""
    values = t.detach().cpu().numpy().copy()
    out = [values]
    for i in range(1, BATCH):
        if scaled:
            out.append(values * SCALES[i] if values.dtype.kind == "f" else values.copy())
            continue
        flat = values.reshape(-1).copy()
        rng.shuffle(flat)
        out.append(flat.reshape(values.shape))
    return [ember.from_numpy(np.ascontiguousarray(v)).to(t.device) for v in out]


def _tensor_slots(args) -> list:
    """(position, index in a list or None) of every tensor argument."""
    slots = []
    for i, a in enumerate(args):
        if isinstance(a, ember.Tensor):
            slots.append((i, None))
        elif isinstance(a, (list, tuple)):
            slots.extend((i, j) for j, x in enumerate(a) if isinstance(x, ember.Tensor))
    return slots


def _get(args, slot):
    i, j = slot
    return args[i] if j is None else args[i][j]


def _put(args, slot, value) -> None:
    i, j = slot
    if j is None:
        args[i] = value
    else:
        args[i] = list(args[i])
        args[i][j] = value


def _case(op, args, mode, rng):
    """(per-sample argument lists, flat batched inputs, in_dims, rebuild) for one mode."""
    slots = _tensor_slots(args)
    if mode != "all":
        slots = slots[:1]
    per_sample = [list(args) for _ in range(BATCH)]
    inputs, in_dims = [], []
    for slot in slots:
        variants = _variants(_get(args, slot), rng, op.name in SCALED_NOT_SHUFFLED)
        for b in range(BATCH):
            _put(per_sample[b], slot, variants[b].clone())
        stacked = ember.stack(variants)
        if mode == "last_dim":
            stacked = stacked.movedim(0, -1)
            in_dims.append(stacked.dim() - 1)
        else:
            in_dims.append(0)
        inputs.append(stacked)
    return per_sample, inputs, slots, tuple(in_dims)


def _compare(got, expected, what) -> None:
    if isinstance(expected, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(expected), what
        for g, e in zip(got, expected):
            _compare(g, e, what)
        return
    assert tuple(got.shape) == tuple(expected.shape), f"{what}: {got.shape} != {expected.shape}"
    assert got.dtype is expected.dtype, f"{what}: {got.dtype} != {expected.dtype}"
    g, e = (_resolved(t).cpu().numpy() for t in (got, expected))
    if e.dtype.kind == "f":
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(g, e, err_msg=what)


def _stack(results):
    first = results[0]
    if isinstance(first, ember.Tensor):
        return ember.stack(results)
    parts = [_stack([r[i] for r in results]) for i in range(len(first))]
    return type(first)(*parts) if hasattr(first, "_fields") else type(first)(parts)


# Ops whose result is unspecified where an index repeats along ``dim`` (PyTorch: "the order is
# undefined" on GPUs): a GPU's atomics pick any of the writes, so a batched run and a per-sample
# run may differ there. Such samples are compared only on the CPU, which writes in order.
WRITES_BY_INDEX = {"scatter", "scatter_"}


def _repeats_an_index(op, sample) -> bool:
    if op.name not in WRITES_BY_INDEX or sample[0].device.type == "cpu":
        return False
    dim, index = sample[1], sample[2].cpu().numpy()
    ordered = np.sort(index, axis=dim)
    return bool((np.diff(ordered, axis=dim) == 0).any())


def _check(op, args, mode, rng, fallback="ignore") -> bool:
    per_sample, inputs, slots, in_dims = _case(op, args, mode, rng)
    if any(_repeats_an_index(op, sample) for sample in per_sample):
        return False
    try:
        expected = _stack([op(*sample) for sample in per_sample])
        if op.mutates:
            expected = _stack([sample[0] for sample in per_sample])
    except (RuntimeError, TypeError, ValueError, IndexError, ZeroDivisionError):
        return False  # a shuffle the op refuses (or a refused sample): nothing to compare

    def mapped(*batched):
        call = list(args)
        for slot, value in zip(slots, batched):
            _put(call, slot, value)
        out = op(*call)
        return call[0] if op.mutates else out

    if op.mutates and in_dims[0] != 0:
        return False  # the target is compared as batch-first below
    with warnings.catch_warnings():
        # the loop fallback's performance warning ("error": the op must batch without it)
        warnings.filterwarnings(fallback, message="There is a performance drop")
        got = vmap(mapped, in_dims=in_dims)(*inputs)
    _compare(got, expected, f"{op.name} ({mode}) with {[tuple(t.shape) for t in inputs]}")
    return True


# Rows that landed beside the transforms (linalg, the op surface, hardening) and do not batch
# yet: strict, so each flips to a failure the day it is fixed and must leave this table.
NOT_BATCHED_YET = {
    "index_fill_": "in-place composite: no rule",
    "index_copy_": "in-place composite: no rule (its index bounds check reads values)",
    "masked_scatter_": "in-place composite: no rule (its source size check reads values)",
    "scatter_reduce": "no rule yet",
    "index_reduce_": "in-place composite: no rule (its rounds per repeated index read values)",
    "grid_sampler_2d_backward": "decomposition is autograd.grad of the composite: no rule",
    "grid_sampler_3d_backward": "decomposition is autograd.grad of the composite: no rule",
}


# Every op on the full device (cpu), the share of the ops on each other device
# (tests/conftest.py), as gradcheck and the JVP sweep do: batching rules are device-independent
# Python over ops whose kernels tests/ops checks on every device.
DEVICE_OPS = [
    pytest.param(
        *p.values,
        marks=[*p.marks, pytest.mark.xfail(reason=NOT_BATCHED_YET[p.values[1]], strict=True)]
        if p.values[1] in NOT_BATCHED_YET
        else p.marks,
        id=p.id,
    )
    for p in device_op_params(BATCHED, str, lambda device, full: device == full)
]


@pytest.mark.parametrize("device, name", DEVICE_OPS)
def test_vmap_matches_per_sample(name, device, rng):
    _vmap_matches_per_sample(name, device, rng)


def _vmap_matches_per_sample(name, device, rng):
    op = OPS[name]
    dtype = _dtype(op)
    checked = 0
    for sample in samples(op, dtype, device, rng)[:SAMPLES_PER_OP]:
        args = list(sample.ember_args(device))
        if op.mutates:
            args[0] = args[0].contiguous() if isinstance(args[0], ember.Tensor) else args[0]
        if not _tensor_slots(args):
            continue
        for mode in MODES:
            checked += _check(op, list(args), mode, rng)
    assert checked, f"{name}: no sample could be compared"


@pytest.mark.parametrize("name", sorted(DYNAMIC_SHAPE))
def test_dynamic_shapes_are_refused(name, device):
    x = ember.tensor([[0.0, 1.0], [2.0, 0.0]], device=device)
    args = (x, x > 0) if name == "masked_select" else (x,)
    with pytest.raises(RuntimeError, match="dynamic shape"):
        vmap(lambda *a: OPS[name](*a))(*args)


FUNCTIONAL_ROWS = sorted(name for name, op in OPS.items() if op.defn.runner is functional_kind.run)


@pytest.mark.parametrize("name", FUNCTIONAL_ROWS)
def test_functional_rows_batch_and_forward_by_their_parts(name, rng):
    """The nn.functional rows (linear, conv*, sdpa, the losses) run as their decomposition under
    vmap and forward AD, so no loop fallback (no warning) and no transposed-VJP rule."""
    op = OPS[name]
    assert batch_rules.rule_for(op) is batch_rules.decompose
    assert jvp_rules.rule_for(op) is jvp_rules.decompose
    sample = samples(op, ember.float64, "cpu", rng)[0]
    args = list(sample.ember_args("cpu"))
    assert _check(op, args, "all", rng, fallback="error")


@pytest.mark.parametrize("in_dims", [(0, 0), (None, 0), (0, None)])
def test_advanced_indexing_under_vmap_matches_torch(in_dims):
    """``w[i]`` with tensor indices (negative ones too) per sample, as torch.func.vmap."""
    import torch

    w = np.arange(24.0).reshape(2, 3, 4)
    i = np.array([[0, -1, 2, 2], [1, 0, -3, 1]])
    ws, is_ = (w if in_dims[0] == 0 else w[0]), (i if in_dims[1] == 0 else i[0])

    def index(lib, a, b):
        return lib.func.vmap(lambda x, k: x[k, 1:], in_dims=in_dims)(a, b)

    ours = index(ember, ember.from_numpy(ws), ember.from_numpy(is_))
    theirs = index(torch, torch.from_numpy(ws), torch.from_numpy(is_))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(IndexError, match="out of bounds"):
        index(ember, ember.from_numpy(ws), ember.from_numpy(is_ + 3))


@pytest.mark.parametrize("name", NO_RESULT)
def test_ops_without_results_are_refused_as_torch(name):
    import torch

    for lib in (ember, torch):
        op = getattr(lib, name)
        call = _NO_RESULT_CALLS.get(name, _unscale_call)
        with pytest.raises(RuntimeError, match=f"Batching rule not implemented for aten::{name}"):
            lib.func.vmap(lambda x, op=op, lib=lib, call=call: call(lib, op, x))(lib.ones(3, 2))


def _unscale_call(lib, op, x):
    return op([x], lib.zeros(1), lib.ones(1))


def _adam_call(lib, op, x):
    hp = {"lr": 0.1, "beta1": 0.9, "beta2": 0.99, "weight_decay": 0.0, "eps": 1e-8}
    return op([x], [x], [x], [x], [], [lib.ones(())], **hp, amsgrad=False, maximize=False)


def _sgd_call(lib, op, x):
    hp = {"weight_decay": 0.0, "momentum": 0.0, "lr": 0.1, "dampening": 0.0}
    return op([x], [x], [], **hp, nesterov=False, maximize=False, is_first_step=False)


# the optimizers' fused steps (optable/optim_fused.py) and the foreach rows (optable/foreach.py):
# calls with their own arguments
_NO_RESULT_CALLS = {
    "_foreach_mul_": lambda lib, op, x: op([x], 2.0),
    "_foreach_add_": lambda lib, op, x: op([x], 2.0),
    "_fused_adam_": _adam_call,
    "_fused_adamw_": _adam_call,
    "_fused_sgd_": _sgd_call,
}
