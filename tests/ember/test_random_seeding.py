"""The default generator: seeded from the OS at import (runs differ), repeatable when seeded."""

import subprocess
import sys

import ember

_UNSEEDED = "import ember; print(ember.initial_seed(), ember.rand(4).tolist())"
_SEEDED = "import ember; ember.manual_seed(123); print(ember.rand(4).tolist())"


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout


def test_unseeded_processes_differ():
    first, second = _run(_UNSEEDED), _run(_UNSEEDED)
    assert first.split()[0] != second.split()[0]
    assert first != second


def test_seeded_processes_repeat():
    assert _run(_SEEDED) == _run(_SEEDED)


def test_manual_seed_repeats_in_process():
    ember.manual_seed(5)
    a = ember.randn(8)
    ember.manual_seed(5)
    assert a.tolist() == ember.randn(8).tolist()
    assert ember.initial_seed() == 5


def test_new_generator_has_fixed_seed():
    """Only the default generator is OS-seeded; ``Generator()`` starts from a fixed seed, as
    ``torch.Generator()`` does."""
    assert ember.Generator().initial_seed() == ember.Generator().initial_seed()
