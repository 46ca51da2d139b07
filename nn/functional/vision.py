"""pad (constant, reflect, replicate, circular) and interpolate (nearest, nearest-exact, linear,
bilinear, bicubic, trilinear, area (3-D to 5-D input); antialias for bilinear and bicubic).

The non-constant pads and the resizes are gathers (index_select) along one dim at a time; the
positions and weights they use depend only on the sizes, so they are computed in Python once
per geometry and cached as tensors.
"""

from __future__ import annotations

import functools
import math
import warnings

import ember
from ember.autograd.graph_names import present
from ember.autograd.saved_values import SCALE_NAMES
from ember.dispatcher.optable import OPS

from ._resample import apply_along, resample_matrix
from .pool_nd import adaptive_avg_pool3d
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d

_PAD_MODES = ("reflect", "replicate", "circular")


_DIM_LETTERS = ("W", "H", "D")


def _check_pad(shape, dim: int, before: int, after: int, mode: str) -> None:
    """PyTorch's refusals for one padded dim (``dim`` counted from the end as 0, 1, 2)."""
    size, out = shape[len(shape) - 1 - dim], shape[len(shape) - 1 - dim] + before + after
    letter = _DIM_LETTERS[dim] if dim < len(_DIM_LETTERS) else f"dim {len(shape) - 1 - dim}"
    if mode == "reflect" and (before >= size or after >= size):
        raise RuntimeError(
            f"pad(reflect): Argument #4: Padding size should be less than the corresponding "
            f"input dimension, but got: padding ({before}, {after}) at dimension "
            f"{len(shape) - 1 - dim} of input {list(shape)}"
        )
    if mode != "circular" and out <= 0:
        raise RuntimeError(
            f"pad({mode}): input ({letter}: {size}) is too small. Calculated output {letter}: {out}"
        )
    if mode != "circular":
        return
    if before > size or after > size:
        raise RuntimeError(
            f"pad(circular): Padding value causes wrapping around more than once: padding "
            f"({before}, {after}) of size {size}"
        )
    kept = size - max(-before, 0) - max(-after, 0)  # what is left after negative pads crop
    if out < 0 or (out > 0 and kept <= 0):  # PyTorch returns uninitialised memory for the latter
        raise RuntimeError(
            f"pad(circular): Negative padding value is resulting in an empty dimension: padding "
            f"({before}, {after}) of size {size}"
        )


@functools.lru_cache(maxsize=256)
def _pad_index(size: int, before: int, after: int, mode: str, device: str):
    """Source position of each output position along one padded dim. Negative pads crop; a
    circular pad wraps around what the crop keeps, as often as needed (PyTorch)."""
    start = max(-before, 0)
    kept = size - start - max(-after, 0)
    period = 2 * (size - 1) if size > 1 else 1
    positions = []
    for p in range(-before, size + after):
        if mode == "replicate":
            positions.append(min(max(p, 0), size - 1))
        elif mode == "circular":
            positions.append(start + (p - start) % kept)
        else:
            folded = abs(p) % period
            positions.append(period - folded if folded >= size else folded)
    return ember.tensor(positions, dtype=ember.int64, device=device)


def pad(input, pad, mode: str = "constant", value=None):
    """Pad the last ``len(pad) // 2`` dims: ``pad = (left, right, top, bottom, ...)``."""
    if mode == "constant":
        return OPS["constant_pad_nd"](input, tuple(pad), 0 if value is None else value)
    if mode not in _PAD_MODES:
        raise NotImplementedError(
            f"pad: mode '{mode}' is not supported; use one of constant, {', '.join(_PAD_MODES)}"
        )
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise RuntimeError(
            f"pad: padding length must be even and at most 2 * ndim, got {len(pad)} for input of "
            f"shape {list(input.shape)}"
        )
    if input.ndim not in (len(pad) // 2 + 1, len(pad) // 2 + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
        )
    out = input
    for i in range(len(pad) // 2):
        dim = input.ndim - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        _check_pad(tuple(input.shape), i, before, after, mode)
        if before or after:
            index = _pad_index(input.shape[dim], before, after, mode, str(input.device))
            out = out.index_select(dim, index)
    if mode == "circular":  # PyTorch's is made of copies into slices too
        return out
    name = f"{'Reflection' if mode == 'reflect' else 'Replication'}Pad{len(pad) // 2}DBackward0"
    return present(out, name, input, saved={"self": input, "padding": tuple(pad)})


def _output_size(input, size, scale_factor, spatial: int):
    if size is not None:
        return (size,) * spatial if isinstance(size, int) else tuple(size)
    factors = (scale_factor,) * spatial if isinstance(scale_factor, (int, float)) else scale_factor
    return tuple(math.floor(s * f) for s, f in zip(input.shape[2:], factors))


# mode -> the input rank it needs (None: any of 3-D, 4-D and 5-D)
_MODES = {
    "nearest": None,
    "nearest-exact": None,
    "area": None,
    "linear": 3,
    "bilinear": 4,
    "bicubic": 4,
    "trilinear": 5,
}


# mode -> its upsample op, by spatial rank
_UPSAMPLE = {
    "nearest": "upsample_nearest{}d",
    "nearest-exact": "_upsample_nearest_exact{}d",
    "linear": "upsample_linear{}d",
    "bilinear": "upsample_bilinear{}d",
    "trilinear": "upsample_trilinear{}d",
    "bicubic": "upsample_bicubic{}d",
}


def _scales(scale_factor, recompute: bool, spatial: int) -> list:
    """The scale of each spatial dim PyTorch's kernels use (None: in / out)."""
    if scale_factor is None or recompute:
        return [None] * spatial
    if isinstance(scale_factor, (int, float)):
        return [float(scale_factor)] * spatial
    return [float(f) for f in scale_factor]


def _check_interpolate(input, mode, align_corners, antialias):
    if mode not in _MODES:
        raise NotImplementedError(
            f"interpolate: mode '{mode}' is not supported; use one of {', '.join(_MODES)}"
        )
    rank = _MODES[mode]
    if input.ndim not in (3, 4, 5) or (rank is not None and input.ndim != rank):
        needed = f"{rank}D" if rank else "3D, 4D or 5D"
        raise NotImplementedError(
            f"interpolate: got {input.ndim}D input of shape {list(input.shape)}, but mode "
            f"'{mode}' needs {needed} input"
        )
    if align_corners is not None and rank is None:
        raise ValueError(
            "align_corners option can only be set with the interpolating modes: linear | "
            "bilinear | bicubic | trilinear"
        )
    if antialias and not (mode in ("bilinear", "bicubic") and input.ndim == 4):
        raise ValueError(
            "Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D "
            "tensor as input"
        )


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    """Resize the spatial dims (after N, C), one dim at a time."""
    _check_interpolate(input, mode, align_corners, antialias)
    spatial = input.ndim - 2
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: either size or scale_factor should be defined (not both)")
    if mode == "area":  # PyTorch's: the adaptive average pool of the input's rank
        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[spatial - 1]
        return pool(input, _output_size(input, size, scale_factor, spatial))
    if antialias:  # PIL's filters, one (out, in) matrix per dim
        scales = _scales(scale_factor, recompute_scale_factor, spatial)
        out, device = input, str(input.device)
        out_size = _output_size(input, size, scale_factor, spatial)
        for dim, target, scale in zip(range(2, input.ndim), out_size, scales):
            matrix = resample_matrix(
                input.shape[dim],
                target,
                mode,
                bool(align_corners),
                scale,
                True,
                device,
                input.dtype,
            )
            out = apply_along(out, dim, matrix)
        return _present_upsample(out, input, mode, True, out_size, scales, align_corners)
    # One upsample op per call (PyTorch's .vec overloads): a trace records the scales rather
    # than the example's sizes when scale_factor was given, so exported graphs resize any size.
    op = OPS[_UPSAMPLE[mode].format(spatial)]
    if scale_factor is not None and not recompute_scale_factor:
        factors = _scales(scale_factor, False, spatial)
        sizes = None
    else:
        factors, sizes = None, list(_output_size(input, size, scale_factor, spatial))
    if mode in ("nearest", "nearest-exact"):
        return op(input, sizes, factors)
    return op(input, sizes, bool(align_corners), factors)


_NODE_MODE = {
    "nearest": "Nearest",
    "nearest-exact": "NearestExact",
    "linear": "Linear",
    "bilinear": "Bilinear",
    "bicubic": "Bicubic",
    "trilinear": "Trilinear",
}


def _present_upsample(out, input, mode, antialias, out_size, scales, align_corners):
    """PyTorch resizes with one upsample op per mode and rank (UpsampleBilinear2DBackward0,
    its antialiased one ...Aa...); ember's dim-by-dim resize is shown as that node."""
    spatial = input.ndim - 2
    name = f"Upsample{_NODE_MODE[mode]}{spatial}D{'Aa' if antialias else ''}Backward0"
    saved = {"output_size": tuple(out_size)}
    saved.update(zip(SCALE_NAMES[spatial], (None if s is None else float(s) for s in scales)))
    if "nearest" not in mode:
        saved["align_corners"] = bool(align_corners)
    return present(out, name, input, saved=saved)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated name of :func:`interpolate` (with PyTorch's warning)."""
    warnings.warn(
        "`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode='nearest')``."""
    warnings.warn(
        "`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``."""
    warnings.warn(
        "`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
