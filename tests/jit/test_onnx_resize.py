"""F.interpolate / nn.Upsample export as one ONNX Resize per call: onnxruntime on sizes other
than the example's (dynamic H/W) matches eager ember, which matches torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F

from .onnx_utils import assert_close, check_model, eager, export_bytes, run, session

# (mode, align_corners, example shape, other shapes on the dynamic axes)
CASES = [
    ("nearest", None, (1, 2, 3, 3), [(2, 2, 4, 5), (1, 2, 7, 2)]),
    ("nearest-exact", None, (1, 2, 3, 3), [(2, 2, 4, 5), (1, 2, 7, 2)]),
    ("bilinear", False, (1, 2, 3, 3), [(2, 2, 4, 5), (1, 2, 7, 2)]),
    ("bilinear", True, (1, 2, 3, 3), [(2, 2, 4, 5), (1, 2, 7, 2)]),
    ("bicubic", False, (1, 2, 3, 3), [(2, 2, 4, 5), (1, 2, 7, 2)]),
    ("bicubic", True, (1, 2, 3, 3), [(2, 2, 4, 5), (1, 2, 7, 2)]),
    ("linear", False, (1, 2, 3), [(2, 2, 5), (1, 2, 8)]),
    ("linear", True, (1, 2, 3), [(2, 2, 5), (1, 2, 8)]),
    ("nearest", None, (1, 2, 3), [(2, 2, 5), (1, 2, 8)]),
    ("nearest", None, (1, 2, 3, 2, 3), [(2, 2, 4, 3, 2), (1, 2, 2, 5, 3)]),
    ("trilinear", False, (1, 2, 3, 2, 3), [(2, 2, 4, 3, 2), (1, 2, 2, 5, 3)]),
    ("trilinear", True, (1, 2, 3, 2, 3), [(2, 2, 4, 3, 2), (1, 2, 2, 5, 3)]),
]
RESIZES = {"scale_factor": lambda n: 2, "scales": lambda n: (1.5, 2.5, 0.75)[:n]}
SIZES = {3: (5,), 4: (5, 7), 5: (5, 4, 6)}


class Resize(ember.nn.Module):
    def __init__(self, **options):
        super().__init__()
        self.options = options

    def forward(self, x):
        return F.interpolate(x, **options_of(self.options))


def options_of(options):
    return {k: v for k, v in options.items() if v is not None or k != "align_corners"}


def _axes(rank):
    return {"x": {0: "n", **{d: f"d{d}" for d in range(2, rank)}}}


def _check(model, example, others, torch_options):
    model_bytes = export_bytes(
        model, (example,), input_names=["x"], dynamic_axes=_axes(example.ndim)
    )
    proto = check_model(model_bytes)
    resizes = [n for n in proto.graph.node if n.op_type == "Resize"]
    assert len(resizes) == 1, [n.op_type for n in proto.graph.node]
    sess = session(model_bytes)
    for x in [example, *others]:
        want = eager(model, (x,))
        # eager ember is torch's interpolate
        expected = torch.nn.functional.interpolate(torch.from_numpy(x.numpy()), **torch_options)
        np.testing.assert_allclose(want[0], expected.numpy(), rtol=1e-5, atol=1e-5)
        assert_close(run(sess, (x,)), want)
    return resizes[0]


def _inputs(shape, others, rng):
    make = lambda s: ember.tensor(rng.standard_normal(s).astype(np.float32))  # noqa: E731
    return make(shape), [make(s) for s in others]


@pytest.mark.parametrize("how", ["scale_factor", "scales", "size"])
@pytest.mark.parametrize(("mode", "align", "shape", "others"), CASES)
def test_interpolate_exports_as_resize(mode, align, shape, others, how):
    rng = np.random.default_rng(0)
    example, others = _inputs(shape, others, rng)
    spatial = len(shape) - 2
    options = {"mode": mode, "align_corners": align}
    if how == "size":
        options["size"] = SIZES[len(shape)]
    else:
        factor = RESIZES[how](spatial)
        options["scale_factor"] = factor
    node = _check(Resize(**options), example, others, options_of(options))
    attrs = {a.name: a for a in node.attribute}
    if mode == "bicubic":
        assert attrs["cubic_coeff_a"].f == -0.75


def test_upsample_module_scale_factor_follows_the_input():
    """The issue's case: nn.Upsample(scale_factor=2) from a 3x3 example resizes 4x5 to 8x10."""
    rng = np.random.default_rng(1)
    example, (other,) = _inputs((1, 2, 3, 3), [(2, 2, 4, 5)], rng)
    model = ember.nn.Upsample(scale_factor=2, mode="bilinear")
    sess = session(export_bytes(model, (example,), input_names=["x"], dynamic_axes=_axes(4)))
    got = run(sess, (other,))
    assert got[0].shape == (2, 2, 8, 10)
    assert_close(got, eager(model, (other,)))


def test_trace_records_one_upsample_node_and_saves(tmp_path):
    x = ember.randn(1, 2, 3, 3)
    traced = ember.jit.trace(Resize(scale_factor=2, mode="bicubic"), (x,))
    assert str(traced.graph).count("upsample_bicubic2d(") == 1
    path = tmp_path / "resize.pt"
    ember.jit.save(traced, str(path))
    loaded = ember.jit.load(str(path))
    y = ember.randn(2, 2, 4, 5)
    np.testing.assert_allclose(loaded(y).numpy(), traced(y).numpy(), rtol=1e-6)
    assert loaded(y).shape == (2, 2, 8, 10)


SCRIPTED = [
    ("bilinear", {"scale_factor": 2.0, "align_corners": False}),
    ("bicubic", {"size": [5, 7], "align_corners": True}),
    ("nearest", {"scale_factor": (1.5, 2.0)}),
    ("trilinear", {"scale_factor": 1.5, "align_corners": False}),
]


@pytest.mark.parametrize(("mode", "options"), SCRIPTED)
def test_script_records_one_upsample_node(mode, options, tmp_path):
    rank = 5 if mode == "trilinear" else 4
    model = ember.nn.Upsample(mode=mode, **options)
    scripted = ember.jit.script(model)
    assert "upsample_" in str(scripted.graph)
    ember.jit.save(scripted, str(tmp_path / "m.pt"))
    loaded = ember.jit.load(str(tmp_path / "m.pt"))
    for shape in [(1, 2, 3, 3, 2), (2, 1, 4, 5, 3)]:
        x = ember.randn(*shape[:rank])
        want = torch.nn.functional.interpolate(torch.from_numpy(x.numpy()), mode=mode, **options)
        np.testing.assert_allclose(scripted(x).numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(loaded(x).numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opset", [17, 18, 23])
@pytest.mark.parametrize("options", [{"scale_factor": 2, "mode": "bicubic"}, {"size": (5, 7)}])
def test_resize_at_each_opset(opset, options):
    """Resize gained attributes at opset 18 (antialias, axes): the defaults keep its meaning."""
    rng = np.random.default_rng(2)
    example, (other,) = _inputs((1, 2, 3, 3), [(2, 2, 4, 5)], rng)
    model = ember.nn.Upsample(**options)
    model_bytes = export_bytes(
        model, (example,), opset_version=opset, input_names=["x"], dynamic_axes=_axes(4)
    )
    check_model(model_bytes)
    assert_close(run(session(model_bytes), (other,)), eager(model, (other,)))
