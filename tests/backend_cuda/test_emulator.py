"""The CUDA kernels and their glue, run by the CPU emulator (EMBER_CUDA_EMULATOR=1) against the
CPU backend: Philox streams bit for bit, split reductions, the bitonic sort, every matmul layout,
index errors, pinned copies, fused nn kernels and a training step.

This is no GPU run: the emulator executes the generated kernel modules compiled for the host
(see ember_backend_gpu/emulator.py). A real device runs tests/backend_cuda/test_device.py and
the op suite with EMBER_TEST_DEVICES=cuda. Skips where no C++ compiler is installed.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import ember

pytestmark = [
    pytest.mark.skipif(shutil.which("g++") is None, reason="g++ builds the emulator"),
    pytest.mark.usefixtures("emulated_cuda"),
]


def _both(fn):
    """fn(device) on cpu and cuda, as numpy arrays."""
    return [np.asarray(fn(d).cpu().numpy()) for d in ("cpu", "cuda")]


def test_the_emulator_serves_cuda():
    assert ember.cuda.is_available()
    assert "emulator" in ember.cuda.get_device_name()


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16, ember.float32, ember.float64])
def test_uniform_stream_is_the_cpus_bit_for_bit(dtype):
    def draw(device):
        g = ember.Generator(device=device).manual_seed(1234)
        out = ember.empty(1000, dtype=dtype, device=device)
        out.uniform_(-2.0, 3.0, generator=g)
        return out

    cpu, cuda = _both(draw)
    assert cpu.tobytes() == cuda.tobytes()


@pytest.mark.parametrize(
    "dtype, low, high",
    [(ember.int64, -5, 7), (ember.int64, 0, 2**40), (ember.uint8, 0, 256), (ember.bool, 0, 2),
     (ember.float32, 0, 100), (ember.float64, -3, 3), (ember.int32, -(2**31), 2**31)],
)  # fmt: skip
def test_integer_stream_is_the_cpus_bit_for_bit(dtype, low, high):
    def draw(device):
        ember.manual_seed(77) if device == "cpu" else ember.cuda.manual_seed(77)
        return ember.randint(low, high, (257,), dtype=dtype, device=device)

    cpu, cuda = _both(draw)
    assert cpu.tobytes() == cuda.tobytes()


def test_normal_stream_strided():
    def draw(device):
        ember.manual_seed(5) if device == "cpu" else ember.cuda.manual_seed(5)
        out = ember.empty(30, 40, device=device).t()  # strided output
        return out.normal_(1.0, 2.0)

    cpu, cuda = _both(draw)
    np.testing.assert_allclose(cuda, cpu, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape, dim", [((300_001,), 0), ((40_000, 3), 0), ((3, 50_000), 1)])
def test_split_reductions(shape, dim):
    """Reductions long enough to be split over blocks (partials, then the _fin kernel). Checked
    against numpy: the CPU backend's amax is wrong beyond ~20000 elements (reported)."""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    i = np.random.default_rng(1).integers(-9, 9, shape)
    t = ember.tensor(x, device="cuda")
    np.testing.assert_allclose(t.sum(dim).cpu().numpy(), x.sum(dim, dtype=np.float64),
                               rtol=1e-5, atol=1e-4)  # fmt: skip
    np.testing.assert_array_equal(t.amax(dim).cpu().numpy(), x.max(dim))
    np.testing.assert_array_equal(t.max(dim).indices.cpu().numpy(), x.argmax(dim))
    # Factors within 1e-4 of one keep a 300001-long product in float32's normal range.
    near_one = (1 + 1e-4 * x).astype(np.float32)
    np.testing.assert_allclose(ember.tensor(near_one, device="cuda").prod(dim).cpu().numpy(),
                               near_one.astype(np.float64).prod(dim), rtol=1e-4)  # fmt: skip
    np.testing.assert_array_equal(ember.tensor(i, device="cuda").sum(dim).cpu().numpy(), i.sum(dim))


def test_scans_long_and_short_lines():
    x = np.random.default_rng(2).standard_normal((3, 5000)).astype(np.float32)
    for dim in (0, 1):
        cpu, cuda = _both(lambda d, dim=dim: ember.tensor(x, device=d).cumsum(dim))
        np.testing.assert_allclose(cuda, cpu, rtol=1e-4, atol=1e-4)
    cpu, cuda = _both(lambda d: ember.arange(1, 30, device=d).cumprod(0))
    np.testing.assert_array_equal(cuda, cpu)


@pytest.mark.parametrize("n", [1, 7, 2048, 5000])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_is_stable_with_nan(n, descending):
    rng = np.random.default_rng(n)
    x = rng.integers(0, 20, (3, n)).astype(np.float32)
    x[rng.random((3, n)) < 0.05] = np.nan
    x[rng.random((3, n)) < 0.05] = -0.0
    cpu, cuda = _both(lambda d: ember.tensor(x, device=d).sort(1, descending=descending).indices)
    np.testing.assert_array_equal(cuda, cpu)
    cpu, cuda = _both(lambda d: ember.tensor(x, device=d).sort(1, descending=descending).values)
    np.testing.assert_array_equal(cuda, cpu)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int8"])
def test_matmul_layouts(dtype):
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, (2, 5, 6)).astype(np.float64)
    b = rng.integers(-3, 4, (2, 6, 4)).astype(np.float64)
    kind = getattr(ember, dtype)

    def run(d):
        ta, tb = ember.tensor(a, dtype=kind, device=d), ember.tensor(b, dtype=kind, device=d)
        return ember.cat([
            (ta @ tb).reshape(-1),
            (tb.transpose(1, 2) @ ta.transpose(1, 2)).reshape(-1),  # column-major operands
            (ta[0] @ tb[1]).reshape(-1),
            (ta.flip(1) @ tb).reshape(-1),
            (ta[:1].expand(2, 5, 6) @ tb).reshape(-1),  # batch stride 0
            (ta[0, :, :0] @ tb[0, :0]).reshape(-1),  # k = 0
        ])  # fmt: skip

    cpu, cuda = _both(run)
    np.testing.assert_array_equal(cuda, cpu)


def test_index_errors_and_put_atomicity():
    x = ember.arange(6.0, device="cuda")
    with pytest.raises(IndexError, match="index 9 is out of bounds for dim 0 with size 6"):
        x.gather(0, ember.tensor([1, 9], device="cuda"))
    with pytest.raises(IndexError, match="index -8 is out of range for 6 elements"):
        x.put_(ember.tensor([0, -8], device="cuda"), ember.tensor([5.0, 5.0], device="cuda"))
    assert x.cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    with pytest.raises(ZeroDivisionError):
        ember.tensor([1, 2], device="cuda") // ember.tensor([1, 0], device="cuda")


def test_scatter_add_and_index_add_accumulate_duplicates():
    for dtype in (ember.float32, ember.float16, ember.int8, ember.int64):

        def run(d, dtype=dtype):
            idx = ember.tensor([0, 2, 2, 2, 1], device=d)
            src = ember.ones(5, dtype=dtype, device=d)
            out = ember.zeros(3, dtype=dtype, device=d).scatter_add(0, idx, src)
            return ember.cat([out, ember.zeros(3, dtype=dtype, device=d).index_add(0, idx, src)])

        cpu, cuda = _both(run)
        np.testing.assert_array_equal(cuda, cpu)


def test_nonzero_and_masked_select():
    x = np.random.default_rng(4).integers(0, 3, (50, 70))
    cpu, cuda = _both(lambda d: ember.tensor(x, device=d).nonzero())
    np.testing.assert_array_equal(cuda, cpu)


def test_pinned_memory_and_non_blocking_copies():
    x = ember.arange(10.0)
    pinned = x.pin_memory()
    assert pinned.is_pinned() and not x.is_pinned()
    assert pinned.pin_memory() is pinned
    on_device = pinned.to("cuda", non_blocking=True)
    back = on_device.to("cpu", non_blocking=True)
    ember.cuda.synchronize()
    assert back.is_pinned() and back.tolist() == x.tolist()


def test_memory_statistics():
    ember.cuda.reset_peak_memory_stats()
    before = ember.cuda.memory_allocated()
    x = ember.empty(1 << 20, device="cuda")
    assert ember.cuda.memory_allocated() >= before + 4 * (1 << 20)
    assert ember.cuda.max_memory_allocated() >= ember.cuda.memory_allocated()
    assert ember.cuda.memory_reserved() >= ember.cuda.memory_allocated()
    del x
    ember.cuda.empty_cache()
    assert "memory summary" in ember.cuda.memory_summary()


def test_fused_nn_kernels():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    F = ember.nn.functional
    for fn in (
        lambda t: F.softmax(t, dim=1),
        lambda t: F.log_softmax(t.transpose(1, 3), dim=-1),
        lambda t: F.softmax(t.reshape(2, -1), dim=1),
        lambda t: F.unfold(t, 3, dilation=2, padding=1, stride=2),
        lambda t: F.fold(F.unfold(t, 2, padding=1), (9, 8), 2, padding=1),
        lambda t: F.max_pool2d(t, 3, stride=2, padding=1),
        lambda t: F.max_pool2d(t, 2, return_indices=True)[1],
    ):
        cpu, cuda = _both(lambda d, fn=fn: fn(ember.tensor(x, device=d)))
        np.testing.assert_allclose(cuda, cpu, rtol=1e-5, atol=1e-6)


def test_a_training_step_matches_the_cpu():
    def train(device):
        ember.manual_seed(0)
        nn = ember.nn
        model = nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(4 * 4 * 4, 10),
        ).to(device)  # fmt: skip
        opt = ember.optim.Adam(model.parameters(), lr=1e-2)
        x = ember.tensor(np.random.default_rng(6).standard_normal((8, 1, 8, 8)).astype(np.float32))
        y = ember.tensor(np.arange(8) % 10)
        x, y = x.to(device), y.to(device)
        for _ in range(3):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        return ember.cat([p.detach().reshape(-1) for p in model.parameters()])

    cpu, cuda = _both(train)
    np.testing.assert_allclose(cuda, cpu, rtol=1e-4, atol=1e-5)


def test_integer_logspace_does_not_take_the_devices_pow_rounding(monkeypatch):
    """An integer logspace truncates, so a device pow one ulp low (the H200's 3 ** 1.0) would
    turn 3 into 2; its values must come from the host's pow, as PyTorch's CPU kernel's do."""
    from ember.dispatcher.optable import OPS

    real_pow = OPS["pow"]

    def pow_one_ulp_low_on_the_device(base, exponent):
        result = real_pow(base, exponent)
        if result.device.type == "cpu":
            return result
        low = np.nextafter(result.cpu().numpy(), -np.inf)
        return ember.tensor(low, device=result.device)

    monkeypatch.setitem(OPS, "pow", pow_one_ulp_low_on_the_device)
    got = ember.logspace(0, 1.2, 4, base=3.0, dtype=ember.int64, device="cuda")
    assert got.device.type == "cuda"
    assert got.cpu().tolist() == [1, 1, 2, 3]  # torch.logspace(0, 1.2, 4, 3.0, dtype=torch.int64)
