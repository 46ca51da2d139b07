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


_UNINITIALIZED = (
    "Can't access the shape of an uninitialized parameter or buffer. This error usually happens "
    "in `load_state_dict` when trying to load an uninitialized parameter into an initialized "
    "one. Call `forward` to initialize the parameters before accessing their attributes."
)


class _UninitializedMixin:
    """A tensor without a shape yet: an empty placeholder holding only a device, a dtype and
    (for parameters) requires_grad, until ``materialize(shape)`` gives it storage and turns it
    into ``cls_to_become``. Its shape cannot be read before then, as in PyTorch."""

    cls_to_become = Tensor

    @property
    def shape(self):
        raise RuntimeError(_UNINITIALIZED)

    def size(self, dim=None):
        raise RuntimeError(_UNINITIALIZED)

    def numel(self):
        raise ValueError(
            "Attempted to use an uninitialized parameter in numel. This error happens when you "
            "are using a `LazyModule` or explicitly manipulating "
            "`torch.nn.parameter.UninitializedParameter` objects. When using LazyModules Call "
            "`forward` with a dummy batch to initialize the parameters before calling torch "
            "functions"
        )

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Allocate ``shape`` (on ``device``/``dtype``, default this placeholder's) and become
        a plain ``cls_to_become`` (a Parameter or a Tensor)."""
        from ember import empty

        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        device = self.device if device is None else device
        dtype = self.dtype if dtype is None else dtype
        self.data = empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    def to(self, *args, **kwargs):
        """Still a placeholder, on the new device or dtype (Module.to moves lazy buffers
        before they have a shape)."""
        moved = Tensor.to(self, *args, **kwargs)
        if moved is self:
            return self
        out = moved.detach().as_subclass(type(self))
        out.requires_grad_(self.requires_grad)
        return out

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, protocol):
        return (type(self), (None, self.requires_grad, self.device, self.dtype))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(None, self.requires_grad, self.device, self.dtype)
        return memo[id(self)]


def _placeholder(device, dtype):
    from ember import empty

    return empty(0, device=device, dtype=dtype)


class UninitializedParameter(_UninitializedMixin, Parameter):
    """A parameter whose shape a lazy module infers from its first input."""

    cls_to_become = Parameter

    def __new__(cls, data=None, requires_grad: bool = True, device=None, dtype=None):
        out = _placeholder(device, dtype).as_subclass(cls)
        out.requires_grad_(requires_grad)
        return out

    def __init__(self, data=None, requires_grad: bool = True, device=None, dtype=None):
        pass


class UninitializedBuffer(_UninitializedMixin, Tensor):
    """A buffer whose shape a lazy module infers from its first input."""

    def __new__(cls, data=None, requires_grad: bool = False, device=None, dtype=None):
        out = _placeholder(device, dtype).as_subclass(cls)
        out.requires_grad_(requires_grad)
        return out

    def __init__(self, data=None, requires_grad: bool = False, device=None, dtype=None):
        pass


def is_lazy(param) -> bool:
    """Whether ``param`` is an uninitialized parameter or buffer of a lazy module."""
    return isinstance(param, _UninitializedMixin)
