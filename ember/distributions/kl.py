"""kl_divergence and its registry of closed forms, as torch.distributions.kl.

Implementations are registered per (type_p, type_q) pair; a call dispatches to the most specific
registered pair of superclasses (memoized per concrete pair), warning when the left-most and
right-most most-specific matches disagree, exactly as torch does.
"""

from __future__ import annotations

import warnings
from functools import total_ordering

from .distribution import Distribution

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}  # (type, type) -> function, as registered
_KL_MEMOIZE: dict = {}  # concrete (type, type) -> function, as dispatched


def register_kl(type_p, type_q):
    """Decorator registering a pairwise KL(p || q) function with ``kl_divergence``.

    Args:
        type_p (type): a subclass of Distribution.
        type_q (type): a subclass of Distribution.

    Example:
        >>> @register_kl(Normal, Normal)
        ... def kl_normal_normal(p, q):
        ...     ...
    """
    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()  # the lookup order may have changed
        return fun

    return decorator


@total_ordering
class _Match:
    # Lexicographic order on type tuples: a more specific (sub)type sorts first.
    __slots__ = ["types"]

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    matches = [
        (super_p, super_q)
        for super_p, super_q in _KL_REGISTRY
        if issubclass(type_p, super_p) and issubclass(type_q, super_q)
    ]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(
            f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
            f"Please register_kl({left_p.__name__}, {right_q.__name__})",
            RuntimeWarning,
            stacklevel=2,
        )
    return left_fun


def kl_divergence(p, q):
    """Kullback-Leibler divergence ``KL(p || q) = E_p[log p(x) - log q(x)]``.

    Args:
        p (Distribution): a Distribution object.
        q (Distribution): a Distribution object.

    Returns:
        Tensor: a batch of KL divergences of shape ``batch_shape``.

    Raises:
        NotImplementedError: if the distribution types have not been registered via
            ``register_kl``.
    """
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type "
            f"{q.__class__.__name__}"
        )
    return fun(p, q)
