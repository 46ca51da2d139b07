"""Compiled optimizer steps: ``opt.step = ember.compile(opt.step)``.

PyTorch's compiled ``SGD``/``Adam``/``AdamW`` steps run as a few fused kernels. ember already
has them: the ``fused=True`` ops ``_fused_sgd_``/``_fused_adam_``/``_fused_adamw_`` (one C call
per device and dtype group on the CPU). A compiled step is a plan built once: per parameter
group and (device, dtype), the tensor lists of that op (parameters, state buffers, step
counters) and its keyword arguments. A call checks the guards, reads the gradients afresh
(``zero_grad`` sets them to None, so they are new tensors each step), advances the step
counters with one ``add_`` (they are views of one tensor) and makes one op call per bucket:
nothing is traced again.

Guards (a failure that no cached plan passes builds a new one, logged under ``recompiles``):
the ``param_groups`` and ``state`` objects and each group's parameter list (identity, as a
state_dict load replaces them), the hyperparameters the op reads, which parameters have
gradients. Floats follow PyTorch 2.13 (``specialize_float=False``): a float hyperparameter
(LR, weight decay, betas) rebuilds once at its first change, then is read at each call; a
tensor LR never rebuilds. Flags are guarded by value; plans are cached per guard set; past
``recompile_limit`` rebuilds the steps run eagerly with PyTorch's warning. Where the device
has no fused kernel the op runs its decomposition, op by op; ``EMBER_LOGS=fusion`` says which.
Other optimizers, ``differentiable`` groups and a mix of SGD parameters with and without
momentum buffers run the eager step.
"""

from __future__ import annotations

import weakref

import ember
from ember.optim import _fused
from ember.optim.adam import Adam
from ember.optim.optimizer import Optimizer, _hooked_step, scalar
from ember.optim.sgd import SGD

from . import logs, optim_rules, optim_traced

# what each family's plan reads from a group (the guards)
_ADAM_KEYS = ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize")
_ADAM_KEYS += ("decoupled_weight_decay", "differentiable")
_SGD_KEYS = ("lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize")
_SGD_KEYS += ("differentiable",)


_STEPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # optimizer -> its CompiledStep


def step_of(opt):
    """The ``CompiledStep`` a compiled function runs for ``opt.step()``, or None when the
    optimizer has no plan builder (its step is then a graph break)."""
    if _family(opt) is None or any(g.get("differentiable") for g in opt.param_groups):
        return None
    if opt not in _STEPS:
        _STEPS[opt] = CompiledStep(opt, None)
    return _STEPS[opt]


def compiled_step_for(fn, options):
    """A ``CompiledStep`` when ``fn`` is an optimizer's bound ``step``, else None."""
    owner = getattr(fn, "__self__", None)
    if not isinstance(owner, Optimizer) or getattr(fn, "__func__", None) is not type(owner).step:
        return None
    return CompiledStep(owner, options)


class _Bucket:
    """One fused-op call: its tensor lists (the gradients read at each call) and arguments."""

    def run(self, opt) -> None:
        grads = [p.grad for p in self.params]
        grad_scale, found_inf = _fused.amp_args(opt, self.params[0].device)
        counts = self.steps
        if counts is not None:
            counts.add_(1)
        kwargs = self.make(self.group) if self.refresh else self.kwargs
        lr = scalar(self.group["lr"])
        amp = grad_scale is not None or found_inf is not None
        if self.direct is not None and not amp and optim_traced.dense(grads, self.params):
            # what the op's runner ends in, without its dispatch and list checks: the plan
            # holds the parameters and states, and the gradients are checked here
            kernel, names = self.direct
            values = {**kwargs, **self.extra, "lr": lr, "grad_scale": None, "found_inf": None}
            kernel(self.params, grads, *self.lists, *[values[n] for n in names])
        else:
            self.fn(self.params, grads, *self.lists, lr=lr, grad_scale=grad_scale,
                    found_inf=found_inf, **kwargs, **self.extra)  # fmt: skip
        if found_inf is not None and counts is not None:
            counts.sub_(found_inf.reshape(()))

    def describe(self) -> str:
        first = self.params[0]
        where = f"{first.device.type} {first.dtype}"
        op = _op(self.fn)
        fused = op.kernel(first._storage.device.type, first._dtype) is not None
        how = "one fused kernel" if fused else "no fused kernel: replays op by op (decomposition)"
        return f"  {op.name} on {where}, {len(self.params)} tensors: {how}"

    __slots__ = (
        "direct", "extra", "fn", "group", "kwargs", "lists", "make", "params", "refresh", "steps"
    )  # fmt: skip

    def __init__(self, fn, group, params, lists, steps, make, extra=None):
        self.fn = fn  # ember._fused_adam_, _fused_adamw_ or _fused_sgd_
        self.group = group
        self.params = params
        self.lists = lists  # after the gradients: the state lists, in the op's order
        self.steps = steps  # Adam's step counters, one tensor the state's are views of (SGD: None)
        self.make = make  # group -> the op's hyperparameter arguments
        self.kwargs = make(group)
        self.refresh = False  # a float hyperparameter is dynamic: make the arguments per call
        self.extra = extra or {}  # SGD's is_first_step
        self.direct = _kernel_of(fn, params, lists)  # (kernel, its non-list argument names)


class _Plan:
    """The buckets of one optimizer, and what they assumed (the guards)."""

    def __init__(self, optimizer, buckets, dynamic: list):
        self.optimizer = optimizer
        self.groups = optimizer.param_groups
        self.state = optimizer.state
        self.params = [group["params"] for group in self.groups]
        self.sizes = [len(params) for params in self.params]
        self.dynamic = dynamic  # per group: the float hyperparameters read at each call
        self.hyper = [_guarded(g, d, _keys(optimizer)) for g, d in zip(self.groups, dynamic)]
        self.buckets = buckets
        self.keys = _keys(optimizer)
        self.first_sgd = False  # the SGD buffers are made by this call (is_first_step)
        self.amp = optim_traced.uses_amp(optimizer)  # a GradScaler's step: the op's path

    def failure(self) -> tuple[str, set] | None:
        """``(why this plan no longer holds, {(group, key) of floats that changed})``, or
        None while it holds."""
        opt = self.optimizer
        if opt.param_groups is not self.groups or opt.state is not self.state:
            return "the optimizer's param_groups or state were replaced", set()
        if len(self.groups) != len(self.params):
            return "a parameter group was added", set()
        if optim_traced.uses_amp(opt) != self.amp:
            return "a GradScaler's grad_scale/found_inf was set or cleared", set()
        for i, group in enumerate(self.groups):
            if group["params"] is not self.params[i] or len(group["params"]) != self.sizes[i]:
                return f"param_groups[{i}]['params'] changed", set()
            now = _guarded(group, self.dynamic[i], self.keys)
            if now != self.hyper[i]:
                keys = self.keys
                changed = [k for k, a, b in zip(keys, self.hyper[i], now) if a != b]
                floats = {(i, k) for k in changed if _floats(group.get(k))}
                where = ", ".join(f"param_groups[{i}][{k!r}]" for k in changed)
                return f"{where} changed", floats
        return None


def _keys(opt) -> tuple:
    """The hyperparameters ``opt``'s plan reads (its guards)."""
    rule = optim_rules.RULES.get(_step_owner(opt))
    if rule is not None:
        return rule.keys + ("differentiable",)
    return _SGD_KEYS if _step_owner(opt) is SGD else _ADAM_KEYS


def _floats(value) -> bool:
    """A float or a tuple of floats (betas): PyTorch 2.13 (``specialize_float=False``)
    recompiles once when one changes, then reads it as a dynamic value."""
    if isinstance(value, tuple):
        return bool(value) and all(type(v) is float for v in value)
    return type(value) is float


def _guarded(group, dynamic, keys) -> tuple:
    """The values the plan assumes: dynamic floats by type only, tensors (an LR) by type (they
    are read at each call), everything else by value."""
    return tuple(
        type(v) if k in dynamic or isinstance(v, ember.Tensor) else v
        for k in keys
        for v in (group.get(k),)
    )


class CompiledStep:
    """What ``ember.compile(opt.step)`` returns: ``opt.step``'s signature, run from a plan."""

    def __init__(self, optimizer, options):
        self.optimizer = optimizer
        self._options = options
        self._plans: list = []  # PyTorch keeps a cache entry per guard set: so do we
        self._eager = None  # why this optimizer's steps run eagerly, once known
        self._dynamic: set = set()  # (group index, key) of floats that changed once
        self.recompiles = 0
        self._call = _hooked_step(lambda opt, closure=None: self._body(closure))
        self.__wrapped__ = type(optimizer).step

    @property
    def _plan(self):
        """The plan used last (None before the first call)."""
        return self._plans[0] if self._plans else None

    def __call__(self, closure=None):
        observer = _observer()
        if observer is not None and observer.active():  # inside an ember.compile capture
            step = self if closure is None else None
            return observer.optimizer_step(step, lambda: self._run(closure))
        return self._run(closure)

    def _run(self, closure):
        if self._eager is not None:
            return type(self.optimizer).step(self.optimizer, closure)
        return self._call(self.optimizer, closure)

    def _body(self, closure):
        from ember.optim.optimizer import run_closure

        loss = run_closure(closure)
        failures = []
        for plan in self._plans:
            failure = plan.failure()
            if failure is None and not _grads_unchanged(plan):
                failure = ("the set of parameters with gradients changed", set())
            if failure is None:
                if plan is not self._plans[0]:  # most recent first
                    self._plans.remove(plan)
                    self._plans.insert(0, plan)
                _run(plan)
                return loss
            failures.append(failure)
        if failures and not self._recompiled(failures[0]):
            return _eager_body(self.optimizer, loss)
        plan = self._build()
        if plan is None:
            return _eager_body(self.optimizer, loss)
        self._plans.insert(0, plan)
        _run(plan)
        return loss

    def _recompiled(self, failure) -> bool:
        """Count a rebuild; False (and PyTorch's warning) past ``recompile_limit``: the steps
        run eagerly from then on, as PyTorch's do."""
        from .frame import WARN, _limit

        reason, floats = failure
        self.recompiles += 1
        self._dynamic |= floats
        name = f"{type(self.optimizer).__name__}.step"
        logs.log("recompiles", f"Recompiling {name}: {reason}")
        if self.recompiles < _limit():
            return True
        self._eager = f"hit config.recompile_limit ({_limit()})"
        WARN.warning(
            "ember._dynamo hit config.recompile_limit (%s)\n   function: %s\n   last reason: %s",
            _limit(), name, reason,
        )  # fmt: skip
        return False

    def _build(self):
        opt = self.optimizer
        name = type(opt).__name__
        family = _family(opt)
        why = None
        if family is None:
            why = f"{name} has no compiled step"
        elif any(group.get("differentiable") for group in opt.param_groups):
            why = "differentiable=True"
        buckets = None if why else family(opt)
        if buckets is None:
            self._eager = why or "SGD parameters with and without momentum buffers"
            logs.log("graph_breaks", f"{name}.step runs eagerly: {self._eager}")
            return None
        dynamic = [{k for (j, k) in self._dynamic if j == i} for i in range(len(opt.param_groups))]
        plan = _Plan(opt, buckets, dynamic)
        for bucket in buckets:
            index = next(i for i, g in enumerate(opt.param_groups) if g is bucket.group)
            bucket.refresh = bool(dynamic[index] - {"lr"})
        plan.first_sgd = any(b.extra.get("is_first_step") for b in buckets)
        if logs.enabled("fusion"):
            logs.log("fusion", describe(name, buckets))
        return plan


def _observer():
    """The observer of the ember.compile capture running now, or None."""
    from ember.jit.tracer import _ACTIVE, current

    state = current() if _ACTIVE else None
    return getattr(state, "observer", None) if state is not None else None


def _eager_body(opt, loss):
    """The optimizer's own step body (hooks already ran around the compiled call)."""
    step = type(opt).step.__wrapped__
    step(opt)
    return loss


def describe(name: str, buckets) -> str:
    """The ``EMBER_LOGS=fusion`` line of a plan: per bucket, fused kernel or op by op."""
    lines = [f"compiled {name}.step: {len(buckets)} call(s)"]
    lines += [b.describe() for b in buckets]
    return "\n".join(lines)


def _grads_unchanged(plan) -> bool:
    """Every planned parameter still has a gradient and no other one got one (and Adam's step
    counters are still the plan's: another plan may have made its own)."""
    state = plan.state
    for bucket in plan.buckets:
        if bucket.steps is not None and state[bucket.params[0]]["step"] is not bucket.lists[-1][0]:
            return False
        for p in bucket.params:
            if p.grad is None:
                return False
    planned = sum(len(b.params) for b in plan.buckets)
    have = sum(1 for group in plan.groups for p in group["params"] if p.grad is not None)
    return have == planned


def _run(plan) -> None:
    opt = plan.optimizer
    for bucket in plan.buckets:
        bucket.run(opt)
    if plan.first_sgd:  # the buffers exist now: later calls are not first steps
        plan.first_sgd = False
        for bucket in plan.buckets:
            bucket.extra["is_first_step"] = False


def _family(opt):
    """The plan builder of ``opt``'s class, or None (its step runs eagerly)."""
    owner = _step_owner(opt)
    rule = optim_rules.RULES.get(owner)
    traced = owner in optim_rules.FUSED_OP_RULES and not optim_traced.uses_amp(opt)
    if rule is None and traced and not _fused_kernels(opt, owner):
        rule = optim_rules.FUSED_OP_RULES[owner]  # traced: one generated kernel per bucket
    if rule is not None:
        return lambda opt: optim_traced.buckets(opt, rule)
    return {Adam: _adam_buckets, SGD: _sgd_buckets}.get(owner)


def _fused_kernels(opt, owner) -> bool:
    """Whether the backend of every parameter with a gradient has the fused op's kernel (the
    CPU's C); else the step is traced from optim_rules.FUSED_OP_RULES, so that a backend that
    generates kernels (xpu, CUDA) runs it as one, where the op's decomposition would run op
    by op."""
    names = ["_fused_sgd_"] if owner is SGD else ["_fused_adam_", "_fused_adamw_"]
    ops = [_op(getattr(ember, name)) for name in names]
    return all(
        op.kernel(p._storage.device.type, p._dtype) is not None
        for group in opt.param_groups
        for p in group["params"]
        if p.grad is not None
        for op in ops
    )


def _step_owner(opt):
    """The class whose ``step`` ``opt`` runs (by class, not by function: a capture patches
    the ``step`` functions while it runs, observer.py). A subclass with its own ``step``
    owns it, so it gets no plan."""
    return next(klass for klass in type(opt).__mro__ if "step" in klass.__dict__)


def _adam_buckets(opt) -> list:
    buckets = []
    for group in opt.param_groups:
        amsgrad = group["amsgrad"]
        params = [p for p in group["params"] if p.grad is not None]
        rows = []
        for p in params:
            _fused.check_param(p)
            state = _adam_state(opt.state[p], p, amsgrad)
            rows.append((state["exp_avg"], state["exp_avg_sq"], state.get("max_exp_avg_sq"),
                         state["step"]))  # fmt: skip
        op = ember._fused_adamw_ if group["decoupled_weight_decay"] else ember._fused_adam_
        columns = [list(c) for c in zip(*rows)] if rows else [[], [], [], []]
        for ps, avgs, sqs, maxes, steps in _fused.groups(params, *columns):
            counts, steps = _shared_counters(opt, ps, steps)
            lists = (avgs, sqs, maxes if amsgrad else [], steps)
            buckets.append(_Bucket(op, group, ps, lists, counts, _adam_kwargs))
    return buckets


def _shared_counters(opt, params, steps):
    """The bucket's step counters as 0-d views of one tensor, installed in the state, so that
    a step advances them with one ``add_`` (PyTorch's compiled step: one ``_foreach_add_``)."""
    base = steps[0]._base
    if base is not None and tuple(base.shape) == (len(steps),):  # another plan's, in order
        views = [base[i] for i in range(len(steps))]
        if all(s._base is base and s._offset == v._offset for s, v in zip(steps, views)):
            return base, steps
    counts = ember.stack([s.reshape(()) for s in steps])
    views = [counts[i] for i in range(len(steps))]
    for p, view in zip(params, views):
        opt.state[p]["step"] = view
    return counts, views


def _adam_kwargs(group) -> dict:
    beta1, beta2 = group["betas"]
    return {"beta1": beta1, "beta2": beta2, "eps": group["eps"], "amsgrad": group["amsgrad"],
            "weight_decay": group["weight_decay"], "maximize": group["maximize"]}  # fmt: skip


def _sgd_kwargs(group) -> dict:
    keys = ("weight_decay", "momentum", "dampening", "nesterov", "maximize")
    return {key: group[key] for key in keys}


def _adam_state(state: dict, p, amsgrad: bool) -> dict:
    """The fused path's state: tensor step counters (a float one from an eager step is
    converted, as ``_fused_step`` does)."""
    if not state:
        state["step"] = _fused.step_tensor(p)
        state["exp_avg"] = ember.zeros_like(p)
        state["exp_avg_sq"] = ember.zeros_like(p)
    elif not isinstance(state["step"], ember.Tensor):
        state["step"] = _fused.step_tensor(p).add_(state["step"])
    if amsgrad and "max_exp_avg_sq" not in state:
        state["max_exp_avg_sq"] = ember.zeros_like(p)
    return state


def _sgd_buckets(opt):
    buckets = []
    for group in opt.param_groups:
        momentum = group["momentum"]
        params, bufs, first = _fused.sgd_lists(opt.state, group)
        if momentum != 0 and any(b is None for b in bufs):
            return None  # some buffers exist, others not: the eager step makes each its own
        if first:  # the op copies the gradients into these at the first call
            for p, buf in zip(params, bufs):
                opt.state[p]["momentum_buffer"] = buf
        for ps, bs in _fused.groups(params, bufs):
            lists = (bs if momentum != 0 else [],)
            first_step = {"is_first_step": first}
            buckets.append(
                _Bucket(ember._fused_sgd_, group, ps, lists, None, _sgd_kwargs, first_step)
            )
    return buckets


def _kernel_of(fn, params, lists):
    """``(kernel, names of its arguments after the lists)`` of the fused op on the parameters'
    device and dtype when the backend has one and the state lists are contiguous (the runner
    would call it as is), else None."""
    first = params[0]
    op = _op(fn)
    kernel = op.kernel(first._storage.device.type, first._dtype)
    if kernel is None or not all(t._contig for ts in lists for t in ts):
        return None
    return kernel, [a.name for a in op.schema.args if not (a.is_tensor and a.is_list)]


def _op(function):
    """The op-table row behind an ``ember._fused_*`` function (its kernel table)."""
    from ember.jit.ops import resolve

    return resolve(f"ember::{function.__name__}")
