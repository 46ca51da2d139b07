"""ember.mps answers as torch.mps does on a machine without Metal (this one and CI's)."""

import pytest

import ember

torch = pytest.importorskip("torch")
if torch.backends.mps.is_available():  # pragma: no cover - only on Apple machines
    pytest.skip("the oracle has a Metal device here", allow_module_level=True)

CALLS = {
    "is_available": (),
    "device_count": (),
    "manual_seed": (0,),
    "synchronize": (),
    "empty_cache": (),
    "current_allocated_memory": (),
    "driver_allocated_memory": (),
    "recommended_max_memory": (),
    "set_per_process_memory_fraction": (0.5,),
    "get_rng_state": (),
    "seed": (),
}


def outcome(lib, name):
    try:
        return ("returned", getattr(lib.mps, name)(*CALLS[name]))
    except Exception as error:  # the error itself is what is compared
        return (type(error).__name__, str(error))


@pytest.mark.parametrize("name", sorted(CALLS))
def test_mps_call_as_torch_without_metal(name):
    assert outcome(ember, name) == outcome(torch, name)


def test_set_rng_state_refused_as_torch():
    with pytest.raises(RuntimeError) as expected:
        torch.mps.set_rng_state(torch.zeros(4, dtype=torch.uint8))
    with pytest.raises(RuntimeError) as got:
        ember.mps.set_rng_state(ember.zeros(4, dtype=ember.uint8))
    assert str(got.value) == str(expected.value)
    assert set(ember.mps.__all__) <= set(dir(torch.mps))
