"""ember.nn.attention.flex_attention and ember.nn.attention.bias against torch 2.13.

Forward values come from torch's public flex_attention in its eager mode (the math PyTorch's
CPU path runs); gradients, which torch refuses on the CPU, from torch's eager math
(``torch._higher_order_ops.flex_attention.math_attention``) under torch's autograd. Each mod
is written once and built over either library's captured tensors.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.nn.attention import bias as ebias
from ember.nn.attention import flex_attention as efa

torch = pytest.importorskip("torch")
import torch.nn.attention.bias as tbias  # noqa: E402
import torch.nn.attention.flex_attention as tfa  # noqa: E402
from torch._higher_order_ops.flex_attention import math_attention  # noqa: E402

DTYPES = {"float32": (np.float32, 2e-6), "float64": (np.float64, 1e-12)}


@pytest.fixture(autouse=True)
def _torch_eager(monkeypatch):
    """torch's flex_attention without torch.compile: the same eager math, in milliseconds."""
    monkeypatch.setattr(tfa, "_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG", True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _arrays(seed, *shapes, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) for shape in shapes]


def _pair(array, requires_grad=False):
    return (
        torch.tensor(array, requires_grad=requires_grad),
        ember.tensor(array, requires_grad=requires_grad),
    )


def _close(ember_tensor, torch_tensor, tol):
    expected = torch_tensor.detach().numpy()
    got = ember_tensor.detach().numpy()
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


def _qkv(dtype, q_shape=(2, 2, 12, 8), kv_shape=None, seed=0):
    kv_shape = kv_shape or q_shape
    arrays = _arrays(seed, q_shape, kv_shape, kv_shape, dtype=dtype)
    pairs = [_pair(a) for a in arrays]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _both(fn_of_lib, tq, eq, **kwargs):
    """(torch's, ember's) flex_attention results, the mods built by ``fn_of_lib(lib)``."""
    t = tfa.flex_attention(*tq, **fn_of_lib(tfa, torch), **kwargs)
    e = efa.flex_attention(*eq, **fn_of_lib(efa, ember), **kwargs)
    return t, e


# ---- mods written once, over either library's captured tensors ------------------------------
def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def window(size):
    def sliding(b, h, q_idx, kv_idx):
        return (q_idx - kv_idx).abs() <= size

    return sliding


def same_document(document_ids):
    def mask_mod(b, h, q_idx, kv_idx):
        return document_ids[b, q_idx] == document_ids[b, kv_idx]

    return mask_mod


def not_padding(lengths):
    def mask_mod(b, h, q_idx, kv_idx):
        return kv_idx < lengths[b]

    return mask_mod


def alibi(slopes):
    def score_mod(score, b, h, q_idx, kv_idx):
        return score + slopes[h] * (kv_idx - q_idx)

    return score_mod


def relative_bias(table, offset):
    def score_mod(score, b, h, q_idx, kv_idx):
        return score + table[h, q_idx - kv_idx + offset]

    return score_mod


# ---- forward ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_no_mods(dtype):
    np_dtype, tol = DTYPES[dtype]
    tq, eq = _qkv(np_dtype)
    t_out, t_aux = tfa.flex_attention(*tq, return_aux=tfa.AuxRequest(lse=True))
    e_out, e_aux = efa.flex_attention(*eq, return_aux=efa.AuxRequest(lse=True))
    _close(e_out, t_out, tol)
    _close(e_aux.lse, t_aux.lse, tol)
    assert e_aux.max_scores is None and e_out.dtype == getattr(ember, dtype)
    # nor is it plain softmax attention by accident of the mods: sdpa agrees
    _close(F.scaled_dot_product_attention(*eq), t_out, tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_causal_block_mask(dtype):
    np_dtype, tol = DTYPES[dtype]
    tq, eq = _qkv(np_dtype, (2, 2, 16, 8))
    tbm = tfa.create_block_mask(causal, None, None, 16, 16, device="cpu", BLOCK_SIZE=4)
    ebm = efa.create_block_mask(causal, None, None, 16, 16, device="cpu", BLOCK_SIZE=4)
    _close(efa.flex_attention(*eq, block_mask=ebm), tfa.flex_attention(*tq, block_mask=tbm), tol)
    causal_sdpa = F.scaled_dot_product_attention(*eq, is_causal=True)
    _close(efa.flex_attention(*eq, block_mask=ebm), causal_sdpa, tol * 10)


def _same_block_mask(ebm, tbm):
    assert ebm.shape == tbm.shape and tuple(tbm.BLOCK_SIZE) == ebm.BLOCK_SIZE
    assert ebm.sparsity() == pytest.approx(tbm.sparsity())
    np.testing.assert_array_equal(ebm.to_dense().numpy(), tbm.to_dense().numpy())
    assert ebm.to_dense().dtype == ember.int32
    assert len(ebm.as_tuple()) == len(tbm.as_tuple())
    for got, expected in zip(ebm.as_tuple(), tbm.as_tuple(), strict=True):
        if isinstance(expected, torch.Tensor):
            np.testing.assert_array_equal(got.numpy(), expected.numpy())
            assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
        elif not callable(expected):
            assert got == expected


@pytest.mark.parametrize(
    "mask, B, H, Q, KV, block",
    [
        ("causal", None, None, 16, 16, 4),
        ("causal", 2, 3, 20, 12, (8, 4)),
        ("window", 1, 2, 32, 32, 8),
        ("and", 2, None, 24, 24, 4),
        ("or", None, 2, 16, 24, (4, 8)),
    ],
)
def test_block_mask_structure(mask, B, H, Q, KV, block):  # noqa: N803 - PyTorch's names
    def build(lib):
        return {
            "causal": causal,
            "window": window(5),
            "and": lib.and_masks(causal, window(3)),
            "or": lib.or_masks(window(2), lambda b, h, q_idx, kv_idx: kv_idx < 4),
        }[mask]

    tbm = tfa.create_block_mask(build(tfa), B, H, Q, KV, device="cpu", BLOCK_SIZE=block)
    ebm = efa.create_block_mask(build(efa), B, H, Q, KV, device="cpu", BLOCK_SIZE=block)
    _same_block_mask(ebm, tbm)
    assert str(ebm) == str(tbm)
    assert repr(ebm) == repr(tbm).replace("torch.Size", "ember.Size")
    np.testing.assert_array_equal(
        efa.create_mask(build(efa), B, H, Q, KV, device="cpu").numpy(),
        tfa.create_mask(build(tfa), B, H, Q, KV, device="cpu").numpy(),
    )


def test_block_mask_slicing_and_adjust():
    tbm = tfa.create_block_mask(causal, 2, 3, 16, 16, device="cpu", BLOCK_SIZE=4)
    ebm = efa.create_block_mask(causal, 2, 3, 16, 16, device="cpu", BLOCK_SIZE=4)
    for index in [1, (0, 2), (slice(None), 1), (-1, slice(0, 2)), (1, 1, slice(1, 3))]:
        _same_block_mask(ebm[index], tbm[index])
    _same_block_mask(ebm._adjust(8, 12), tbm._adjust(8, 12))
    with pytest.raises(RuntimeError, match="sliced BlockMask"):
        efa.flex_attention(*_qkv(np.float32, (1, 1, 16, 8))[1], block_mask=ebm[0, 0])
    _same_block_mask(ebm.to("cpu"), tbm.to("cpu"))
    _same_block_mask(
        efa.BlockMask.from_kv_blocks(*(ember.tensor(t.numpy()) for t in tbm.as_tuple()[2:4])),
        tfa.BlockMask.from_kv_blocks(*tbm.as_tuple()[2:4]),
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_sliding_window(dtype):
    np_dtype, tol = DTYPES[dtype]
    tq, eq = _qkv(np_dtype, (1, 2, 20, 8))

    def mods(lib, _):
        mask = lib.and_masks(causal, window(4))
        return {"block_mask": lib.create_block_mask(mask, 1, 2, 20, 20, "cpu", BLOCK_SIZE=8)}

    t, e = _both(mods, tq, eq)
    _close(e, t, tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_document_and_padding_masks(dtype):
    np_dtype, tol = DTYPES[dtype]
    tq, eq = _qkv(np_dtype, (2, 2, 12, 8))
    documents = np.array([[0] * 5 + [1] * 4 + [2] * 3, [0] * 2 + [1] * 10])
    lengths = np.array([9, 12])

    def mods(lib, xp):
        ids, kept = xp.tensor(documents), xp.tensor(lengths)
        mask = lib.and_masks(same_document(ids), not_padding(kept), causal)
        return {"block_mask": lib.create_block_mask(mask, 2, None, 12, 12, "cpu", BLOCK_SIZE=4)}

    t, e = _both(mods, tq, eq, return_aux=tfa.AuxRequest(lse=True))
    _close(e[0], t[0], tol)
    _close(e[1].lse, t[1].lse, tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_alibi_score_mod(dtype):
    np_dtype, tol = DTYPES[dtype]
    tq, eq = _qkv(np_dtype, (2, 4, 10, 8))
    slopes = np.array([2.0**-i for i in range(1, 5)], dtype=np_dtype)
    t, e = _both(lambda lib, xp: {"score_mod": alibi(xp.tensor(slopes))}, tq, eq)
    _close(e, t, tol)


# ---- gradients -------------------------------------------------------------------------------
def _torch_math(q, k, v, score_mod=None, mask_mod=None, scale=None):
    """torch's eager flex math under autograd: (out, natural lse, max)."""
    scale = 1.0 / math.sqrt(q.size(-1)) if scale is None else scale
    mods = (score_mod or tfa._identity, (mask_mod or tfa.noop_mask,), scale, {})
    out, lse, max_scores = math_attention(q, k, v, *mods)
    return out, lse * math.log(2), max_scores * math.log(2)


def _grads_match(e_inputs, t_inputs, e_out, t_out, tol):
    cotangent = np.random.default_rng(7).standard_normal(tuple(t_out.shape))
    t_out.backward(torch.tensor(cotangent, dtype=t_out.dtype))
    e_out.backward(ember.tensor(cotangent, dtype=e_out.dtype))
    for e_input, t_input in zip(e_inputs, t_inputs, strict=True):
        assert e_input.grad is not None
        _close(e_input.grad, t_input.grad, tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_relative_position_bias_gradients(dtype):
    np_dtype, tol = DTYPES[dtype]
    q, k, v, table = _arrays(1, (2, 2, 9, 4), (2, 2, 9, 4), (2, 2, 9, 6), (2, 17), dtype=np_dtype)
    t_inputs, e_inputs = zip(*(_pair(a, True) for a in (q, k, v, table)), strict=True)
    t_out, t_lse, _ = _torch_math(*t_inputs[:3], relative_bias(t_inputs[3], 8), causal, scale=0.3)
    e_mask = efa.create_block_mask(causal, None, None, 9, 9, device="cpu", BLOCK_SIZE=4)
    e_out, e_aux = efa.flex_attention(
        *e_inputs[:3],
        score_mod=relative_bias(e_inputs[3], 8),
        block_mask=e_mask,
        scale=0.3,
        return_aux=efa.AuxRequest(lse=True),
    )
    _close(e_out, t_out, tol)
    _close(e_aux.lse, t_lse, tol)
    _grads_match(e_inputs, t_inputs, e_out, t_out, tol * 5)
    assert np.abs(e_inputs[3].grad.numpy()).sum() > 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_gqa(dtype):
    np_dtype, tol = DTYPES[dtype]
    q, k, v, slopes = _arrays(2, (2, 4, 6, 8), (2, 2, 6, 8), (2, 2, 6, 8), (4,), dtype=np_dtype)
    t_inputs, e_inputs = zip(*(_pair(a, True) for a in (q, k, v, slopes)), strict=True)
    with pytest.raises(ValueError, match="enable_gqa=True"):
        efa.flex_attention(*e_inputs[:3])
    e_out = efa.flex_attention(*e_inputs[:3], score_mod=alibi(e_inputs[3]), enable_gqa=True)
    with torch.no_grad():
        expected = tfa.flex_attention(
            *(t.detach() for t in t_inputs[:3]),
            score_mod=alibi(t_inputs[3].detach()),
            enable_gqa=True,
        )
    _close(e_out, expected, tol)
    t_out = _torch_math(*t_inputs[:3], alibi(t_inputs[3]))[0]
    _grads_match(e_inputs, t_inputs, e_out, t_out, tol * 5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_scale_and_return_lse(dtype):
    np_dtype, tol = DTYPES[dtype]
    tq, eq = _qkv(np_dtype, (1, 3, 7, 5), (1, 3, 11, 5))
    t_out, t_lse = tfa.flex_attention(*tq, scale=0.7, return_lse=True)
    efa._WARNINGS_SHOWN.discard("deprecated_return_lse")
    with pytest.warns(FutureWarning, match="return_lse is deprecated"):
        e_out, e_lse = efa.flex_attention(*eq, scale=0.7, return_lse=True)
    _close(e_out, t_out, tol)
    _close(e_lse, t_lse, tol)
    default = efa.flex_attention(*eq)
    assert not np.allclose(default.numpy(), e_out.numpy())
    with pytest.raises(ValueError, match="both return_lse and return_aux"):
        efa.flex_attention(*eq, return_lse=True, return_aux=efa.AuxRequest(lse=True))


def _masked_queries(b, h, q_idx, kv_idx):  # queries 0 and 5 of head 1 see nothing
    return (h == 0) | ((q_idx != 0) & (q_idx != 5) & (kv_idx <= q_idx))


def _masked_by_score(score, b, h, q_idx, kv_idx):  # the same, as a bias of -inf
    return score + ember.where(_masked_queries(b, h, q_idx, kv_idx), 0.0, -math.inf)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("via", ["mask_mod", "score_mod"])
def test_fully_masked_rows(dtype, via):
    """Zeros out and -inf lse, as torch's; gradients stay finite also where the score_mod
    masks a whole row (torch's eager math gives NaN there; its fused kernels do not)."""
    np_dtype, tol = DTYPES[dtype]
    q, k, v = _arrays(3, (1, 2, 8, 4), (1, 2, 8, 4), (1, 2, 8, 4), dtype=np_dtype)
    t_inputs, e_inputs = zip(*(_pair(a, True) for a in (q, k, v)), strict=True)
    e_mask = efa.create_block_mask(_masked_queries, 1, 2, 8, 8, device="cpu", BLOCK_SIZE=4)
    e_mods = {"block_mask": e_mask} if via == "mask_mod" else {"score_mod": _masked_by_score}
    e_out, e_aux = efa.flex_attention(
        *e_inputs, **e_mods, return_aux=efa.AuxRequest(lse=True, max_scores=True)
    )
    t_mask = tfa.create_block_mask(_masked_queries, 1, 2, 8, 8, device="cpu", BLOCK_SIZE=4)
    with torch.no_grad():
        t_out, t_aux = tfa.flex_attention(
            *(t.detach() for t in t_inputs),
            block_mask=t_mask,
            return_aux=tfa.AuxRequest(lse=True),
        )
    _close(e_out, t_out, tol)
    _close(e_aux.lse, t_aux.lse, tol)
    assert (e_out[0, 1, [0, 5]].detach().numpy() == 0).all()
    assert np.isneginf(e_aux.lse[0, 1, [0, 5]].detach().numpy()).all()
    t_math = _torch_math(*t_inputs, mask_mod=_masked_queries)
    _close(e_aux.max_scores, t_math[2], tol)
    (e_out.sum() + e_aux.lse[0, 0].sum()).backward()
    (t_math[0].sum() + t_math[1][0, 0].sum()).backward()
    for e_input, t_input in zip(e_inputs, t_inputs, strict=True):
        assert np.isfinite(e_input.grad.numpy()).all()
        _close(e_input.grad, t_input.grad, tol * 5)


def test_create_mask_of_score_mod():
    def score_mod(xp):
        def mod(score, b, h, q_idx, kv_idx):  # -inf where the key is past the query (+ h)
            return xp.where(kv_idx > q_idx + h, -math.inf, score)

        return mod

    got = efa.create_mask(score_mod(ember), 2, 2, 6, 7, device="cpu")
    expected = tfa.create_mask(score_mod(torch), 2, 2, 6, 7, device="cpu")
    assert not expected.all()
    assert got.dtype == ember.bool
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_argument_errors():
    _, (q, k, v) = _qkv(np.float32, (1, 2, 8, 4))
    mask = efa.create_block_mask(causal, None, None, 16, 16, device="cpu", BLOCK_SIZE=4)
    with pytest.raises(ValueError, match="larger length"):
        efa.flex_attention(q, k, v, block_mask=mask)
    with pytest.raises(ValueError, match="same embedding dimension"):
        efa.flex_attention(q, k[..., :3], v)
    with pytest.raises(ValueError, match="Invalid BACKEND"):
        efa.flex_attention(q, k, v, kernel_options={"BACKEND": "CUDNN"})
    with pytest.raises(AssertionError, match="mask_mod"):
        efa.create_block_mask(lambda s, b, h, i, j: s, 1, 1, 8, 8, device="cpu")


# ---- nn.attention.bias -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "variant, L, S", [("lower_right", 5, 9), ("upper_left", 5, 9), ("lower_right", 6, 6)]
)
def test_causal_bias_sdpa(dtype, variant, L, S):  # noqa: N803 - the lengths' usual names
    np_dtype, tol = DTYPES[dtype]
    arrays = _arrays(4, (2, 2, L, 8), (2, 2, S, 8), (2, 2, S, 8), dtype=np_dtype)
    t_inputs, e_inputs = zip(*(_pair(a, True) for a in arrays), strict=True)
    t_bias = getattr(tbias, f"causal_{variant}")(L, S)
    e_bias = getattr(ebias, f"causal_{variant}")(L, S)
    assert isinstance(e_bias, ember.Tensor) and e_bias.variant == t_bias.variant
    np.testing.assert_array_equal(e_bias._materialize().numpy(), t_bias._materialize().numpy())
    assert repr(e_bias) == repr(t_bias)
    t_out = torch.nn.functional.scaled_dot_product_attention(*t_inputs, t_bias)
    e_out = F.scaled_dot_product_attention(*e_inputs, e_bias)
    _close(e_out, t_out, tol)
    _grads_match(e_inputs, t_inputs, e_out, t_out, tol * 5)
    with pytest.raises(ValueError, match="causal=True"):
        F.scaled_dot_product_attention(*e_inputs, attn_mask=e_bias, is_causal=True)


def test_causal_bias_warns_and_checks():
    with pytest.warns(UserWarning, match="produce NaNs"):
        ebias.causal_lower_right(6, 4)
    with pytest.raises(AssertionError, match="2D"):
        ebias.causal_upper_left(2, 3, 4)
    with pytest.raises(AssertionError, match="CausalVariant"):
        ebias.CausalBias(1, 2, 3)
