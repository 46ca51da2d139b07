"""Device objects (``ember.device("cuda", 1)``, ``"xpu:0"``) and the default device."""

from __future__ import annotations

import operator
import re

_SPEC = re.compile(r"^([a-zA-Z_][a-zA-Z0-9_]*)(?::(\d+))?$")


class device:  # noqa: N801 - PyTorch's name
    """Where a tensor lives: a device type (``"cpu"``, ``"cuda"``, ``"xpu"``...) and an index.

    Instances are interned, so equal devices are the same object and comparisons are cheap.

    Example:
        >>> ember.device("cuda:1") == ember.device("cuda", 1)
        True
    """

    # _route: how ember._tensor.empty allocates here (dispatcher/memory.py), None until the
    # first allocation: an attribute read instead of a dict lookup on every op's output.
    __slots__ = ("__weakref__", "_route", "index", "type")
    _interned: dict = {}

    def __new__(cls, type_or_spec, index: int | None = None):
        if isinstance(type_or_spec, device):
            if index is not None:
                raise ValueError("device(): an index was given twice")
            return type_or_spec
        if not isinstance(type_or_spec, str):
            raise TypeError(
                f"device(): expected a string or device, got {type(type_or_spec).__name__}"
            )
        key = (type_or_spec, index)
        # Exact ints only: 1.0 hashes like 1 but is no index.
        found = cls._interned.get(key) if index is None or type(index) is int else None
        if found is not None:
            return found
        match = _SPEC.match(type_or_spec)
        if match is None:
            raise RuntimeError(
                f"Invalid device string: '{type_or_spec}' (expected 'type' or 'type:index')"
            )
        dev_type, spec_index = match.group(1), match.group(2)
        if spec_index is not None:
            if index is not None:
                raise RuntimeError(f"device(): index given in '{type_or_spec}' and as {index}")
            index = int(spec_index)
        if index is not None:
            try:
                index = operator.index(index)
            except TypeError:
                raise TypeError(
                    f"device(): argument 'index' must be int, not {type(index).__name__}"
                ) from None
            if index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
        canonical = cls._interned.get((dev_type, index))
        if canonical is None:
            canonical = object.__new__(cls)
            canonical.type = dev_type
            canonical.index = index
            canonical._route = None
            cls._interned[(dev_type, index)] = canonical
        cls._interned[key] = canonical
        return canonical

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except RuntimeError:  # not a device string: unequal, like any other value
                return False
        if not isinstance(other, device):
            return NotImplemented
        return self is other

    def __hash__(self) -> int:
        # Equal to its string, so it must hash like it: {dev: x}["cuda:1"] finds the entry.
        return hash(str(self))

    def __reduce__(self):
        return (device, (str(self),))

    def __enter__(self):
        _DEFAULT_STACK.append(DEFAULT.device)
        set_default_device(self)
        return self

    def __exit__(self, *exc):
        set_default_device(_DEFAULT_STACK.pop())


CPU = device("cpu")
_device_class = device


class _Default:
    __slots__ = ("device",)

    def __init__(self):
        self.device = CPU


DEFAULT = _Default()
_DEFAULT_STACK: list = []


def get_default_device() -> device:
    """The device new tensors are created on when no ``device=`` is given (CPU unless changed)."""
    return DEFAULT.device


def set_default_device(device) -> None:  # PyTorch's parameter name, shadowing the class
    """Create new tensors on ``device`` when factories get no ``device=``.

    Args:
        device: a device, a device string, or None for CPU.
    """
    DEFAULT.device = CPU if device is None else _device_class(device)
