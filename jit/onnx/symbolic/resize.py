"""The upsample rows as ``Resize`` (opset 11's coordinate modes), with the attributes PyTorch's
exporter writes (torch/onnx/symbolic_helper._interpolate_helper) so onnxruntime computes what
eager does: nearest with ``asymmetric`` coordinates and ``floor``, linear and cubic with
``half_pixel`` (``align_corners`` when asked), cubic with a = -0.75 as PyTorch's kernel.
nearest-exact (floor((dst + 0.5) * in / out)) is ``half_pixel`` rounded half up.

Scale factors become ``scales`` (so any input size resizes by them, as eager); given sizes
become ``sizes``, the input's batch and channel sizes read with ``Shape`` in front.
"""

from __future__ import annotations

from ember import _dtype as dt

from ..builder import V

# kernel mode -> (ONNX mode, coordinate mode without align_corners, nearest_mode)
_MODES = {
    "nearest": ("nearest", "asymmetric", "floor"),
    "nearest-exact": ("nearest", "half_pixel", "round_prefer_ceil"),
    "linear": ("linear", "half_pixel", None),
    "cubic": ("cubic", "half_pixel", None),
}


def _resize(g, mode: str, x, output_size, align_corners, scale_factors):
    g.require(11)
    onnx_mode, coordinates, nearest = _MODES[mode]
    empty = g.const([], dt.float32)  # roi (and scales when sizes are given): unused
    if scale_factors is not None:
        factors = list(scale_factors.traced if isinstance(scale_factors, V) else scale_factors)
        if not all(isinstance(f, (int, float)) for f in factors):
            raise g.unsupported("scale factors computed at run time")
        scales, sizes = g.const([1.0, 1.0, *factors], dt.float32), None
    else:
        scales = empty
        sizes = g.op("Concat", g.dims(x, 0, 2), g.ints(output_size), axis=0, dtype=dt.int64)
    return g.op(
        "Resize",
        x,
        empty,
        scales,
        sizes,
        mode=onnx_mode,
        coordinate_transformation_mode="align_corners" if align_corners else coordinates,
        nearest_mode=nearest,
        cubic_coeff_a=-0.75 if mode == "cubic" else None,
    )


def _rule(mode: str, corners: bool):
    if corners:
        return lambda g, x, output_size, align_corners, scale_factors: _resize(
            g, mode, x, output_size, align_corners, scale_factors
        )
    return lambda g, x, output_size, scale_factors: _resize(
        g, mode, x, output_size, False, scale_factors
    )


def _table() -> dict:
    from ember.dispatcher.optable.upsample import UPSAMPLES

    return {name: _rule(mode, corners) for name, (mode, corners) in UPSAMPLES.items()}


TABLE = _table()
