"""``torch.mps``: Apple's Metal device. ember has no Metal backend, so this module answers as
PyTorch's does on a machine without one: nothing available, no devices, ``manual_seed`` a no-op
and every call that needs the device a RuntimeError naming the missing backend."""

from __future__ import annotations

__all__ = [
    "current_allocated_memory",
    "device_count",
    "driver_allocated_memory",
    "empty_cache",
    "get_rng_state",
    "is_available",
    "manual_seed",
    "recommended_max_memory",
    "seed",
    "set_per_process_memory_fraction",
    "set_rng_state",
    "synchronize",
]


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def manual_seed(seed: int) -> None:
    """Seeds the Metal generator where there is one (never here: a no-op, as PyTorch's)."""


def _needs_backend(name: str, call: str):
    def refuse(*args, **kwargs):
        raise RuntimeError(f"Cannot execute {call}() without MPS backend.")

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"torch.mps.{name}: needs the Metal backend, which ember does not have."
    return refuse


# each function and the C++ call PyTorch's message names
synchronize = _needs_backend("synchronize", "deviceSynchronize")
empty_cache = _needs_backend("empty_cache", "emptyCache")
current_allocated_memory = _needs_backend("current_allocated_memory", "getCurrentAllocatedMemory")
driver_allocated_memory = _needs_backend("driver_allocated_memory", "getDriverAllocatedMemory")
recommended_max_memory = _needs_backend("recommended_max_memory", "getRecommendedMaxMemory")
set_per_process_memory_fraction = _needs_backend(
    "set_per_process_memory_fraction", "setMemoryFraction"
)
get_rng_state = _needs_backend("get_rng_state", "getDefaultGenerator")
set_rng_state = _needs_backend("set_rng_state", "getDefaultGenerator")
seed = _needs_backend("seed", "getDefaultGenerator")
