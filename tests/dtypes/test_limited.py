"""float8 and uint16/32/64 ("limited support" dtypes) against PyTorch: factories, casts both ways
compared bit for bit, copies, views, printing, finfo/iinfo, promotion refusals, the error for
arithmetic, and checkpoints/safetensors in both directions."""

from __future__ import annotations

import io

import numpy as np
import pytest

import ember
import ember.safetensors

torch = pytest.importorskip("torch")

FLOAT8 = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"]
UNSIGNED = ["uint16", "uint32", "uint64"]
SOURCES = ["float16", "bfloat16", "float32", "float64"]
BITS = {1: ("uint8", "uint8"), 2: ("int16", "int16"), 4: ("int32", "int32"), 8: ("int64", "int64")}


def bits_torch(t) -> np.ndarray:
    return t.contiguous().view(getattr(torch, BITS[t.element_size()][0])).numpy()


def bits_ember(t) -> np.ndarray:
    return t.contiguous().view(getattr(ember, BITS[t.element_size()][1])).numpy()


def to_ember(t):
    """A torch tensor as an ember tensor with the same bits."""
    bits = ember.tensor(bits_torch(t))
    return bits.view(getattr(ember, str(t.dtype).split(".")[1]))


def edge_values(rng) -> np.ndarray:
    """Random float32 bit patterns (every exponent, NaNs and infinities), wide normal values, and
    the formats' edges: max, overflow, ties, subnormals, signed zeros."""
    raw = rng.integers(0, 2**32, 20_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    wide = (rng.standard_normal(20_000) * np.exp(rng.uniform(-30, 30, 20_000))).astype(np.float32)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 448, 449, 464, 465, 479, 480, 500, 240, 248]
    edges += [57344, 61440, 61441, 65536, 2.0**-6, 2.0**-9, 2.0**-10, 2.0**-17, 2.0**-126]
    edges += [2.0**-149, 1.5 * 2.0**-127, 1.5 * 2.0**127, 3.0, 0.75, 6.0, 1.25]
    edges = np.array(edges, np.float32)
    return np.concatenate([raw, wide, edges, -edges])


@pytest.mark.parametrize("name", FLOAT8)
@pytest.mark.parametrize("source", SOURCES)
def test_cast_to_float8_bits_match_torch(name, source):
    values = torch.from_numpy(edge_values(np.random.default_rng(0))).to(getattr(torch, source))
    want = values.to(getattr(torch, name))
    got = to_ember(values).to(getattr(ember, name))
    assert got.dtype is getattr(ember, name)
    np.testing.assert_array_equal(bits_ember(got), bits_torch(want))


@pytest.mark.parametrize("name", FLOAT8)
@pytest.mark.parametrize("target", [*SOURCES, *FLOAT8, "int64", "int32", "uint8", "bool"])
def test_cast_from_float8_matches_torch(name, target):
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(getattr(torch, name))
    want = codes.to(getattr(torch, target))
    got = to_ember(codes).to(getattr(ember, target))
    assert got.dtype is getattr(ember, target)
    if target in ("float32", *FLOAT8):  # NaNs included: PyTorch's exact bits
        np.testing.assert_array_equal(bits_ember(got), bits_torch(want))
        return
    values = codes.float()
    finite = ~values.isnan()
    if target.startswith("int") or target == "uint8":  # a float -> int cast of NaN is undefined
        finite &= values.abs() < 2**31
        if target == "uint8":
            finite &= (values >= 0) & (values < 256)
    np.testing.assert_array_equal(bits_ember(got)[finite.numpy()], bits_torch(want)[finite.numpy()])


@pytest.mark.parametrize("name", UNSIGNED)
@pytest.mark.parametrize("other", ["float32", "float64", "int64", "uint8", "bool", "float8_e5m2"])
def test_unsigned_casts_match_torch(name, other):
    values = torch.tensor([0, 1, 7, 200, 255, 65535, 2**31 - 1], dtype=torch.int64)
    wide = values.to(getattr(torch, name))
    got = to_ember(values).to(getattr(ember, name))
    np.testing.assert_array_equal(bits_ember(got), bits_torch(wide))
    back, want = got.to(getattr(ember, other)), wide.to(getattr(torch, other))
    assert back.dtype is getattr(ember, other)
    keep = (values < 256).numpy() if other == "uint8" else slice(None)
    np.testing.assert_array_equal(bits_ember(back)[keep], bits_torch(want)[keep])
    into = ember.zeros(7, dtype=getattr(ember, other)).copy_(got)
    np.testing.assert_array_equal(bits_ember(into)[keep], bits_torch(want)[keep])


@pytest.mark.parametrize("name", FLOAT8 + UNSIGNED)
def test_factories_copy_view_and_repr(name):
    e, t = getattr(ember, name), getattr(torch, name)
    for made, want in [
        (ember.zeros(2, 3, dtype=e), torch.zeros(2, 3, dtype=t)),
        (ember.ones(4, dtype=e), torch.ones(4, dtype=t)),
        (ember.full((3,), 3, dtype=e), torch.full((3,), 3, dtype=t)),
        (ember.tensor([1, 2], dtype=e), torch.tensor([1, 2], dtype=t)),
    ]:
        assert made.dtype is e and made.shape == want.shape
        np.testing.assert_array_equal(bits_ember(made), bits_torch(want))
        if name != "float8_e8m0fnu":  # PyTorch prints its 2**-127 as 0. (docs/float8.md)
            assert repr(made) == repr(want).replace("torch.", "ember.")
    assert ember.empty(5, dtype=e).shape == (5,)
    assert ember.ones(1, dtype=e).element_size() == torch.ones(1, dtype=t).element_size()
    x = ember.arange(6).reshape(2, 3).to(e)
    strided = ember.zeros(3, 2, dtype=e).copy_(x.t())  # a transposed source
    np.testing.assert_array_equal(
        bits_ember(strided), bits_torch(torch.arange(6).reshape(2, 3).to(t).t())
    )
    np.testing.assert_array_equal(bits_ember(x.clone()), bits_ember(x))
    assert x.type() == torch.ones(1, dtype=t).type().replace("torch.", "ember.")
    x.zero_()
    np.testing.assert_array_equal(bits_ember(x), np.zeros((2, 3), bits_ember(x).dtype))


@pytest.mark.parametrize("name", FLOAT8)
def test_view_as_uint8_and_back(name):
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    got = ember.tensor(codes.numpy()).view(getattr(ember, name))
    np.testing.assert_array_equal(got.view(ember.uint8).numpy(), codes.numpy())
    want = codes.view(getattr(torch, name)).float()
    np.testing.assert_array_equal(bits_ember(got.float()), bits_torch(want))


@pytest.mark.parametrize("name", FLOAT8 + ["float16", "bfloat16", "float32", "float64"])
def test_finfo(name):
    want, got = torch.finfo(getattr(torch, name)), ember.finfo(getattr(ember, name))
    for key in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(got, key) == getattr(want, key), key
    assert repr(got) == repr(want)


@pytest.mark.parametrize("name", UNSIGNED + ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo(name):
    want, got = torch.iinfo(getattr(torch, name)), ember.iinfo(getattr(ember, name))
    assert (got.bits, got.min, got.max, got.dtype) == (want.bits, want.min, want.max, want.dtype)
    with pytest.raises(TypeError, match="requires a floating point"):
        ember.finfo(getattr(ember, name))


@pytest.mark.parametrize("a", FLOAT8 + UNSIGNED)
@pytest.mark.parametrize(
    "b", ["bool", "uint8", "int64", "float16", "float32", "complex64", *FLOAT8]
)
def test_promotion_matches_torch(a, b):
    try:
        want = torch.promote_types(getattr(torch, a), getattr(torch, b))
    except RuntimeError as error:
        with pytest.raises(RuntimeError) as info:
            ember.promote_types(getattr(ember, a), getattr(ember, b))
        assert str(info.value) == str(error)
        return
    got = ember.promote_types(getattr(ember, a), getattr(ember, b))
    assert got is getattr(ember, str(want).split(".")[1])


@pytest.mark.parametrize("name", FLOAT8 + UNSIGNED)
def test_arithmetic_is_refused_like_torch(name):
    x = ember.ones(3, dtype=getattr(ember, name))
    with pytest.raises(NotImplementedError) as info:
        x + x
    scalar_name = {"uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64"}.get(name)
    scalar_name = scalar_name or "Float8_" + name.split("_", 1)[1]
    assert f"not implemented for '{scalar_name}'" in str(info.value)
    with pytest.raises(NotImplementedError):
        torch.ones(3, dtype=getattr(torch, name)) + torch.ones(3, dtype=getattr(torch, name))


@pytest.mark.parametrize("name", FLOAT8 + UNSIGNED)
def test_checkpoints_both_ways(name):
    t = torch.arange(12).to(getattr(torch, name)).reshape(3, 4)[:, 1:]
    buffer = io.BytesIO()
    torch.save({"x": t}, buffer)
    buffer.seek(0)
    got = ember.load(buffer)["x"]
    assert got.dtype is getattr(ember, name) and got.shape == t.shape
    np.testing.assert_array_equal(bits_ember(got), bits_torch(t))
    buffer = io.BytesIO()
    ember.save({"x": got, "p": ember.nn.Parameter(got, requires_grad=False)}, buffer)
    buffer.seek(0)
    back = torch.load(buffer, weights_only=True)
    assert back["x"].dtype is t.dtype and isinstance(back["p"], torch.nn.Parameter)
    np.testing.assert_array_equal(bits_torch(back["x"]), bits_torch(t))


@pytest.mark.parametrize("name", [n for n in FLOAT8 if n != "float8_e8m0fnu"] + UNSIGNED)
def test_safetensors_both_ways(name, tmp_path):
    st = pytest.importorskip("safetensors.torch")
    t = torch.arange(6).to(getattr(torch, name))
    st.save_file({"x": t}, tmp_path / "a.safetensors")
    got = ember.safetensors.load_file(tmp_path / "a.safetensors")["x"]
    np.testing.assert_array_equal(bits_ember(got), bits_torch(t))
    ember.safetensors.save_file({"x": got}, tmp_path / "b.safetensors")
    back = st.load_file(tmp_path / "b.safetensors")["x"]
    assert back.dtype is t.dtype
    np.testing.assert_array_equal(bits_torch(back), bits_torch(t))
