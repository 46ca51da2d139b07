"""``ember.random``: the generator functions under PyTorch's module path (``torch.random``),
which programs import (``torch.random.fork_rng``, ``torch.random.manual_seed``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ember._random import (
    _DEVICE_GENERATORS,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

__all__ = [
    "default_generator",
    "fork_rng",
    "get_rng_state",
    "initial_seed",
    "manual_seed",
    "seed",
    "set_rng_state",
]


@contextmanager
def fork_rng(
    devices=None,
    enabled: bool = True,
    _caller: str = "fork_rng",
    _devices_kw: str = "devices",
    device_type: str = "cuda",
) -> Iterator:
    """Restore the CPU generator's state, and ``device_type``'s, on exit (as
    ``torch.random.fork_rng``).

    ember keeps one default generator per device type, so ``devices`` (PyTorch's list of device
    indices whose states to fork) selects nothing finer: a non-empty list forks the type's one
    generator, an empty list forks the CPU's alone."""
    if not enabled:
        yield
        return
    if device_type == "meta":
        devices = []
    cpu_state = get_rng_state()
    forked = None if devices is not None and len(devices) == 0 else device_type
    generator = _DEVICE_GENERATORS.get(forked)
    device_state = None if generator is None else generator.get_state()
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        if generator is not None:
            generator.set_state(device_state)
