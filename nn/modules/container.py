"""Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict, Container."""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Mapping

from ember._tensor import Tensor

from ..parameter import Parameter
from .module import Module


class Container(Module):
    """PyTorch's deprecated container: keyword arguments become child modules."""

    _names_errors = False

    def __init__(self, **kwargs):
        super().__init__()
        warnings.warn(
            "`nn.Container` is deprecated. All of its functionality is now implemented in "
            "`nn.Module`. Subclass that instead.",
            FutureWarning,
            stacklevel=2,
        )
        for key, value in kwargs.items():
            self.add_module(key, value)


class Sequential(Module):
    """Modules applied one after the other; indexable and sliceable."""

    _names_errors = False

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], (dict, OrderedDict)):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for index, module in enumerate(args):
                self.add_module(str(index), module)

    def _index(self, index: int) -> int:
        size = len(self._modules)
        if not -size <= index < size:
            raise IndexError(f"index {index} is out of range for Sequential of length {size}")
        return index % size

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(self._modules.items())[index]))
        return list(self._modules.values())[self._index(index)]

    def __setitem__(self, index: int, module) -> None:
        key = list(self._modules)[self._index(index)]
        self.add_module(key, module)

    def __delitem__(self, index) -> None:
        keys = list(self._modules)
        for key in keys[index] if isinstance(index, slice) else [keys[self._index(index)]]:
            del self._modules[key]
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module):
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(modules))
        return self

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered so their parameters are found."""

    _names_errors = False

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index):
        values = list(self._modules.values())
        if isinstance(index, slice):
            return ModuleList(values[index])
        return values[index]

    def __setitem__(self, index: int, module) -> None:
        self.add_module(str(index % len(self)), module)

    def __delitem__(self, index) -> None:
        values = list(self._modules.values())
        del values[index]
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(values))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module) -> None:
        values = list(self._modules.values())
        values.insert(index, module)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(values))


class ModuleDict(Module):
    """A dict of modules, registered so their parameters are found."""

    _names_errors = False

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str):
        return self._modules[key]

    def __setitem__(self, key: str, module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key: str):
        return self._modules.pop(key)

    def clear(self) -> None:
        self._modules.clear()

    def update(self, modules) -> None:
        items = modules.items() if hasattr(modules, "items") else modules
        for key, module in items:
            self[key] = module


def _parameter_lines(items, legacy_type: bool = False) -> str:
    """PyTorch's listing of a ParameterList/Dict: one indented line per entry (the dict names
    the legacy tensor type, ``ember.FloatTensor``, where the list names the dtype)."""
    lines = []
    for key, p in items:
        if isinstance(p, Tensor):
            size = "x".join(str(n) for n in p.shape)
            device = "" if p.device.type == "cpu" else f" ({p.device})"
            kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
            dtype = p.type() if legacy_type else repr(p.dtype)
            lines.append(f"  ({key}): {kind} containing: [{dtype} of size {size}{device}]")
        else:
            lines.append(f"  ({key}): Object of type: {type(p).__name__}")
    return "\n".join(lines)


def _as_parameter(value):
    return value if isinstance(value, Parameter) or value is None else Parameter(value)


class ParameterList(Module):
    """A list of parameters, registered on the module."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        for value in values or ():
            self.append(value)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ParameterList([self[i] for i in range(self._size)[index]])
        index = index % self._size if self._size else index
        return self._parameters[str(index)]

    def __setitem__(self, index: int, value) -> None:
        self.register_parameter(str(index % self._size), _as_parameter(value))

    def __len__(self) -> int:
        return self._size

    def __iter__(self):
        return (self._parameters[str(i)] for i in range(self._size))

    def append(self, value):
        self.register_parameter(str(self._size), _as_parameter(value))
        self._size += 1
        return self

    def extend(self, values):
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return _parameter_lines(enumerate(self))


class ParameterDict(Module):
    """A dict of parameters, registered on the module."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str):
        return self._parameters[key]

    def __setitem__(self, key: str, value) -> None:
        self.register_parameter(key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._parameters[key]

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key) -> bool:
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def items(self):
        return self._parameters.items()

    def values(self):
        return self._parameters.values()

    def update(self, parameters) -> None:
        """Add ``parameters`` (a mapping or pairs). A plain dict is taken in sorted key order,
        as PyTorch does; an OrderedDict or ParameterDict keeps its order."""
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            items = parameters.items()
        elif isinstance(parameters, Mapping):
            items = sorted(parameters.items())
        else:
            items = parameters
        for key, value in items:
            self[key] = value

    def extra_repr(self) -> str:
        return _parameter_lines(self.items(), legacy_type=True)
