"""Pruning (torch.nn.utils.prune): a tensor ``<name>`` becomes ``<name>_orig`` (the parameter)
times ``<name>_mask`` (a buffer), recomputed by a forward pre-hook; pruning the same tensor
again combines the masks through a PruningContainer. Unstructured (random, L1), structured
(random, Ln over channels), custom masks and global pruning, with PyTorch's checks."""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import ember

from .convert_parameters import parameters_to_vector

__all__ = [
    "BasePruningMethod",
    "PruningContainer",
    "Identity",
    "RandomUnstructured",
    "L1Unstructured",
    "RandomStructured",
    "LnStructured",
    "CustomFromMask",
    "identity",
    "random_unstructured",
    "l1_unstructured",
    "random_structured",
    "ln_structured",
    "global_unstructured",
    "custom_from_mask",
    "remove",
    "is_pruned",
]


class BasePruningMethod(ABC):
    """A pruning method: ``compute_mask`` decides what to zero; as a forward pre-hook it
    recomputes the pruned tensor from ``<name>_orig`` and ``<name>_mask``."""

    _tensor_name: str | None = None

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask for ``t`` given the mask so far (``default_mask``)."""

    def apply_mask(self, module):
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` (combining with earlier pruning of it); returns the method
        (or the container holding it) installed as the hook."""
        method = _composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if tuple(importance_scores.shape) != tuple(orig.shape):
                raise AssertionError(
                    f"importance_scores should have the same shape as parameter {name} of "
                    f"{module}, got {importance_scores.shape} vs {orig.shape}"
                )
        else:
            importance_scores = orig
        first = not isinstance(method, PruningContainer)
        if first:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ember.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            with ember.no_grad():
                mask = method.compute_mask(importance_scores.detach(), default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:  # put the parameter back as it was
                module.register_parameter(name, module._parameters.pop(name + "_orig"))
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` with this method's mask applied (``importance_scores`` choose what goes)."""
        if importance_scores is not None and tuple(importance_scores.shape) != tuple(t.shape):
            raise AssertionError(
                "importance_scores should have the same shape as tensor t, got "
                f"{importance_scores.shape} vs {t.shape}"
            )
        scores = t if importance_scores is None else importance_scores
        default_mask = ember.ones_like(t) if default_mask is None else default_mask
        return t * self.compute_mask(scores, default_mask=default_mask)

    def remove(self, module) -> None:
        """Make the pruning permanent: ``<name>`` is the masked parameter again."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if self._tensor_name in module.__dict__:
            delattr(module, self._tensor_name)
        orig = module._parameters.pop(self._tensor_name + "_orig")
        orig.data = weight.data
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _composite_method(cls, module, name, *args, **kwargs):
    """The new method, or a container of the tensor's existing method(s) and the new one."""
    old, keys = None, []
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            old = hook
            keys.append(key)
    if len(keys) > 1:
        raise AssertionError(
            f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
            "Use a PruningContainer."
        )
    for key in keys:
        del module._forward_pre_hooks[key]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if isinstance(old, PruningContainer):
        old.add_pruning_method(method)
        return old
    if old is not None:
        container = PruningContainer(old)
        container.add_pruning_method(method)
        return container
    return method


class PruningContainer(BasePruningMethod):
    """Successive pruning of one tensor: each new method acts on what is still unpruned."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1 and not isinstance(args[0], Iterable):
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method) -> None:
        if method is not None and not isinstance(method, BasePruningMethod):
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(
                "Can only add pruning methods acting on the parameter named "
                f"'{self._tensor_name}' to PruningContainer {self}. Found "
                f"'{method._tensor_name}'"
            )
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, index):
        return self._pruning_methods[index]

    def compute_mask(self, t, default_mask):
        """The last method's mask, computed on the part the earlier ones left: the unpruned
        entries (unstructured), the unpruned channels (structured) or everything (global)."""
        method = self._pruning_methods[-1]
        mask = default_mask.to(t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            keep = (mask == 1).reshape(-1).nonzero().reshape(-1)
            flat_t, flat_mask = t.reshape(-1), mask.reshape(-1)
            partial = method.compute_mask(flat_t[keep], default_mask=flat_mask[keep])
            return flat_mask.scatter(0, keep, partial.to(mask.dtype)).view(mask.shape)
        if kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError(
                    'Pruning methods of PRUNING_TYPE "structured" need to have the attribute '
                    "`dim` defined."
                )
            dim = method.dim if method.dim >= 0 else t.ndim + method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {t.ndim}")
            others = [d for d in range(t.ndim) if d != dim]
            channels = (mask.sum(others) != 0).nonzero().reshape(-1)
            current = mask.index_select(dim, channels)
            partial = method.compute_mask(t.index_select(dim, channels), default_mask=current)
            return mask.index_add(dim, channels, partial.to(mask.dtype) - current)
        if kind == "global":
            return method.compute_mask(t, default_mask=mask).to(mask.dtype)
        raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")


class Identity(BasePruningMethod):
    """Prunes nothing (a mask of ones)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


def _validate_amount_init(amount) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    integral = isinstance(amount, numbers.Integral)
    if (integral and amount < 0) or (not integral and not 0.0 <= float(amount) <= 1.0):
        raise ValueError(
            f"amount={amount} should either be a float in the range [0, 1] or a non-negative "
            "integer"
        )


def _how_many(amount, size: int) -> int:
    """Entries to prune: ``amount`` itself (an int), or a rounded fraction of ``size``."""
    count = amount if isinstance(amount, numbers.Integral) else round(amount * size)
    if isinstance(amount, numbers.Integral) and amount > size:
        raise ValueError(
            f"amount={amount} should be smaller than the number of parameters to prune={size}"
        )
    return count


def _validate_structured(t, dim) -> None:
    if t.ndim <= 1:
        raise ValueError(
            "Structured pruning can only be applied to multidimensional tensors. Found tensor "
            f"of shape {t.shape} with {t.ndim} dims"
        )
    if dim >= t.ndim:
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _zero_at(mask, indices):
    """``mask`` with the flat positions ``indices`` set to 0."""
    flat = mask.reshape(-1)
    return flat.scatter(0, indices, ember.zeros_like(indices, dtype=mask.dtype)).view(mask.shape)


def _channels(t, dim: int, indices):
    """Zeros like ``t`` with ones in the channels ``indices`` along ``dim``."""
    ones = ember.ones_like(t).index_select(dim, indices)
    return ember.zeros_like(t).index_add(dim, indices, ones)


class RandomUnstructured(BasePruningMethod):
    """Prunes ``amount`` (a fraction or a count) of the entries, chosen at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        count = _how_many(self.amount, t.numel())
        mask = default_mask.clone()
        if count:
            chosen = ember.rand(t.shape, dtype=ember.float32, device=t.device).reshape(-1)
            mask = _zero_at(mask, chosen.topk(count).indices)
        return mask

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the ``amount`` entries of smallest absolute value."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        count = _how_many(self.amount, t.numel())
        mask = default_mask.clone()
        if count:
            smallest = t.abs().reshape(-1).topk(count, largest=False).indices
            mask = _zero_at(mask, smallest)
        return mask

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` of the channels along ``dim``, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_amount_init(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t, default_mask):
        _validate_structured(t, self.dim)
        size = t.shape[self.dim]
        count = _how_many(self.amount, size)
        if not count:
            return default_mask
        probability = ember.rand(size, device=t.device)
        threshold = probability.sort().values[count - 1]  # the count-th smallest
        kept = (probability > threshold).nonzero().reshape(-1)
        return _channels(t, self.dim % t.ndim, kept) * default_mask.to(t.dtype)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` channels along ``dim`` of smallest ``n``-norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_amount_init(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t, default_mask):
        _validate_structured(t, self.dim)
        size = t.shape[self.dim]
        count = _how_many(self.amount, size)
        if not count:
            return default_mask
        dim = self.dim % t.ndim
        norms = t.norm(self.n, [d for d in range(t.ndim) if d != dim])
        kept = norms.topk(size - count, largest=True).indices
        return _channels(t, dim, kept) * default_mask.to(t.dtype)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(
            module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores
        )


class CustomFromMask(BasePruningMethod):
    """Prunes where a given ``mask`` is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise AssertionError(
                f"default_mask shape {default_mask.shape} must match self.mask shape "
                f"{self.mask.shape}"
            )
        return default_mask * self.mask.to(default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    """Prune nothing, but reparametrize ``name`` as ``<name>_orig * <name>_mask``."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs) -> None:
    """Prune the (module, name) ``parameters`` together: ``pruning_method`` (unstructured) picks
    over all their entries at once, so layers lose different fractions."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = {} if importance_scores is None else importance_scores
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector(
        [importance_scores.get((m, n), getattr(m, n)).detach() for m, n in parameters]
    )
    masks = parameters_to_vector(
        [getattr(m, n + "_mask", ember.ones_like(getattr(m, n))) for m, n in parameters]
    )
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(
            'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
            f"{pruning_method} of type {method.PRUNING_TYPE}"
        )
    container.add_pruning_method(method)
    with ember.no_grad():
        final = container.compute_mask(scores, masks)
    offset = 0
    for module, name in parameters:
        param = getattr(module, name)
        custom_from_mask(module, name, final[offset : offset + param.numel()].view_as(param))
        offset += param.numel()


def remove(module, name):
    """Make ``name``'s pruning permanent and drop its hook, mask and original."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(
        f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed"
    )


def is_pruned(module) -> bool:
    """Whether any submodule of ``module`` has a pruning hook."""
    return any(
        isinstance(hook, BasePruningMethod)
        for sub in module.modules()
        for hook in sub._forward_pre_hooks.values()
    )
