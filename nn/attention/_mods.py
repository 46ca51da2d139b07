"""Score and mask modifications of flex_attention: their signatures, how one is told from the
other, how they are mapped over (batch, head, query, key), and the masks built from them.

A ``score_mod(score, b, h, q_idx, kv_idx)`` returns the new score of one query/key pair; a
``mask_mod(b, h, q_idx, kv_idx)`` returns whether the pair may attend. Both are written for
0-dim tensors and run, as in PyTorch's eager path, under four nested ``ember.func.vmap``s, so
indexing a captured tensor with the indices (``bias[h, q_idx - kv_idx]``) gathers per element,
and gradients reach the captured tensor through autograd.
"""

# ruff: noqa: N803, N806 - PyTorch's argument names (B, H, Q_LEN, KV_LEN, BLOCK_SIZE)
from __future__ import annotations

import enum
import inspect
from collections.abc import Callable

import ember
from ember import Tensor
from ember.func import vmap

_score_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]
_mask_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]


class _ModificationType(enum.Enum):
    """A score_mod takes the score first (5 positional arguments); a mask_mod does not (4)."""

    SCORE_MOD = 1
    MASK_MOD = 2
    UNKNOWN = 3


def _get_mod_type(fn: Callable) -> _ModificationType:
    """Whether ``fn`` is a score_mod or a mask_mod, by its number of positional arguments
    without defaults (AssertionError for another number, as PyTorch's)."""
    if hasattr(fn, "__code__"):
        count = fn.__code__.co_argcount - len(getattr(fn, "__defaults__", None) or ())
    else:
        parameters = inspect.signature(fn).parameters.values()
        count = sum(1 for p in parameters if p.default is inspect.Parameter.empty)
    if count not in (4, 5):
        raise AssertionError(f"Expected 4 or 5 positional args, got {count}")
    return _ModificationType.SCORE_MOD if count == 5 else _ModificationType.MASK_MOD


def _vmap_for_bhqkv(
    fn: Callable,
    prefix: tuple = (),
    suffix: tuple = (),
    out_dims=0,
    group_dim: bool = False,
) -> Callable:
    """``fn`` mapped over its (b, h, q_idx, kv_idx) arguments by four nested vmaps (five with
    ``group_dim``, for a (b, hkv, g, q, kv) layout): the result is (B, H, Q, KV). ``prefix``
    gives the in_dims of the arguments before b (``(0,)`` for a score_mod's score),
    ``suffix`` those after kv_idx."""
    dimensions = [(None, None, None, 0), (None, None, 0, None), (None, 0, None, None)]
    if group_dim:
        dimensions.append((None, 0, None, None))
    dimensions.append((0, None, None, None))
    for dims in dimensions:
        fn = vmap(fn, in_dims=prefix + dims + suffix, out_dims=out_dims)
    return fn


def _identity(score: Tensor, batch: Tensor, head: Tensor, token_q: Tensor, token_kv: Tensor):
    return score


def noop_mask(batch: Tensor, head: Tensor, token_q: Tensor, token_kv: Tensor) -> Tensor:
    """Returns a noop mask_mod"""
    return batch.new_ones((), dtype=ember.bool, device=batch.device)


def _sliced_mask_mod_error(batch: Tensor, head: Tensor, token_q: Tensor, token_kv: Tensor):
    """The mask_mod of a sliced BlockMask: using it is an error (PyTorch's message)."""
    raise RuntimeError(
        "Cannot use mask_mod from a sliced BlockMask. "
        "When you slice a BlockMask using [], the mask_mod attribute is reset. "
        "You must set it from the original BlockMask's mask_mod."
        "\n\nIncorrect usage:"
        "\n  base_mask = create_block_mask(my_mask_fn, ...)"
        "\n  sliced_mask = base_mask[:, :, block_idx]"
        "\n  sliced_mask.mask_mod = apply_offset(sliced_mask.mask_mod, offset)  # WRONG!"
        "\n\nCorrect usage:"
        "\n  base_mask = create_block_mask(my_mask_fn, ...)"
        "\n  sliced_mask = base_mask[:, :, block_idx]"
        "\n  sliced_mask.mask_mod = apply_offset(base_mask.mask_mod, offset)  # Use base_mask!"
    )


def _combined(mask_mods: tuple, start: bool, combine: Callable, name: str) -> Callable:
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def combined(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        result = (b.new_ones if start else b.new_zeros)((), dtype=ember.bool)
        for mask in mask_mods:
            result = combine(result, mask(b, h, q_idx, kv_idx))
        return result

    combined.__name__ = combined.__qualname__ = name
    return combined


def or_masks(*mask_mods: _mask_mod_signature) -> _mask_mod_signature:
    """Returns a mask_mod that's the union of provided mask_mods"""
    return _combined(mask_mods, False, lambda a, b: a | b, "or_mask")


def and_masks(*mask_mods: _mask_mod_signature) -> _mask_mod_signature:
    """Returns a mask_mod that's the intersection of provided mask_mods"""
    return _combined(mask_mods, True, lambda a, b: a & b, "and_mask")


def create_mask(
    mod_fn: _score_mod_signature | _mask_mod_signature,
    B: int | None,
    H: int | None,
    Q_LEN: int,
    KV_LEN: int,
    device=None,
) -> Tensor:
    """The dense boolean mask of a mask_mod (or of a score_mod: where it leaves the score
    above -inf), evaluated at every (b, h, q_idx, kv_idx).

    Args:
        mod_fn: a mask_mod ``(b, h, q_idx, kv_idx) -> bool`` or a score_mod
            ``(score, b, h, q_idx, kv_idx) -> score``.
        B (int): Batch size (None: 1).
        H (int): Number of query heads (None: 1).
        Q_LEN (int): Sequence length of query.
        KV_LEN (int): Sequence length of key/value.
        device: where to build it (default: the current accelerator, else the CPU).

    Returns:
        mask (Tensor): A mask tensor with shape (B, H, Q_LEN, KV_LEN).

    Example:
        >>> create_mask(lambda b, h, q, kv: q >= kv, 1, 1, 3, 3, device="cpu")[0, 0]
        tensor([[ True, False, False],
                [ True,  True, False],
                [ True,  True,  True]])
    """
    if device is None:
        device = ember.accelerator.current_accelerator() or "cpu"
    B = 1 if B is None else B
    H = 1 if H is None else H
    b, h, m, n = (ember.arange(0, size, device=device) for size in (B, H, Q_LEN, KV_LEN))
    if _get_mod_type(mod_fn) is _ModificationType.SCORE_MOD:
        scores = ember.zeros(B, H, Q_LEN, KV_LEN, device=device)
        out = _vmap_for_bhqkv(mod_fn, prefix=(0,))(scores, b, h, m, n)
        return ember.where(ember.isneginf(out), False, True)
    return _vmap_for_bhqkv(mod_fn, prefix=())(b, h, m, n)
