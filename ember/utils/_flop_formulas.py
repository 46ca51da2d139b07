"""The shape-level FLOP formulas of ``torch.utils.flop_counter``, by PyTorch's names and with
its arithmetic: a matrix product of (m, k) by (k, n) is ``2 * m * n * k``, a convolution counts
its multiplications and additions over the output (the input for a transposed one), attention
counts its two batched products (five in the backward, which recomputes the scores).

Each takes the shapes of its op's arguments in ATen's order, and ``out_shape``, the shape(s) of
what the op returned; ember/utils/flop_counter.py holds the table of ops they count.
"""

from __future__ import annotations

from math import prod


def mm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """Count flops for matmul."""
    m, k = a_shape
    k2, n = b_shape
    if k != k2:
        raise AssertionError(f"matmul: inner dimensions must match (k == k2), got {k} and {k2}")
    return m * n * 2 * k


def addmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """Count flops for addmm."""
    return mm_flop(a_shape, b_shape)


def bmm_flop(a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """Count flops for the bmm operation."""
    b, m, k = a_shape
    b2, k2, n = b_shape
    if b != b2:
        raise AssertionError(f"bmm: batch dimensions must match (b == b2), got {b} and {b2}")
    if k != k2:
        raise AssertionError(f"bmm: inner dimensions must match (k == k2), got {k} and {k2}")
    return b * m * n * 2 * k


def baddbmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """Count flops for the baddbmm operation."""
    return bmm_flop(a_shape, b_shape)


def _scaled_mm_flop(a_shape, b_shape, scale_a_shape, scale_b_shape, bias_shape=None,
                    scale_result_shape=None, out_dtype=None, use_fast_accum=False,
                    out_shape=None, **kwargs) -> int:  # fmt: skip
    """Count flops for _scaled_mm."""
    return mm_flop(a_shape, b_shape)


def conv_flop_count(x_shape, w_shape, out_shape, transposed: bool = False) -> int:
    """Count flops for convolution: ``2 * prod(spatial) * prod(kernel) * N * C_out * C_in``
    (per group), over the output's spatial sizes (the input's for a transposed convolution).
    The bias is not counted.

    Args:
        x_shape: the input shape before convolution.
        w_shape: the filter shape.
        out_shape: the output shape after convolution.
        transposed: whether the convolution is transposed.

    Returns:
        int: the number of flops.
    """
    batch_size = x_shape[0]
    conv_shape = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *filter_size = w_shape
    return prod(conv_shape) * prod(filter_size) * batch_size * c_out * c_in * 2


def conv_flop(x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed, *args,
              out_shape=None, **kwargs) -> int:  # fmt: skip
    """Count flops for convolution."""
    return conv_flop_count(x_shape, w_shape, out_shape, transposed=transposed)


def _t(shape) -> list:
    return [shape[1], shape[0]] + list(shape[2:])


def conv_backward_flop(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation,
                       transposed, _output_padding, _groups, output_mask, out_shape,
                       **kwargs) -> int:  # fmt: skip
    """Count flops for convolution_backward: the input's gradient is a transposed convolution
    of the output's gradient by the weight, the weight's a convolution of the input by the
    output's gradient (batch and channels swapped)."""
    flop_count = 0
    if output_mask[0]:
        grad_input_shape = out_shape[0]
        flop_count += conv_flop_count(grad_out_shape, w_shape, grad_input_shape, not transposed)
    if output_mask[1]:
        grad_weight_shape = _t(out_shape[1])
        if transposed:
            flop_count += conv_flop_count(_t(grad_out_shape), _t(x_shape), grad_weight_shape)
        else:
            flop_count += conv_flop_count(_t(x_shape), _t(grad_out_shape), grad_weight_shape)
    return flop_count


def sdpa_flop_count(query_shape, key_shape, value_shape) -> int:
    """Count flops for self-attention; key and value may have fewer heads than the query
    (grouped-query attention)."""
    b, h_q, s_q, d_q = query_shape
    _b2, h_kv, s_k, _d2 = key_shape
    _b3, _h3, _s3, d_v = value_shape
    if not (b == _b2 == _b3 and h_kv == _h3 and d_q == _d2 and s_k == _s3):
        raise AssertionError(
            f"sdpa_flop_count: query/key/value shapes are incompatible: "
            f"q={query_shape}, k={key_shape}, v={value_shape}"
        )
    if h_q < h_kv or h_q % h_kv != 0:
        raise AssertionError(
            f"sdpa_flop_count: query heads ({h_q}) must be a multiple of key/value heads ({h_kv})"
        )
    total_flops = bmm_flop((b * h_q, s_q, d_q), (b * h_q, d_q, s_k))  # scores = q @ k^T
    return total_flops + bmm_flop((b * h_q, s_q, s_k), (b * h_q, s_k, d_v))  # scores @ v


def sdpa_flop(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    """Count flops for self-attention (the causal mask is not accounted for)."""
    return sdpa_flop_count(query_shape, key_shape, value_shape)


def sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape) -> int:
    """Count flops for self-attention's backward: the scores recomputed, then the gradients of
    the two products."""
    b, h_q, s_q, d_q = query_shape
    _b2, h_kv, s_k, _d2 = key_shape
    _b3, _h3, _s3, d_v = value_shape
    _b4, _h4, _s4, _d4 = grad_out_shape
    if not (b == _b2 == _b3 == _b4 and h_kv == _h3 and h_q == _h4):
        raise AssertionError("sdpa_backward_flop_count: batch/heads mismatch among tensors")
    if h_q < h_kv or h_q % h_kv != 0:
        raise AssertionError(
            f"sdpa_backward_flop_count: query heads ({h_q}) must be a multiple of "
            f"key/value heads ({h_kv})"
        )
    if not (d_q == _d2 and d_v == _d4 and s_k == _s3 and s_q == _s4):
        raise AssertionError(
            "sdpa_backward_flop_count: grad_out/value/key/query shapes are incompatible"
        )
    bh = b * h_q
    return (
        bmm_flop((bh, s_q, d_q), (bh, d_q, s_k))  # the scores, recomputed
        + bmm_flop((bh, s_q, d_v), (bh, d_v, s_k))  # grad_scores = grad_out @ v^T
        + bmm_flop((bh, s_k, s_q), (bh, s_q, d_v))  # grad_v = scores^T @ grad_out
        + bmm_flop((bh, s_q, s_k), (bh, s_k, d_q))  # grad_q = grad_scores @ k
        + bmm_flop((bh, d_q, s_q), (bh, s_q, s_k))  # grad_k = q^T @ grad_scores
    )


def sdpa_backward_flop(grad_out_shape, query_shape, key_shape, value_shape, *args,
                       out_shape=None, **kwargs) -> int:  # fmt: skip
    """Count flops for self-attention backward."""
    return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)
