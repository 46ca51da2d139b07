"""ember.utils.cpp_extension: build C/C++ in a script, call it on tensors, register it as an op.

Builds are few and cached in a per-module temporary folder: one inline module shared by most
tests, two versions of a file for ``load``, and one failing compile.
"""

import logging
import os
import shutil

import numpy as np
import pytest
import torch

import ember
import ember.library as L
from ember.autograd import gradcheck
from ember.utils import _cpp_build
from ember.utils.cpp_extension import get_default_build_root, load, load_inline

pytestmark = pytest.mark.skipif(
    not (
        shutil.which(os.environ.get("CC") or "cc") and shutil.which(os.environ.get("CXX") or "c++")
    ),
    reason="no C/C++ compiler on PATH (cc and c++, or $CC and $CXX): extensions need one",
)

SOURCE = """
#include <cmath>
EMBER_EXPORT void ext_add(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
EMBER_EXPORT double ext_sum(const double* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i];
  return s;
}
EMBER_EXPORT void scaled_add(const double* a, const double* b, double* out, int64_t n,
                             double alpha) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + alpha * b[i];
}
extern "C" double plain_dot(const double* a, const double* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}
"""
FUNCTIONS = [
    "ext_add",
    "ext_sum",
    "scaled_add",
    "double plain_dot(const double*, const double*, int64_t)",
]


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("ember_extensions")


@pytest.fixture(scope="module")
def ext(build_dir):
    return load_inline("ext_test", SOURCE, functions=FUNCTIONS, build_directory=str(build_dir))


def test_elementwise_add_matches_ember_and_torch(ext):
    a, b = ember.randn(3, 5), ember.randn(3, 5)
    out = ember.empty(3, 5)
    assert ext.ext_add(a, b, out, out.numel()) is None
    np.testing.assert_array_equal(out.numpy(), (a + b).numpy())
    np.testing.assert_array_equal(
        out.numpy(), torch.add(torch.from_numpy(a.numpy()), torch.from_numpy(b.numpy())).numpy()
    )


def test_reductions_match_ember_and_torch(ext):
    x, y = ember.randn(101, dtype=ember.float64), ember.randn(101, dtype=ember.float64)
    assert ext.ext_sum(x, x.numel()) == pytest.approx(x.sum().item(), rel=1e-12)
    assert ext.ext_sum(x, 5) == pytest.approx(x[:5].sum().item(), rel=1e-12)
    expected = torch.dot(torch.from_numpy(x.numpy()), torch.from_numpy(y.numpy())).item()
    assert ext.plain_dot(x, y, x.numel()) == pytest.approx(expected, rel=1e-12)


def test_arguments_are_checked(ext):
    a = ember.randn(4)
    with pytest.raises(
        TypeError,
        match=r"ext_test.ext_add: argument 0 \(float \*\) takes ember.float32, got ember.float64",
    ):
        ext.ext_add(a.double(), a, a, 4)
    with pytest.raises(ValueError, match="takes a contiguous tensor"):
        ext.ext_add(ember.randn(4, 2).t(), a, a, 4)
    with pytest.raises(TypeError, match=r"takes 4 arguments \(void ext_add"):
        ext.ext_add(a, a, a)
    with pytest.raises(TypeError, match="takes a number, got a Tensor"):
        ext.ext_sum(a.double(), ember.tensor(4))


def test_unchanged_call_reuses_the_build(ext, build_dir, caplog):
    library = ext.__file__
    mtime = os.stat(library).st_mtime_ns
    with caplog.at_level(logging.DEBUG, logger="ember.utils.cpp_extension"):
        again = load_inline("ext_test", SOURCE, functions=FUNCTIONS, build_directory=str(build_dir))
    assert again is ext and os.stat(library).st_mtime_ns == mtime
    assert "No modifications detected for re-loaded extension module ext_test" in caplog.text


SCALE_C = """#include "ember_extension.h"
EMBER_EXPORT void scale(const float* x, float* out, int64_t n, float factor) {
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * factor + OFFSET;
}
"""


def test_load_from_files_and_a_changed_source_rebuilds(tmp_path, caplog):
    source = tmp_path / "scale.c"
    source.write_text(SCALE_C.replace("OFFSET", "0"))
    header = tmp_path / "shift.h"  # a header's EMBER_EXPORT declarations count; it is not compiled
    header.write_text('#include "ember_extension.h"\nEMBER_EXPORT float shift(float x);\n')
    (tmp_path / "shift.c").write_text(
        '#include "shift.h"\nfloat shift(float x) { return x + 1; }\n'
    )
    files = [str(source), str(header), str(tmp_path / "shift.c")]
    kwargs = {"extra_include_paths": [str(tmp_path)], "build_directory": str(tmp_path / "build")}
    first = load("scale_ext", files, **kwargs)
    assert first.shift(2.5) == 3.5
    x, out = ember.randn(6), ember.empty(6)
    first.scale(x, out, 6, 3.0)
    np.testing.assert_allclose(out.numpy(), (x * 3.0).numpy(), rtol=1e-6)
    with caplog.at_level(logging.DEBUG, logger="ember.utils.cpp_extension"):
        assert load("scale_ext", files, **kwargs) is first
        assert "skipping build step" in caplog.text
        caplog.clear()
        source.write_text(SCALE_C.replace("OFFSET", "1"))
        second = load("scale_ext", files, **kwargs)
        assert "skipping build step" not in caplog.text
    assert second.__file__ != first.__file__ and not os.path.exists(first.__file__)
    second.scale(x, out, 6, 3.0)
    np.testing.assert_allclose(out.numpy(), (x * 3.0 + 1).numpy(), rtol=1e-6)


def test_compile_error_raises_with_the_compiler_output(tmp_path):
    broken = "EMBER_EXPORT void broken(float* x) { x[0] = undeclared_thing; }"
    with pytest.raises(RuntimeError, match="Error building extension 'broken_ext'") as info:
        load_inline("broken_ext", broken, build_directory=str(tmp_path))
    assert "undeclared_thing" in str(info.value) and "error" in str(info.value)


def test_declarations_are_checked_before_building(tmp_path):
    with pytest.raises(ValueError, match="exports no functions: mark them EMBER_EXPORT"):
        load_inline("none_ext", "int x;", build_directory=str(tmp_path))
    with pytest.raises(ValueError, match="no EMBER_EXPORT function 'missing'"):
        load_inline("some_ext", SOURCE, functions=["missing"], build_directory=str(tmp_path))
    with pytest.raises(ValueError, match="cffi cannot parse the declarations"):
        load_inline(
            "cxx_ext",
            SOURCE,
            functions=["void f(std::vector<int>& v)"],
            build_directory=str(tmp_path),
        )
    with pytest.raises(ValueError, match="must be a Python identifier"):
        load("not-a-name", [], build_directory=str(tmp_path))


def test_cuda_sources_need_nvcc(tmp_path, monkeypatch):
    which = shutil.which
    monkeypatch.setattr(
        _cpp_build.shutil, "which", lambda n, *a, **k: None if "nvcc" in n else which(n, *a, **k)
    )
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    cuda = "EMBER_EXPORT void noop(float* x) {}"
    with pytest.raises(RuntimeError, match="Error building extension 'cuda_ext': nvcc not found"):
        load_inline("cuda_ext", "", cuda_sources=cuda, build_directory=str(tmp_path))


def test_default_build_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBER_EXTENSIONS_DIR", str(tmp_path))
    assert get_default_build_root() == os.path.realpath(tmp_path)
    monkeypatch.delenv("EMBER_EXTENSIONS_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert get_default_build_root() == os.path.realpath(tmp_path / "cache" / "ember_extensions")


def test_registered_as_an_op_with_a_formula(ext):
    """The workflow of docs/plugins.md: a C kernel from a script becomes a differentiable op."""
    name = "cppext_test::scaled_add"
    L.define(f"{name}(Tensor a, Tensor b, float alpha) -> Tensor", dtypes=[ember.float64])
    L.register_shape(name, lambda a, b, alpha: a)

    @L.impl(name, "cpu")
    def kernel(out, a, b, alpha):
        ext.scaled_add(a, b, out, out.numel(), alpha)

    def setup_context(ctx, inputs, output):
        ctx.alpha = inputs[2]

    L.register_autograd(name, lambda ctx, g: (g, g * ctx.alpha, None), setup_context=setup_context)
    op = ember.ops.cppext_test.scaled_add
    a = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    b = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    np.testing.assert_allclose(op(a, b, 2.5).detach().numpy(), (a + 2.5 * b).detach().numpy())
    assert gradcheck(lambda a, b: op(a, b, 2.5), (a, b))
    (op(a, b, -1.5) ** 2).sum().backward()
    ta, tb = (torch.from_numpy(t.detach().numpy()).requires_grad_() for t in (a, b))
    ((ta - 1.5 * tb) ** 2).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-12)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH: no CUDA build to check")
def test_cuda_sources_build_with_nvcc(tmp_path):
    """nvcc builds and links the .cu file; only host code runs (this checks no GPU execution)."""
    cuda = """
    __global__ void add_one(float* x) { x[threadIdx.x] += 1.0f; }
    EMBER_EXPORT int twice_on_host(int n) { return 2 * n; }
    """
    ext = load_inline("cuda_build_ext", "", cuda_sources=cuda, build_directory=str(tmp_path))
    assert ext.twice_on_host(21) == 42


def test_is_python_module_false_loads_the_library(ext, build_dir):
    source = "EMBER_EXPORT int identity(int a) { return a; }"
    assert (
        load_inline(
            "plain_lib", source, build_directory=str(build_dir / "plain"), is_python_module=False
        )
        is None
    )


def test_functions_as_a_dict_of_docstrings_and_declarations(build_dir):
    functions = {
        "ext_sum": "Sum of the first n elements (in double).",
        "plain_dot": "double plain_dot(const double* a, const double* b, int64_t n)",
    }
    ext = load_inline("dict_ext", SOURCE, functions=functions, build_directory=str(build_dir))
    assert ext.ext_sum.__doc__ == "Sum of the first n elements (in double)."
    assert not hasattr(ext, "ext_add")
    x = ember.arange(4, dtype=ember.float64)
    assert ext.plain_dot(x, x, 4) == 14.0 and ext.ext_sum(x, 4) == 6.0
