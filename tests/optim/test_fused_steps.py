"""``fused=True`` / ``foreach=True`` Adam, AdamW and SGD against torch.optim's fused steps, and
the fused ops themselves (``ember._fused_adam_``...) against ``torch._fused_adam_``...: the same
trajectories, the GradScaler arguments (grad_scale, found_inf) and PyTorch's errors.

Every test here runs the CPU backend's C kernels (backend_cpu csrc/optim.c): the autouse fixture
checks that they are the kernels the dispatcher finds and makes the decomposition fail if run."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_optimizers import STEPS, TOL, Problem, _assert_trajectory, _ember_grad, _run

import ember
from ember import _dtype as dt
from ember.dispatcher.optable import OPS

torch = pytest.importorskip("torch")

FUSED_OPS = ("_fused_adam_", "_fused_adamw_", "_fused_sgd_")


@pytest.fixture(autouse=True)
def c_kernels_only(monkeypatch):
    """The dispatcher's CPU kernels of the fused ops are backend_cpu's C kernels, and the
    decompositions do not run (a test passing through them would not test the kernels)."""
    for name in FUSED_OPS:
        op = OPS[name]
        for dtype in (dt.float16, dt.bfloat16, dt.float32, dt.float64):
            kernel = op.kernel("cpu", dtype)
            assert kernel is not None and kernel.__module__ == "ember_backend_cpu.kernels.optim"

        def refuse(*args, _name=name):
            raise AssertionError(f"{_name}: the decomposition ran instead of the CPU kernel")

        monkeypatch.setattr(op, "decomposition", refuse)


CONFIGS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.5, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True, "maximize": True}),
    ("Adam", {}),
    ("Adam", {"lr": 0.05, "betas": (0.8, 0.99), "eps": 1e-3}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1, "amsgrad": True, "maximize": True}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.1, "amsgrad": True, "maximize": True}),
]


def _id(config) -> str:
    name, kwargs = config
    return name + "-" + "-".join(f"{k}={v}" for k, v in kwargs.items())


@pytest.mark.parametrize("mode", ["fused", "foreach"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("config", CONFIGS, ids=_id)
def test_trajectory_matches_torch(config, dtype, mode):
    name, kwargs = config
    problem = Problem(dtype)
    ours, theirs = problem.ember_params(), problem.torch_params()
    opt = getattr(ember.optim, name)(ours, **kwargs, **{mode: True})
    ref = getattr(torch.optim, name)(theirs, **kwargs, **{mode: True})
    skip_at = {3, 7}  # some steps leave one parameter without a gradient
    got = _run(problem, opt, ours, STEPS, _ember_grad, skip_at=skip_at)
    want = _run(problem, ref, theirs, STEPS, torch.from_numpy, skip_at=skip_at)
    _assert_trajectory(got, want, dtype)
    if mode == "fused" and name != "SGD":
        state, ref_state = opt.state[ours[0]], ref.state[theirs[0]]
        assert state["step"].dtype == ember.float32
        assert state["step"].item() == ref_state["step"].item()


class _MixedProblem(Problem):
    def grad(self, i, step, value):
        return super().grad(i, step, value).astype(value.dtype)


def test_fused_mixed_dtypes_group_by_dtype():
    problem = _MixedProblem("float64")
    ours, theirs = problem.ember_params(), problem.torch_params()
    ours[1], theirs[1] = ours[1].detach().float().requires_grad_(), theirs[1].detach().float()
    theirs[1].requires_grad_()
    opt = ember.optim.AdamW(ours, lr=0.05, fused=True)
    ref = torch.optim.AdamW(theirs, lr=0.05, fused=True)
    got = _run(problem, opt, ours, STEPS, _ember_grad)
    want = _run(problem, ref, theirs, STEPS, torch.from_numpy)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, **TOL["float32"])


@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD"])
@pytest.mark.parametrize("found", [0.0, 1.0])
def test_grad_scale_and_found_inf(name, found):
    """What a GradScaler hands a fused optimizer: gradients are unscaled in the op (and written
    back), and found_inf == 1 skips the update and leaves the step counters where they were."""
    problem = Problem("float32", seed=3)
    ours, theirs = problem.ember_params(), problem.torch_params()
    kwargs = {"lr": 0.05, "momentum": 0.9} if name == "SGD" else {"lr": 0.05}
    opt = getattr(ember.optim, name)(ours, fused=True, **kwargs)
    ref = getattr(torch.optim, name)(theirs, fused=True, **kwargs)
    for o, scale_of in ((opt, ember.tensor), (ref, torch.tensor)):
        o.grad_scale = scale_of([4.0])  # GradScaler._scale has shape (1,)
        o.found_inf = scale_of(found)
    got = _run(problem, opt, ours, 3, _ember_grad)
    want = _run(problem, ref, theirs, 3, torch.from_numpy)
    _assert_trajectory(got, want, "float32")
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), **TOL["float32"])
    if name != "SGD":
        assert opt.state[ours[0]]["step"].item() == ref.state[theirs[0]]["step"].item()


@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD"])
def test_constructor_errors(name):
    params = [ember.zeros(3).requires_grad_()]
    for cls in (getattr(ember.optim, name), getattr(torch.optim, name)):
        with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
            cls(params if cls.__module__.startswith("ember") else [torch.zeros(3)], lr=0.1,
                fused=True, foreach=True)  # fmt: skip
        with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
            cls(params if cls.__module__.startswith("ember") else [torch.zeros(3)], lr=0.1,
                fused=True, differentiable=True)  # fmt: skip


def test_integer_parameter_refused_at_step():
    p = ember.zeros(3, dtype=ember.int64)
    p.grad = ember.zeros(3, dtype=ember.int64)
    opt = ember.optim.Adam([p], fused=True)
    with pytest.raises(RuntimeError, match=r"`fused=True` requires all the params to be floating"):
        opt.step()


def _adam_lists(rng, amsgrad):
    shapes = [(3, 4), (5,), (2, 1, 3)]
    lists = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(3)]
    sqs = [[abs(rng.standard_normal(s)).astype(np.float32) for s in shapes] for _ in range(2)]
    return lists + (sqs if amsgrad else sqs[:1] + [[]])


@pytest.mark.parametrize("name", ["_fused_adam_", "_fused_adamw_"])
@pytest.mark.parametrize("amsgrad", [False, True])
def test_fused_adam_op_matches_torch(name, amsgrad):
    lists = _adam_lists(np.random.default_rng(4), amsgrad)
    kw = {"lr": 0.1, "beta1": 0.9, "beta2": 0.99, "weight_decay": 0.1, "eps": 1e-8}
    kw.update(amsgrad=amsgrad, maximize=True)
    ours = [[ember.from_numpy(x.copy()) for x in xs] for xs in lists]
    theirs = [[torch.from_numpy(x.copy()) for x in xs] for xs in lists]
    getattr(ember, name)(*ours, [ember.tensor(3.0)] * 3, **kw, grad_scale=ember.tensor([2.0]))
    getattr(torch, name)(*theirs, [torch.tensor(3.0)] * 3, **kw, grad_scale=torch.tensor([2.0]))
    for xs, ys in zip(ours, theirs):
        for x, y in zip(xs, ys):
            np.testing.assert_allclose(x.numpy(), y.numpy(), **TOL["float32"])


def test_fused_op_errors():
    xs = [ember.zeros(3), ember.zeros(2)]
    with pytest.raises(RuntimeError, match="same number of tensors"):
        ember._fused_sgd_(xs, xs[:1], [], weight_decay=0.0, momentum=0.0, lr=0.1,
                          dampening=0.0, nesterov=False, maximize=False,
                          is_first_step=False)  # fmt: skip
    ints = [ember.zeros(3, dtype=ember.int32)]
    with pytest.raises(RuntimeError, match="not implemented for 'int32'"):
        ember._fused_sgd_(ints, ints, [], weight_decay=0.0, momentum=0.0, lr=0.1,
                          dampening=0.0, nesterov=False, maximize=False,
                          is_first_step=False)  # fmt: skip


def test_fused_resumes_a_default_state_dict():
    """A fused Adam loading a default one's state (float steps) continues its trajectory."""
    problem = Problem("float32", seed=5)
    theirs = problem.torch_params()
    want = _run(problem, torch.optim.Adam(theirs, lr=0.05), theirs, STEPS, torch.from_numpy)
    first = problem.ember_params()
    opt = ember.optim.Adam(first, lr=0.05)
    _run(problem, opt, first, STEPS // 2, _ember_grad)
    resumed = ember.optim.Adam(first, lr=0.05, fused=True)
    resumed.load_state_dict(opt.state_dict())
    got = _run(problem, resumed, first, STEPS - STEPS // 2, _ember_grad, first=STEPS // 2)
    _assert_trajectory(got, want, "float32")


# Low-precision parameters compute in float32 and round each state once per step (as PyTorch's
# kernels), so one step agrees with torch to the storage dtype's rounding.
OP_TOL = {
    "float16": {"rtol": 2e-3, "atol": 2e-3},
    "bfloat16": {"rtol": 1.6e-2, "atol": 1.6e-2},
    **TOL,
}
OP_DTYPES = list(OP_TOL)


def _op_lists(dtype, count, rng):
    """`count` lists of tensors of a few shapes (one longer than a kernel chunk), both libraries."""
    shapes = [(3, 4), (5,), (20000,), (2, 1, 3)]
    lists = [[rng.standard_normal(s) for s in shapes] for _ in range(count)]
    lists[3:] = [[abs(x) for x in xs] for xs in lists[3:]]  # exp_avg_sq, max_exp_avg_sq
    ours = [[ember.from_numpy(x).to(getattr(ember, dtype)) for x in xs] for xs in lists]
    theirs = [[torch.from_numpy(x).to(getattr(torch, dtype)) for x in xs] for xs in lists]
    return ours, theirs


def _assert_lists(ours, theirs, dtype):
    for xs, ys in zip(ours, theirs):
        for x, y in zip(xs, ys):
            np.testing.assert_allclose(
                x.to(ember.float64).numpy(), y.to(torch.float64).numpy(), **OP_TOL[dtype]
            )


def _amp_kwargs(lib, scaled):
    return {"grad_scale": lib.tensor([2.0])} if scaled else {}


@pytest.mark.parametrize("dtype", OP_DTYPES)
@pytest.mark.parametrize("name", ["_fused_adam_", "_fused_adamw_"])
@pytest.mark.parametrize(
    "amsgrad,maximize,weight_decay,scaled",
    list(itertools.product([False, True], [False, True], [0.0, 0.1], [False, True])),
)
def test_fused_adam_flags_match_torch(dtype, name, amsgrad, maximize, weight_decay, scaled):
    ours, theirs = _op_lists(dtype, 5, np.random.default_rng(7))
    if not amsgrad:
        ours[4], theirs[4] = [], []
    kw = {"lr": 0.1, "beta1": 0.9, "beta2": 0.99, "weight_decay": weight_decay, "eps": 1e-8}
    kw.update(amsgrad=amsgrad, maximize=maximize)
    steps = [5.0, 1.0, 2.0, 7.0]  # one bias correction per tensor
    getattr(ember, name)(*ours, [ember.tensor(s) for s in steps], **kw,
                         **_amp_kwargs(ember, scaled))  # fmt: skip
    getattr(torch, name)(*theirs, [torch.tensor(s) for s in steps], **kw,
                         **_amp_kwargs(torch, scaled))  # fmt: skip
    _assert_lists(ours, theirs, dtype)


@pytest.mark.parametrize("dtype", OP_DTYPES)
@pytest.mark.parametrize(
    "momentum,nesterov,dampening,first",
    [
        (0.0, False, 0.0, False),
        (0.9, False, 0.0, True),
        (0.9, False, 0.3, False),
        (0.8, True, 0.0, False),
        (0.8, True, 0.0, True),
    ],
)
@pytest.mark.parametrize(
    "maximize,weight_decay,scaled",
    list(itertools.product([False, True], [0.0, 0.1], [False, True])),
)
def test_fused_sgd_flags_match_torch(dtype, momentum, nesterov, dampening, first, maximize,
                                     weight_decay, scaled):  # fmt: skip
    ours, theirs = _op_lists(dtype, 3, np.random.default_rng(8))
    if dtype in ("float16", "bfloat16"):
        # torch 2.13's CPU _fused_sgd_ leaves float16/bfloat16 params unchanged outside the
        # scalar tail of its vector loop (no store of the param vector); the oracle is its
        # float32 step on the same values, which is the float32 math the kernel does.
        theirs = [[y.float() for y in ys] for ys in theirs]
    if momentum == 0:
        ours[2], theirs[2] = [], []
    kw = {"weight_decay": weight_decay, "momentum": momentum, "lr": 0.1, "dampening": dampening}
    kw.update(nesterov=nesterov, maximize=maximize, is_first_step=first)
    ember._fused_sgd_(*ours, **kw, **_amp_kwargs(ember, scaled))
    torch._fused_sgd_(*theirs, **kw, **_amp_kwargs(torch, scaled))
    _assert_lists(ours, theirs, dtype)


@pytest.mark.parametrize("name", FUSED_OPS)
def test_fused_found_inf_leaves_everything(name):
    ours, _ = _op_lists("float32", 5 if name != "_fused_sgd_" else 3, np.random.default_rng(9))
    before = [[x.numpy().copy() for x in xs] for xs in ours]
    found = {"grad_scale": ember.tensor([2.0]), "found_inf": ember.tensor([1.0])}
    if name == "_fused_sgd_":
        ember._fused_sgd_(*ours, weight_decay=0.1, momentum=0.9, lr=0.1, dampening=0.0,
                          nesterov=False, maximize=False, is_first_step=False,
                          **found)  # fmt: skip
    else:
        getattr(ember, name)(*ours, [ember.tensor(1.0)] * 4, lr=0.1, beta1=0.9, beta2=0.99,
                             weight_decay=0.1, eps=1e-8, amsgrad=True, maximize=False,
                             **found)  # fmt: skip
    for xs, ys in zip(ours, before):
        for x, y in zip(xs, ys):
            np.testing.assert_array_equal(x.numpy(), y)


def test_fused_mixed_list_dtypes_refused():
    params = [ember.zeros(3)]
    with pytest.raises(RuntimeError, match="expected every tensor to be float32"):
        ember._fused_sgd_(params, [ember.zeros(3, dtype=ember.float64)], [], weight_decay=0.0,
                          momentum=0.0, lr=0.1, dampening=0.0, nesterov=False, maximize=False,
                          is_first_step=False)  # fmt: skip


def test_fused_adam_strided_tensors_written_back():
    """A transposed parameter and state go through the runner's contiguous copies."""
    rng = np.random.default_rng(10)
    lists = [rng.standard_normal((6, 5)) for _ in range(3)] + [abs(rng.standard_normal((6, 5)))]
    ours = [[ember.from_numpy(x).t()] for x in lists]
    theirs = [[torch.from_numpy(x).t()] for x in lists]
    kw = {"lr": 0.1, "beta1": 0.9, "beta2": 0.99, "weight_decay": 0.1, "eps": 1e-8}
    ember._fused_adamw_(*ours, [], [ember.tensor(2.0)], **kw, amsgrad=False, maximize=False)
    torch._fused_adamw_(*theirs, [], [torch.tensor(2.0)], **kw, amsgrad=False, maximize=False)
    _assert_lists(ours, theirs, "float64")
