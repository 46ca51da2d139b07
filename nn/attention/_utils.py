"""Checks shared by ``flex_attention`` and the causal biases, as torch.nn.attention._utils."""

from __future__ import annotations


def _validate_sdpa_input(query, key, value, allow_lowp_kv: bool = False) -> None:
    """PyTorch's checks of q, k, v before an attention: one dtype (unless ``allow_lowp_kv``),
    one device, at least two dims each (ValueError, with PyTorch's messages)."""
    if not allow_lowp_kv and (query.dtype != key.dtype or query.dtype != value.dtype):
        raise ValueError(
            f"Expected query, key, and value to have the same dtype, "
            f"but got query.dtype: {query.dtype}, key.dtype: {key.dtype}, "
            f"and value.dtype: {value.dtype} instead."
        )
    if query.device != key.device or query.device != value.device:
        raise ValueError(
            f"Expected query, key, and value to have the same device type, "
            f"but got query.device: {query.device}, key.device: {key.device}, "
            f"and value.device: {value.device} instead."
        )
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise ValueError(
            f"Expected query, key, and value to all be  at least 2 dimensional, but got "
            f"query.dim: {query.dim()}, key.dim: {key.dim()} and value.dim: {value.dim()} "
            "instead."
        )
