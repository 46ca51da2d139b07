"""The Autograd dispatch layer: records a graph node for calls on tensors that require grad.

It sits above the Backend layer (priority 100) and costs a flag check and a scan of the arguments
when nothing requires grad. For a differentiable op it saves what the op's formula needs, runs the
op below itself with recording off, and attaches a Node to the outputs. Composites without a
formula decompose here, so their parts are recorded instead. In-place ops are recorded on the
modified tensor; when that tensor is a view, its base's history is rebased (CopySlices).
"""

from __future__ import annotations

import ember as E
from ember._dtype import FLOATING
from ember._tensor import Tensor

from ..dispatcher.layers import STACK, Layer
from ..dispatcher.opdef import Kind
from .anomaly import record_trace
from .formula import Formula
from .grad_mode import THREAD
from .graph_names import Shown, present_composite
from .node import _SEQUENCE, gradient_edge, retain
from .views import CopySlices, ViewOf


def _zero_for_target(ctx, g):
    return (E.zeros_like(g),) + (None,) * (len(ctx.needs_input_grad) - 1)


class AutogradLayer(Layer):
    name = "autograd"
    priority = 100
    grad_only = True  # wants() below: grad mode on and some tensor requires grad
    direct = True  # alone in the stack, a call may go straight to op.recorder (recorder.py)

    def wants(self, op, args) -> bool:
        if not THREAD.mode.enabled:
            return False
        for arg in args:
            if isinstance(arg, Tensor):
                if arg._requires_grad:
                    return True
            elif arg.__class__ is list or arg.__class__ is tuple:
                for item in arg:
                    if isinstance(item, Tensor) and item._requires_grad:
                        return True
        return False

    def handle(self, op, args):
        recorder = op.recorder  # the op's straight-line recorder (autograd/recorder.py)
        if recorder is not None:
            return recorder(*args)
        return self.handle_general(op, args)

    def handle_general(self, op, args):
        base = op.inplace_of or op
        formula = base.formula
        if formula is None:
            if not base.defn.differentiable:  # composites too: their parts stay unrecorded
                if op.mutates and args[0]._requires_grad:
                    # uniform_, normal_...: the old values no longer matter, as in PyTorch
                    return self.record_inplace(op, base, _overwritten(base), args)
                return self.below(op, args)
            if op.decomposition is not None:  # composite: its parts get recorded
                start = next(_SEQUENCE)
                out = op.decomposition(*args)
                present_composite(op, args, out, start)  # shown as PyTorch's one node
                return out
            raise RuntimeError(f"the derivative for '{op.name}' is not implemented ({_fix(base)})")
        if op.mutates:
            return self.record_inplace(op, base, formula, args)
        node = formula.record(op, args)
        out = self.below(op, args) if formula.forward is None else self.below_saving(node, args)
        if base.name in COPYING_VIEWS:
            if out._storage is not args[0]._storage:
                return _copied_view(node, out, args[0])
            if not args[0]._contig:  # PyTorch's _reshape_alias: a view it computed strides for
                node.display = Shown("ReshapeAliasBackward0", node.edges)
        return _attach(node, out)

    def below(self, op, args):
        """Run the op under this layer with recording off (its kernels and decompositions)."""
        mode = THREAD.mode
        mode.enabled = False
        try:
            if STACK.layers[-1] is self:  # nothing between us and the backend: skip the search
                try:
                    return op.runner(op, *args)
                except NotImplementedError as error:
                    return op.refused(args, error)
            return op.redispatch(self, args)
        finally:
            mode.enabled = True

    def below_saving(self, node, args):
        """``below`` through the formula's ``forward``, which saves what the op computes on
        the way (formula.py), when autograd is the only layer installed. With any other, the
        plain call, and the backward recomputes: a tracing layer (jit.trace, compile's joint
        graphs) must see every tensor the backward reads made by an op it records, which the
        forward's kernel call is not."""
        if STACK.layers is not STACK.direct_layers:
            return self.below(node.op, args)
        mode = THREAD.mode
        mode.enabled = False
        try:
            return node.formula.forward(node, node.op, *args)
        except NotImplementedError as error:  # as below: Op.refused (the limited dtypes)
            return node.op.refused(args, error)
        finally:
            mode.enabled = True

    def record_inplace(self, op, base, formula, args):
        target = args[0]
        if target._grad_fn is None and target._requires_grad:
            raise RuntimeError(
                f"{op.name}: a leaf Variable that requires grad is being used in an in-place "
                "operation."
            )
        if (
            target._base is not None
            and target._base._grad_fn is None
            and target._base._requires_grad
        ):
            raise RuntimeError(
                f"{op.name}: a view of a leaf Variable that requires grad is being used in an "
                "in-place operation."
            )
        first = base.schema.args[0].name
        originals = {}
        if first in formula.save:  # the formula needs the value from before the write
            originals[first] = target.clone()
        node = formula.record(base, args, originals)
        view_base = target._base
        old_base_edge = gradient_edge(view_base) if view_base is not None else None
        self.below(op, args)
        formula.save_result(node, target)
        record_trace(node)
        if view_base is None:
            _set_history(target, node, 0)
        else:
            rebased = CopySlices(view_base, target, node, old_base_edge)
            _set_history(view_base, rebased, 0)
            _set_history(target, ViewOf(view_base, target, (rebased, 0)), 0)
            if view_base.__dict__.get("_retains_grad"):
                retain(view_base)
        if target.__dict__.get("_retains_grad"):
            retain(target)  # .grad is the gradient of the new value
        return target


def _fix(op) -> str:
    if op.kind is Kind.LIBRARY:
        return f"register one with ember.library.register_autograd('{op.name}', backward, ...)"
    return "add it to autograd/formulas.py, or mark the op differentiable=False"


def _set_history(t: Tensor, node, index: int) -> None:
    t._grad_fn = node
    t._requires_grad = True
    if t._base is not None:  # to notice an in-place change of the base later (view replay)
        t.__dict__["_view_of"] = t._base._grad_fn
    if index:
        t.__dict__["_output_nr"] = index
    elif t._output_nr:  # the class default unless set: a fresh output gets no __dict__
        del t.__dict__["_output_nr"]


def _attach(node, out):
    """Make ``node`` (``formula.record``'s) the history of the call's floating outputs."""
    formula = node.formula
    if isinstance(out, Tensor):  # the common case, kept short
        if formula.saves_result:
            formula.save_result(node, out)
        if THREAD.mode.anomaly:
            record_trace(node)
        if out._dtype.category >= FLOATING:
            # _set_history's, without its frame, for a fresh output (a nonzero _output_nr
            # comes only with a grad_fn; reading it costs ten times a slot's read)
            if out._base is None and out._grad_fn is None:
                out._grad_fn = node
                out._requires_grad = True
            else:
                _set_history(out, node, 0)
        return out
    tensors = [t for t in out if isinstance(t, Tensor)]
    node.num_outputs = len(tensors) or 1
    formula.save_result(node, out)
    record_trace(node)
    for index, t in enumerate(tensors):
        if t._dtype.category >= FLOATING:
            _set_history(t, node, index)
    return out


# View rows whose runner copies when the input's strides allow no view: PyTorch records that
# call as a clone and an _unsafe_view of the copy (CloneBackward0 under UnsafeViewBackward0),
# two nodes that graph walkers and hooks see; ember records them too. Where the runner could
# view a non-contiguous input, PyTorch's reshape is a _reshape_alias (ReshapeAliasBackward0),
# a contiguous one's a view (ViewBackward0): the input's contiguity flag, read at recording,
# tells them apart, so the node keeps no strides.
COPYING_VIEWS = frozenset({"reshape", "flatten"})


def _copied_view(node, out, x):
    from ember.dispatcher.optable import OPS  # the table imports this layer

    clone = OPS["_to_copy"]  # clone's own formula: clone is a composite over it
    copy = clone.formula.record(clone, (x,))
    copy.display = Shown("CloneBackward0", copy.edges)
    if THREAD.mode.anomaly:
        record_trace(copy)
    node.edges = ((copy, 0),) + node.edges[1:]
    out = _attach(node, out)
    node = out._grad_fn
    if node is not None:
        node.display = Shown("UnsafeViewBackward0", node.edges)
    return out


_OVERWRITTEN: dict = {}


def _overwritten(op) -> Formula:
    """The formula of a non-differentiable in-place op on a tensor in the graph (uniform_,
    normal_...): a zero gradient for the old values."""
    found = _OVERWRITTEN.get(op.name)
    if found is None:
        found = Formula(_zero_for_target)
        found.bind(op)
        _OVERWRITTEN[op.name] = found
    return found


LAYER = AutogradLayer()


def install_recorders(ops) -> None:
    """Give each op whose calls ``recorder.build`` can write out a recorder (``op.recorder``;
    None keeps ``handle_general``). Each is written on the op's first recorded call: writing
    all of them would add 0.2 s to ``import ember``."""
    from .recorder import eligible

    for op in ops:
        formula = op.formula
        op.recorder = _first_record(op) if formula and eligible(op, formula) else None


def _first_record(op):
    def record(*args):
        from .recorder import build

        op.recorder = build(op, op.formula, LAYER, _attach, _set_history)
        return op.recorder(*args)

    return record
