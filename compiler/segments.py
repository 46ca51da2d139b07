"""Graph breaks inside one function body: compiled regions around the eager pieces.

A guard set whose capture broke (``.item()``, ``print``, ``if tensor:`` in the middle), or
whose Python has side effects a replay would skip, runs its Python at every call, as eager
does, with a dispatch layer that defers the ops instead of running them (PyTorch's lazy
tensors, not dynamo's bytecode rewriting). Each op returns a *pending* tensor (its sizes,
strides, dtype and device known from an earlier run of the same op sequence) and is appended
to the segment. A read of a pending tensor's data (the breaking construct), the function's
return, or an op that cannot be deferred ends the segment: its ops run as one compiled region
(``Region``: the dispatch-free, fused replay) whose outputs are the pending tensors the Python
still holds, which then get their data (pending.py); the breaking construct then runs
eagerly on real values and the next segment starts.

Regions are found in a trie keyed by each op call (the op, its constants, where each tensor
argument comes from, the external tensors' sizes and dtypes): the op sequence is the guard.
A branch taken the other way, or a constant derived from ``.item()`` that changed, is another
path: its ops run once while being recorded, and the recording becomes that path's region
(up to ``config.recompile_limit`` recordings per guard set; beyond, new paths run eagerly).
With gradients the segment's region runs as one autograd node (its compiled forward/backward
pair, joint.py) and the pending tensors take that node's history with their data; an
in-place call on a tensor from outside the segment runs eagerly then.
"""

from __future__ import annotations

import logging
import sys
import threading
import time

import ember
from ember._storage import Storage
from ember._tensor import Tensor, make
from ember.autograd.grad_mode import THREAD as GRAD
from ember.dispatcher.autocast import STATE as AUTOCAST
from ember.dispatcher.layers import STACK, Layer
from ember.dispatcher.meta import DATA_DEPENDENT
from ember.jit import pytree
from ember.jit.codegen import generate
from ember.jit.passes.dce import eliminate_dead_code
from ember.jit.tracer import TracingState

from . import config, logs
from .pending import RUNNING, WATCHED, fill, running, saved_by_autograd, watch_reads  # noqa: F401 - frame.py calls segments.running
from .region import _UNBUILT, Region, compiling

WARN = logging.getLogger("ember._dynamo.convert_frame")
# what the Python holds besides the segment's list: the loop variable and getrefcount's argument
_HELD_BY_US = 3


class Step:
    """One op call of a recorded path: the call (op, argument keys and template), its
    outputs' layout, and the calls that followed."""

    __slots__ = ("children", "end", "form", "key", "next", "one", "op", "outs", "template")

    def __init__(self, form, outs, op=None, key=(), template=(), n=0):
        self.form = form  # the call's return type: "Tensor", "tuple" or "list"
        self.op, self.key, self.template = op, key, template
        # per output: (ref, alias, shape, stride, offset, dtype, device, contig, requires_grad)
        self.outs = tuple((_Ref(("n", n, j)), *out) for j, out in enumerate(outs))
        self.children: dict = {}
        # op -> the one call of that op that followed (None: several did); straight code,
        # and the first call of each segment at the root, find their step here
        self.next: dict = {}
        self.end = None  # the Segment compiled for a break right after this call
        # the one output's layout when the call returns one new tensor (most ops): pending's
        # path without its loop
        one = form == "Tensor" and len(outs) == 1 and outs[0][0] is None
        self.one = self.outs[0][:1] + self.outs[0][2:] if one else None

    def add(self, key, child: Step) -> Step:
        self.children[key] = child
        self.next[child.op] = None if child.op in self.next else child
        return child


class Segment:
    """A compiled region and the op outputs it returns (``(call index, output index)``)."""

    __slots__ = ("index", "inputs", "outputs", "region")

    def __init__(self, region, outputs, inputs: int):
        self.region = region
        self.outputs = outputs
        self.index = {ref: i for i, ref in enumerate(outputs)}  # output ref -> its position
        # the external tensors it reads: the first ones of a call reaching it (a call that
        # then ran eagerly may have added more before the flush)
        self.inputs = inputs


class Paths:
    """The recorded op paths of one guard set (the trie's root) and its recording count."""

    def __init__(self, name: str):
        self.root = Step("Tensor", ())
        self.name = name
        self.recorded = 0  # regions recorded
        self.replays = 0  # regions replayed
        self.warned = False
        # the layer of the last call, reused by the next (one object per guard set, not one
        # per call: its containers are reset at each flush anyway)
        self.idle: Run | None = None

    def may_record(self) -> bool:
        limit = getattr(config, "recompile_limit", None) or config.cache_size_limit
        if self.recorded < limit * 4:  # a break splits a call into a few regions
            return True
        if not self.warned:
            self.warned = True
            WARN.warning(
                "ember._dynamo hit config.recompile_limit (%s) for the regions between the graph "
                "breaks of %s; new op paths run eagerly",
                limit,
                self.name,
            )
        return False

    def call(self, fn, args, kwargs):
        """``fn(*args, **kwargs)`` with its ops deferred into compiled segments."""
        if _CALLS[0]:  # (this thread's call sets RUNNING.run only while it counts here)
            return fn(*args, **kwargs)  # nested, or another thread's call holds the layer
        if not WATCHED:
            watch_reads()
        run = self.idle
        if run is None:
            run = self.idle = Run(self)
        run.thread = threading.get_ident()
        _CALLS[0] += 1
        RUNNING.run = run
        compiling(1)
        run.enter()
        try:
            result = fn(*args, **kwargs)
            run.flush(result)
            return result
        except BaseException:
            run.flush()  # what ran before the exception happened, as in eager (an update)
            raise
        finally:
            run.leave()
            RUNNING.run = None
            compiling(-1)
            _CALLS[0] -= 1
            run.abandon()


class Run(Layer):
    """One call's deferred ops: the segment being built, then flushed at a break."""

    name = "segments"
    priority = 299  # above autocast and autograd; a trace (300) inside one records over it

    def __init__(self, paths: Paths):
        self.paths = paths
        self.thread = threading.get_ident()
        self.suspended = 0
        self.installed = None  # STACK.layers while this layer is the only one above autograd's
        # (the stack before the call, the stack with this layer), as STACK.saved gives them: a
        # call made over the same stack as the last restores the one built then, without
        # install's sort and checks
        self.stacks: tuple = ((None,), None)
        self.start()

    def enter(self) -> None:
        """Install this layer for the call."""
        layers = STACK.layers
        bare = STACK.grad_only_layers is layers
        below, above = self.stacks
        if layers is below[0]:
            STACK.restore(above)
        else:
            below = STACK.saved()
            STACK.install(self)
            self.stacks = (below, STACK.saved())
        self.installed = STACK.layers if bare else None
        self.started = time.perf_counter()

    def leave(self) -> None:
        below, above = self.stacks
        if STACK.layers is above[0]:
            STACK.restore(below)
        else:
            STACK.remove(self)

    def start(self) -> None:
        self.step = self.paths.root  # the trie position after this segment's calls
        self.calls: list = []  # (op, template of its arguments)
        self.externals: list = []  # tensors from outside the segment: the region's inputs
        self.refs: dict = {}  # id(tensor) -> its latest ("x", i) or ("n", call, output)
        self.objects: list = []  # the segment's new tensors, held until the flush
        self.made: dict = {}  # ref -> index in objects, or the ref an in-place call returned
        self.state = None  # the TracingState of a recording
        self.eager = False  # over the recording limit: the rest of the segment runs eagerly
        self.grad = None  # the grad mode of the segment's calls (they run at the flush)
        self.started = time.perf_counter()

    def wants(self, op, args) -> bool:
        return self.suspended == 0 and self.thread == threading.get_ident()

    # ---- an op call --------------------------------------------------------------------------
    def handle(self, op, args):
        if AUTOCAST.on:  # a deferred op would run without autocast's casts: eagerly, under it
            return self.outside(op, args)
        if self.grad is not GRAD.mode.enabled:  # a segment's calls share one grad mode
            if self.calls:
                self.flush(args)
            self.grad = GRAD.mode.enabled
        # (a path recorded without grad may hold an in-place call on an outside tensor)
        writes = self.grad and self.writes_outside(op, args)
        if self.state is None and not self.eager and not writes:
            found = self.follow(op, args)
            if found is not None:
                self.calls.append((op, found.template))
                self.step = found
                return self.pending(found, args)
        if self.eager or writes or not _deferrable(op):
            return self.outside(op, args)
        template, key = self.encode(args)
        key = (op, key)
        if self.state is None:
            try:
                found = self.step.children.get(key)
            except TypeError:  # an unhashable constant
                return self.outside(op, args)
            if found is not None:
                self.calls.append((op, template))
                self.step = found
                return self.pending(found, args)
            if not self.paths.may_record():
                self.eager = True
                return self.outside(op, args)
            self.record_pending()
        try:
            hash(key)
        except TypeError:
            return self.outside(op, args)
        return self.record(op, args, template, key)

    def follow(self, op, args) -> Step | None:
        """The next step when this call is the one call of its op recorded after the current
        step (straight-line code: the common case), checked argument by argument against its
        keys without building and hashing the call's key; else None (``encode`` and the
        trie lookup decide)."""
        step = self.step.next.get(op)
        if step is None or len(args) != len(step.key):
            return None
        refs = self.refs
        fresh = None
        for a, k in zip(args, step.key):
            cls = a.__class__
            if cls in _SCALARS:
                if k[0] is not cls or k[1] != a:
                    return None
            elif cls is Tensor or isinstance(a, Tensor):  # a Parameter too
                ref = refs.get(id(a))
                if ref is None:  # a tensor from outside the segment, first seen here
                    grad = a._requires_grad and self.grad
                    device = id(a._storage.device)
                    if k != ("x", a._shape, a._dtype, device, a._contig, grad):
                        return None
                    if fresh is None:
                        fresh = [a]
                    elif any(f is a for f in fresh):
                        return None  # its second use keys as its index: encode's work
                    else:
                        fresh.append(a)
                elif ref is not k and ref != k:
                    return None
            elif k != _constant_key(a):
                return None
        if fresh is not None:
            for a in fresh:  # in argument order, as ``argument`` numbers them
                refs[id(a)] = _Ref(("x", len(self.externals)))
                self.externals.append(a)
        return step

    def writes_outside(self, op, args) -> bool:
        """Whether an in-place call writes a tensor the segment did not make. Under grad mode
        it runs eagerly: the compiled pair's tracing run (joint.py) would write it once more,
        and eager autograd raises at the call for a leaf that requires grad."""
        if not op.name.endswith("_") or not args:
            return False
        ref = self.refs.get(id(args[0]))
        return ref is None or ref[0] == "x"

    def outside(self, op, args):
        """Run ``op`` now (below this layer), the segment so far first."""
        if self.calls:
            self.flush(args)
        return self.below(op, args)

    def below(self, op, args):
        """``op`` run below this layer; the ops it calls in turn (a decomposition, a read's
        copy) are its own, not deferred."""
        self.suspended += 1
        try:
            return op.redispatch(self, args)
        finally:
            self.suspended -= 1

    def recorded(self, op, args):
        """``op`` run below this layer and recorded as one node of the segment's graph."""
        self.suspended += 1
        try:
            return self.state.record(op, args, self)
        finally:
            self.suspended -= 1

    def encode(self, args):
        """``(template, key)`` of a call's arguments."""
        template, key = [], []
        refs = self.refs
        for a in args:
            ref = refs.get(id(a)) if a.__class__ is Tensor else None
            if ref is None:
                a, ref = self.argument(a)
            else:
                a = ref
            template.append(a)
            key.append(ref)
        return tuple(template), tuple(key)

    def argument(self, a):
        if isinstance(a, Tensor):
            ref = self.refs.get(id(a))
            if ref is not None:
                return ref, ref
            ref = self.refs[id(a)] = _Ref(("x", len(self.externals)))
            self.externals.append(a)
            grad = a._requires_grad and self.grad  # the region differentiates it
            return ref, ("x", a._shape, a._dtype, id(a._storage.device), a._contig, grad)
        if isinstance(a, (list, tuple)):
            pairs = [self.argument(item) for item in a]
            return _Items(p[0] for p in pairs), (type(a), tuple(p[1] for p in pairs))
        return a, (type(a), a)

    def pending(self, step: Step, args):
        """The outputs of a deferred call: tensors without data yet (or the argument an
        in-place op returns)."""
        one = step.one
        if one is not None:
            ref, shape, stride, offset, dtype, device, contig, grad = one
            t = make(_unfilled(device), shape, stride, offset, dtype, contig)
            t._requires_grad = grad  # its grad_fn comes with its data (the flush)
            self.made[ref] = len(self.objects)
            self.objects.append(t)
            self.refs[id(t)] = ref
            return t
        made = []
        for ref, alias, shape, stride, offset, dtype, device, contig, grad in step.outs:
            if alias is not None:
                t = args[alias]
                self.made[ref] = self.refs[id(t)]
            else:
                t = make(_unfilled(device), shape, stride, offset, dtype, contig)
                t._requires_grad = grad  # its grad_fn comes with its data (the flush)
                self.made[ref] = len(self.objects)
                self.objects.append(t)
            self.refs[id(t)] = ref
            made.append(t)
        if step.form == "Tensor":
            return made[0]
        return tuple(made) if step.form == "tuple" else made

    def arguments(self, template: tuple) -> tuple:
        """A call's arguments from its template."""
        return tuple(self.resolve(item) for item in template)

    def resolve(self, item):
        if isinstance(item, _Ref):
            return self.tensor(item)
        if isinstance(item, _Items):
            return [self.resolve(i) for i in item]
        return item

    def tensor(self, ref):
        while True:
            if ref[0] == "x":
                return self.externals[ref[1]]
            found = self.made[ref]
            if isinstance(found, int):
                return self.objects[found]
            ref = found  # an in-place call's output: the tensor it wrote

    # ---- recording ---------------------------------------------------------------------------
    def record_pending(self) -> None:
        """A new path: run the deferred calls for real while recording them (the region of
        this path is built from the recording at the flush)."""
        state = self.state = TracingState()
        for i, tensor in enumerate(self.externals):
            state.add_input(tensor, f"x{i}")
        for n, (op, template) in enumerate(self.calls):
            out = self.recorded(op, self.arguments(template))
            for j, real in enumerate(_tensors(out)):
                holder = self.made.get(_Ref(("n", n, j)))
                if isinstance(holder, int):
                    holder = self.objects[holder]
                    fill(holder, real)
                    state.bind(holder, state.env[id(real)])

    def record(self, op, args, template, key):
        state = self.state
        for a in _flat(args):
            if isinstance(a, Tensor) and id(a) not in state.env:
                state.add_input(a, f"x{len(state.graph.inputs())}")
        out = self.recorded(op, args)
        n = len(self.calls)
        self.calls.append((op, template))
        outs = []
        for j, t in enumerate(_tensors(out)):
            alias = next((k for k, a in enumerate(args) if a is t), None)
            layout = (t._shape, t._stride, t._offset, t._dtype, t._storage.device, t._contig)
            outs.append((alias, *layout, t._requires_grad))
            if alias is None:
                self.made[_Ref(("n", n, j))] = len(self.objects)
                self.objects.append(t)
            else:
                self.made[_Ref(("n", n, j))] = self.refs[id(t)]
        found = self.step.children.get(key)
        if found is None:
            form = "Tensor" if isinstance(out, Tensor) else type(out).__name__
            found = self.step.add(key, Step(form, outs, op, key[1], template, n))
        for t, (ref, *_layout) in zip(_tensors(out), found.outs):
            self.refs[id(t)] = ref  # the step's own: later keys hold it (follow's `is`)
        self.step = found
        return out

    # ---- the end of a segment ----------------------------------------------------------------
    def flush(self, holding=None) -> None:
        """End the segment: give the pending tensors the Python holds their data
        (``holding``: what the caller holds, kept alive for the count of live tensors), in
        the grad mode its calls were made in."""
        modes = GRAD.mode
        mode = modes.enabled
        if self.grad is not None:
            modes.enabled = self.grad
        self.suspended += 1  # the region's own calls (a generator's state saved around a
        try:  # joint trace) are not the user's, and flush nothing
            self.end_segment()
        finally:
            self.suspended -= 1
            modes.enabled = mode
        del holding

    def end_segment(self) -> None:
        if self.state is None and self.calls:
            end = self.step.end
            live = self.live()
            if end is not None and all(ref in end.index for ref, _ in live):
                self.run_region(end, live)
                self.start()
                return
            if not self.paths.may_record():
                self.replay_eagerly()
                self.start()
                return
            self.record_pending()
        if self.state is not None:
            self.finish_recording()
        self.start()

    def live(self, recorded: bool = False) -> list:
        """``(ref, tensor)`` of the segment's new tensors the Python still holds (referenced
        from more than this list, the loop and the call; a recording's eager autograd nodes
        hold the tensors they saved, which do not count)."""
        objects, refs, count = self.objects, self.refs, sys.getrefcount
        if not (recorded and self.grad):  # a replay's flush: the counts alone
            return [(refs[id(t)], t) for t in objects if count(t) > _HELD_BY_US]
        saved = saved_by_autograd(objects)
        return [(refs[id(t)], t) for t in objects if count(t) - saved.get(id(t), 0) > _HELD_BY_US]

    def run_region(self, end: Segment, live: list) -> None:
        self.paths.replays += 1
        region, inputs = end.region, self.externals[: end.inputs]
        fast = region.fast
        flat = None
        if STACK.layers is self.installed and fast is not None and fast is not _UNBUILT:
            # only this layer above autograd's: the dispatch-free program runs as Region.run
            # would run it once the layer is removed, without removing it (the calls the
            # program makes through the dispatcher pass it by, as a flush's own calls do)
            self.suspended += 1
            try:
                flat = fast(*inputs)
            finally:
                self.suspended -= 1
        if flat is None:
            bare = STACK.layers is self.installed
            STACK.remove(self)  # the region's replay runs below no layer of ours
            try:
                flat = region.run(None, inputs)
            finally:
                STACK.install(self)
            self.installed = STACK.layers if bare else None
        index = end.index
        for ref, t in live:
            fill(t, flat[index[ref]])

    def finish_recording(self) -> None:
        state, self.state = self.state, None
        state.keep = []  # its references would count as the Python's
        live = self.live(recorded=True)
        for _, t in live:
            state.graph.registerOutput(state.value_of(t))
        if not live:  # only in-place updates: the last one's result all the same (a graph
            # returns something); the Region only needs a tensor to know the output's kind
            last = [n for n in state.graph.nodes() if n.outputs()][-1]
            state.graph.registerOutput(last.outputs()[0])
            live = [(None, self.externals[0] if self.externals else ember.empty(0))]
        state.live = False
        eliminate_dead_code(state.graph)
        region = _region(state.graph, [t for _, t in live], self.started)
        self.paths.recorded += 1
        self.step.end = Segment(region, [ref for ref, _ in live], len(state.graph.inputs()))
        logs.log("graphs", f"region of {self.paths.name} (between graph breaks):\n{state.graph}")

    def replay_eagerly(self) -> None:
        """Over the recording limit: run the deferred calls now, without recording."""
        for n, (op, template) in enumerate(self.calls):
            out = self.below(op, self.arguments(template))
            for j, real in enumerate(_tensors(out)):
                holder = self.made.get(_Ref(("n", n, j)))
                if isinstance(holder, int):
                    fill(self.objects[holder], real)

    def abandon(self) -> None:
        """The call ended (an exception may have left it): drop what the segment holds (a
        call that returned normally ended with a flush, which did)."""
        if self.calls or self.objects or self.externals or self.state is not None:
            self.start()
        else:
            self.grad = None
            self.eager = False


def _unfilled(device) -> Storage:
    """A pending tensor's storage: no bytes until the flush fills it (pending.fill)."""
    storage = Storage()
    storage.device = device
    storage._nbytes = 0
    storage.handle = storage.ptr = storage.owner = storage.runtime = None
    storage.byte_offset = storage.version = 0
    return storage


class _Items(tuple):
    """A list or tuple argument's template (told apart from a reference, also a tuple)."""


def _deferrable(op) -> bool:
    """Whether ``op`` returns tensors only (a pending result can stand for each) whose sizes
    do not depend on the values (a pending result takes its sizes from an earlier run: a
    boolean mask's ``nonzero`` with another count of True would keep the old count)."""
    found = _DEFERRABLE.get(op)
    if found is None:
        returns = op.schema.returns
        found = _DEFERRABLE[op] = (
            bool(returns)
            and all(t.startswith("Tensor") for t, *_ in returns)
            and op.name not in DATA_DEPENDENT
        )
    return found


_DEFERRABLE: dict = {}
# segmented calls running, on any thread: a call made while one runs runs eagerly (nested in
# it on this thread, or on another thread while its layer is installed)
_CALLS = [0]


_SCALARS = frozenset((int, float, bool, str, type(None)))


def _constant_key(a):
    """``argument``'s key of a constant (a list of them included), or None when it holds a
    tensor."""
    if isinstance(a, Tensor):
        return None
    if isinstance(a, (list, tuple)):
        items = tuple(_constant_key(item) for item in a)
        return None if None in items else (type(a), items)
    return (type(a), a)


class _Ref(tuple):
    """Where a tensor argument comes from: ``("x", i)``, the segment's i-th external tensor,
    or ``("n", call, output)``, a call's output."""


def _tensors(out) -> list:
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for t in out if isinstance(t, Tensor)]
    return []


def _flat(args):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from _flat(a)
        else:
            yield a


def _region(graph, outputs: list, started: float) -> Region:
    generated = generate(graph, "segment", method=False)
    _leaves, spec = pytree.flatten(tuple(outputs))
    return Region(graph, generated.fn, list(outputs), spec, time.perf_counter() - started)
