"""Activation checkpointing (``ember.utils.checkpoint``): run a block without keeping its
activations for backward, and recompute them when backward needs them.

Two variants, as PyTorch's:

- reentrant (``use_reentrant=True``): a custom Function runs the block under ``no_grad`` and
  saves only its inputs; its backward reruns the block with grad and calls ``backward`` inside
  the backward pass (so ``autograd.grad`` cannot go through it);
- non-reentrant (``use_reentrant=False``): the block runs normally under saved-tensor hooks that
  keep a placeholder instead of each saved tensor; the first unpack reruns the block under hooks
  that collect the recomputed tensors, stopping as soon as the last one is there. Works with
  ``autograd.grad``, keyword arguments, ``context_fn`` and metadata checks.

Both restore the RNG state of the forward before recomputing, so dropout draws the same mask.
"""

from __future__ import annotations

import contextlib
import warnings

import ember as E
from ember._random import default_generator, generator_for
from ember._tensor import Tensor

from . import grad_mode
from ._pytree import tree_flatten
from .checkpoint_debug import debug_context_and_callback
from .engine import backward as autograd_backward
from .engine import current_graph_task_id
from .function import Function
from .graph import saved_tensors_hooks

_DEBUG_TIP = """
Tip: To see a more detailed error message, either pass `debug=True` to
`torch.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint-debug mode globally.
"""


class CheckpointError(RuntimeError):
    """The recomputation did not save what the forward did."""


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs) -> tuple:
    if not isinstance(inputs, tuple):
        raise RuntimeError(
            "Only tuple of tensors is supported. Got Unsupported input type: "
            f"{type(inputs).__name__}"
        )
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs) -> None:
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn(
            "None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2
        )


# ---- RNG state ----------------------------------------------------------------------------------
class DefaultDeviceType:
    """The device type whose RNG state a checkpoint keeps when no argument is on a non-CPU
    device (PyTorch's: the current accelerator's type, else ``"cpu"``)."""

    _default_device_type: str | None = None

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        if not DefaultDeviceType._default_device_type:
            from ember._accelerator import current_accelerator

            DefaultDeviceType._default_device_type = current_accelerator() or "cpu"
        return DefaultDeviceType._default_device_type


def _generators(args) -> list:
    """The default generators the block may draw from: the CPU one and its tensors' devices'
    (the default device type's when none is on another device)."""
    found = [default_generator]
    for a in args:
        if isinstance(a, Tensor) and a.device.type != "cpu":
            gen = generator_for(a.device)
            if gen not in found:
                found.append(gen)
    if len(found) == 1 and DefaultDeviceType.get_device_type() != "cpu":
        found.append(generator_for(E.device(DefaultDeviceType.get_device_type())))
    return found


def get_device_states(*args) -> tuple[list, list]:
    """The device indexes of the tensors among ``args`` that are not on the CPU (one per
    tensor, as PyTorch), and the RNG state of each."""
    ids, device_type = [], None
    for leaf in tree_flatten(args)[0]:
        if isinstance(leaf, Tensor) and leaf.device.type not in ("cpu", "meta"):
            ids.append(leaf.get_device())
            device_type = device_type or leaf.device.type
    return ids, [generator_for(E.device(device_type, i)).get_state() for i in ids]


def set_device_states(devices, states, *, device_type=None) -> None:
    """Restore ``get_device_states``' states on those devices (of ``device_type``, by default
    DefaultDeviceType's)."""
    device_type = device_type or DefaultDeviceType.get_device_type()
    if device_type == "meta":
        return
    for index, state in zip(devices, states):
        generator_for(E.device(device_type, index)).set_state(state)


def _rng_states(args) -> list:
    return [(gen, gen.get_state()) for gen in _generators(args)]


@contextlib.contextmanager
def _replayed_rng(states, enabled: bool):
    """Within the block, the generators are where the forward left them; afterwards where they
    were (PyTorch's fork_rng)."""
    if not enabled:
        yield
        return
    now = [(gen, gen.get_state()) for gen, _ in states]
    for gen, state in states:
        gen.set_state(state)
    try:
        yield
    finally:
        for gen, state in now:
            gen.set_state(state)


# ---- reentrant ----------------------------------------------------------------------------------
class CheckpointFunction(Function):
    """The reentrant variant: saves the inputs, reruns the block in backward."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.rng_states = _rng_states(args)
        ctx.inputs, ctx.tensor_indices, tensors = [], [], []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensors)
        with grad_mode.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if not grad_mode.THREAD.mode.checkpoint_valid:
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                "passing an `inputs` parameter to .backward(). To resolve this error, you can "
                "either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument."
            )
        inputs = list(ctx.inputs)
        for i, tensor in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = tensor
        states = ctx.rng_states if ctx.preserve_rng_state else []
        with _replayed_rng(states, ctx.preserve_rng_state):
            detached = detach_variable(tuple(inputs))
            with grad_mode.enable_grad():
                outputs = ctx.run_function(*detached)
        outputs = (outputs,) if isinstance(outputs, Tensor) else outputs
        pairs = [
            (o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad
        ]
        if not pairs:
            raise RuntimeError(
                "none of output has requires_grad=True, this checkpoint() is not necessary"
            )
        autograd_backward([o for o, _ in pairs], [g for _, g in pairs])
        found = tuple(inp.grad if isinstance(inp, Tensor) else None for inp in detached)
        return (None, None) + found


# ---- non-reentrant ------------------------------------------------------------------------------
class _StopRecomputation(Exception):  # noqa: N818 - control flow, never seen by users
    pass


def _metadata(x: Tensor) -> dict:
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


class _Frame:
    """One checkpointed call: what its forward saved (as placeholders) and, once recomputed,
    the recomputed tensors in the same order."""

    def __init__(self, recompute, metadata_fn, early_stop: bool):
        self.recompute_fn = recompute
        self.metadata_fn = metadata_fn
        self.early_stop = early_stop
        self.saved_metadata: list = []
        self.recomputed: dict = {}  # backward pass id -> its recomputed tensors
        self.error_cb = None

    def pack(self, t: Tensor) -> int:
        self.saved_metadata.append(self.metadata_fn(t))
        return len(self.saved_metadata) - 1

    def unpack(self, index: int) -> Tensor:
        # Each backward pass recomputes (a retained graph's second backward too, as PyTorch);
        # an earlier pass's tensors are dropped then.
        task = current_graph_task_id()
        found = self.recomputed.get(task)
        if found is None:
            try:
                found = self._recompute()
            except CheckpointError as error:
                if self.error_cb is None:
                    raise
                self.error_cb(error)  # debug=True: raises with the logs of both runs
            self.recomputed = {task: found}
        return found[index]

    def _recompute(self) -> None:
        found: list = []
        wanted = len(self.saved_metadata)

        def collect(t):
            if len(found) >= wanted:
                raise CheckpointError(
                    "torch.utils.checkpoint: trying to save more tensors during recomputation "
                    f"than during the original forward pass.\n{_DEBUG_TIP}"
                )
            found.append(t.detach())
            if self.early_stop and len(found) == wanted:
                raise _StopRecomputation
            return None

        try:
            with saved_tensors_hooks(collect, lambda _: None):
                self.recompute_fn()
        except _StopRecomputation:
            pass
        self._check(found)
        return found

    def _check(self, found: list) -> None:
        if len(found) != len(self.saved_metadata):
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.saved_metadata)}\n"
                f"Number of tensors saved during recomputation: {len(found)}.\n{_DEBUG_TIP}"
            )
        different = [
            (i, meta, self.metadata_fn(t))
            for i, (meta, t) in enumerate(zip(self.saved_metadata, found))
            if meta != self.metadata_fn(t)
        ]
        if different:
            lines = "".join(
                f"tensor at position {i}:\nsaved metadata: {saved}\nrecomputed metadata: {now}\n"
                for i, saved, now in different
            )
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors have "
                f"different metadata than during the forward pass.\n{lines}.\n{_DEBUG_TIP}"
            )


_CHECKS = {"default": _metadata, "none": lambda _: None}


def _without_reentrant(function, preserve, contexts, determinism_check, early_stop, args, kwargs):
    context_fn, error_cb = contexts
    if determinism_check not in _CHECKS:
        raise ValueError(
            f"determinism_check should be one of {list(_CHECKS)}, but got {determinism_check}"
        )
    forward_context, recompute_context = context_fn()
    states = _rng_states(args) if preserve else []

    def recompute():
        inputs = detach_variable(tuple(args))
        with _replayed_rng(states, preserve), grad_mode.enable_grad(), recompute_context:
            function(*inputs, **kwargs)

    if _EARLY_STOP[0] is not None:
        early_stop = _EARLY_STOP[0]
    frame = _Frame(recompute, _CHECKS[determinism_check], early_stop)
    frame.error_cb = error_cb
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        return function(*args, **kwargs)


# ---- the public functions ---------------------------------------------------------------------
_EARLY_STOP: list = [None]  # set_checkpoint_early_stop's override (None: each call's argument)
_DEBUG: list = [None]  # set_checkpoint_debug_enabled's override


@contextlib.contextmanager
def _overriding(cell: list, value):
    previous = cell[0]
    cell[0] = value
    try:
        yield
    finally:
        cell[0] = previous


def set_checkpoint_early_stop(enable: bool):
    """Whether the non-reentrant checkpoints run in this context stop recomputing as soon as
    every needed tensor is there (overrides their ``early_stop``; only the forward needs to be
    inside)."""
    return _overriding(_EARLY_STOP, enable)


def set_checkpoint_debug_enabled(enabled: bool | None):
    """Overrides ``debug`` of the non-reentrant checkpoints run in this context (None: each
    call's own)."""
    return _overriding(_DEBUG, enabled)


def checkpoint(
    function,
    *args,
    use_reentrant=None,
    context_fn=noop_context_fn,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    **kwargs,
):
    """Run ``function(*args, **kwargs)`` without keeping its activations; backward recomputes
    them (``torch.utils.checkpoint.checkpoint``).

    Args:
        function: the block to run.
        use_reentrant: the variant (see the module docstring); pass it explicitly (None warns,
            as PyTorch does, and means True). ``False`` is recommended.
        context_fn: returns two context managers, for the forward and for the recomputation
            (non-reentrant only).
        determinism_check: ``"default"`` compares the shapes, dtypes and devices of the
            recomputed tensors with the forward's; ``"none"`` skips it.
        debug: on a recomputation that differs from the forward, list the ops of both runs
            and where they were called (non-reentrant only; set_checkpoint_debug_enabled
            overrides it).
        early_stop: stop recomputing once every needed tensor is there.
        preserve_rng_state: (keyword) restore the RNG state before recomputing (default True).

    Example:
        >>> out = ember.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError(
                "Passing `context_fn` or `debug` is only supported when use_reentrant=False."
            )
        return CheckpointFunction.apply(function, preserve, *args)
    error_cb = None
    if _DEBUG[0] if _DEBUG[0] is not None else debug:
        if context_fn is not noop_context_fn:
            raise ValueError("debug=True is incompatible with non-default context_fn")
        context_fn, error_cb = debug_context_and_callback(CheckpointError)
    return _without_reentrant(
        function, preserve, (context_fn, error_cb), determinism_check, early_stop, args, kwargs
    )


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run ``functions`` (a Sequential or a list of modules/functions) in ``segments`` chunks,
    checkpointing all but the last (``torch.utils.checkpoint.checkpoint_sequential``)."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
            "passed explicitly. In version 2.9 we will raise an exception if use_reentrant is not "
            "passed. use_reentrant=False is recommended, but if you need to preserve the current "
            "default behavior, you can pass use_reentrant=True. Refer to docs for more details on "
            "the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input

        return forward

    from ember.nn import Sequential

    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(
            run_function(start, end, functions),
            input,
            use_reentrant=use_reentrant,
            preserve_rng_state=preserve,
        )
    return run_function(end + 1, len(functions) - 1, functions)(input)


__all__ = [
    "CheckpointError",
    "CheckpointFunction",
    "check_backward_validity",
    "checkpoint",
    "checkpoint_sequential",
    "detach_variable",
    "noop_context_fn",
]
