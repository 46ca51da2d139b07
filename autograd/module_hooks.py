"""Module full backward hooks (``Module.register_full_backward_hook`` and
``register_full_backward_pre_hook``), as PyTorch builds them.

The module's tensor inputs and outputs pass through an identity Function
(``BackwardHookFunction``); a hook on the outputs' node sees the gradients of the outputs and
runs the pre-hooks (which may replace them), a hook on the inputs' node sees the gradients of
the inputs and runs the full hooks with both (which may replace the inputs' gradients). When no
input requires grad, the full hooks run on the outputs' node with every input gradient None.
"""

from __future__ import annotations

import warnings

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
