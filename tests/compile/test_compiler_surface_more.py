"""ember.compiler's hints against torch.compiler: assume_constant_result, wrap_numpy,
nested_compile_region, the default backend, is_exporting."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("lib", [ember, torch], ids=["ember", "torch"])
def test_assume_constant_result_is_baked(lib):
    @lib.compiler.assume_constant_result
    def total(x):
        return x.sum().item()

    def f(x):
        return x * total(x)

    compiled = lib.compile(f, fullgraph=True, backend="eager")
    x = lib.ones(3)
    assert [compiled(x * k).tolist() for k in (1, 2)] == [[3.0] * 3, [6.0] * 3]
    assert f(x * 2).tolist() == [12.0] * 3  # eager: a plain call


def test_assume_constant_result_ember_backend_no_break():
    @ember.compiler.assume_constant_result
    def total(x):
        return x.sum()

    compiled = ember.compile(lambda x: x + total(x), fullgraph=True)
    x = ember.ones(3)
    assert compiled(x).tolist() == [4.0] * 3
    assert compiled(x * 2).tolist() == [5.0] * 3  # the first call's tensor, baked in


def test_wrap_numpy_matches_torch():
    def fn(a, d):
        return {"s": np.sum(a * a), "l": [a + 1, 3], "t": d["k"] * 2}

    data = np.arange(6.0, dtype=np.float32)
    got = ember.compiler.wrap_numpy(fn)(ember.tensor(data), {"k": ember.ones(2)})
    want = torch.compiler.wrap_numpy(fn)(torch.tensor(data), {"k": torch.ones(2)})
    assert type(got["s"]) is type(want["s"]) and got["s"] == want["s"]
    assert isinstance(got["l"][0], ember.Tensor) and got["l"][1] == 3
    np.testing.assert_array_equal(got["l"][0].numpy(), want["l"][0].numpy())
    np.testing.assert_array_equal(got["t"].numpy(), want["t"].numpy())


def test_nested_compile_region_calls_fn():
    for lib in (ember, torch):
        region = lib.compiler.nested_compile_region(lambda x: x * 2)
        assert region(lib.ones(2)).tolist() == [2.0, 2.0]
        assert lib.compiler.nested_compile_region()(lambda x: x + 1)(1) == 2
    compiled = ember.compile(lambda x: region_e(x) + 1, fullgraph=True)
    assert compiled(ember.ones(2)).tolist() == [3.0, 3.0]


region_e = ember.compiler.nested_compile_region(lambda x: x * 2)


def test_default_backend():
    try:
        for lib in (ember, torch):
            lib.compiler.set_default_backend("eager")
            assert lib.compiler.get_default_backend() == "eager"
            with pytest.raises(TypeError, match="backend must be a string or callable"):
                lib.compiler.set_default_backend(3)
        assert ember.compile(lambda x: x + 1)._options.backend_name == "eager"
    finally:
        ember.compiler.set_default_backend(None)
        torch.compiler.set_default_backend(None)
    assert ember.compiler.get_default_backend() == "ember"  # torch: "inductor", run as ember
    assert ember.compile(lambda x: x + 1)._options.backend_name == "ember"


def _probe(lib, seen):
    class M(lib.nn.Module):
        def forward(self, x):
            seen.append(lib.compiler.is_exporting())
            return x + 1

    return M()


def test_is_exporting_only_under_export():
    for lib in (ember, torch):
        seen = []
        m = _probe(lib, seen)
        lib.export.export(m, (lib.ones(2),))
        assert seen[-1] is True
        lib.compile(m, backend="eager")(lib.ones(2))
        m(lib.ones(2))
        assert seen[-2:] == [False, False]
        assert lib.compiler.is_exporting() is False
