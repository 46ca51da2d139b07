"""A traced optimizer update as one multi-tensor fused kernel: no concatenation, no copy back.

optim_traced.py traces an update once over flat tensors: inputs ``(p, g, *states,
*numbers)``, outputs ``(new p, *new states)``. When the fusion scheduler (fusion.py) makes
every op of that graph one chain whose stored values are exactly those outputs, the chain is
described over the bucket's tensors one by one instead (``segments``: their sizes) with each
output stored into the input it replaces (``writes``: the parameter and each state updated in
place), and the backend serving the device is asked for it through ``ember_fused_kernel``. A
call then hands the kernel the parameters, gradients and states themselves, and it runs one
loop over them (the CPU plugin's fused_multi.py). An update the scheduler splits (Rprop: its
``where`` chains end in bool values) or a backend without the hook (xpu, CUDA) keeps the
concatenating replay.
"""

from __future__ import annotations

import dataclasses

from . import fusion


@dataclasses.dataclass
class MultiTensor:
    kernel: object  # fn(*outs not written in place, *inputs): lists per tensor, else tensors
    outs: list  # per output not written in place: the graph input it replaces
    order: list  # per kernel input: the graph input it is
    description: fusion.FusedKernel

    def arguments(self, tensors: list) -> list:
        """The kernel's arguments from ``tensors``, one entry per graph input (a list of the
        bucket's tensors, or a 0-d number)."""
        return [tensors[i] for i in self.outs] + [tensors[i] for i in self.order]


def build(graph, sizes: list, n_tensors: int) -> tuple:
    """``(MultiTensor, "")`` for the traced update ``graph`` over tensors of ``sizes``, or
    ``(None, why)``. Its first ``n_tensors`` inputs (p, g, states) run per tensor; the others
    are 0-d numbers. Output 0 replaces input 0 (the parameter), output k > 0 input k + 1 (the
    states, after the gradient)."""
    nodes = list(graph.block().nodes())
    ops = [node for node in nodes if not node.kind().startswith("prim::")]
    outputs = list(graph.outputs())
    chains, _ = fusion.plan(nodes, outputs)
    if len(chains) != 1 or len(chains[0].nodes) != len(ops):
        return None, f"{len(ops)} ops in {len(chains)} chain(s), not one"
    chain = chains[0]
    if len(set(outputs)) != len(outputs) or set(chain.outputs) != set(outputs):
        return None, "an output is not a value of the chain"
    description = fusion.describe(chain)
    if isinstance(description, str):
        return None, description
    position = {value: i for i, value in enumerate(graph.inputs())}
    order = [position[value] for value in chain.inputs]
    if any((i < n_tensors) != any(s.strides) for i, s in zip(order, description.inputs)):
        return None, "an input that is neither per tensor nor a number"
    writes, outs = [], []
    for value in chain.outputs:
        k = outputs.index(value)
        target = 0 if k == 0 else k + 1
        writes.append(order.index(target) if target in order else None)
        if target not in order:
            outs.append(target)
    description = dataclasses.replace(description, segments=tuple(sizes), writes=tuple(writes))
    kernel, why = fusion.kernel_for(description)
    if kernel is None:
        return None, why
    if getattr(kernel, "segments", None) != description.segments:
        # a backend that predates segmented descriptions built a one-tensor kernel for it
        return None, "the backend's kernel does not say it takes the segments"
    return MultiTensor(kernel, outs, order, description), ""
