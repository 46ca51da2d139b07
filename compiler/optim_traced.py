"""Compiled steps of the optimizers without a ``fused=True`` op (optim_rules.py's table).

Per parameter group and (device, dtype), a ``TracedBucket``: the bucket's state tensors live
in one flat buffer per state name (each parameter's state entry a view of it), its update is
traced once, out of place, over flat tensors (parameters, gradients, state, and the per-step
numbers as 0-d tensors), and replayed with the fusion scheduler on (compiler/fusion.py), so
an elementwise update is one fused kernel where the backend generates them (the CPU) and op
by op elsewhere. Where the whole update is one chain and the backend generates multi-tensor
kernels (the CPU), a call is that one kernel over the parameters, gradients and states
themselves, updating them in place (multi_tensor.py). Otherwise: the parameters and gradients
concatenated, the program, the new state copied into the flat buffers (one copy each), the new
parameters copied back. The step count and the state's Python numbers (NAdam's
``mu_product``, ASGD's ``eta``/``mu``) are written to every parameter's state, as the eager
step keeps them.
"""

from __future__ import annotations

import math

import ember
from ember.autograd.grad_mode import no_grad
from ember.jit.tracer import capture, current

from . import fusion, logs, multi_tensor, replay


class TracedBucket:
    """One group/device/dtype bucket of a traced optimizer (see the module docstring)."""

    steps = None  # no shared step counters (optim_step.py's guard reads this)

    def __init__(self, opt, rule, group, params, first_step=None):
        self.opt = opt
        self.rule = rule
        self.group = group
        self.params = params
        self.names = rule.names(group)
        self.sizes = [p.numel() for p in params]
        first = params[0]
        self.like = {"dtype": first.dtype, "device": first.device}
        self.flat = {name: _flatten(opt, params, name) for name in self.names}
        self.state = opt.state[first]
        self.count = float(self.state.get("step", 0.0))
        self.graph = self.program = self.multi = None
        self.tensors: list = []  # the kernel's tensors per graph input (multi-tensor)
        self.fused = 0
        self.keys: list = []
        # SGD's first-step flag, known before the state was made (optim_step.py clears it
        # after the first call); its numbers read it
        self.extra: dict = {} if first_step is None else {"is_first_step": first_step}
        self.last: dict = {}  # this call's numbers, as Python floats
        with no_grad():  # the parameters as flat views, for the concatenation and the copy back
            self.views = [p.detach().view(-1) for p in params]
        self.scalars = None  # the numbers' 0-d tensors: views of one buffer, written per call
        self.buffer = self.host = None

    def _numbers(self, step) -> list:
        """This call's numbers as 0-d tensors (the program's inputs): one buffer, written in
        place (through numpy on the CPU: no op call) so the tensors stay the same."""
        state = {**self.state, **self.extra} if self.extra else self.state
        numbers = self.last = self.rule.numbers(self.group, step, state)
        values = [float(v) for v in numbers.values()]
        if self.scalars is None:
            self.keys = list(numbers)
            self.buffer = ember.tensor(values, **self.like)
            self.scalars = [self.buffer[i] for i in range(len(values))]
            self.host = self.buffer.numpy() if self.buffer.device.type == "cpu" else None
        elif self.host is not None:
            self.host[:] = values
        else:
            self.buffer.copy_(ember.tensor(values, dtype=self.buffer.dtype))
        return self.scalars

    def _update(self, p, g, *rest):
        """The rule's update over flat tensors: ``(new p, *new states)``."""
        names = self.names
        states = dict(zip(names, rest[: len(names)]))
        numbers = dict(zip(self.keys, rest[len(names) :]))
        new_p, new = self.rule.update(self.group, p, g, states, numbers)
        return (new_p, *[new[name] for name in names])

    def _build(self, args) -> None:
        """Trace the update over these tensors: one multi-tensor kernel where the backend makes
        it, else a replay program that fuses its elementwise chains (built at first need)."""
        self.graph = capture(self._update, args, strict=False).graph
        self.multi, why = multi_tensor.build(self.graph, self.sizes, 2 + len(self.names))
        if self.multi is not None:
            self.fused = 1
            self.tensors = [self.params, None, *[_states(self.opt, self.params, n) for n in
                            self.names], *self.scalars]  # fmt: skip
        if logs.enabled("fusion"):  # what the plan's line said "traced at its first call"
            name = type(self.opt).__name__
            multi = self.describe() if self.multi is not None else ""
            logs.log("fusion", multi or f"{name} update: no multi-tensor kernel: {why}")

    def run(self, opt) -> None:
        if uses_amp(opt):
            raise RuntimeError("a GradScaler's step runs eagerly")  # never planned (optim_step)
        with no_grad():
            # from the state, not a count of our own: another plan of this optimizer (a flag
            # flipped back and forth) may have stepped since
            self.count = float(self.state.get("step", 0.0)) + 1
            numbers = self._numbers(self.count)
            grads = [p.grad for p in self.params]
            if self.graph is None and current() is None:
                self._build(self._flat(grads, numbers))
            if self.multi is not None and dense(grads, self.params):
                tensors = self.tensors
                tensors[1] = grads
                self.multi.kernel(*self.multi.arguments(tensors))
            else:
                self._concatenated(grads, numbers)
        self._write_state()

    def _flat(self, grads, numbers) -> tuple:
        flat_p = ember.cat(self.views)
        dtype = self.like["dtype"]  # (ember, unlike PyTorch, lets .grad take another dtype)
        flat_g = ember.cat([g.reshape(-1).to(dtype) for g in grads])
        return (flat_p, flat_g, *[self.flat[n] for n in self.names], *numbers)

    def _concatenated(self, grads, numbers) -> None:
        """The update over the concatenated tensors, the results copied back."""
        args = self._flat(grads, numbers)
        if self.graph is None:
            # inside an ember.compile capture (a trace cannot nest): the update's ops run as
            # they are, this once; the first call outside builds the program
            new_p, *new = self._update(*args)
        else:
            if self.program is None:
                nodes = list(self.graph.block().nodes())
                self.fused = len(fusion.schedule(nodes, self.graph.outputs()))
                self.program = replay.build(self.graph, fuse=True, name="optimizer_update")
            new_p, *new = self.program(*args)
        for name, value in zip(self.names, new):
            self.flat[name].copy_(value)
        for view, piece in zip(self.views, ember.split(new_p, self.sizes)):
            view.copy_(piece)

    def _write_state(self) -> None:
        after = self.rule.after
        values = {"step": self.count} if self.rule.counts else {}
        if after is not None:
            values.update(after(self.group, self.count, self.last))
        for p in self.params:
            self.opt.state[p].update(values)

    def describe(self) -> str:
        first = self.params[0]
        where = f"{first.device.type} {first.dtype}"
        how = (f"{self.fused} fused kernel(s)" if self.fused else
               "no fused kernel: replays op by op")  # fmt: skip
        if self.multi is not None:
            how = "1 fused kernel(s), multi-tensor (in place, no concatenation)"
        elif self.graph is None:
            how = "traced at its first call"
        return f"  {type(self.opt).__name__} update on {where}, {len(self.params)} tensors: {how}"


def _flatten(opt, params, name):
    """One flat buffer holding each parameter's ``name`` state; the state entries become views
    of it (so eager code and state dicts see the values the compiled step writes)."""
    parts = [opt.state[p][name] for p in params]
    total = sum(math.prod(t.shape) for t in parts)
    base = parts[0]._base
    if base is not None and tuple(base.shape) == (total,) and _views_of(base, parts):
        return base  # an earlier plan's buffer, in this order
    flat = ember.cat([t.reshape(-1) for t in parts])
    offset = 0
    for p, t in zip(params, parts):
        n = math.prod(t.shape)
        opt.state[p][name] = flat[offset : offset + n].view(t.shape)
        offset += n
    return flat


def dense(grads, params) -> bool:
    """Gradients a kernel takes as they are: contiguous, of their parameter's shape, dtype and
    device (a fused op's runner checks these, or copies a strided one)."""
    return all(
        g._contig and g._shape == p._shape and g._dtype is p._dtype
        and g._storage.device is p._storage.device
        for g, p in zip(grads, params)
    )  # fmt: skip


def _states(opt, params, name) -> list:
    return [opt.state[p][name] for p in params]


def _views_of(base, parts) -> bool:
    offset = base._offset
    for t in parts:
        if t._base is not base or t._offset != offset or not t.is_contiguous():
            return False
        offset += math.prod(t.shape)
    return True


def uses_amp(opt) -> bool:
    return (
        getattr(opt, "grad_scale", None) is not None or getattr(opt, "found_inf", None) is not None
    )


def buckets(opt, rule) -> list | None:
    """The TracedBuckets of ``opt``, or None when its state does not fit one plan (parameters
    of one bucket at different step counts, sparse gradients, a GradScaler's step)."""
    from ember.optim import _fused

    if uses_amp(opt):
        return None
    found = []
    for group in opt.param_groups:
        params = [p for p in group["params"] if p.grad is not None]
        if any(getattr(p.grad, "is_sparse", False) for p in params):
            return None
        first = rule.first(opt, group) if rule.first is not None else None
        for p in params:
            rule.create(opt, p, group)
        for (ps,) in _fused.groups(params):
            steps = {float(opt.state[p].get("step", 0.0)) for p in ps}
            if len(steps) != 1:
                return None
            found.append(TracedBucket(opt, rule, group, ps, first))
    return found
