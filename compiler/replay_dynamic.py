"""The size-generic program: replay.py's dispatch-free program with shapes computed per call.

The program is written from the captured graph as replay.py writes it, except that each shape,
stride and size read that depends on the dynamic dims is an expression of the call's sizes
(``sizes.Shapes``: ``_s0 = x._shape[0]`` at the top, ``empty((_s0, 64), ...)``), so the
buffers are sized per call; the broadcasting checks compare those expressions (``[B, 64]`` and
``[64, 64]`` are not the same shape even when B is 64 at capture). Fused chains get a
description with its ``dynamic`` dims, which the backend's generator reads per call
(the CPU plugin's fused_sizes.py); a backend that declines it, or a chain whose shapes agree only
at the captured sizes or that reads a dynamic size as a scalar, runs op by op, the reason in the
fusion log. A composite (``linear``) gets its sub-program per call's shapes (built once each).
A node whose fitted shape may not hold at other sizes (size_rules.py: a slice that clamps, an op
the rules do not know) runs its runner and compares the shape it gave with the fitted one: where
they differ, the program returns None and the call runs the dispatching code (the reason in the
``recompiles`` log), never buffers of the fitted sizes.
"""

from __future__ import annotations

import dataclasses
import functools

from ember._tensor import contiguous_strides
from ember.dispatcher.kinds import twin
from ember.jit.ops import resolve
from ember.jit.types import TensorType

from . import logs, lower, replay, size_rules, sizes
from .sizes import above_one

_UNBUILT = object()


class GenericProgram(replay._Program):
    """replay._Program whose shapes are expressions of the call's dynamic sizes."""

    ARENA = False  # its temporaries' sizes change from call to call

    def __init__(self, graph, nodes, chains=(), shapes=None):
        super().__init__(graph, nodes, chains)
        self.shapes = shapes
        self.taken |= {f"_s{k}" for k in range(len(shapes.symbols))}

    def program(self, name, inputs, outputs, method: bool) -> list:
        first, *body = super().program(name, inputs, outputs, method)
        values = list(inputs)
        reads = [
            f"    _s{k} = {self.name(values[i])}._shape[{d}]"
            for k, (i, d) in enumerate(self.shapes.symbols)
        ]
        # an input dim fitted to another's symbol (a target's batch, equal to the input's at
        # every traced size) must be so at this call too: else the dispatching code runs it
        own = {(i, d): f"_s{k}" for k, (i, d) in enumerate(self.shapes.symbols)}
        for i, value in enumerate(values):
            for d, n in enumerate(self.shapes.of(value) or ()):
                if isinstance(n, str) and own.get((i, d)) != n:
                    reads.append(f"    if {self.name(value)}._shape[{d}] != {n}:")
                    reads.append("        return None")
        return [first, *reads, *body]

    def _symbolic(self, value):
        shape = self.shapes.of(value)
        return shape if shape and any(isinstance(n, str) for n in shape) else None

    def shape(self, value) -> str:
        shape = self._symbolic(value)
        if shape is None:
            return super().shape(value)
        return f"({''.join(f'{n}, ' for n in shape)})"

    def strides(self, value) -> str:
        if self._symbolic(value) is None:
            return super().strides(value)
        return f"{self.bind(contiguous_strides, 'CS')}({self.shape(value)})"

    def number(self, value):
        found = self.shapes.number(value)
        return super().number(value) if found is None else found

    def sizes_of(self, value) -> tuple:
        return self.shapes.of(value) or super().sizes_of(value)

    def node(self, node, indent: str, out: list) -> None:
        kind = node.kind()
        if kind == "prim::Constant" and self.shapes.constant(node.output()) is not None:
            self.inline[node.output()] = self.shapes.constant(node.output())
            return
        op = None if kind.startswith("prim::") else resolve(kind)
        results = [v for v in node.outputs() if isinstance(v.type(), TensorType)]
        if op is None or not results or size_rules.trusted(op, node, self.shapes):
            return super().node(node, indent, out)
        # its runner at the call's sizes: never a buffer of the fitted shape, nor a composite's
        # decomposition without the runner's checks (topk's k past the end raises topk's
        # error); then its shapes against the fitted ones: a call where they differ runs the
        # dispatching code
        if op.runner is None or replay._transposes(node):
            super().node(node, indent, out)
        else:
            self.call_runner(op, node, indent, out)
        for value in results:
            name = self.name(value)
            miss = self.bind(_Miss(op, node, self.shapes.of(value)), "MISS")
            out.append(f"{indent}if {name}._shape != {self.shape(value)}:")
            out.append(f"{indent}    return {miss}({name}._shape)")

    def lower(self, op, node):
        tensors = [v for v in (*node.inputs(), *node.outputs()) if isinstance(v.type(), TensorType)]
        if all(self._symbolic(v) is None for v in tensors):
            return super().lower(op, node)
        specs = lower.arguments(op, node)
        if specs is None:
            return None
        inputs = [v for v in node.inputs() if isinstance(v.type(), TensorType)]
        groups = {
            (k, d): n
            for k, v in enumerate(inputs)
            for d, n in enumerate(self.shapes.of(v) or ())
            if isinstance(n, str)
        }
        return PerShape(op, specs, self.fuse, groups)


class PerShape:
    """A composite's sub-program for every size: lower.py's decomposition traced at the first
    call's shapes and at two probes' (sizes.py), written as a generic program; else one
    sub-program per call's shapes (built at the first call of each), else its runner."""

    def __init__(self, op, specs, fuse, groups):
        self.op, self.specs, self.fuse = op, specs, fuse
        self.groups = groups  # {(tensor index, dim): its expression in the outer program}
        self.runner = twin.runner(op)
        self.generic = _UNBUILT
        self.programs: dict = {}

    def __call__(self, *tensors):
        generic = self.generic
        if generic is _UNBUILT:
            generic = self.generic = self._generic([t._shape for t in tensors])
        found = None if generic is None else generic(*tensors)
        if found is not None:  # None: a checked node's shape differs from the fit
            return found
        key = tuple(t._shape for t in tensors)
        program = self.programs.get(key)
        if program is None:
            found = lower.of_types(self.op, self._specs(key), replay.build, fuse=self.fuse)
            program = self.programs[key] = found or self._run
        return program(*tensors)

    def _specs(self, shapes) -> list:
        it = iter(shapes)
        return [s if s[0] == "=" else (s[0], next(it), s[2]) for s in self.specs]

    def _generic(self, shapes):
        graphs = []
        for k in range(4):
            probe = sizes.probe_sizes(shapes, self.groups, k) if k else shapes
            graph = lower.graph_of(self.op, self._specs(probe))
            if graph is None:
                return None
            graphs.append(graph)
        found = sizes.fit(graphs)
        if isinstance(found, str):
            return None
        writer = functools.partial(GenericProgram, shapes=found)
        return replay.build(graphs[0], fuse=self.fuse, writer=writer, check=check(found))

    def _run(self, *tensors):
        it = iter(tensors)
        args = [s[1] if s[0] == "=" else next(it) for s in self.specs]
        return (self.runner(self.op, *args),)


class _Miss:
    """A checked node's shape differs from the fitted one at this call: why, in the log."""

    def __init__(self, op, node, fitted):
        self.where = f"{op.name} at {node.sourceRange() or '?'}"
        self.fitted = f"({', '.join(str(n) for n in fitted)})" if fitted is not None else "?"

    def __call__(self, shape):
        if logs.enabled("recompiles"):
            logs.log(
                "recompiles",
                f"size-generic program: {self.where} gave {list(shape)} where the fit says "
                f"{self.fitted}: this call runs the dispatching code",
            )


def check(shapes):
    """fusion.schedule's ``check``: the description with the chain's dynamic dims, or why the
    chain cannot serve every size."""

    def described(chain, description):
        values = {v for n in chain.nodes for v in (*n.inputs(), *n.outputs())}
        seen: dict = {}  # (dim from the right, captured size) -> its expression: one each
        for value in values:
            if not isinstance(value.type(), TensorType):
                if shapes.number(value) is not None or shapes.constant(value) is not None:
                    return "a step reads a dynamic size as a number"
                continue
            shape = shapes.of(value)
            if shape is None:
                return f"the shape of {value.debugName()} is unknown"
            sizes = value.type().sizes()
            for at, (n, e) in enumerate(zip(sizes, shape)):  # dims aligned from the right
                if isinstance(e, str) and not above_one(e):  # the kernel refuses 0 and 1
                    return f"its size {e} may be 0 or 1 at a call"
                if seen.setdefault((len(sizes) - at, n), e) != e:
                    return f"its shapes agree only at the captured sizes ({n} is {e} and {seen[n]})"
        rank = len(description.shape)
        dims = tuple(
            i for i, n in enumerate(description.shape) if isinstance(seen.get((rank - i, n)), str)
        )
        return dataclasses.replace(description, dynamic=dims) if dims else description

    return described
