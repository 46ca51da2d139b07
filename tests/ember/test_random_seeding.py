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


def test_random_module_is_torch_random():
    """``torch.random``'s names (programs import them from there) are ember's generator
    functions, reachable after ``import ember`` alone as torch's are."""
    import torch.random

    for name in ember.random.__all__:
        assert hasattr(torch.random, name), name
    assert ember.random.manual_seed is ember.manual_seed
    assert ember.random.default_generator is ember.default_generator


def test_fork_rng_restores_the_cpu_and_device_states():
    import ember.random

    for device in ("cpu", "xpu") if ember.xpu.is_available() else ("cpu",):
        ember.manual_seed(7)
        expected = ember.rand(4, device=device).tolist()
        ember.manual_seed(7)
        with ember.random.fork_rng(device_type=device):
            ember.rand(100, device=device)  # draws inside the fork are forgotten
            ember.rand(3)
        assert ember.rand(4, device=device).tolist() == expected


def test_fork_rng_disabled_or_without_devices_as_torch():
    import ember.random

    ember.manual_seed(3)
    with ember.random.fork_rng(enabled=False):
        inside = ember.rand(2).tolist()
    assert ember.rand(2).tolist() != inside  # not forked: the draws went on
    ember.manual_seed(3)
    first = ember.rand(2).tolist()
    ember.manual_seed(3)
    with ember.random.fork_rng(devices=[]):
        ember.rand(5)
    assert ember.rand(2).tolist() == first
