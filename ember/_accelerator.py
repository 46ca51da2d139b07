"""``ember.cuda``, ``ember.xpu`` (and any plugin device type): the device API PyTorch users know.

One implementation for every device type: availability and counts come from the device registry,
memory figures from the core caching allocator, and streams, events and device selection from the
backend's runtime when it offers them (``current_device``, ``set_device``, ``Stream``, ``Event``,
``current_stream``). ``ember.cuda`` therefore works the same whether the CUDA or the ROCm plugin
serves "cuda", and without either (``is_available()`` is False, with the reason kept).

Without the device the module behaves as ``torch.cuda`` in a CPU build: memory figures are 0,
``empty_cache`` and the peak resets do nothing, seeding works (generators are device-independent),
``Stream`` and ``Event`` are still classes (constructing one raises), ``hasattr`` never raises, and
what needs the device (``synchronize``, ``current_device``, ``get_device_name``...) raises
``AcceleratorUnavailableError`` (a RuntimeError, and an AssertionError as torch's is).
"""

from __future__ import annotations

import contextlib
import sys
import types

from .dispatcher.allocator import OutOfMemoryError
from .dispatcher.devices import REGISTRY, DeviceUnavailableError


class AcceleratorUnavailableError(DeviceUnavailableError, AssertionError):
    """``ember.<device type>.<function>()`` needs the device, and it is unavailable. Also an
    AssertionError: torch raises "Torch not compiled with CUDA enabled" as one, and code written
    for torch catches that."""


class DeviceModule(types.ModuleType):
    """The module object behind ``ember.<device type>``."""

    OutOfMemoryError = OutOfMemoryError

    def __init__(self, device_type: str):
        super().__init__(f"ember.{device_type}", f"The {device_type} device API.")
        self.device_type = device_type

    def __getattr__(self, name: str):
        """``ember.cuda.FloatTensor`` and the other legacy types of this device type
        (ember/_legacy_types.py)."""
        from ._legacy_types import legacy_type

        found = legacy_type(self.device_type, name)
        if found is None:
            raise AttributeError(f"module '{self.__name__}' has no attribute '{name}'")
        return found

    # ---- availability ---------------------------------------------------------------------------
    def _backend(self):
        try:
            return REGISTRY.backend(self.device_type)
        except DeviceUnavailableError as exc:
            raise AcceleratorUnavailableError(f"ember.{self.device_type}: {exc}") from None

    def _backend_or_none(self):
        """The serving backend when the device is usable, else None (no error)."""
        try:
            backend = REGISTRY.backend(self.device_type)
            return backend if backend.device_count() > 0 else None
        except RuntimeError:
            return None

    def is_available(self) -> bool:
        """Whether a backend serves this device type and found at least one device."""
        try:
            return self._backend().device_count() > 0
        except (DeviceUnavailableError, RuntimeError):
            return False

    def unavailable_reason(self) -> str | None:
        """Why ``is_available()`` is False (None when it is True)."""
        try:
            count = self._backend().device_count()
        except (DeviceUnavailableError, RuntimeError) as exc:
            return str(exc)
        return None if count else f"the {self.device_type} backend found no devices"

    def is_initialized(self) -> bool:
        return self.device_type in REGISTRY.loaded_backends()

    def init(self) -> None:
        self._backend()

    def device_count(self) -> int:
        try:
            return self._backend().device_count()
        except (DeviceUnavailableError, RuntimeError):
            return 0

    # ---- device selection -----------------------------------------------------------------------
    def _runtime(self):
        return self._backend().runtime

    def _index(self, device=None) -> int:
        from ._device import device as Device

        if device is None:
            return self.current_device()
        if isinstance(device, int):
            return device
        found = Device(device)
        return self.current_device() if found.index is None else found.index

    def current_device(self) -> int:
        current = getattr(self._runtime(), "current_device", None)
        return current() if current else 0

    def set_device(self, device) -> None:
        index = self._index(device)
        setter = getattr(self._runtime(), "set_device", None)
        if setter is not None:
            setter(index)
        elif index != 0:
            raise RuntimeError(f"{self.device_type}: the backend has one device only")

    @contextlib.contextmanager
    def device(self, device):
        """Context manager that makes ``device`` current inside the block."""
        previous = self.current_device()
        self.set_device(device)
        try:
            yield
        finally:
            self.set_device(previous)

    def get_device_name(self, device=None) -> str:
        return self._runtime().device_name(self._index(device))

    def get_device_properties(self, device=None):
        props = getattr(self._runtime(), "device_properties", None)
        index = self._index(device)
        if props is None:
            return types.SimpleNamespace(name=self.get_device_name(index))
        return props(index)

    def get_device_capability(self, device=None):
        capability = getattr(self._runtime(), "device_capability", None)
        return capability(self._index(device)) if capability else (0, 0)

    def synchronize(self, device=None) -> None:
        self._runtime().synchronize(self._index(device))

    def is_bf16_supported(self, including_emulation: bool = True) -> bool:
        return self.is_available()

    def get_arch_list(self) -> list:
        return []

    # ---- streams and events (when the runtime has them) ----------------------------------------
    def _feature(self, name: str):
        found = getattr(self._runtime(), name, None)
        if found is None:
            raise RuntimeError(f"the {self.device_type} backend has no {name}")
        return found

    def _class(self, name: str) -> type:
        """The runtime's class ``name`` when the device has one, else a stand-in class: code
        like ``isinstance(s, ember.cuda.Stream)`` or ``hasattr(ember.cuda, "Event")`` must work
        without the device, as in torch; constructing the stand-in raises why."""
        backend = self._backend_or_none()
        found = getattr(backend.runtime, name, None) if backend is not None else None
        if found is not None:
            return found
        stand_ins = self.__dict__.setdefault("_stand_ins", {})
        if name not in stand_ins:
            stand_ins[name] = _stand_in(self, name)
        return stand_ins[name]

    @property
    def Stream(self):  # noqa: N802 - PyTorch's class name
        return self._class("Stream")

    @property
    def Event(self):  # noqa: N802
        return self._class("Event")

    def current_stream(self, device=None):
        return self._feature("current_stream")(self._index(device))

    def default_stream(self, device=None):
        return self._feature("default_stream")(self._index(device))

    def stream(self, stream):
        """Context manager that makes ``stream`` current (None: no change)."""
        if stream is None:
            return contextlib.nullcontext()
        return self._feature("stream_context")(stream)

    # ---- memory (the core caching allocator; nothing is allocated without the device) ----------
    def _allocator(self, device=None):
        return self._backend().allocator(self._index(device))

    def memory_stats(self, device=None) -> dict:
        if self._backend_or_none() is None:
            return {}
        return self._allocator(device).stats()

    def _stat(self, device, key: str) -> int:
        return self.memory_stats(device).get(key, 0)

    def memory_allocated(self, device=None) -> int:
        return self._stat(device, "allocated_bytes.current")

    def max_memory_allocated(self, device=None) -> int:
        return self._stat(device, "allocated_bytes.peak")

    def memory_reserved(self, device=None) -> int:
        return self._stat(device, "reserved_bytes.current")

    def max_memory_reserved(self, device=None) -> int:
        return self._stat(device, "reserved_bytes.peak")

    def reset_peak_memory_stats(self, device=None) -> None:
        if self._backend_or_none() is not None:
            self._allocator(device).reset_peak_stats()

    def reset_max_memory_allocated(self, device=None) -> None:
        self.reset_peak_memory_stats(device)

    def memory_summary(self, device=None, abbreviated: bool = False) -> str:
        return self._allocator(device).memory_summary()

    def empty_cache(self) -> None:
        backend = self._backend_or_none()
        for allocator in backend.allocators().values() if backend is not None else ():
            allocator.empty_cache()

    def mem_get_info(self, device=None) -> tuple[int, int]:
        return self._feature("mem_get_info")(self._index(device))

    # ---- mixed precision ---------------------------------------------------------------------
    @property
    def amp(self):
        """``ember.cuda.amp`` / ``ember.cpu.amp``: the deprecated spellings of ``ember.amp``
        (other device types have none, as in PyTorch: ``hasattr`` says False)."""
        from .amp import _deprecated

        found = _deprecated.module(self.device_type)
        if found is None:
            raise AttributeError(f"module 'ember.{self.device_type}' has no attribute 'amp'")
        return found

    # ---- random numbers ------------------------------------------------------------------------
    def manual_seed(self, seed: int) -> None:
        from ._device import device as Device
        from ._random import generator_for

        generator_for(Device(self.device_type)).manual_seed(seed)

    manual_seed_all = manual_seed

    def seed(self) -> int:
        from ._device import device as Device
        from ._random import generator_for

        return generator_for(Device(self.device_type)).seed()

    seed_all = seed

    def initial_seed(self) -> int:
        from ._device import device as Device
        from ._random import generator_for

        return generator_for(Device(self.device_type)).initial_seed()


def _stand_in(owner: DeviceModule, name: str) -> type:
    def refuse(self, *args, **kwargs):
        raise AcceleratorUnavailableError(
            f"ember.{owner.device_type}.{name} requires a {owner.device_type} device: "
            f"{owner.unavailable_reason() or f'the backend has no {name}'}"
        )

    doc = f"Stand-in for ember.{owner.device_type}.{name}: the device is unavailable."
    return type(name, (), {"__init__": refuse, "__doc__": doc, "__module__": owner.__name__})


def current_accelerator() -> str | None:
    """The device type of the first available accelerator (``cuda``, then ``xpu``), or None."""
    for device_type in BUILTIN:
        if module(device_type).is_available():
            return device_type
    return None


# The device types ember exposes as modules; a plugin's device type is reachable with module(name).
BUILTIN = ("cuda", "xpu", "cpu")
_MODULES: dict = {}


def module(device_type: str) -> DeviceModule:
    found = _MODULES.get(device_type)
    if found is None:
        found = DeviceModule(device_type)
        _MODULES[device_type] = found
        # ``import ember.cuda.amp`` finds the module objects there.
        sys.modules.setdefault(found.__name__, found)
    return found


def get_device_module(device=None) -> DeviceModule:
    """``torch.get_device_module``: the ``ember.<type>`` module of ``device`` (a device or its
    string), or of the current accelerator when None (``ember.cpu`` without one)."""
    from ._device import device as Device

    if isinstance(device, Device):
        device_type = device.type
    elif isinstance(device, str):
        device_type = Device(device).type
    elif device is None:
        from .accelerator import current_accelerator

        found = current_accelerator(check_available=True)
        device_type = "cpu" if found is None else found.type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or None")
    return module(device_type)
