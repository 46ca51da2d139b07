"""``ember._dynamo.explain(fn)(*args)``: what a capture finds, without compiling anything.

The call runs once under the tracing layer; a construct that would break the graph is
recorded with its reason and the recording goes on, so the counts are those of the graphs a
graph-breaking compiler would build (PyTorch's ``ExplainOutput``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from . import fusion
from .observer import EXPLAIN, Observer
from .region import record, replayed_graph
from .replay import plan_memory


@dataclass
class ExplainOutput:
    graphs: list = field(default_factory=list)
    graph_count: int = 0
    graph_break_count: int = 0
    break_reasons: list = field(default_factory=list)
    op_count: int = 0
    ops_per_graph: list = field(default_factory=list)
    out_guards: list = field(default_factory=list)
    compile_times: str = ""
    # the replay's memory plan (compiler/replay.py): intermediates live at once, allocated in all
    peak_bytes: int = 0
    total_bytes: int = 0
    # the fusion scheduler's plan (compiler/fusion.py): the elementwise chains and the others
    fusion: str = ""
    # the compiled training pair (compiler/joint.py, partition.py): bytes its forward saves for
    # its backward; None when the graph records no gradient (or the pair is not built)
    saved_bytes: int | None = None

    def __str__(self) -> str:
        lines = [
            f"Graph Count: {self.graph_count}",
            f"Graph Break Count: {self.graph_break_count}",
            f"Op Count: {self.op_count}",
            "Break Reasons:",
        ]
        for i, reason in enumerate(self.break_reasons, 1):
            lines.append(f"  Break Reason {i}:")
            lines += ["    " + line for line in reason.reason.splitlines()]
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph, 1):
            lines.append(f"  Ops {i}:")
            lines += [f"    {op}" for op in ops]
        lines.append("Out Guards:")
        lines += [f"  Guard {i}: {guard}" for i, guard in enumerate(self.out_guards, 1)]
        lines.append(f"Compile Times: {self.compile_times}")
        lines.append(
            f"Peak Memory: {self.peak_bytes} bytes of intermediates ({self.total_bytes} "
            "allocated in all)"
        )
        if self.fusion:
            lines.append(f"Fusion: {self.fusion}")
        if self.saved_bytes is not None:
            lines.append(f"Saved for backward: {self.saved_bytes} bytes (the compiled pair)")
        return "\n".join(lines) + "\n"


def explain(f, *extra_args, **extra_kwargs):
    """``explain(fn)(*args, **kwargs)`` -> ``ExplainOutput`` (graphs, breaks with reasons, ops
    per graph). The older form ``explain(fn, *args)`` is accepted too, as in PyTorch.

    Example:
        >>> out = ember._dynamo.explain(fn)(ember.randn(4))
        >>> out.graph_count, out.graph_break_count, [r.reason for r in out.break_reasons]
    """

    def inner(*args, **kwargs) -> ExplainOutput:
        from ember.nn.modules.module import Module

        root = f if isinstance(f, Module) else None
        fn = f._call_impl if root is not None else f
        observer = Observer(EXPLAIN, None)
        start = time.perf_counter()
        _result, region = record(fn, args, kwargs, root, observer)
        seconds = time.perf_counter() - start
        segments = [ops for ops in observer.segments if ops]
        from . import guards
        from .region import split

        leaves, _spec, positions = split(args, kwargs)
        graph = region.graph if region is not None else None  # None: optimizer calls alone
        memory = plan_memory(graph) if graph is not None else {"peak": 0, "total": 0}
        return ExplainOutput(
            graphs=[graph] if graph is not None else [],
            graph_count=len(segments),
            graph_break_count=len(observer.reasons),
            break_reasons=observer.reasons,
            op_count=sum(len(ops) for ops in segments),
            ops_per_graph=segments,
            out_guards=guards.describe(
                guards.call_key(leaves), [f"L[{i}]" for i in range(len(leaves))]
            ),
            compile_times=f"capture {seconds:.4f} s",
            peak_bytes=memory["peak"],
            total_bytes=memory["total"],
            fusion=fusion.summary(replayed_graph(graph)) if graph is not None else "",
            saved_bytes=_saved_bytes(region, root, [leaves[i] for i in positions]),
        )

    if extra_args or extra_kwargs:
        return inner(*extra_args, **extra_kwargs)
    return inner


def _saved_bytes(region, root, tensors):
    """What the compiled pair of ``region`` saves for its backward (the bytes its partition
    chose), or None: no gradient recorded, a training step's region, or no pair."""
    from ember.autograd.grad_mode import is_grad_enabled

    from . import joint
    from .region import Region

    if type(region) is not Region or not is_grad_enabled():
        return None
    if not any(getattr(v.type(), "requires_grad", lambda: None)() for v in region.graph.outputs()):
        return None
    pair = joint.build(region, root, tensors)
    return None if pair is None else pair.saved_bytes
