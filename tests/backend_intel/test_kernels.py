"""xpu kernels on the layouts and sizes the generated op suite does not stress: every memory
layout (transposed, negative strides, slices, broadcast), more dims than a kernel walks, sizes
beyond one launch's work-items, and the error paths (integer division by zero, bad indices)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

from .conftest import flipped


def _xpu(a) -> ember.Tensor:
    return ember.from_numpy(np.ascontiguousarray(a)).to("xpu")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.float64])
def test_binary_on_every_layout(layouts, rng, dtype):
    a = (rng.standard_normal((6, 5)) * 10).astype(dtype)
    b = (rng.standard_normal((6, 5)) * 10).astype(dtype)
    for name_a, x in layouts(a).items():
        for name_b, y in layouts(b).items():
            got = (x * y - x).cpu().numpy()
            np.testing.assert_allclose(got, a * b - a, rtol=1e-3, err_msg=f"{name_a}, {name_b}")


def test_broadcast_and_scalars(rng):
    a = rng.standard_normal((4, 1, 3)).astype(np.float32)
    b = rng.standard_normal((5, 1)).astype(np.float32)
    x, y = _xpu(a), _xpu(b)
    np.testing.assert_allclose((x + y).cpu().numpy(), a + b, rtol=1e-6)
    np.testing.assert_allclose((2.5 - x).cpu().numpy(), 2.5 - a, rtol=1e-6)
    np.testing.assert_allclose(ember.where(x > 0, x, 0.0).cpu().numpy(), np.where(a > 0, a, 0))
    np.testing.assert_allclose(x.clamp(-0.5, 0.5).cpu().numpy(), a.clip(-0.5, 0.5))
    h = x.to(ember.float16)
    assert (h * 0.1).cpu().numpy().tolist() == (h.cpu() * 0.1).numpy().tolist()


def test_more_dims_than_a_kernel_walks(rng):
    a = rng.standard_normal((2,) * 11).astype(np.float32)
    order = tuple(reversed(range(11)))
    x = _xpu(a).permute(*order)  # nothing merges: eleven separate dims
    np.testing.assert_allclose((x * 2).cpu().numpy(), a.transpose(order) * 2)
    np.testing.assert_allclose(x.contiguous().cpu().numpy(), a.transpose(order))
    np.testing.assert_allclose((x + _xpu(a)).cpu().numpy(), a.transpose(order) + a, rtol=1e-6)


def test_sizes_beyond_one_launch(rng):
    a = rng.standard_normal(3_000_001).astype(np.float32)
    x = _xpu(a)
    np.testing.assert_allclose((x * x + x).cpu().numpy(), a * a + a, rtol=1e-6)
    np.testing.assert_allclose(x.sum().item(), a.sum(dtype=np.float64), rtol=1e-5)
    assert x.argmax().item() == a.argmax()
    np.testing.assert_allclose(x[::3].cpu().numpy(), a[::3])


def test_empty_and_zero_dim():
    e = ember.zeros(0, 3, device="xpu")
    assert (e + 1).shape == (0, 3)
    assert e.sum(0).cpu().tolist() == [0.0, 0.0, 0.0]
    assert e.amax(1).shape == (0,)
    s = ember.tensor(3.0).to("xpu")
    assert (s * 2).item() == 6.0 and s.sum().item() == 3.0


def test_integer_division_by_zero_raises_and_recovers():
    x = ember.tensor([4, 5, 6], device="xpu")
    with pytest.raises(ZeroDivisionError, match="floor_divide"):
        x // ember.tensor([1, 0, 2], device="xpu")
    # a negative integer exponent is computed as PyTorch does (5 ** -1 == 0), not refused
    assert x.pow(ember.tensor([1, -1, 2], device="xpu")).tolist() == [4, 0, 36]
    assert (x // 2).tolist() == [2, 2, 3]  # the status was reset


@pytest.mark.parametrize("src", ["bool", "uint8", "int32", "int64", "float16", "bfloat16",
                                 "float32", "float64"])  # fmt: skip
def test_casts_match_the_cpu(src, rng):
    values = np.concatenate([rng.standard_normal(40) * 300, [0.5, -0.5, -1.0, 255.0, 256.0]])
    cpu = ember.from_numpy(values).to(getattr(ember, src))
    x = cpu.to("xpu")
    for dst in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                "float32", "float64"):  # fmt: skip
        dtype = getattr(ember, dst)
        want = cpu.to(dtype).numpy()
        got = x.to(dtype).cpu().numpy()
        assert got.tobytes() == want.tobytes(), f"{src} -> {dst}"
        strided = x[::2].to(dtype).cpu().numpy()
        assert strided.tobytes() == cpu[::2].to(dtype).numpy().tobytes(), f"{src} -> {dst}"


def test_fill_and_factories():
    x = ember.zeros(4, 6, device="xpu")
    x.t()[1:3].fill_(7)
    want = np.zeros((4, 6), np.float32)
    want.T[1:3] = 7
    np.testing.assert_array_equal(x.cpu().numpy(), want)
    assert ember.arange(3, 11, 2, device="xpu").tolist() == [3, 5, 7, 9]
    np.testing.assert_allclose(
        ember.linspace(-1, 1, 7, device="xpu").cpu().numpy(), ember.linspace(-1, 1, 7).numpy()
    )
    assert ember.full((2,), 1.5, dtype=ember.bfloat16, device="xpu").tolist() == [1.5, 1.5]


def test_reductions(layouts, rng):
    a = rng.standard_normal((7, 300)).astype(np.float32)
    for name, x in layouts(a).items():
        for dims in ((0,), (1,), (0, 1)):
            got = x.sum(dims).cpu().numpy()
            np.testing.assert_allclose(got, a.sum(dims), rtol=1e-5, atol=1e-4, err_msg=name)
        np.testing.assert_array_equal(x.amax(0).cpu().numpy(), a.max(0), err_msg=name)
        np.testing.assert_allclose(x.cumsum(1).cpu().numpy(), a.cumsum(1), rtol=1e-4, atol=1e-4)
    ints = rng.integers(-100, 100, (5, 1000)).astype(np.int32)
    assert ember.from_numpy(ints).to("xpu").sum(1).tolist() == ints.sum(1).tolist()
    assert ember.from_numpy(ints).to("xpu").prod(0).dtype is ember.int64


@pytest.mark.parametrize("shape", [(300, 200), (70, 3, 200)])
def test_reductions_with_many_long_outputs(layouts, rng, shape):
    """Enough outputs to fill the device, each over more than a few elements: one work-item per
    output on a CPU device, or where the kept elements are adjacent; a work-group per output
    otherwise (see kernels/reduce.py)."""
    a = rng.standard_normal(shape).astype(np.float32)
    for name, x in layouts(a).items():
        for dim in range(a.ndim):
            np.testing.assert_allclose(
                x.sum(dim).cpu().numpy(), a.sum(dim), rtol=1e-5, atol=1e-4, err_msg=name
            )
            values, indices = x.max(dim)
            np.testing.assert_array_equal(values.cpu().numpy(), a.max(dim), err_msg=name)
            np.testing.assert_array_equal(indices.cpu().numpy(), a.argmax(dim), err_msg=name)
            assert x.argmin(dim).tolist() == a.argmin(dim).tolist(), name


def test_reduction_kernel_choice():
    from types import SimpleNamespace

    from ember_backend_intel.kernels.reduce import _per_item

    gpu = SimpleNamespace(cpu=False, compute_units=8)
    cpu = SimpleNamespace(cpu=True, compute_units=8)
    assert _per_item(gpu, 4, 64, (1,))  # short: always one work-item per output
    assert not _per_item(gpu, 511, 1000, (1,))  # too few outputs to fill the device
    assert _per_item(gpu, 512, 1000, (1,))  # adjacent kept elements: coalesced reads
    assert not _per_item(gpu, 512, 1000, (1000,))  # each output's elements adjacent: a group
    assert _per_item(cpu, 512, 1000, (1000,))  # a CPU device avoids the group's tree


def test_indexed_reductions_take_the_first_extreme():
    x = ember.tensor([[1.0, 3.0, 3.0, float("nan"), float("nan")], [2.0, 2.0, 1.0, 0.0, 2.0]])
    v, i = x.to("xpu").max(1)
    assert i.tolist() == [3, 0] and np.isnan(v.cpu().numpy()[0])
    v, i = x.to("xpu").min(1)
    assert i.tolist() == [3, 3]
    big = np.zeros(1 << 20, np.float32)
    big[[5000, 700000]] = 1.0
    assert _xpu(big).argmax().item() == 5000  # ties across work-groups: the first wins


def test_index_errors_name_the_op_and_value():
    x = ember.arange(12.0, device="xpu").view(3, 4)
    with pytest.raises(IndexError, match=r"gather.*index 4 is out of bounds for dim 1"):
        x.gather(1, ember.tensor([[0], [4], [1]], device="xpu"))
    with pytest.raises(IndexError, match=r"index_select.*index -1"):
        x.index_select(0, ember.tensor([0, -1], device="xpu"))
    before = x.cpu().numpy().copy()
    with pytest.raises(IndexError, match=r"put_.*index 12 is out of range"):
        x.put_(ember.tensor([0, 12], device="xpu"), ember.tensor([9.0, 9.0], device="xpu"))
    np.testing.assert_array_equal(x.cpu().numpy(), before)  # nothing was written
    assert x.take(ember.tensor([-1, 0], device="xpu")).tolist() == [11.0, 0.0]


def test_scatter_add_and_index_add_count_duplicates():
    index = ember.tensor([[0, 0, 2, 0]], device="xpu")
    out = ember.zeros(1, 3, device="xpu").scatter_add(1, index, ember.ones(1, 4, device="xpu"))
    assert out.tolist() == [[3.0, 0.0, 1.0]]
    out = ember.zeros(3, 2, device="xpu").index_add(
        0, ember.tensor([1, 1, 2], device="xpu"), ember.ones(3, 2, device="xpu"), alpha=2
    )
    assert out.tolist() == [[0.0, 0.0], [4.0, 4.0], [2.0, 2.0]]
    x = ember.zeros(4, device="xpu")
    x.put_(ember.tensor([1, 1, 3], device="xpu"), ember.ones(3, device="xpu"), accumulate=True)
    assert x.tolist() == [0.0, 2.0, 0.0, 1.0]


def test_sort_is_stable_on_every_line_length(rng):
    for n in (1, 2, 5, 64, 1000, 5000):
        a = rng.integers(0, 7, (3, n)).astype(np.float32)
        for descending in (False, True):
            v, i = _xpu(a).sort(1, descending=descending)
            keys = -a if descending else a
            want = np.argsort(keys, axis=1, kind="stable")
            np.testing.assert_array_equal(i.cpu().numpy(), want)
            np.testing.assert_array_equal(v.cpu().numpy(), np.take_along_axis(a, want, 1))
    a = rng.standard_normal((40, 6)).astype(np.float32)
    v, i = flipped(_xpu(a)).sort(0)
    np.testing.assert_array_equal(v.cpu().numpy(), np.sort(a[::-1], 0))


def test_nonzero_matches_numpy(rng):
    a = rng.random((300, 70)) > 0.6
    got = ember.nonzero(_xpu(a)).cpu().numpy()
    np.testing.assert_array_equal(got, np.stack(np.nonzero(a), 1))
    t = _xpu(a).t()
    np.testing.assert_array_equal(ember.nonzero(t).cpu().numpy(), np.stack(np.nonzero(a.T), 1))


@pytest.mark.parametrize("name", ["erf", "erfc", "gelu"])
def test_erf_family_within_one_ulp_of_the_cpu(name):
    """The xpu computes them in double (from exp(-z^2) and a polynomial) where the device has
    doubles, instead of OpenCL's float erfc: within one ulp of the double result rounded to
    float. The CPU's are float (vmath.h: erf, erfc and gelu within 2, 4 and 6 ulp, checked in
    tests/backend_cpu/test_vmath.py), so all three compare with scipy's in double."""
    import scipy.special

    import ember.nn.functional as F

    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 10.5, -10.5, 1.0, -1.0]
    a = np.concatenate([np.linspace(-12, 12, 100001), special]).astype(np.float32)
    fn = F.gelu if name == "gelu" else getattr(ember.Tensor, name)
    x = a.astype(np.float64)
    if name == "gelu":  # x Phi(x), without 1 + erf's cancellation for x << 0
        want = (0.5 * x * scipy.special.erfc(-x / np.sqrt(2))).astype(np.float32)
    else:
        want = getattr(scipy.special, name)(x).astype(np.float32)
    got = fn(ember.from_numpy(a).to("xpu")).cpu().numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    ulps = np.abs(got[finite].view(np.int32).astype(np.int64) - want[finite].view(np.int32))
    assert ulps.max() <= 1, a[finite][ulps.argmax()]
