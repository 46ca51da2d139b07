"""``checkpoint(..., debug=True)``: when the recomputation saves other tensors than the forward
did, the error lists the ops each run made, with where the program called them, in PyTorch's
layout.

The forward and the recomputation each run under a logging dispatch layer (priority 45, below
autograd and the other checkpoint layers: it sees the calls autograd records, as PyTorch's
LoggingTensorMode sees aten ops), which notes each outermost call and the program's stack
(ember's own frames left out).
"""

from __future__ import annotations

import os
import traceback

from ember._tensor import Tensor

from ..dispatcher.layers import Layer, installed

_TEMPLATE = """ \
An error happened while unpacking tensors; dumping logs of latest computation
because you passed `debug=True` to `torch.utils.checkpoint.checkpoint()`.
Scroll all the way down for guidance on how to navigate these logs.

+~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~+
|        1. Stack traces of the operators that ran in the original forward     |
+------------------------------------------------------------------------------+

{forward_traces}
+~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~+
|        2. Stack traces of the operators that ran during recomputation        |
+------------------------------------------------------------------------------+

{recompute_traces}
+~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~+
|       3. Log of operators in the original forward and recomputation          |
+------------------------------------------------------------------------------+
(Scroll up to correlate stack traces with each operation listed below. This
 helps identify their source in the code.)

IMPORTANT: Differences in "detach" calls between the original forward and the
           recomputation are expected. They are introduced by the checkpointing
           mechanism and can be ignored.

Operations executed during the original forward:

{forward_ops}

Operations executed during recomputation:

{recompute_ops}

+------------------------------------------------------------------------------+
 ERROR: Detected non-determinism while running activation checkpointing

 You are seeing this error because you passed `debug=True` to checkpoint and
 tensors to be saved during the original forward and differ between those saved
 during recomputation. This can happen if different operators were ran in the
 original forward and in the recomputation.

 To identify where the mismatch may be coming from, you can do the following:

 1) Compare the operators ran during original forward and recomputation to
    see where they differ. These operators are printed above in the order they
    were executed.

 2) Review the stack trace for each operator to locate its invocation source.
    Each operator's stack trace is printed in their execution order.

 Note that the logs can be quite long. Here's how they are structured:
 (Tip: you can Ctrl-f for these headers)

 1. Stack traces of the operators that ran in the original forward
 2. Stack traces of the operators that ran during recomputation
 3. Log of operators in the original forward and recomputation
 4. Error message                                             <--- You are here
--------------------------------------------------------------------------------
"""

# ember's own frames (the checkout's packages) are not where a program called an op.
_OURS = tuple(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep + name + os.sep
    for name in ("ember", "autograd", "dispatcher", "nn", "jit")
)


def _describe(value) -> str:
    if isinstance(value, Tensor):
        return f"{value.dtype.name}{list(value.shape)}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_describe(v) for v in value) + "]"
    return repr(value)


class _Logging(Layer):
    """Notes each outermost op call (what runs inside an op is part of it) and its stack."""

    name = "checkpoint debug log"
    priority = 45

    def __init__(self):
        self.logs: list = []
        self.stacks: list = []
        self.depth = 0

    def handle(self, op, args):
        if self.depth:
            return op.redispatch(self, args)
        self.depth += 1
        try:
            out = op.redispatch(self, args)
        finally:
            self.depth -= 1
        self.logs.append(f"{_describe(out)} = {op.name}({', '.join(map(_describe, args))})")
        frames = traceback.extract_stack()[:-1]
        self.stacks.append([f for f in frames if not f.filename.startswith(_OURS)])
        return out


class _Run(installed):
    """One run's log, started afresh each time it is entered."""

    def __enter__(self):
        self.layer.logs, self.layer.stacks = [], []
        return super().__enter__()


def _traces(label: str, layer: _Logging) -> str:
    out = ""
    for i, (log, stack) in enumerate(zip(layer.logs, layer.stacks)):
        out += f"{log}   ({i + 1} of {len(layer.logs)} in {label})\n\n"
        out += "".join(f"{f.filename}:{f.lineno}:{f.name}\n" for f in stack)
        out += "\n\n"
    return out


def debug_context_and_callback(error_type):
    """``(context_fn, error_cb)``: the two logging runs, and what turns a ``error_type`` of the
    recomputation into the error with both logs."""
    forward, recompute = _Logging(), _Logging()

    def context_fn():
        return _Run(forward), _Run(recompute)

    def error_cb(error):
        raise error_type(
            _TEMPLATE.format(
                forward_traces=_traces("original", forward),
                recompute_traces=_traces("recompute", recompute),
                forward_ops="\n".join(forward.logs),
                recompute_ops="\n".join(recompute.logs),
            )
        ) from error

    return context_fn, error_cb
