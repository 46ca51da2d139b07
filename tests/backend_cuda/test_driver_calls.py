"""What one eager op asks of the CUDA driver: the plugin's own runtime (runtime.py) over the
emulated, counting pycuda (``EMBER_CUDA_EMULATOR=driver``, ember_backend_gpu/emulated_pycuda.py).

A small op on the GPU is bound by its host cost; each driver call is microseconds of it, and a
synchronisation or a copy per op would also stall the device. Once an op's kernels are loaded
and its output size is cached, an elementwise op is one ``cuLaunchKernel`` and nothing else: no
allocation, no copy, no synchronisation, no context push or pop, no function lookup, no
``cuFuncSetBlockShape`` (pycuda's prepared calls make one per launch; runtime.py launches
without it). Values are checked against PyTorch.
"""

from __future__ import annotations

import shutil
import warnings
from collections import Counter

import numpy as np
import pytest

import ember
from ember.dispatcher.devices import REGISTRY

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ builds the emulator")

REPEAT = 5
ONE_LAUNCH = Counter({"cuLaunchKernel": REPEAT})


@pytest.fixture(scope="module")
def calls():
    """The emulated driver's call counter, with ``cuda`` served through it for this module."""
    patch = pytest.MonkeyPatch()
    patch.setenv("EMBER_CUDA_EMULATOR", "driver")
    REGISTRY.reset()
    from ember_backend_gpu.emulated_pycuda import CALLS

    with warnings.catch_warnings():  # no cuBLAS/cuSOLVER/cuFFT here: the plugin says so
        warnings.simplefilter("ignore", RuntimeWarning)
        ember.ones(1, device="cuda")
    yield CALLS
    patch.undo()
    REGISTRY.reset()


def _cuda(values):
    return ember.tensor(values).to("cuda")


def _counted(calls, fn) -> Counter:
    """The driver calls of ``REPEAT`` calls of ``fn``, after one call that loads its kernels."""
    fn()
    before = Counter(calls)
    for _ in range(REPEAT):
        fn()
    return Counter(calls) - before


CASES = {  # (library, x, y) -> result
    "x + y": lambda lib, x, y: x + y,
    "x * 2.5": lambda lib, x, y: x * 2.5,
    "relu(x)": lambda lib, x, y: lib.relu(x),
    "x < y": lambda lib, x, y: x < y,  # a bool output: its own byte stride
    "x.add_(y)": lambda lib, x, y: x.add_(y),
    "x[::2] + y[::2]": lambda lib, x, y: x[::2] + y[::2],
}


@pytest.mark.parametrize("case", list(CASES))
def test_elementwise_op_is_one_launch(calls, case):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(16, np.float32), rng.standard_normal(16, np.float32)
    x, y = _cuda(a), _cuda(b)
    assert _counted(calls, lambda: CASES[case](ember, x, y)) == ONE_LAUNCH
    got = CASES[case](ember, _cuda(a), _cuda(b)).cpu().numpy()
    want = CASES[case](torch, torch.from_numpy(a.copy()), torch.from_numpy(b.copy())).numpy()
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-6)


def test_a_host_read_is_one_copy(calls):
    """``.cpu()`` of a device tensor: one synchronous device-to-host copy, nothing else."""
    x = _cuda(np.arange(16, dtype=np.float32))
    assert _counted(calls, lambda: x.cpu()) == Counter({"cuMemcpyDtoH": REPEAT})
    np.testing.assert_array_equal(x.cpu().numpy(), np.arange(16, dtype=np.float32))


def test_masked_fill_with_a_number_is_one_launch(calls):
    """The number travels as where's scalar operand (the kernel argument), not as a 0-d tensor
    copied to the device: one launch, no host-to-device copy (cross_entropy and every
    attention step's causal mask take this path)."""
    a = np.arange(16, dtype=np.float32)
    x, mask = _cuda(a), _cuda(a) < 5
    fill = lambda: x.masked_fill(mask, float("-inf"))  # noqa: E731
    assert _counted(calls, fill) == ONE_LAUNCH
    want = torch.from_numpy(a).masked_fill(torch.from_numpy(a) < 5, float("-inf")).numpy()
    np.testing.assert_array_equal(fill().cpu().numpy(), want)


def test_an_adamw_step_reads_its_counters_once(calls):
    """The fused AdamW decomposition (no CUDA kernel) needs the step counters on the host: one
    copy for all parameters, not a synchronising ``.item()`` per parameter. The trajectory
    matches PyTorch's."""
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(shape, np.float32) for shape in ((4, 3), (3,), (2, 2))]
    grads = [rng.standard_normal(v.shape, np.float32) for v in values]
    found = {}
    for lib, device in ((ember, "cuda"), (torch, "cpu")):
        params = [lib.tensor(v).to(device).requires_grad_() for v in values]
        opt = lib.optim.AdamW(params, lr=0.1, weight_decay=0.1)
        for _ in range(3):
            for p, g in zip(params, grads):
                p.grad = lib.tensor(g).to(device)
            before = Counter(calls)
            opt.step()
            if lib is ember:
                assert (Counter(calls) - before)["cuMemcpyDtoH"] == 1
        found[device] = [p.detach().cpu().numpy() for p in params]
    for got, want in zip(found["cuda"], found["cpu"]):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
