"""Why a construct cannot be captured: one record per construct, PyTorch's titles where it has
one (``Data-dependent branching``, ``Failed to trace builtin operator``...)."""

from __future__ import annotations

import sys
import traceback
from dataclasses import dataclass, field

_READ = (
    "reads the tensor's data into Python, which a graph cannot hold: the value may differ on "
    "the next call"
)
_SCALAR_HINT = (
    "Keep the value a tensor (`x.sum()` rather than `x.sum().item()`) and use ember ops on it."
)


@dataclass(frozen=True)
class Construct:
    gb_type: str
    explanation: str
    hints: tuple = ()


CONSTRUCTS = {
    "item": Construct(
        "Unsupported Tensor.item() call", f"`Tensor.item()` {_READ}.", (_SCALAR_HINT,)
    ),
    "tolist": Construct(
        "Unsupported Tensor.tolist() call", f"`Tensor.tolist()` {_READ}.", (_SCALAR_HINT,)
    ),
    "__bool__": Construct(
        "Data-dependent branching",
        "Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`). ember.compile does "
        "not support tracing dynamic control flow.",
        (
            "Make the code branchless: `ember.where`, `ember.clamp` and `ember.nan_to_num` compile "
            "without graph breaks.",
        ),
    ),
    "__int__": Construct(
        "Unsupported Tensor conversion to int", f"`int(tensor)` {_READ}.", (_SCALAR_HINT,)
    ),
    "__float__": Construct(
        "Unsupported Tensor conversion to float", f"`float(tensor)` {_READ}.", (_SCALAR_HINT,)
    ),
    "__index__": Construct(
        "Unsupported Tensor.__index__() call",
        f"Using a tensor as a Python index {_READ}.",
        (_SCALAR_HINT,),
    ),
    "numpy": Construct(
        "Unsupported Tensor.numpy() call", f"Converting a tensor to a NumPy array {_READ}.", ()
    ),
    "__array__": Construct(
        "Unsupported Tensor.numpy() call", f"Converting a tensor to a NumPy array {_READ}.", ()
    ),
    "print": Construct(
        "Failed to trace builtin operator",
        "ember.compile does not know how to trace builtin operator `print` with argument types "
        "{name}: its output would appear at the capture only",
        (
            "Avoid calling builtin `print` with argument types {name}; print outside the "
            "compiled function.",
        ),
    ),
    "repr": Construct(
        "Unsupported Tensor.__repr__() call", f"Formatting a tensor as text {_READ}.", ()
    ),
    "backward": Construct(
        "Unsupported Tensor.backward() call",
        "ember.compile replays a training step as forward, `loss.backward()` (of the loss alone, "
        "once), then optimizer calls (train_region.py); this backward is another kind, or ops "
        "follow it, so it runs eagerly.",
        (
            "Compute what reads the gradients (metrics, `loss.detach()`) before "
            "`loss.backward()`, or compile the model alone and call `loss.backward()` outside it.",
        ),
    ),
    "autograd.grad": Construct(
        "Unsupported call to ember.autograd.grad",
        "ember.compile captures forward computations; the backward pass it starts runs eagerly.",
        (),
    ),
    "impure": Construct(
        "Call to an impure Python function",
        "`{name}` returns another value at each call (a random number, the clock): a graph would "
        "keep the value the capture saw, so the call and what follows it run eagerly.",
        (
            "Draw random numbers with ember ops (`ember.rand`, `ember.randint`): compiled graphs "
            "draw them afresh at every call.",
        ),
    ),
    "func transform": Construct(
        "Unsupported function transform",
        "`vmap` and forward-mode AD (`jvp`, `jacfwd`, `jacrev`, `hessian`) run their function "
        "under layers of their own, which the capture does not see through: a graph would keep "
        "the transform's result as a constant, so it runs eagerly.",
        ("Compile the function inside the transform (`vmap(ember.compile(f))`) instead.",),
    ),
    "optimizer.step": Construct(
        "Unsupported Optimizer.step() call",
        "A compiled function runs an optimizer step from a plan of fused calls only before the "
        "forward's first op or right after `loss.backward()` (compiler/optim_step.py, "
        "train_region.py); this step runs eagerly.",
        ("Call `opt.step()` right after `loss.backward()`, or outside the compiled function.",),
    ),
    "rng": Construct(
        "Random generator seeded or restored in a compiled function",
        "A replay runs none of the function's Python, so `manual_seed`, `seed` or "
        "`set_rng_state` would act at the capture only and the replay's random ops would draw "
        "on from wherever the generator is; the function runs as compiled segments.",
        ("Seed outside the compiled function.",),
    ),
    "grad": Construct(
        "Tensor.grad read or set in a compiled function",
        "A replay runs none of the function's Python, so a gradient cleared or read by it "
        "(`p.grad = None`, `p.grad.zero_()`) would be cleared at the capture only and the next "
        "backward would accumulate; the function runs as compiled segments.",
        (
            "Clear gradients with `optimizer.zero_grad()` or `model.zero_grad()`, which a "
            "compiled training step replays.",
        ),
    ),
    "autocast": Construct(
        "autocast entered inside a compiled function",
        "ember.compile's trace records ops above the autocast layer, so a graph would keep the "
        "ops without autocast's casts; the function runs as compiled segments, and the ops "
        "under autocast run eagerly through it.",
        (
            "Enter autocast around the compiled call (`with autocast(): model(x)`), which replays "
            "the graph under it.",
        ),
    ),
    "cond": Construct(
        "Data-dependent branching in ember.cond",
        "`ember.cond` with a tensor predicate picks its branch from the tensor's data at each "
        "call; ember.compile records one path of ops (PyTorch captures both branches as a cond "
        "node, which ember's graphs do not have), so the call runs on eagerly from the cond and "
        "later calls run as compiled regions around it (docs/control_flow.md).",
        (
            "Use fullgraph=False, or choose values without branching (`ember.where`), or make "
            "the predicate a Python bool (the capture specialises on it).",
        ),
    ),
    "while_loop": Construct(
        "Data-dependent loop in ember.while_loop",
        "`ember.while_loop` whose cond_fn returns a tensor reads it at each iteration to decide "
        "whether to go on; ember.compile records one path of ops (PyTorch captures the loop as a "
        "while_loop node, which ember's graphs do not have), so the call runs on eagerly from "
        "the loop (docs/control_flow.md).",
        ("Use fullgraph=False, or carry Python ints so that cond_fn returns a Python bool.",),
    ),
    "disable": Construct(
        "Skip calling `ember.compiler.disable()`d function",
        "Skip calling function {name} since it was wrapped with `ember.compiler.disable`.",
        ("Remove the `ember.compiler.disable` call",),
    ),
    "output": Construct(
        "Unsupported output",
        "The function returned a {name}; compiled functions return tensors, Python scalars, "
        "None and tuples, lists and dicts of them.",
        (),
    ),
}


@dataclass
class GraphCompileReason:
    """One graph break (PyTorch's record in ``explain()``'s ``break_reasons``)."""

    reason: str
    user_stack: list = field(default_factory=list)
    graph_break: bool = True


def message(construct: Construct, stack: list, name: str = "") -> str:
    lines = [construct.gb_type, f"  Explanation: {construct.explanation.format(name=name)}"]
    lines += [f"  Hint: {hint.format(name=name)}" for hint in construct.hints]
    if stack:
        lines += ["", "from user code:"]
        lines += [
            f'   File "{f.filename}", line {f.lineno}, in {f.name}\n    {f.line or ""}'.rstrip()
            for f in stack
        ]
    return "\n".join(lines)


def user_stack(entry_code) -> list:
    """The frames between the compiled function's entry (``entry_code``) and the break, without
    ember's own machinery (the tracer, the tensor class, this package)."""
    frames = []
    frame = sys._getframe(1)
    while frame is not None and frame.f_code is not entry_code:
        module = frame.f_globals.get("__name__") or ""
        internal = module == "ember" or module.startswith("ember.")
        if not internal or module.startswith("ember.nn"):
            frames.append((frame, frame.f_lineno))
        frame = frame.f_back
    return list(reversed(traceback.StackSummary.extract(frames)))
