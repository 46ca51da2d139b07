"""What a capture for ember.compile watches: reads of graph tensors' data, module calls, and the
calls that end a graph (``print``, ``backward``, an optimizer step, a disabled
function). The tracer calls ``read``/``module``; ``watching`` patches the rest for the
duration of one capture.

A graph break ends the recording and the function runs on eagerly from there: the call's
result is the eager one, computed once (an in-place update or a random draw is never done
twice), and the guard set that broke runs eagerly from then on. ``fullgraph=True`` raises
``Unsupported`` instead; ``explain()`` records the reason and keeps recording, to count graphs.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import sys
import threading

from ember._tensor import Tensor

from . import logs
from .effects import library_file as _library_file
from .exc import Unsupported
from .reasons import CONSTRUCTS, GraphCompileReason, message, user_stack

COMPILE, FULLGRAPH, EXPLAIN = "compile", "fullgraph", "explain"


class Observer:
    closure = True  # tensors the function closes over are held by reference (see the tracer)

    def __init__(self, mode: str, entry_code):
        self.mode = mode
        self.entry_code = entry_code  # the frame where user code starts (for user stacks)
        self.state = None
        self.reasons: list = []
        self.modules: dict = {}  # id -> module called during the capture, in call order
        self.segments: list = []  # explain: the op kinds of each graph between breaks
        self._counted = 0
        self.broken = False
        self.steps: list = []  # the compiled optimizer steps the capture ran (optim_step.py)
        # a training step (train_region.py): the loss ``backward()`` was called on, the op
        # count when it was, and the optimizer calls before and after it, to replay in order
        self.targets: list = []
        self.tail_at: int | None = None
        self.tail_stack: list = []
        self.ops_after_backward = False
        self.before: list = []
        self.after: list = []

    # ---- tracer hooks ------------------------------------------------------------------------
    def module(self, module) -> None:
        self.modules.setdefault(id(module), module)

    def read(self, name: str) -> None:
        self.graph_break(name)

    # ---- breaks ------------------------------------------------------------------------------
    def graph_break(self, construct: str, name: str = "", stack=None) -> None:
        """Record a break (``stack``: the user frames where it happened, when it is found
        later, as a backward followed by ops is)."""
        record = CONSTRUCTS[construct]
        stack = user_stack(self.entry_code) if stack is None else stack
        text = message(record, stack, name)
        if self.mode == FULLGRAPH:
            hints = [hint.format(name=name) for hint in record.hints]
            raise Unsupported(text, record.gb_type, record.explanation.format(name=name), hints)
        logs.log("graph_breaks", text)
        self.reasons.append(GraphCompileReason(text, stack))
        self.close_segment()
        if self.mode == COMPILE and not self.broken:
            self.broken = True
            self.state.suspended += 1  # for good: the rest of the call runs eagerly

    def optimizer_step(self, step, eager):
        """An optimizer step met by the capture: ``step`` (its CompiledStep, or None) runs and
        is kept for the region to replay where it is placed like a training step's (no op
        before it, or none since ``loss.backward()``); otherwise the step is a graph break and
        ``eager()`` runs it."""
        compiled = step is not None and self.active() and self.placed()
        if compiled:
            self.steps.append(step)
            self.action(step)
        elif self.active():
            self.graph_break("optimizer.step")
        self.state.suspended += 1  # the step's own ops are not the model's
        try:
            return step() if compiled else eager()
        finally:
            self.state.suspended -= 1

    def placed(self) -> bool:
        """Whether an optimizer call now is a training step's: before any op, or right after
        the loss's backward (nothing recorded since)."""
        ops = self.op_count()
        return ops == 0 or ops == self.tail_at

    def action(self, call) -> None:
        """Keep an optimizer call for the replay, on its side of the backward."""
        (self.before if self.tail_at is None else self.after).append(call)

    def backward(self, loss) -> bool:
        """``loss.backward()`` met by the capture: True when it is kept for the replay (the
        first backward, of a graph tensor), False when it is a graph break."""
        if self.tail_at is not None or not self.is_graph_tensor(loss):
            return False
        self.targets.append(loss)
        self.tail_at = self.op_count()
        self.tail_stack = user_stack(self.entry_code)  # for the break if ops follow it
        return True

    def finish(self) -> None:
        """At the end of the user's call (before the trace drops dead nodes): whether ops
        followed the backward, which makes the backward a break (region.py)."""
        self.ops_after_backward = self.tail_at is not None and self.op_count() > self.tail_at

    def op_count(self) -> int:
        return sum(1 for n in self.state.graph.nodes() if not n.kind().startswith("prim::"))

    def close_segment(self) -> None:
        nodes = list(self.state.graph.nodes()) if self.state is not None else []
        ops = [n.kind() for n in nodes if not n.kind().startswith("prim::")]
        self.segments.append(ops[self._counted :])
        self._counted = len(ops)

    def active(self) -> bool:
        return self.state is not None and self.state.recording()

    def is_graph_tensor(self, t) -> bool:
        state = self.state
        return id(t) in state.env or id(t) in state.attrs


@contextlib.contextmanager
def watching(observer: Observer):
    """Patch the calls that end a graph while ``observer``'s capture runs."""
    from ember import autograd
    from ember._random import Generator
    from ember.autograd import forward_ad

    batching = importlib.import_module("ember.autograd.vmap")  # the module, not a function
    from ember.amp.autocast_mode import autocast
    from ember.nn.modules.module import Module
    from ember.optim.optimizer import Optimizer

    tensor_args = lambda args: any(  # noqa: E731 - a one-line predicate
        isinstance(a, Tensor) and observer.is_graph_tensor(a) for a in args
    )
    patches = [
        (builtins, "print", "print", None),  # whatever it prints: a replay would not
        (Tensor, "__repr__", "repr", tensor_args),
        (Tensor, "__str__", "repr", tensor_args),
        (Tensor, "__format__", "repr", tensor_args),
        (Tensor, "backward", "backward", "backward"),
        (autograd, "backward", "backward", None),
        (autograd, "grad", "autograd.grad", None),
        # vmap's and forward AD's layers run the function out of the trace's sight: its result
        # would be a constant of the graph (silent wrong numbers from the second call)
        (batching, "_flat_vmap", "func transform", None),
        (batching, "_chunked", "func transform", None),
        (forward_ad, "enter_level", "func transform", None),
        # the tracer records above the autocast layer, so a graph would keep the ops but not
        # autocast's casts: a region entering autocast runs as segments, which run those ops
        # eagerly (segments.Run.handle)
        (autocast, "__enter__", "autocast", None),
        # seeding or restoring a generator: a replay's random ops would draw on from where the
        # last call left the generator (ember.manual_seed, set_rng_state, fork_rng's restore)
        (Generator, "manual_seed", "rng", None),
        (Generator, "seed", "rng", None),
        (Generator, "set_state", "rng", None),
    ]
    patches += [(cls, "step", "optimizer.step", "step") for cls in _subclasses(Optimizer, "step")]
    patches += [(cls, "zero_grad", "", "zero_grad") for cls in _subclasses(Optimizer, "zero_grad")]
    patches += [(cls, "zero_grad", "", "zero_grad") for cls in _subclasses(Module, "zero_grad")]
    saved = [(Tensor, "grad", Tensor.__dict__["grad"])]
    Tensor.grad = _grad_property(observer, Tensor.__dict__["grad"])
    try:
        for module_name, attrs in IMPURE_CALLS.items():
            module = sys.modules.get(module_name)
            for attr in attrs if module is not None else ():
                original = module.__dict__.get(attr)
                if original is not None:
                    saved.append((module, attr, original))
                    impure = _impure(observer, original, f"{module_name}.{attr}")
                    setattr(module, attr, _capture_thread_only(observer, impure))
        for owner, attr, construct, applies in patches:
            if isinstance(owner, type) and attr not in owner.__dict__:
                continue  # inherited (object.__str__ calls the patched __repr__)
            original = owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)
            saved.append((owner, attr, original))
            wrap = _WRAPS.get(applies, _breaking) if isinstance(applies, str) else _breaking
            patched = _capture_thread_only(observer, wrap(observer, original, construct, applies))
            setattr(owner, attr, patched)
        yield
    finally:
        for owner, attr, original in reversed(saved):
            setattr(owner, attr, original)


def _grad_property(observer: Observer, original: property) -> property:
    """``Tensor.grad`` while a capture runs: the user's code reading or setting a gradient
    (``p.grad = None``, ``p.grad.zero_()``, ``if p.grad is not None``) is a graph break, since a
    replay runs none of that Python and the backward's accumulation depends on it (a compiled
    step that cleared gradients this way accumulated them from its second call). ember's own
    reads and writes (an optimizer's step, ``zero_grad``, the backward) pass."""

    def user_code() -> bool:  # not ember's modules, nor its backends' (ember_backend_cpu...)
        caller = sys._getframe(2).f_globals.get("__name__") or ""
        return not caller.startswith("ember")

    def grad_break() -> None:
        if observer.tail_at is not None:  # after a kept backward: the backward is the break
            observer.graph_break("backward", stack=observer.tail_stack)
        else:
            observer.graph_break("grad")

    def get(tensor):
        if observer.active() and user_code():
            grad_break()
        return original.fget(tensor)

    def set_(tensor, value):
        if observer.active() and user_code():
            grad_break()
        original.fset(tensor, value)

    return property(get, set_, original.fdel, original.__doc__)


def _capture_thread_only(observer: Observer, wrapped):
    """``wrapped`` on the capturing thread; the original elsewhere: another thread's
    ``print``, ``backward`` or ``step`` during a capture is neither a break nor part of the
    region, and must not suspend the capture's recording."""
    original = wrapped.__wrapped__

    def call(*args, **kwargs):
        state = observer.state
        if state is None or state.thread != threading.get_ident():
            return original(*args, **kwargs)
        return wrapped(*args, **kwargs)

    call.__name__ = getattr(original, "__name__", "call")
    call.__wrapped__ = original
    return call


# Python functions that return another value at each call, which a replay would not call: a
# capture breaks at them (dynamo too gives fresh values). Patched as module attributes, so a
# ``from random import random`` made before the capture is not seen.
IMPURE_CALLS = {
    "random": (
        "random", "uniform", "randint", "randrange", "choice", "choices", "shuffle", "sample",
        "gauss", "normalvariate", "lognormvariate", "expovariate", "betavariate",
        "gammavariate", "triangular", "vonmisesvariate", "paretovariate", "weibullvariate",
        "getrandbits", "randbytes",
    ),
    "numpy.random": (
        "rand", "randn", "random", "random_sample", "ranf", "sample", "randint", "integers",
        "normal", "uniform", "choice", "permutation", "shuffle", "standard_normal", "binomial",
        "poisson", "beta", "gamma", "exponential", "bytes",
    ),
    "time": (
        "time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns",
        "process_time", "process_time_ns",
    ),
    "os": ("urandom",),
}  # fmt: skip


def _impure(observer: Observer, original, label: str):
    def call(*args, **kwargs):
        if observer.active() and _for_the_user(sys._getframe(2)):  # 2: past the thread check
            observer.graph_break("impure", label)
        return original(*args, **kwargs)

    call.__name__ = getattr(original, "__name__", "call")
    call.__wrapped__ = original
    return call


def _for_the_user(frame) -> bool:
    """Whether a call made in ``frame`` serves the user's code: the nearest caller outside the
    standard library and installed packages is not ember's (``logging``'s clock read for an
    ember log line is ember's; a library's random crop called by the user's code is the
    user's)."""
    while frame is not None:
        if (frame.f_globals.get("__name__") or "").startswith("ember"):
            return False
        if not _library_file(frame.f_code.co_filename):
            return True
        frame = frame.f_back
    return False


def _breaking(observer: Observer, original, construct: str, applies):
    def call(*args, **kwargs):
        if observer.active() and (applies is None or applies(args)):
            types = str([type(a).__name__ for a in args]) if construct == "print" else ""
            observer.graph_break(construct, types)
        state = observer.state
        state.suspended += 1  # its own ops (a backward pass, a tensor's repr) are not the model's
        try:
            return original(*args, **kwargs)
        finally:
            state.suspended -= 1

    call.__name__ = getattr(original, "__name__", "call")
    call.__wrapped__ = original
    return call


def _stepping(observer: Observer, original, construct: str, applies):
    """An optimizer's ``step`` in a capture: while the graph is still empty, a supported step
    runs as a compiled step that the region replays (optim_step.py); otherwise a break."""

    def call(opt, *args, **kwargs):
        from .optim_step import step_of

        step = step_of(opt) if not args and not kwargs else None
        return observer.optimizer_step(step, lambda: original(opt, *args, **kwargs))

    call.__wrapped__ = original
    return call


def _backward(observer: Observer, original, construct: str, applies):
    """``Tensor.backward`` in a capture: the loss's plain backward (no gradient, inputs,
    retain_graph or create_graph) is kept for the replay (train_region.py); else a break."""

    def call(tensor, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        plain = gradient is None and not retain_graph and not create_graph and inputs is None
        if observer.active() and not (plain and observer.backward(tensor)):
            observer.graph_break(construct)
        state = observer.state
        state.suspended += 1  # the backward's own ops are not the model's
        try:
            return original(tensor, gradient, retain_graph, create_graph, inputs)
        finally:
            state.suspended -= 1

    call.__wrapped__ = original
    return call


def _zero_grad(observer: Observer, original, construct: str, applies):
    """``Optimizer.zero_grad`` in a capture: it only resets ``.grad``, which no op reads, so it
    is kept for the replay on its side of the backward (no graph break)."""

    def call(opt, set_to_none: bool = True):
        if observer.active():
            observer.action(_ZeroGrad(opt, set_to_none))
        state = observer.state
        state.suspended += 1
        try:
            return original(opt, set_to_none)
        finally:
            state.suspended -= 1

    call.__wrapped__ = original
    return call


class _ZeroGrad:
    """A captured ``opt.zero_grad(set_to_none)``, replayed through the optimizer's method."""

    __slots__ = ("opt", "set_to_none")

    def __init__(self, opt, set_to_none: bool):
        self.opt = opt
        self.set_to_none = set_to_none

    def __call__(self):
        self.opt.zero_grad(self.set_to_none)


_WRAPS = {"step": _stepping, "backward": _backward, "zero_grad": _zero_grad}


def _subclasses(cls, name: str) -> list:
    """``cls`` and every subclass that defines its own ``name``."""
    found, todo = [], [cls]
    while todo:
        klass = todo.pop()
        if name in klass.__dict__:
            found.append(klass)
        todo.extend(klass.__subclasses__())
    return found
