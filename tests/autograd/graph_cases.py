"""A sweep of common expressions for tests/autograd/test_graph_sweep.py: each builds a graph
from the leaves of ``leaves`` with ``lib`` (ember or torch), and the graph's node types, names,
next_functions and ``_saved_*`` attributes are compared with PyTorch's."""

from __future__ import annotations

import numpy as np


def leaves(lib):
    """x (3), w (2, 3), b (2), m (2, 3, 4, 4): float64 leaves that require grad."""
    r = np.random.RandomState(0)
    return tuple(
        lib.tensor(r.randn(*shape).tolist(), dtype=lib.float64, requires_grad=True)
        for shape in ((3,), (2, 3), (2,), (2, 3, 4, 4))
    )


def F(lib):
    return lib.nn.functional


def setitem(t, key, value):
    """``t`` after ``t[key] = value``."""
    t[key] = value
    return t


CASES = {
    "index int tensor": lambda lib, x, w, b, m: x[lib.tensor([0, 2])],
    "index list": lambda lib, x, w, b, m: x[[0, 2]],
    "index bool": lambda lib, x, w, b, m: x[x > 0],
    "index 2d adv": lambda lib, x, w, b, m: w[:, [0, 2]],
    "index ellipsis": lambda lib, x, w, b, m: w[..., 1],
    "index None": lambda lib, x, w, b, m: x[None],
    "index step": lambda lib, x, w, b, m: x[::2],
    "index sel slice": lambda lib, x, w, b, m: w[1, 1:],
    "index neg": lambda lib, x, w, b, m: x[-1],
    "index full slice": lambda lib, x, w, b, m: x[:],
    "index 2d int": lambda lib, x, w, b, m: w[1, 2],
    "chunk": lambda lib, x, w, b, m: w.chunk(2, 1)[0],
    "chunk even": lambda lib, x, w, b, m: w.chunk(2, 0)[1],
    "split int": lambda lib, x, w, b, m: w.split(1, 1)[0],
    "split list": lambda lib, x, w, b, m: w.split([1, 2], 1)[1],
    "tensor_split": lambda lib, x, w, b, m: w.tensor_split(2, 1)[0],
    "unbind": lambda lib, x, w, b, m: w.unbind(1)[0],
    "reshape view": lambda lib, x, w, b, m: w.reshape(3, 2),
    "reshape copy": lambda lib, x, w, b, m: w.t().reshape(6),
    "reshape same": lambda lib, x, w, b, m: w.reshape(2, 3),
    "reshape alias": lambda lib, x, w, b, m: w.t().reshape(3, 2, 1),
    "reshape alias same shape": lambda lib, x, w, b, m: w.t().reshape(3, 2),
    "reshape alias of slice": lambda lib, x, w, b, m: m[:, :2].reshape(2, 2, 16),
    "reshape alias of expand": lambda lib, x, w, b, m: x[:1].expand(4).reshape(2, 2),
    "reshape_as alias": lambda lib, x, w, b, m: w.t().reshape_as(w.t().unsqueeze(-1)),
    "flatten alias": lambda lib, x, w, b, m: m.transpose(2, 3).flatten(0, 1),
    "flatten one dim of slice": lambda lib, x, w, b, m: m[:, ::2].flatten(1, 1),
    "view non-contiguous": lambda lib, x, w, b, m: w.t().view(3, 2, 1),
    "view_as": lambda lib, x, w, b, m: x.view_as(x),
    "flatten copy": lambda lib, x, w, b, m: w.t().flatten(),
    "contiguous": lambda lib, x, w, b, m: w.t().contiguous(),
    "clone": lambda lib, x, w, b, m: w.clone(),
    "permute": lambda lib, x, w, b, m: m.permute(1, 0, 2, 3),
    "transpose": lambda lib, x, w, b, m: m.transpose(1, 2),
    "unsqueeze": lambda lib, x, w, b, m: x.unsqueeze(0),
    "squeeze": lambda lib, x, w, b, m: x[None].squeeze(),
    "squeeze dims": lambda lib, x, w, b, m: x[None].squeeze((0,)),
    "squeeze dim": lambda lib, x, w, b, m: x[None].squeeze(0),
    "chunk second": lambda lib, x, w, b, m: lib.chunk(w, 3, 1)[2] * w.chunk(3, 1)[1],
    "index mask 2d": lambda lib, x, w, b, m: w[w > 0],
    "index mixed": lambda lib, x, w, b, m: m[1:, [0, 2], ..., lib.tensor([1])],
    "index ellipsis all": lambda lib, x, w, b, m: x[...],
    "addmm": lambda lib, x, w, b, m: lib.addmm(b, w, w.t()),
    "mm strides": lambda lib, x, w, b, m: w.t() @ w,
    "pad replicate": lambda lib, x, w, b, m: F(lib).pad(m, (1, 2, 0, 1), mode="replicate"),
    "adaptive_avg 2": lambda lib, x, w, b, m: F(lib).adaptive_avg_pool2d(m, 2),
    "interpolate linear": lambda lib, x, w, b, m: F(lib).interpolate(
        m[0], scale_factor=1.5, mode="linear"
    ),
    "pixel_unshuffle": lambda lib, x, w, b, m: F(lib).pixel_unshuffle(m, 2),
    "embedding padding": lambda lib, x, w, b, m: F(lib).embedding(
        lib.tensor([1, 0]), w, padding_idx=-1
    ),
    "expand_as": lambda lib, x, w, b, m: x.expand_as(w),
    "repeat": lambda lib, x, w, b, m: x.repeat(2),
    "tile": lambda lib, x, w, b, m: x.tile(2),
    "flip": lambda lib, x, w, b, m: x.flip(0),
    "roll": lambda lib, x, w, b, m: x.roll(1),
    "diagonal": lambda lib, x, w, b, m: w.diagonal(),
    "narrow": lambda lib, x, w, b, m: x.narrow(0, 1, 2),
    "movedim": lambda lib, x, w, b, m: m.movedim(0, 2),
    "sum": lambda lib, x, w, b, m: w.sum(),
    "sum dims": lambda lib, x, w, b, m: m.sum((0, 2)),
    "mean keep": lambda lib, x, w, b, m: w.mean(1, keepdim=True),
    "prod": lambda lib, x, w, b, m: w.prod(),
    "prod dim": lambda lib, x, w, b, m: w.prod(1),
    "amax": lambda lib, x, w, b, m: w.amax(1),
    "max": lambda lib, x, w, b, m: w.max(),
    "min dim": lambda lib, x, w, b, m: w.min(1).values,
    "maximum": lambda lib, x, w, b, m: lib.maximum(x, x * 2),
    "std": lambda lib, x, w, b, m: w.std(),
    "var dim": lambda lib, x, w, b, m: w.var(1),
    "logsumexp": lambda lib, x, w, b, m: w.logsumexp(1),
    "norm p1": lambda lib, x, w, b, m: w.norm(1),
    "norm dim": lambda lib, x, w, b, m: w.norm(dim=1),
    "cumprod": lambda lib, x, w, b, m: x.cumprod(0),
    "argmax use": lambda lib, x, w, b, m: w[0, w[0].argmax()],
    "sort": lambda lib, x, w, b, m: x.sort()[0],
    "topk": lambda lib, x, w, b, m: x.topk(2)[0],
    "mse": lambda lib, x, w, b, m: F(lib).mse_loss(x, x.detach() * 2),
    "mse sum": lambda lib, x, w, b, m: F(lib).mse_loss(x, x.detach() * 2, reduction="sum"),
    "l1": lambda lib, x, w, b, m: F(lib).l1_loss(x, x.detach() * 2),
    "ce": lambda lib, x, w, b, m: F(lib).cross_entropy(w, lib.tensor([0, 2])),
    "ce probs": lambda lib, x, w, b, m: F(lib).cross_entropy(w, w.detach().softmax(1)),
    "ce smoothing": lambda lib, x, w, b, m: F(lib).cross_entropy(
        w, lib.tensor([0, 2]), label_smoothing=0.1
    ),
    "ce probs smoothing none": lambda lib, x, w, b, m: F(lib).cross_entropy(
        w, w.softmax(1), reduction="none", label_smoothing=0.2
    ),
    "ce smoothing weight sum": lambda lib, x, w, b, m: F(lib).cross_entropy(
        w, lib.tensor([0, 2]), x.detach().abs(), reduction="sum", label_smoothing=0.1
    ),
    "ce unbatched smoothing": lambda lib, x, w, b, m: F(lib).cross_entropy(
        x, lib.tensor(1), label_smoothing=0.3
    ),
    "nll": lambda lib, x, w, b, m: F(lib).nll_loss(w.log_softmax(1), lib.tensor([0, 2])),
    "kl_div": lambda lib, x, w, b, m: F(lib).kl_div(
        w.log_softmax(1), w.detach().softmax(1), reduction="batchmean"
    ),
    "bce": lambda lib, x, w, b, m: F(lib).binary_cross_entropy(x.sigmoid(), x.detach().sigmoid()),
    "softplus": lambda lib, x, w, b, m: F(lib).softplus(x),
    "gelu": lambda lib, x, w, b, m: F(lib).gelu(x),
    "gelu tanh": lambda lib, x, w, b, m: F(lib).gelu(x, approximate="tanh"),
    "silu": lambda lib, x, w, b, m: F(lib).silu(x),
    "mish": lambda lib, x, w, b, m: F(lib).mish(x),
    "elu": lambda lib, x, w, b, m: F(lib).elu(x),
    "leaky_relu": lambda lib, x, w, b, m: F(lib).leaky_relu(x, 0.1),
    "hardtanh": lambda lib, x, w, b, m: F(lib).hardtanh(x),
    "hardswish": lambda lib, x, w, b, m: F(lib).hardswish(x),
    "hardsigmoid": lambda lib, x, w, b, m: F(lib).hardsigmoid(x),
    "sigmoid": lambda lib, x, w, b, m: x.sigmoid(),
    "tanh": lambda lib, x, w, b, m: x.tanh(),
    "log_softmax": lambda lib, x, w, b, m: w.log_softmax(1),
    "softmax F": lambda lib, x, w, b, m: F(lib).softmax(w, dim=0),
    "softmin": lambda lib, x, w, b, m: F(lib).softmin(w, dim=0),
    "dropout eval": lambda lib, x, w, b, m: F(lib).dropout(x, 0.5, training=False),
    "dropout p0": lambda lib, x, w, b, m: F(lib).dropout(x, 0.0),
    "dropout": lambda lib, x, w, b, m: F(lib).dropout(x, 0.5),
    "embedding": lambda lib, x, w, b, m: F(lib).embedding(lib.tensor([1, 0]), w),
    "layer_norm affine": lambda lib, x, w, b, m: F(lib).layer_norm(w, (3,), x, x),
    "batch_norm train": lambda lib, x, w, b, m: F(lib).batch_norm(m, None, None, training=True),
    "batch_norm eval": lambda lib, x, w, b, m: F(lib).batch_norm(
        m, lib.zeros(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64), x, x
    ),
    "instance_norm": lambda lib, x, w, b, m: F(lib).instance_norm(m),
    "normalize": lambda lib, x, w, b, m: F(lib).normalize(w),
    "conv2d": lambda lib, x, w, b, m: F(lib).conv2d(m, m[:2, :, :2, :2]),
    "conv2d pad": lambda lib, x, w, b, m: F(lib).conv2d(m, m[:2, :, :3, :3], padding=1),
    "max_pool2d": lambda lib, x, w, b, m: F(lib).max_pool2d(m, 2),
    "avg_pool2d": lambda lib, x, w, b, m: F(lib).avg_pool2d(m, 2),
    "adaptive_avg": lambda lib, x, w, b, m: F(lib).adaptive_avg_pool2d(m, 1),
    "adaptive_max": lambda lib, x, w, b, m: F(lib).adaptive_max_pool2d(m, 1),
    "interpolate nearest": lambda lib, x, w, b, m: F(lib).interpolate(m, scale_factor=2),
    "interpolate bilinear": lambda lib, x, w, b, m: F(lib).interpolate(
        m, scale_factor=2, mode="bilinear"
    ),
    "pad": lambda lib, x, w, b, m: F(lib).pad(w, (1, 1)),
    "pad reflect": lambda lib, x, w, b, m: F(lib).pad(m, (1, 1, 1, 1), mode="reflect"),
    "matmul 3d": lambda lib, x, w, b, m: m @ m,
    "matmul 3d2d": lambda lib, x, w, b, m: m @ m[0, 0],
    "bmm": lambda lib, x, w, b, m: lib.bmm(m[0], m[1]),
    "matmul 1d2d": lambda lib, x, w, b, m: x @ w.t(),
    "outer": lambda lib, x, w, b, m: lib.outer(x, b),
    "einsum": lambda lib, x, w, b, m: lib.einsum("ij,j->i", w, x),
    "inner vectors": lambda lib, x, w, b, m: lib.inner(x, x * 2),
    "inner matrix": lambda lib, x, w, b, m: lib.inner(w, x),
    "inner rows": lambda lib, x, w, b, m: lib.inner(w[:1], x[None]),
    "tensordot size 1": lambda lib, x, w, b, m: lib.tensordot(b[:, None], w, dims=([1], [0])),
    "flatten one dim": lambda lib, x, w, b, m: (w * 2).flatten(1, -1),
    "einsum bmm": lambda lib, x, w, b, m: lib.einsum("bij,bjk->bik", m[0], m[1]),
    "einsum diagonal": lambda lib, x, w, b, m: lib.einsum("ii->i", m[0, 0]),
    "einsum sum": lambda lib, x, w, b, m: lib.einsum("ij->", w),
    "einsum outer": lambda lib, x, w, b, m: lib.einsum("i,j->ij", x, b),
    "addmv": lambda lib, x, w, b, m: lib.addmv(b, w, x),
    "baddbmm": lambda lib, x, w, b, m: lib.baddbmm(m[0], m[0], m[1]),
    "inv": lambda lib, x, w, b, m: lib.linalg.inv(m[0, 0]),
    "det": lambda lib, x, w, b, m: lib.linalg.det(m[0, 0]),
    "solve": lambda lib, x, w, b, m: lib.linalg.solve(m[0, 0], m[0, 1]),
    "cholesky": lambda lib, x, w, b, m: lib.linalg.cholesky(
        m[0, 0] @ m[0, 0].mT + lib.eye(4, dtype=lib.float64)
    ),
    "qr": lambda lib, x, w, b, m: lib.linalg.qr(m[0, 0])[0],
    "svdvals": lambda lib, x, w, b, m: lib.linalg.svdvals(m[0, 0]),
    "svd": lambda lib, x, w, b, m: lib.linalg.svd(m[0, 0], full_matrices=False)[1],
    "det batched": lambda lib, x, w, b, m: lib.linalg.det(m[0]),
    "det transposed": lambda lib, x, w, b, m: lib.linalg.det(m[0, 0].mT),
    "solve transposed": lambda lib, x, w, b, m: lib.linalg.solve(m[0, 0].mT, m[0, 1]),
    "solve right": lambda lib, x, w, b, m: lib.linalg.solve(m[0, 0], m[0, 1], left=False),
    "matrix_norm": lambda lib, x, w, b, m: lib.linalg.matrix_norm(m[0, 0]),
    "vector_norm": lambda lib, x, w, b, m: lib.linalg.vector_norm(x),
    "cat": lambda lib, x, w, b, m: lib.cat([w, w], 1),
    "stack": lambda lib, x, w, b, m: lib.stack([x, b[:1].expand(3)], 1),
    "hstack": lambda lib, x, w, b, m: lib.hstack([x, b]),
    "where scalar": lambda lib, x, w, b, m: lib.where(x > 0, x, b[0]),
    "where both": lambda lib, x, w, b, m: lib.where(x > 0, x, x * 2),
    "masked_fill": lambda lib, x, w, b, m: x.masked_fill(x > 0, 0.0),
    "masked_fill_": lambda lib, x, w, b, m: (x * 2).masked_fill_(x > 0, 0.0),
    "masked_fill_ tensor": lambda lib, x, w, b, m: (w * 2).masked_fill_(w > 0, b[0]),
    "masked_fill tensor": lambda lib, x, w, b, m: w.masked_fill(w > 0, b[0]),
    "masked_fill_ view": lambda lib, x, w, b, m: (w * 2)[0].masked_fill_(x > 0, 1.0),
    # in-place ops on views (PyTorch's CopySlices over the base) and ember's written-back ones
    "add_ view": lambda lib, x, w, b, m: (w * 2)[0].add_(x),
    "clamp_ view": lambda lib, x, w, b, m: (w * 2)[0].clamp_(min=0),
    "lerp_ view": lambda lib, x, w, b, m: (w * 2)[0].lerp_(x, 0.5),
    "scatter_add_ view": lambda lib, x, w, b, m: (w * 2)[0].scatter_add_(0, lib.tensor([1]), x[:1]),
    "masked_fill_ tensor view": lambda lib, x, w, b, m: (w * 2)[0].masked_fill_(x > 0, b[0]),
    "index_fill_": lambda lib, x, w, b, m: (w * 2).index_fill_(1, lib.tensor([1]), 1.0),
    "index_fill_ view": lambda lib, x, w, b, m: (w * 2)[0].index_fill_(0, lib.tensor([1]), 1.0),
    "index_copy_ view": lambda lib, x, w, b, m: (w * 2)[0].index_copy_(0, lib.tensor([1]), x[:1]),
    "masked_scatter_ view": lambda lib, x, w, b, m: (w * 2)[0].masked_scatter_(x > 0, x * 3),
    "renorm_ view": lambda lib, x, w, b, m: (w * 2)[0:1].renorm_(2, 0, 1.0),
    "index_put_": lambda lib, x, w, b, m: (x * 2).index_put_((lib.tensor([1]),), x[:1]),
    "index_put_ accumulate": lambda lib, x, w, b, m: (x * 2).index_put_(
        (lib.tensor([1, 1]),), x[:2], accumulate=True
    ),
    "index_put_ view": lambda lib, x, w, b, m: (w * 2)[0].index_put_((lib.tensor([1]),), x[:1]),
    "index_put_ mask": lambda lib, x, w, b, m: (x * 2).index_put_((x > 0,), b[0]),
    "setitem list": lambda lib, x, w, b, m: setitem(x * 2, [0, 2], b),
    "setitem mask": lambda lib, x, w, b, m: setitem(x * 2, x > 0, 0.0),
    "setitem slice list": lambda lib, x, w, b, m: setitem(w * 2, (slice(None), [0, 2]), b[:, None]),
    "setitem row list": lambda lib, x, w, b, m: setitem(w * 2, (1, [0, 2]), b),
    "masked_select": lambda lib, x, w, b, m: x.masked_select(x > 0),
    "masked_scatter": lambda lib, x, w, b, m: x.masked_scatter(x > 0, w.detach().flatten()),
    "index_put": lambda lib, x, w, b, m: x.index_put((lib.tensor([0]),), b[:1]),
    "index_put accumulate": lambda lib, x, w, b, m: w.index_put(
        (lib.tensor([1, 1]), lib.tensor([0, 2])), x[:2], accumulate=True
    ),
    "index_put mask": lambda lib, x, w, b, m: x.detach().index_put((x.detach() > 0,), b[1]),
    "scatter": lambda lib, x, w, b, m: x.scatter(0, lib.tensor([0]), b[:1]),
    "scatter_add": lambda lib, x, w, b, m: x.scatter_add(0, lib.tensor([0]), b[:1]),
    "index_add": lambda lib, x, w, b, m: x.index_add(0, lib.tensor([0]), b[:1]),
    "abs": lambda lib, x, w, b, m: x.abs(),
    "neg": lambda lib, x, w, b, m: -x,
    "exp": lambda lib, x, w, b, m: x.exp(),
    "log": lambda lib, x, w, b, m: x.abs().log(),
    "sqrt": lambda lib, x, w, b, m: x.abs().sqrt(),
    "rsqrt": lambda lib, x, w, b, m: x.abs().rsqrt(),
    "reciprocal": lambda lib, x, w, b, m: x.reciprocal(),
    "div tensor": lambda lib, x, w, b, m: x / b[0],
    "rdiv": lambda lib, x, w, b, m: 1 / x,
    "atan2": lambda lib, x, w, b, m: lib.atan2(x, x * 2),
    "sub alpha": lambda lib, x, w, b, m: lib.sub(x, x, alpha=2),
    "add alpha": lambda lib, x, w, b, m: lib.add(x, x, alpha=2),
    "addcmul": lambda lib, x, w, b, m: lib.addcmul(x, x, x),
    "lerp": lambda lib, x, w, b, m: lib.lerp(x, x * 2, 0.5),
    "sign": lambda lib, x, w, b, m: x.sign(),
    "floor": lambda lib, x, w, b, m: x.floor(),
    "clamp_min": lambda lib, x, w, b, m: x.clamp_min(0),
    "clamp tensor": lambda lib, x, w, b, m: x.clamp(min=b[0]),
    "type_as": lambda lib, x, w, b, m: x.float(),
    "to same": lambda lib, x, w, b, m: x.to(lib.float64) * 1,
    "detach mul": lambda lib, x, w, b, m: x.detach() * x,
    "triu": lambda lib, x, w, b, m: w.triu(),
    "tril": lambda lib, x, w, b, m: w.tril(),
    "trace": lambda lib, x, w, b, m: m[0, 0].trace(),
    "cross": lambda lib, x, w, b, m: lib.linalg.cross(x, x * 2),
    "cdist": lambda lib, x, w, b, m: lib.cdist(w, w),
    "unfold": lambda lib, x, w, b, m: x.unfold(0, 2, 1),
    "F.unfold": lambda lib, x, w, b, m: F(lib).unfold(m, 2),
    "pixel_shuffle": lambda lib, x, w, b, m: F(lib).pixel_shuffle(m[:, :1].expand(2, 4, 4, 4), 2),
    "sdpa": lambda lib, x, w, b, m: F(lib).scaled_dot_product_attention(m, m, m),
    "sdpa causal gqa": lambda lib, x, w, b, m: F(lib).scaled_dot_product_attention(
        m[:, :2].reshape(1, 4, 4, 4), m[:1, :2], m[1:, 1:], is_causal=True, enable_gqa=True
    ),
    "sdpa bool mask": lambda lib, x, w, b, m: F(lib).scaled_dot_product_attention(
        m, m, m, attn_mask=lib.ones(4, 4, dtype=lib.bool).tril(), scale=0.5
    ),
    "sdpa 3d": lambda lib, x, w, b, m: F(lib).scaled_dot_product_attention(m[0], m[1], m[1]),
    "glu": lambda lib, x, w, b, m: F(lib).glu(m, 2),
    "logit": lambda lib, x, w, b, m: x.sigmoid().logit(),
    "erf": lambda lib, x, w, b, m: x.erf(),
    "pow tensor scalar base": lambda lib, x, w, b, m: lib.pow(2.0, x),
    "fmod": lambda lib, x, w, b, m: x.fmod(0.3),
    "remainder": lambda lib, x, w, b, m: x.remainder(0.3),
    "complex abs": lambda lib, x, w, b, m: lib.complex(x, x).abs(),
    "view_as_real": lambda lib, x, w, b, m: lib.view_as_real(lib.complex(x, x)),
    "nan_to_num": lambda lib, x, w, b, m: x.nan_to_num(),
    "cumsum dim": lambda lib, x, w, b, m: w.cumsum(1),
    "mean all dims": lambda lib, x, w, b, m: w.mean((0, 1)),
    "linear bias 2d": lambda lib, x, w, b, m: F(lib).linear(w, w),
    "rnn cell": lambda lib, x, w, b, m: lib.tanh(F(lib).linear(x, w, b)),
}
