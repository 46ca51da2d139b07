"""pixel_shuffle, pixel_unshuffle and channel_shuffle: one reshape, one permute, one reshape."""

from __future__ import annotations

from ember.autograd.graph_names import present


def _check_factor(name: str, what: str, factor: int) -> None:
    if factor <= 0:
        raise RuntimeError(f"{name} expects a positive {what}, but got {factor}")


def _check_rank(name: str, input) -> None:
    if input.ndim < 3:
        raise RuntimeError(
            f"{name} expects input to have at least 3 dimensions, but got input with "
            f"{input.ndim} dimension(s)"
        )


def pixel_shuffle(input, upscale_factor: int):
    """(*, C r^2, H, W) -> (*, C, H r, W r): channel blocks become spatial blocks."""
    _check_factor("pixel_shuffle", "upscale_factor", upscale_factor)
    _check_rank("pixel_shuffle", input)
    r = upscale_factor
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
            f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    out = x.reshape(*lead, c // (r * r), h * r, w * r)
    return present(out, "PixelShuffleBackward0", input, saved={"upscale_factor": r})


def pixel_unshuffle(input, downscale_factor: int):
    """(*, C, H r, W r) -> (*, C r^2, H, W): the inverse of pixel_shuffle."""
    _check_factor("pixel_unshuffle", "downscale_factor", downscale_factor)
    _check_rank("pixel_unshuffle", input)
    r = downscale_factor
    *lead, c, h, w = input.shape
    for what, dim, size in (("height", -2, h), ("width", -1, w)):
        if size % r:
            raise RuntimeError(
                f"pixel_unshuffle expects {what} to be divisible by downscale_factor, but "
                f"input.size({dim})={size} is not divisible by {r}"
            )
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    out = x.reshape(*lead, c * r * r, h // r, w // r)
    return present(out, "PixelUnshuffleBackward0", input, saved={"downscale_factor": r})


def channel_shuffle(input, groups: int):
    """(N, g * k, *) -> the channels regrouped as (N, k, g, *): ShuffleNet's shuffle."""
    if input.ndim <= 2:
        raise RuntimeError(
            f"channel_shuffle expects input with > 2 dims, but got input with sizes "
            f"{list(input.shape)}"
        )
    if groups <= 0:
        raise RuntimeError(
            f"Number of groups to divide channels in must be positive. Value of groups:{groups}"
        )
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups."
        )
    x = input.reshape(n, groups, c // groups, *rest).transpose(1, 2)
    return x.reshape(input.shape)


native_channel_shuffle = channel_shuffle
