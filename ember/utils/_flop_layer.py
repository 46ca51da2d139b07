"""The dispatch layer behind ``FlopCounterMode``, and the table of ember ops it counts under
PyTorch's ATen ops.

The layer sits at priority 225 (dispatcher/layers.py): below vmap, so it sees the batched
calls a vmap runs, and above autocast and autograd, so it sees ember's composite ops whole
before autograd records their parts. A counter counts the outermost call that has a formula,
and none of the calls inside it (``linear`` -> ``addmm`` -> its kernel, ``conv2d`` -> ``im2col``
and ``bmm``), as PyTorch counts the one ATen op that does the work.

An op PyTorch runs as one ATen op whose backward is another (``aten.convolution_backward``, the
fused attention kernels' backward) counts that backward as one op too: the nodes the call
recorded get hooks that count the backward once, when the node of the call's output has run, and
count nothing of what those nodes run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import ember
from ember._tensor import Tensor
from ember.autograd import engine
from ember.autograd.node import _SEQUENCE, AccumulateGrad
from ember.dispatcher.layers import STACK, Layer

from .flop_counter import op_key


class Rule(NamedTuple):
    """How a call of an ember op counts, when ``applies(args)`` (always when None): under
    ``key`` with ATen's arguments, ``convert(args, out) -> (args, kwargs, out)`` (None: the op's
    own, ``_aten_call``); ``backward`` is ``(key, convert)`` for an op whose backward counts as
    one ATen op: ``convert(shapes, needs, grad_out_shape)`` from the forward's converted
    arguments (tensors as shapes) and which tensor arguments need a gradient. A key None counts
    nothing, and nothing inside: PyTorch runs the op as one ATen op without a formula."""

    key: str | None
    convert: Callable | None
    applies: Callable | None = None
    backward: tuple | None = None


def _aten_call(op) -> Callable:
    """``convert`` for an op counted as itself: its keyword-only arguments as keywords, as
    PyTorch's dispatch passes them (``beta`` and ``alpha`` of addmm)."""
    schema = op.schema.args
    first = next((i for i, a in enumerate(schema) if a.kwarg_only), len(schema))
    names = [a.name for a in schema[first:]]

    def convert(args, out):
        return args[:first], dict(zip(names, args[first:])), out

    return convert


def _shape(value):
    return tuple(value.shape) if isinstance(value, Tensor) else value


def _batched(x, w, out) -> tuple:
    """Input and output shapes with a batch dim: PyTorch counts an unbatched convolution as
    one of a batch of 1."""
    if x.ndim == w.ndim:
        return tuple(x.shape), tuple(out.shape)
    return (1, *x.shape), (1, *out.shape)


def _conv(args, out):
    x, w, bias, stride, padding, dilation, groups = args
    x_shape, out_shape = _batched(x, w, out)
    return (x_shape, w, bias, stride, padding, dilation, False, (0,), groups), {}, out_shape


def _conv_transposed(args, out):
    x, w, bias, stride, padding, output_padding, groups, dilation = args
    x_shape, out_shape = _batched(x, w, out)
    return (
        (x_shape, w, bias, stride, padding, dilation, True, output_padding, groups),
        {},
        out_shape,
    )


def _conv_backward(shapes, needs, grad_out_shape):
    x, w, bias, stride, padding, dilation, transposed, output_padding, groups = shapes
    grad_out = grad_out_shape if len(grad_out_shape) == len(x) else (1, *grad_out_shape)
    bias_sizes = None if bias is None else list(bias)
    mask = [needs[0], needs[1], bias is not None and needs[2]]
    args = (grad_out, x, w, bias_sizes, stride, padding, dilation, transposed, output_padding)
    out = tuple(shape if m else None for shape, m in zip((x, w, bias), mask))
    return (*args, groups, mask), {}, out


def _flash(args) -> bool:
    """Whether PyTorch's CPU build runs this attention as its flash kernel (else its math
    path, whose products count one by one)."""
    from ember.nn.functional.attention import flash_on_cpu

    names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
    try:
        return ember.backends.cuda.sdp.flash and flash_on_cpu(dict(zip(names, args)))
    except (AttributeError, TypeError):  # not tensors: the op's own error says so
        return False


def _sdpa_backward(shapes, needs, grad_out_shape):
    return (grad_out_shape, *shapes[:3]), {}, None


def _vector_product(args) -> bool:
    """Whether PyTorch's matmul runs this call as ``dot`` or ``mv`` (LinearAlgebra.cpp's
    _matmul_impl and should_fold), not as mm or bmm."""
    a, b = args[:2]
    d1, d2 = a.ndim, b.ndim
    if d2 == 1 and d1 <= 2:
        return True
    if not ((d1 >= 3 and d2 == 1) or (d2 >= 3 and d1 == 1)):
        return False
    # should_fold: the larger operand (transposed when it is the second) folds to a matrix
    big, small = (a, b) if d1 >= d2 else (b, a)
    shape, strides = list(big.shape), list(big.stride())
    if big is b:
        shape[-2:], strides[-2:] = shape[:-3:-1], strides[:-3:-1]
    if small.requires_grad or 0 in shape:
        return True
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(len(shape) - 2))


_FLASH = "aten._scaled_dot_product_flash_attention_for_cpu"
_CONVOLUTION_BACKWARD = ("aten.convolution_backward", _conv_backward)
_UNCOUNTED = Rule(None, None, backward=(None, None))
# ember ops that PyTorch runs as another ATen op; every other op counts as ``aten.<its name>``
RULES = {
    **dict.fromkeys(("mv", "dot", "vdot", "addmv", "bilinear"), _UNCOUNTED),
    "matmul": _UNCOUNTED._replace(applies=_vector_product),
    "addbmm": Rule(None, None),  # its backward runs bmm, as PyTorch's does
    "conv1d": Rule("aten.convolution", _conv, backward=_CONVOLUTION_BACKWARD),
    "conv2d": Rule("aten.convolution", _conv, backward=_CONVOLUTION_BACKWARD),
    "conv_transpose2d": Rule("aten.convolution", _conv_transposed, backward=_CONVOLUTION_BACKWARD),
    "scaled_dot_product_attention": Rule(
        _FLASH, None, applies=_flash, backward=(f"{_FLASH}_backward", _sdpa_backward)
    ),
}


def _region(head, start: int) -> list:
    """The graph nodes a call made: those reached from its output's node ``head`` that are
    newer than ``start`` (leaf accumulators aside)."""
    nodes, stack = {head: None}, [head]
    while stack:
        for edge in stack.pop().edges:
            if edge is None:
                continue
            node = edge[0]
            if node not in nodes and not isinstance(node, AccumulateGrad) and node.seq > start:
                nodes[node] = None
                stack.append(node)
    return list(nodes)


class FlopCounting:
    """One counter's state in the layer: its rules per op, how deep it is in a counted call,
    the backward node running whose ops it does not count, and the hooks it put on nodes."""

    def __init__(self, counter):
        self.counter = counter
        self.rules: dict = {}  # op -> Rule or None (not counted), memo
        self.depth = 0
        self.running = None
        self.handles: list = []

    @classmethod
    def enter(cls, counter) -> FlopCounting:
        state = cls(counter)
        LAYER.states = LAYER.states + (state,)
        STACK.install(LAYER)
        return state

    def exit(self) -> None:
        LAYER.states = tuple(s for s in LAYER.states if s is not self)
        if not LAYER.states:
            STACK.remove(LAYER)
        for handle in self.handles:
            handle.remove()
        self.handles.clear()

    def rule(self, op) -> Rule | None:
        """The rule of ``op`` for this counter, None when it has no formula."""
        try:
            return self.rules[op]
        except KeyError:
            pass
        key = op_key(op)
        found = RULES.get(op.name) if key not in self.counter.custom_keys else None
        if found is None:
            found = Rule(key, None)
        if found.key is not None and found.key not in self.counter.flop_registry:
            found = None
        elif found.convert is None:
            found = found._replace(convert=_aten_call(op))
        self.rules[op] = found
        return found

    def wants(self, op, args) -> Rule | None:
        if self.depth or self.running is not None:
            return None
        rule = self.rule(op)
        if rule is None or (rule.applies is not None and not rule.applies(args)):
            return None
        return rule

    def count(self, op, args, out, rule: Rule, start: int) -> None:
        fargs = args
        if rule.key is not None:
            fargs, fkwargs, out_val = rule.convert(args, out)
            self.counter._count_flops(rule.key, out_val, fargs, fkwargs)
        head = out._grad_fn if isinstance(out, Tensor) else None
        if rule.backward is None or head is None or head.seq <= start:
            return
        key, convert = rule.backward
        counted = None
        if key is not None:
            shapes = tuple(_shape(a) for a in fargs)
            needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)

            def counted(grad_out_shape):
                bargs, bkwargs, bout = convert(shapes, needs, grad_out_shape)
                self.counter._count_flops(key, bout, bargs, bkwargs)

        for node in _region(head, start):
            self.watch(node, counted if node is head else None)

    def watch(self, node, counted) -> None:
        """Count nothing while ``node`` runs; then ``counted(grad_out_shape)`` if given."""

        def enter(grads):
            needed = self.counting and any(g is not None for g in grads)
            if needed and engine.will_engine_execute_node(node):
                self.running = node

        def leave(grad_inputs, grad_outputs):
            if self.running is node:
                self.running = None
                if counted is not None and grad_outputs[0] is not None:
                    counted(tuple(grad_outputs[0].shape))

        self.handles.append(node.register_prehook(enter))
        self.handles.append(node.register_hook(leave))

    @property
    def counting(self) -> bool:
        return self in LAYER.states


class FlopCountingLayer(Layer):
    """Counts each op call for the counters (``FlopCounting``) open now."""

    name = "flop counting"
    priority = 225

    def __init__(self):
        self.states: tuple = ()

    def handle(self, op, args):
        counting = [(s, r) for s in self.states if (r := s.wants(op, args)) is not None]
        if not counting:
            return op.redispatch(self, args)
        start = next(_SEQUENCE)
        for state, _ in counting:
            state.depth += 1
        try:
            out = op.redispatch(self, args)
        finally:
            for state, _ in counting:
                state.depth -= 1
        for state, rule in counting:
            state.count(op, args, out, rule, start)
        return out


LAYER = FlopCountingLayer()
