"""PyTorch's TypeError for a functional given something else where it takes a tensor:
``F.linear([1.0, 2.0], w)`` says "linear(): argument 'input' (position 1) must be Tensor, not
list" instead of failing deep inside with an AttributeError.

Each public functional is wrapped once; the check runs only after the call failed with an
AttributeError or TypeError, so a working call pays one frame and no inspection.
"""

from __future__ import annotations

import functools
import inspect
import numbers

from ember import Tensor

# The parameters of ember.nn.functional that take tensors (PyTorch's names).
TENSOR_PARAMS = frozenset(
    {
        "input",
        "input1",
        "input2",
        "target",
        "weight",
        "bias",
        "tensor",
        "x1",
        "x2",
        "query",
        "key",
        "attn_mask",
        "running_mean",
        "running_var",
        "offsets",
        "per_sample_weights",
        "pos_weight",
    }
)
# Functionals whose parameter named otherwise takes a tensor too (pad's ``value`` is a number).
EXTRA = {"scaled_dot_product_attention": ("value",)}


def _blamed(name, tensor_params, signature, args, kwargs, error):
    """The TypeError naming the first tensor parameter holding a non-tensor, or None. A number
    is blamed only when ``error`` names its type (some functionals take numbers as well)."""
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return None
    for position, param in enumerate(signature.parameters):
        if param not in tensor_params or param not in bound.arguments:
            continue
        value = bound.arguments[param]
        if value is None or isinstance(value, Tensor):
            continue
        if isinstance(value, numbers.Number) and f"'{type(value).__name__}'" not in str(error):
            continue
        where = f" (position {position + 1})" if position < len(args) else ""
        return TypeError(
            f"{name}(): argument '{param}'{where} must be Tensor, not {type(value).__name__}"
        )
    return None


def names_bad_tensors(fn):
    """``fn`` raising PyTorch's TypeError when a tensor parameter holds a list (say)."""
    signature = inspect.signature(fn)
    tensor_params = TENSOR_PARAMS.union(EXTRA.get(fn.__name__, ()))

    @functools.wraps(fn)
    def functional(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (AttributeError, TypeError) as error:
            found = _blamed(fn.__name__, tensor_params, signature, args, kwargs, error)
            if found is not None:
                raise found from None
            raise

    return functional
