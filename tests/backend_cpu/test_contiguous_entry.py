"""The elementwise ops' contiguous entry (ember_binary_contig/ember_unary_contig, reached through
a kernel's ``contiguous(dtype)``): the runners' fast path calls it for operands contiguous with
the output's shape. Each op is called twice, so that the second call takes the fast path the
first one cached; results are compared with PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.dispatcher.optable import OPS

BINARY = ("add", "sub", "mul", "div", "maximum", "atan2", "eq", "lt", "bitwise_and")
UNARY = ("exp", "neg", "abs", "sqrt", "sigmoid", "isnan", "bitwise_not")
DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool")


def _values(dtype: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if dtype in ("int32", "int64", "uint8"):
        return rng.integers(1, 100, n).astype(dtype)
    return (rng.random(n) * 4 + 0.5).astype(np.float32)  # half types: made from float32


def _cases(names: tuple, arity: int) -> list:
    """The (op, dtype) pairs PyTorch computes in the operands' dtype (bool results included):
    the pairs the fast path caches. Promoted ones (integer div, exp of int) take the full path."""
    found = []
    for name in names:
        for dtype in DTYPES:
            operand = torch.ones(2, dtype=getattr(torch, dtype))
            try:
                result = getattr(torch, name)(*[operand] * arity)
            except (RuntimeError, TypeError):  # bitwise ops of floats, sub and neg of bool
                continue
            if result.dtype in (operand.dtype, torch.bool):
                found.append((name, dtype))
    return found


def _pair(dtype: str, n: int, seed: int):
    """The same values as a contiguous ember tensor that starts at an offset in its storage (a
    slice), and as a torch tensor."""
    values = np.concatenate([_values(dtype, 3, seed + 100), _values(dtype, n, seed)])
    e = ember.from_numpy(values).to(getattr(ember, dtype))[3:]
    t = torch.from_numpy(values).to(getattr(torch, dtype))[3:]
    assert e.is_contiguous() and e.storage_offset() == 3
    return e, t


def _check(result, expected) -> None:
    assert result.dtype == getattr(ember, str(expected.dtype).removeprefix("torch."))
    got = torch.from_numpy(
        result.float().numpy() if result.dtype.is_floating_point else result.numpy()
    )
    want = expected.float() if expected.dtype.is_floating_point else expected
    torch.testing.assert_close(
        got, want, rtol=1e-2 if result.itemsize == 2 else 1e-6, atol=1e-6, equal_nan=True
    )


@pytest.mark.parametrize(("name", "dtype"), _cases(BINARY, 2))
def test_binary_contiguous_entry_matches_torch(name, dtype):
    a, ta = _pair(dtype, 37, 0)
    b, tb = _pair(dtype, 37, 1)
    fn, tfn = getattr(ember, name), getattr(torch, name)
    expected = tfn(ta, tb)
    _check(fn(a, b), expected)
    entry = OPS[name].fast.get(a.dtype)
    assert entry is not None and entry[3] is not None, "no contiguous entry cached"
    _check(fn(a, b), expected)  # the contiguous entry


@pytest.mark.parametrize(("name", "dtype"), _cases(UNARY, 1))
def test_unary_contiguous_entry_matches_torch(name, dtype):
    x, tx = _pair(dtype, 37, 2)
    fn, tfn = getattr(ember, name), getattr(torch, name)
    expected = tfn(tx)
    _check(fn(x), expected)
    entry = OPS[name].fast.get(x.dtype)
    assert entry is not None and entry[3] is not None, "no contiguous entry cached"
    _check(fn(x), expected)


def test_the_fast_path_takes_the_contiguous_entry():
    a, _ = _pair("float32", 16, 0)
    a + a
    _, kernel, result, call, key = OPS["add"].fast[ember.float32]
    assert result is ember.float32 and call is not None and key >= 0
    # the entry is the kernel's own (docs/plugins.md): same call and key when asked again
    assert kernel.contiguous(ember.float32) == (call, key)


def test_large_operands_run_through_the_parallel_driver():
    n = 40_000  # above EM_PARALLEL_THRESHOLD: the contiguous entry hands the loop to em_run
    threads = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        a, ta = _pair("float32", n, 3)
        b, tb = _pair("float32", n, 4)
        for _ in range(2):
            _check(a * b, ta * tb)
            _check(ember.exp(a), torch.exp(ta))
    finally:
        ember.set_num_threads(threads)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_the_entries_that_keep_the_gil_run_either_side_of_their_limit(dtype):
    # held.py's entries keep the GIL up to this many elements and release it above
    from ember_backend_cpu.held import lib

    limit = lib.ember_held_max_elements()
    for n in (limit - 1, limit, limit + 1):
        a, ta = _pair(dtype, n, 5)
        b, tb = _pair(dtype, n, 6)
        for _ in range(2):
            _check(a + b, ta + tb)
            _check(ember.neg(a), torch.neg(ta))
    call = OPS["add"].fast[getattr(ember, dtype)][3]
    assert call is lib.ember_held_binary_contig
    assert OPS["neg"].fast[getattr(ember, dtype)][3] is lib.ember_held_unary_contig


def test_integer_division_by_zero_raises_on_the_fast_path():
    x = ember.tensor([1, 2, 3])
    y = ember.tensor([1, 0, 1])
    ok = ember.tensor([1, 1, 1])
    assert (x // ok).tolist() == [1, 2, 3]  # caches the fast path
    assert OPS["floor_divide"].fast[ember.int64][3] is not None
    with pytest.raises(ZeroDivisionError, match="floor_divide"):
        x // y
    with pytest.raises(ZeroDivisionError, match="floor_divide"):
        x // y


def test_non_contiguous_operands_take_the_kernel():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = ember.from_numpy(base).t()  # (6, 4), transposed
    b = ember.from_numpy(base.T.copy())
    t = torch.from_numpy(base).t()
    for _ in range(2):
        _check(a + b, t + t)
        _check(ember.exp(a), torch.exp(t))


def test_the_c_entries_refuse_unknown_keys():
    from ember_backend_cpu._kernels import lib

    assert lib.ember_contig_key(2, 10_000, 8) == -1
    assert lib.ember_contig_key(3, 0, 8) == -1  # ternary ops have no contiguous entry
    assert lib.ember_contig_key(2, 0, 42) == -1
    out = ember.empty(4)
    address = out.data_ptr()
    assert lib.ember_binary_contig(-1, address, address, address, 4) != 0
    assert lib.ember_unary_contig(10**6, address, address, 4) != 0
