"""Random number generators: Philox 4x32-10, counter-based, the same stream on every device.

A generator is a seed and an offset (in Philox blocks of four 32-bit words). Each random op takes
the current offset, and advances it by the blocks it consumes; element ``i`` of the result reads
block ``offset + i // per_block``. Every backend implements the same mapping (docs/random.md),
so a seed gives the same numbers on CPU, CUDA and OpenCL.
"""

from __future__ import annotations

import os
import threading

import numpy as np

DEFAULT_SEED = 67280421310721  # a new Generator's seed, as torch.Generator()'s


class Generator:
    """A Philox generator, like ``torch.Generator``.

    Args:
        device: the device whose ops it feeds (informative: the stream is device-independent).

    Example:
        >>> g = ember.Generator().manual_seed(0)
        >>> ember.rand(3, generator=g)
    """

    def __init__(self, device="cpu"):
        from ._device import device as Device

        self.device = Device(device)
        self._seed = DEFAULT_SEED
        self._offset = 0
        self._lock = threading.Lock()

    def manual_seed(self, seed: int) -> Generator:
        seed = int(seed)
        if seed < 0:
            seed += 1 << 64
        if not 0 <= seed < (1 << 64):
            raise RuntimeError(f"Overflow when unpacking long: seed {seed} is out of range")
        with self._lock:
            self._seed = seed
            self._offset = 0
        return self

    def seed(self) -> int:
        """Seed from the OS entropy and return the seed."""
        value = int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1)
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        return self._seed

    def take(self, blocks: int) -> tuple[int, int]:
        """``(seed, offset)`` for an op that consumes ``blocks`` Philox blocks; advances."""
        with self._lock:
            offset = self._offset
            self._offset += blocks
        return self._seed, offset

    def get_state(self):
        from ._factories import tensor

        words = np.array([self._seed, self._offset], dtype=np.uint64).view(np.uint8)
        return tensor(words.copy())

    def set_state(self, state) -> Generator:
        raw = np.asarray(state.numpy() if hasattr(state, "numpy") else state, dtype=np.uint8)
        if raw.size != 16:
            raise RuntimeError(f"Generator.set_state: expected 16 bytes of state, got {raw.size}")
        seed, offset = raw.view(np.uint64).tolist()
        with self._lock:
            self._seed, self._offset = int(seed), int(offset)
        return self

    def get_offset(self) -> int:
        return self._offset

    def __repr__(self) -> str:
        return f"<ember.Generator device={self.device} seed={self._seed} offset={self._offset}>"


default_generator = Generator()
# Unseeded programs must differ from run to run (torch seeds its default generator from the OS at
# startup); ``manual_seed`` makes them repeat.
default_generator.seed()
_DEVICE_GENERATORS: dict = {}


def generator_for(device) -> Generator:
    """The default generator of a device type (all seeded together by ``manual_seed``)."""
    if device.type == "cpu":
        return default_generator
    found = _DEVICE_GENERATORS.get(device.type)
    if found is None:
        found = Generator(device.type)
        found.manual_seed(default_generator.initial_seed())
        _DEVICE_GENERATORS[device.type] = found
    return found


def manual_seed(seed: int) -> Generator:
    """Seed every default generator (CPU and all devices), like ``torch.manual_seed``."""
    default_generator.manual_seed(seed)
    for gen in _DEVICE_GENERATORS.values():
        gen.manual_seed(seed)
    return default_generator


def seed() -> int:
    value = default_generator.seed()
    for gen in _DEVICE_GENERATORS.values():
        gen.manual_seed(value)
    return value


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    default_generator.set_state(new_state)
