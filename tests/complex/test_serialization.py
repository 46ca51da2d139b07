"""Complex tensors in checkpoints: torch.save files load in ember and ember's load in torch
(ComplexFloatStorage / ComplexDoubleStorage), and safetensors C64/C128 both ways."""

from __future__ import annotations

import numpy as np
import pytest
import safetensors.numpy
import torch

import ember
from ember import safetensors as ember_safetensors

DTYPES = ("complex64", "complex128")


def _values(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("weights_only", [True, False])
def test_torch_checkpoint_loads_in_ember(tmp_path, dtype, weights_only):
    values = _values()
    path = tmp_path / "torch.pt"
    t = torch.tensor(values, dtype=getattr(torch, dtype))
    torch.save({"z": t, "view": t[1:, ::2], "dtype": t.dtype}, path)
    loaded = ember.load(path, weights_only=weights_only)
    assert loaded["z"].dtype is getattr(ember, dtype) and loaded["dtype"] is getattr(ember, dtype)
    np.testing.assert_array_equal(loaded["z"].numpy(), t.numpy())
    np.testing.assert_array_equal(loaded["view"].numpy(), t[1:, ::2].numpy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_ember_checkpoint_loads_in_torch(tmp_path, dtype):
    values = _values(1)
    path = tmp_path / "ember.pt"
    z = ember.tensor(values, dtype=getattr(ember, dtype))
    ember.save({"z": z, "real": z.real.clone(), "dtype": z.dtype}, path)
    loaded = torch.load(path, weights_only=True)
    assert loaded["z"].dtype is getattr(torch, dtype) and loaded["dtype"] is getattr(torch, dtype)
    np.testing.assert_array_equal(loaded["z"].numpy(), z.numpy())
    np.testing.assert_array_equal(loaded["real"].numpy(), values.real.astype(z.real.numpy().dtype))
    back = ember.load(path)
    np.testing.assert_array_equal(back["z"].numpy(), z.numpy())


def test_a_real_view_of_a_complex_storage_is_refused_as_in_torch(tmp_path):
    z = ember.ones(2, dtype=ember.complex64)
    with pytest.raises(RuntimeError, match="view the same data as different types"):
        ember.save({"z": z, "real": z.real}, tmp_path / "x.pt")


def test_safetensors_both_ways(tmp_path):
    values = _values(2).astype(np.complex64)
    path = tmp_path / "weights.safetensors"
    ember_safetensors.save_file({"z": ember.tensor(values)}, str(path))
    assert '"dtype":"C64"' in path.read_bytes()[8:200].decode("latin-1")
    np.testing.assert_array_equal(safetensors.numpy.load_file(str(path))["z"], values)
    other = tmp_path / "numpy.safetensors"
    safetensors.numpy.save_file({"z": values}, str(other))
    loaded = ember_safetensors.load_file(str(other))["z"]
    assert loaded.dtype is ember.complex64
    np.testing.assert_array_equal(loaded.numpy(), values)


def test_safetensors_refuses_complex128_as_the_library_does(tmp_path):
    values = _values(3)  # the format's dtypes stop at C64: the library refuses complex128 too
    with pytest.raises(Exception, match=r"complex128|C128"):
        safetensors.numpy.save_file({"z": values}, str(tmp_path / "numpy.safetensors"))
    with pytest.raises(ValueError, match="no complex128 dtype"):
        ember_safetensors.save_file({"z": ember.tensor(values)}, str(tmp_path / "e.safetensors"))
