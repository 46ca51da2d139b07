"""``ember.func``: composable function transforms, as ``torch.func``.

``vmap`` maps a per-sample function over a batch (a dispatch layer with batching rules derived
from the op table); ``grad``, ``grad_and_value``, ``vjp``, ``jacrev`` differentiate in reverse
mode, ``jvp``, ``jacfwd``, ``linearize`` in forward mode, ``hessian`` in both; they compose
(``vmap(grad(f))`` gives per-sample gradients, ``jacfwd(jacrev(f))`` the Hessian).
``functional_call`` and ``stack_module_state`` turn modules into functions of their
parameters; ``functionalize`` defers a function's input mutations to its end. The
implementations live in ember.autograd (vmap.py, transforms.py, jacobians.py, module_state.py,
functionalize.py).
"""

from __future__ import annotations

from .autograd.batched import debug_unwrap
from .autograd.functionalize import functionalize
from .autograd.jacobians import hessian, jacfwd, jacrev, linearize
from .autograd.module_state import (
    functional_call,
    replace_all_batch_norm_modules_,
    stack_module_state,
)
from .autograd.transforms import grad, grad_and_value, jvp, vjp
from .autograd.vmap import vmap

__all__ = [
    "debug_unwrap",
    "functional_call",
    "functionalize",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "replace_all_batch_norm_modules_",
    "stack_module_state",
    "vjp",
    "vmap",
]
