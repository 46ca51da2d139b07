"""Module full backward hooks (``Module.register_full_backward_hook`` and
``register_full_backward_pre_hook``), as PyTorch builds them.

The module's tensor inputs and outputs pass through an identity Function
(``BackwardHookFunction``); a hook on the outputs' node sees the gradients of the outputs and
runs the pre-hooks (which may replace them), a hook on the inputs' node sees the gradients of
the inputs and runs the full hooks with both (which may replace the inputs' gradients). When no
input requires grad, the full hooks run on the outputs' node with every input gradient None.
"""

from __future__ import annotations

import functools
import warnings
import weakref

from ember._tensor import Tensor

from . import grad_mode
from .function import Function


class BackwardHookFunction(Function):
    """The identity, so that a module's inputs and outputs get a node of their own."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


def _pack(indices, values, size: int) -> tuple:
    out = [None] * size
    for index, value in zip(indices, values):
        out[index] = value
    return tuple(out)


class BackwardHook:
    """The hooks of one module call: wraps its inputs before forward and its outputs after."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = -1
        self.input_index = self.output_index = None

    def _apply(self, fn, args):
        index = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in index]
        if not (any(t.requires_grad for t in tensors) and grad_mode.is_grad_enabled()):
            return args, None
        wrapped = BackwardHookFunction.apply(*tensors)
        nodes = [t.grad_fn for t in wrapped if t.grad_fn is not None]
        fn(nodes[0])
        out = list(args)
        for i, t in zip(index, wrapped):
            out[i] = t
        return tuple(out), index

    def setup_input_hook(self, args):
        def fn(node):
            node.register_hook(self._input_hook)

        wrapped, self.input_index = self._apply(fn, args)
        self.n_inputs = len(args)
        return wrapped

    def _input_hook(self, grad_inputs, _grad_outputs):
        if self.grad_outputs is None:
            return None  # the gradient reached the inputs without passing the outputs
        res = _pack(self.input_index, grad_inputs, self.n_inputs)
        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError(
                    "Backward hook returned an invalid number of grad_input, got "
                    f"{len(out)}, but expected {len(res)}"
                )
            res = out
        self.grad_outputs = None
        return tuple(res[i] for i in self.input_index)

    def setup_output_hook(self, result):
        single = not isinstance(result, tuple)
        args = (result,) if single else result

        def fn(node):
            node.register_hook(self._output_hook)

        wrapped, self.output_index = self._apply(fn, args)
        self.n_outputs = len(args)
        return wrapped[0] if single else wrapped

    def _output_hook(self, _grad_inputs, grad_outputs):
        self.grad_outputs = _pack(self.output_index, grad_outputs, self.n_outputs)
        for hook in self.user_pre_hooks:
            found = hook(self.module, self.grad_outputs)
            if found is None:
                continue
            if len(found) != len(self.grad_outputs):
                raise RuntimeError(
                    "Backward pre hook returned an invalid number of grad_output, got "
                    f"{len(found)}, but expected {len(self.grad_outputs)}"
                )
            self.grad_outputs = found
        local = self.grad_outputs
        if self.input_index is None:
            warnings.warn(
                "Full backward hook is firing when gradients are computed with respect to module "
                "outputs since no inputs require gradients. See "
                "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                "#torch.nn.Module.register_full_backward_hook for more details.",
                stacklevel=5,
            )
            grad_inputs = _pack([], [], self.n_inputs)
            for hook in self.user_hooks:
                res = hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                    raise RuntimeError(
                        "Backward hook for Modules where no input requires gradient should always "
                        "return None or None for all gradients."
                    )
            self.grad_outputs = None
        return tuple(local[i] for i in self.output_index)


# ---- global hooks and the legacy (non-full) hooks -----------------------------------------------
# nn.modules.module.register_module_*backward*_hook: hooks of every module, run before its own.
GLOBAL_BACKWARD_HOOKS: dict = {}
GLOBAL_BACKWARD_PRE_HOOKS: dict = {}
GLOBAL_IS_FULL: list = [None]  # True: full hooks, False: legacy ones, None: neither yet

_MIXED = (
    "Cannot use both regular backward hooks and full backward hooks {}. Please use only one of "
    "them."
)


def choose_kind(module, full: bool) -> None:
    """Record that ``module`` (or the global table, when ``module`` is None) now holds full or
    legacy backward hooks; PyTorch refuses a mix."""
    current = GLOBAL_IS_FULL[0] if module is None else module._is_full_backward_hook
    if current is (not full):
        where = "as a global Module hook" if module is None else "on a single Module"
        raise RuntimeError(_MIXED.format(where))
    if module is None:
        GLOBAL_IS_FULL[0] = full
    else:
        object.__setattr__(module, "_is_full_backward_hook", full)


def split_hooks(module) -> tuple[list, list, list]:
    """``(full hooks, legacy hooks, pre-hooks)`` of one call of ``module``, the global ones
    first (PyTorch's ``_get_backward_hooks`` and ``_get_backward_pre_hooks``)."""
    full, legacy = [], []
    for is_full, table in (
        (GLOBAL_IS_FULL[0], GLOBAL_BACKWARD_HOOKS),
        (module._is_full_backward_hook, module._backward_hooks),
    ):
        if is_full is True:
            full += table.values()
        elif is_full is False:
            legacy += table.values()
    return full, legacy, [*GLOBAL_BACKWARD_PRE_HOOKS.values(), *module._backward_pre_hooks.values()]


def attach_legacy(module, hooks: list, args: tuple, result) -> None:
    """The deprecated ``register_backward_hook``: ``hook(module, grad_input, grad_output)`` on
    the node of the output's last op (its inputs' gradients, not the module's), with PyTorch's
    warnings where that differs from the module's."""
    var = result
    while not isinstance(var, Tensor):
        var = (
            next(v for v in var.values() if isinstance(v, Tensor))
            if isinstance(var, dict)
            else var[0]
        )
    node = var.grad_fn
    if node is None:
        return
    owner = weakref.ref(module)  # the graph does not keep the module alive, as in PyTorch
    for hook in hooks:
        node.register_hook(functools.partial(_call_legacy, owner, hook))
    _warn_legacy(args, result, node)


def _call_legacy(owner, hook, grad_inputs, grad_outputs):
    module = owner()
    if module is None:
        raise RuntimeError("You are trying to call the hook of a dead Module!")
    return hook(module, grad_inputs, grad_outputs)


def _all_tensors(value) -> bool:
    return isinstance(value, tuple) and all(isinstance(v, Tensor) for v in value)


def _future(message: str) -> None:
    warnings.warn(message, FutureWarning, stacklevel=5)


def _warn_legacy(inputs, result, node) -> None:
    result = (result,) if isinstance(result, Tensor) else result
    if not _all_tensors(result):
        return _future(
            "Using non-full backward hooks on a Module that does not return a single Tensor or a "
            "tuple of Tensors is deprecated and will be removed in future versions. This hook "
            "will be missing some of the grad_output. Please use register_full_backward_hook to "
            "get the documented behavior."
        )
    if not _all_tensors(inputs):
        return _future(
            "Using non-full backward hooks on a Module that does not take as input a single "
            "Tensor or a tuple of Tensors is deprecated and will be removed in future versions. "
            "This hook will be missing some of the grad_input. Please use "
            "register_full_backward_hook to get the documented behavior."
        )
    out_nodes = {r.grad_fn for r in result if r.grad_fn is not None}
    if not out_nodes or (len(out_nodes) == 1 and node not in out_nodes):
        return _future(
            "Using a non-full backward hook when outputs are nested in python data structure is "
            "deprecated and will be removed in future versions. This hook will be missing some "
            "grad_output."
        )
    if len(out_nodes) > 1:
        return _future(
            "Using a non-full backward hook when outputs are generated by different autograd "
            "Nodes is deprecated and will be removed in future versions. This hook will be "
            "missing some grad_output. Please use register_full_backward_hook to get the "
            "documented behavior."
        )
    if {i.grad_fn for i in inputs if i.grad_fn is not None} != {n for n, _ in node.next_functions}:
        _future(
            "Using a non-full backward hook when the forward contains multiple autograd Nodes is "
            "deprecated and will be removed in future versions. This hook will be missing some "
            "grad_input. Please use register_full_backward_hook to get the documented behavior."
        )
    return None
