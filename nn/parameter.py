"""``nn.Parameter`` (a tensor a Module registers as learnable) and ``nn.Buffer``."""

from __future__ import annotations

from ember._tensor import Tensor


class Parameter(Tensor):
    """A tensor that a Module registers as a parameter when assigned as an attribute.

    Args:
        data: the initial values (shares its storage); an empty tensor when None.
        requires_grad: whether it is trained (default True).
    """

    def __new__(cls, data=None, requires_grad: bool = True):
        if data is None:
            from ember import empty

            data = empty(0)
        out = data.detach().as_subclass(cls)
        out.requires_grad_(requires_grad)
        return out

    def __init__(self, data=None, requires_grad: bool = True):
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        copied = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = copied
        return copied


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """Marks a tensor to be registered as a buffer when assigned to a Module attribute.

    Args:
        data: the tensor.
        persistent: whether it is part of the module's ``state_dict``.
    """

    def __new__(cls, data=None, *, persistent: bool = True):
        if data is None:
            from ember import empty

            data = empty(0)
        out = data.detach().as_subclass(cls)
        out.__dict__["persistent"] = persistent
        return out

    def __init__(self, data=None, *, persistent: bool = True):
        pass


def is_lazy(param) -> bool:
    return False
