"""Functions for tests/jit/test_script_resize.py: ``F.interpolate`` in scripted code where the
input's rank is unknown when compiling, ``mode="area"``, ``antialias=True`` and run-time sizes,
written once against a library (torch and ember script this same source)."""
# ruff: noqa: UP006, UP035, UP045 - typing.List/Optional, as TorchScript sources spell them

from typing import List, Optional


def resizes(lib):
    F = lib.nn.functional

    def nearest_scale(x):
        return F.interpolate(x, scale_factor=2.0)

    def nearest_size(x):
        return F.interpolate(x, size=5, mode="nearest")

    def nearest_exact(x):
        return F.interpolate(x, scale_factor=1.5, mode="nearest-exact")

    def area_size(x):
        return F.interpolate(x, size=3, mode="area")

    def area_scale(x):
        return F.interpolate(x, scale_factor=0.5, mode="area")

    def bilinear_antialias(x):
        return F.interpolate(x, size=[3, 5], mode="bilinear", antialias=True)

    def bicubic_antialias(x):
        return F.interpolate(
            x, scale_factor=0.5, mode="bicubic", align_corners=True, antialias=True
        )

    def recomputed(x):
        return F.interpolate(x, scale_factor=1.7, mode="bilinear", recompute_scale_factor=True)

    def run_time_size(x, size: List[int], mode: str):
        return F.interpolate(x, size=size, mode=mode)

    def run_time_scale(x, scale: Optional[float]):
        if scale is None:
            return F.interpolate(x, size=4)
        return F.interpolate(x, scale_factor=scale, mode="linear", align_corners=False)

    return {
        f.__name__: f
        for f in (
            nearest_scale,
            nearest_size,
            nearest_exact,
            area_size,
            area_scale,
            bilinear_antialias,
            bicubic_antialias,
            recomputed,
            run_time_size,
            run_time_scale,
        )
    }
