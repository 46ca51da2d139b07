"""F.interpolate's resizes as PyTorch's aten upsample ops (their ``.vec`` overloads: output_size
or scale_factors), one row per mode and rank, so a trace records one node per resize (the ONNX
exporter writes it as ``Resize``) instead of index tables fixed at the example's size. The
eager kernel is nn/functional/_upsample.py's, a composite of existing ops (autograd from the
parts)."""

from __future__ import annotations

from ember import _dtype as dt

from ..opdef import Kind, OpDef, Promotion

# op name -> (kernel mode, has align_corners); the rank is the name's last digit
UPSAMPLES = {
    "upsample_nearest1d": ("nearest", False),
    "upsample_nearest2d": ("nearest", False),
    "upsample_nearest3d": ("nearest", False),
    "_upsample_nearest_exact1d": ("nearest-exact", False),
    "_upsample_nearest_exact2d": ("nearest-exact", False),
    "_upsample_nearest_exact3d": ("nearest-exact", False),
    "upsample_linear1d": ("linear", True),
    "upsample_bilinear2d": ("linear", True),
    "upsample_trilinear3d": ("linear", True),
    "upsample_bicubic2d": ("cubic", True),
}


def _check_rank(name, input):
    rank = int(name[-2]) + 2
    if input.ndim != rank:
        raise RuntimeError(
            f"Expected {rank}D input tensor (batch, channels and {rank - 2} spatial dims), but "
            f"got input of size: {list(input.shape)}"
        )


def _kernel(name, mode, numpy):
    from ember.nn.functional._upsample import resize, resize_np

    run = resize_np if numpy else resize

    def nearest(input, output_size, scale_factors):
        if not numpy:
            _check_rank(name, input)
        return run(input, output_size, scale_factors, mode)

    def linear(input, output_size, align_corners, scale_factors):
        if not numpy:
            _check_rank(name, input)
        return run(input, output_size, scale_factors, mode, bool(align_corners))

    return linear if mode in ("linear", "cubic") else nearest


def _lazy(name, mode, numpy):
    """The kernel, imported on first call (nn.functional imports the op table)."""

    def call(*args):
        return _kernel(name, mode, numpy)(*args)

    return call


# PyTorch's kernels: floating types, and uint8 for nearest (others raise NotImplementedError)
_NEAREST_DTYPES = frozenset((*dt.FLOATS, dt.uint8))

# Halves: the lerp and the cubic taps round in the storage dtype on each device.
_HALVES = {dt.float16: (1e-2, 1e-2), dt.bfloat16: (5e-2, 5e-2)}


def _row(name, mode, corners):
    corner_arg = "bool align_corners, " if corners else ""
    return OpDef(
        f"{name}(Tensor input, int[]? output_size, {corner_arg}float[]? scale_factors) -> Tensor",
        Kind.NN,
        _lazy(name, mode, True),
        promotion=Promotion.KEEP,
        dtypes=_NEAREST_DTYPES if mode.startswith("nearest") else frozenset(dt.FLOATS),
        decomposition=_lazy(name, mode, False),
        method=False,
        out=None,
        samples="upsample",
        tolerances=_HALVES,
        notes=f"interpolate(mode={mode!r}) of a {int(name[-2]) + 2}-D input: PyTorch's .vec "
        "overload (output_size, or scale_factors with floor(in * scale) sizes)",
    )


ROWS = [_row(name, mode, corners) for name, (mode, corners) in UPSAMPLES.items()]
