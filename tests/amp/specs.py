"""One call per op with an autocast policy, written once for both libraries.

``spec(lib, t)`` calls the op through its public spelling in ``lib`` (ember or torch);
``t(*shape)`` makes the next floating tensor argument, in the dtype the test's combination gives
that position, with the same values in both libraries.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ember.dispatcher.optable.upsample import UPSAMPLES


class Maker:
    """Makes tensor arguments: the i-th in ``dtypes[i % len(dtypes)]``, values from a fixed seed."""

    def __init__(self, lib, dtypes, device="cpu"):
        self.lib = lib
        self.dtypes = dtypes
        self.device = device
        self.count = 0
        self.rng = np.random.default_rng(0)
        self.created: list = []

    def __call__(self, *shape, low=-1.0, high=1.0):
        dtype = self.dtypes[self.count % len(self.dtypes)]
        self.count += 1
        self.created.append(dtype)
        values = self.rng.uniform(low, high, shape).astype(np.float32)
        return self.lib.tensor(values).to(self.device).to(getattr(self.lib, dtype))

    def long(self, values):
        return self.lib.tensor(values).to(self.device)

    def record(self, spec) -> list:
        """The dtypes of the tensors ``spec`` makes (the call itself may fail)."""
        with contextlib.suppress(RuntimeError, TypeError, ValueError):
            spec(self.lib, self)
        return self.created


def _F(lib):
    return lib.nn.functional


def _unary(fn_name, low=0.1, high=0.9):
    return lambda lib, t: getattr(lib, fn_name)(t(3, low=low, high=high))


_UNARY = "acos asin cosh exp expm1 log log10 log1p log2 reciprocal rsqrt sinh tan"


def _upsample(name):
    """The .vec overload: sizes, align_corners where the op has it, no scale factors."""
    rank = int(name[-2])
    sizes = [3, 4, 2][:rank]
    corners = (False,) if UPSAMPLES[name][1] else ()
    return lambda lib, t: getattr(lib.ops.aten, name)(
        t(1, 2, *[5, 3, 4][:rank]), sizes, *corners, None
    )


SPECS = {
    **{name: _unary(name) for name in _UNARY.split()},
    "softplus": lambda lib, t: _F(lib).softplus(t(3)),
    "pow": lambda lib, t: lib.pow(t(3, low=0.1, high=2.0), t(3)),
    "addcmul": lambda lib, t: lib.addcmul(t(3), t(3), t(3)),
    "addcdiv": lambda lib, t: lib.addcdiv(t(3), t(3), t(3, low=0.5, high=1.0)),
    "atan2": lambda lib, t: lib.atan2(t(3), t(3)),
    "mm": lambda lib, t: lib.mm(t(2, 3), t(3, 2)),
    "bmm": lambda lib, t: lib.bmm(t(2, 2, 3), t(2, 3, 2)),
    "matmul": lambda lib, t: lib.matmul(t(2, 3), t(3, 2)),
    "mv": lambda lib, t: lib.mv(t(2, 3), t(3)),
    "dot": lambda lib, t: lib.dot(t(3), t(3)),
    "einsum": lambda lib, t: lib.einsum("ij,jk->ik", t(2, 3), t(3, 2)),
    "addmm": lambda lib, t: lib.addmm(t(2, 2), t(2, 3), t(3, 2)),
    "baddbmm": lambda lib, t: lib.baddbmm(t(2, 2, 2), t(2, 2, 3), t(2, 3, 2)),
    "trace": lambda lib, t: lib.trace(t(3, 3)),
    "view_as_complex": lambda lib, t: lib.view_as_real(lib.view_as_complex(t(3, 2))),
    "linear": lambda lib, t: _F(lib).linear(t(2, 3), t(4, 3), t(4)),
    "bilinear": lambda lib, t: _F(lib).bilinear(t(2, 3), t(2, 2), t(4, 3, 2), t(4)),
    "conv1d": lambda lib, t: _F(lib).conv1d(t(1, 2, 5), t(3, 2, 2), t(3)),
    "conv2d": lambda lib, t: _F(lib).conv2d(t(1, 2, 4, 4), t(3, 2, 2, 2), t(3)),
    "conv_transpose2d": lambda lib, t: _F(lib).conv_transpose2d(t(1, 2, 3, 3), t(2, 3, 2, 2)),
    "scaled_dot_product_attention": lambda lib, t: _F(lib).scaled_dot_product_attention(
        t(1, 2, 3, 4), t(1, 2, 3, 4), t(1, 2, 3, 4)
    ),
    "cat": lambda lib, t: lib.cat([t(2), t(3)]),
    "stack": lambda lib, t: lib.stack([t(2), t(2)]),
    "scatter_add": lambda lib, t: lib.scatter_add(t(3), 0, t.long([0, 1, 0]), t(3)),
    "sum": lambda lib, t: lib.sum(t(3)),
    "prod": lambda lib, t: lib.prod(t(3)),
    "cumsum": lambda lib, t: lib.cumsum(t(4), 0),
    "cumprod": lambda lib, t: lib.cumprod(t(4), 0),
    "softmax": lambda lib, t: lib.softmax(t(2, 3), -1),
    "log_softmax": lambda lib, t: lib.log_softmax(t(2, 3), -1),
    "logsumexp": lambda lib, t: lib.logsumexp(t(2, 3), 1),
    "norm": lambda lib, t: lib.norm(t(3)),
    "layer_norm": lambda lib, t: _F(lib).layer_norm(t(2, 4), (4,), t(4), t(4)),
    "native_layer_norm": lambda lib, t: lib.native_layer_norm(t(2, 4), (4,), t(4), t(4), 1e-5)[0],
    "group_norm": lambda lib, t: _F(lib).group_norm(t(2, 4, 3), 2, t(4), t(4)),
    "cosine_similarity": lambda lib, t: _F(lib).cosine_similarity(t(3, 4), t(3, 4)),
    "mse_loss": lambda lib, t: _F(lib).mse_loss(t(3), t(3)),
    "l1_loss": lambda lib, t: _F(lib).l1_loss(t(3), t(3)),
    "smooth_l1_loss": lambda lib, t: _F(lib).smooth_l1_loss(t(3), t(3)),
    "huber_loss": lambda lib, t: _F(lib).huber_loss(t(3), t(3)),
    "kl_div": lambda lib, t: _F(lib).kl_div(
        t(3, 4, low=-3.0, high=-0.1), t(3, 4, low=0.0, high=1.0), reduction="batchmean"
    ),
    "nll_loss": lambda lib, t: _F(lib).nll_loss(t(3, 4, low=-3.0, high=-0.1), t.long([0, 1, 3])),
    "cross_entropy_loss": lambda lib, t: _F(lib).cross_entropy(t(3, 4), t.long([0, 1, 3])),
    "binary_cross_entropy": lambda lib, t: _F(lib).binary_cross_entropy(
        t(4, low=0.1, high=0.9), t(4, low=0.0, high=1.0)
    ),
    "binary_cross_entropy_with_logits": lambda lib, t: _F(lib).binary_cross_entropy_with_logits(
        t(4), t(4, low=0.0, high=1.0)
    ),
    "cosine_embedding_loss": lambda lib, t: _F(lib).cosine_embedding_loss(
        t(3, 4), t(3, 4), t.long([1, -1, 1])
    ),
}


# The op surface's and ember.linalg's rows on autocast's lists (matrices kept well conditioned:
# a diagonal shift makes them positive definite whatever t's values).
def _spd(lib, t, n=3):
    a = t(n, n)
    return a @ a.mT + n * lib.eye(n, dtype=a.dtype)


def _la(lib):
    return lib.linalg


SPECS.update({
    "addbmm": lambda lib, t: lib.addbmm(t(2, 2), t(3, 2, 3), t(3, 3, 2)),
    "addmv": lambda lib, t: lib.addmv(t(2), t(2, 3), t(3)),
    "addr": lambda lib, t: lib.addr(t(2, 3), t(2), t(3)),
    "cdist": lambda lib, t: lib.cdist(t(2, 3), t(4, 3)),
    "grid_sampler_2d": lambda lib, t: lib.grid_sampler_2d(
        t(1, 2, 3, 3), t(1, 2, 2, 2), 0, 0, False
    ),
    "grid_sampler_3d": lambda lib, t: lib.grid_sampler_3d(
        t(1, 2, 3, 3, 3), t(1, 2, 2, 2, 3), 0, 0, False
    ),
    "dist": lambda lib, t: lib.dist(t(3), t(3)),
    "renorm": lambda lib, t: lib.renorm(t(2, 3), 2, 0, 0.5),
    "index_copy": lambda lib, t: lib.index_copy(t(3, 2), 0, t.long([2, 0]), t(2, 2)),
    "cross": lambda lib, t: lib.cross(t(2, 3), t(2, 3), dim=1),
    "vdot": lambda lib, t: lib.vdot(t(3), t(3)),
    "tensordot": lambda lib, t: lib.tensordot(t(2, 3), t(3, 2), dims=1),
    "erfinv": lambda lib, t: lib.erfinv(t(3, low=-0.9, high=0.9)),
    "quantile": lambda lib, t: lib.quantile(t(5), t(2, low=0.1, high=0.9)),
    "nanquantile": lambda lib, t: lib.nanquantile(t(5), t(2, low=0.1, high=0.9)),
    "cholesky": lambda lib, t: lib.cholesky(_spd(lib, t)),
    "cholesky_inverse": lambda lib, t: lib.cholesky_inverse(lib.linalg.cholesky(_spd(lib, t))),
    "cholesky_solve": lambda lib, t: lib.cholesky_solve(t(3, 2), lib.linalg.cholesky(_spd(lib, t))),
    "inverse": lambda lib, t: lib.inverse(_spd(lib, t)),
    "pinverse": lambda lib, t: lib.pinverse(t(3, 2)),
    "svd": lambda lib, t: lib.svd(t(3, 2)),
    "qr": lambda lib, t: lib.qr(t(3, 2)),
    "geqrf": lambda lib, t: lib.geqrf(t(3, 2)),
    "orgqr": lambda lib, t: lib.orgqr(*lib.geqrf(t(3, 2))),
    "ormqr": lambda lib, t: lib.ormqr(*lib.geqrf(t(3, 2)), t(3, 2)),
    "triangular_solve": lambda lib, t: lib.triangular_solve(t(3, 2), _spd(lib, t).triu()),
    "lu_solve": lambda lib, t: lib.lu_solve(t(3, 2), *lib.linalg.lu_factor(_spd(lib, t))),
    "linalg_cholesky": lambda lib, t: _la(lib).cholesky(_spd(lib, t)),
    "linalg_cholesky_ex": lambda lib, t: _la(lib).cholesky_ex(_spd(lib, t)),
    "linalg_cond": lambda lib, t: _la(lib).cond(_spd(lib, t)),
    "linalg_eig": lambda lib, t: _la(lib).eig(_spd(lib, t))[1],
    "linalg_eigvals": lambda lib, t: _la(lib).eigvals(_spd(lib, t)),
    "polar": lambda lib, t: lib.polar(t(3, low=0.1), t(3)),
    "linalg_eigh": lambda lib, t: _la(lib).eigh(_spd(lib, t)),
    "linalg_eigvalsh": lambda lib, t: _la(lib).eigvalsh(_spd(lib, t)),
    "linalg_householder_product": lambda lib, t: _la(lib).householder_product(t(3, 2), t(2)),
    "linalg_inv": lambda lib, t: _la(lib).inv(_spd(lib, t)),
    "linalg_inv_ex": lambda lib, t: _la(lib).inv_ex(_spd(lib, t)),
    "linalg_lstsq": lambda lib, t: _la(lib).lstsq(t(3, 2), t(3, 1)),
    "linalg_matrix_norm": lambda lib, t: _la(lib).matrix_norm(t(3, 3)),
    "linalg_matrix_rank": lambda lib, t: _la(lib).matrix_rank(t(3, 3)),
    "linalg_multi_dot": lambda lib, t: _la(lib).multi_dot([t(2, 3), t(3, 3), t(3, 2)]),
    "linalg_qr": lambda lib, t: _la(lib).qr(t(3, 2)),
    "linalg_solve": lambda lib, t: _la(lib).solve(_spd(lib, t), t(3, 2)),
    "linalg_svd": lambda lib, t: _la(lib).svd(t(3, 2)),
    "linalg_svdvals": lambda lib, t: _la(lib).svdvals(t(3, 2)),
    "linalg_tensorinv": lambda lib, t: _la(lib).tensorinv(_spd(lib, t, 4).reshape(4, 2, 2), ind=1),
    "linalg_tensorsolve": lambda lib, t: _la(lib).tensorsolve(
        _spd(lib, t, 4).reshape(2, 2, 4), t(2, 2)
    ),
    "linalg_vecdot": lambda lib, t: _la(lib).vecdot(t(2, 3), t(2, 3)),
    "linalg_vector_norm": lambda lib, t: _la(lib).vector_norm(t(3)),
    "_upsample_bilinear2d_aa": lambda lib, t: lib.ops.aten._upsample_bilinear2d_aa(
        t(1, 2, 6, 5), [3, 2], False
    ),
    **{name: _upsample(name) for name in UPSAMPLES},
})  # fmt: skip

# Autocast outcomes that differ from torch's on these new rows (found when the specs above were
# written; not yet reconciled): the dtype test is a strict xfail for them, so a fix must remove it.
NOT_AS_TORCH_YET = frozenset((
    "geqrf", "cross", "linalg_inv_ex", "linalg_lstsq", "linalg_cholesky_ex", "linalg_qr",
    "linalg_svd", "linalg_eigh", "lu_solve", "qr", "svd", "triangular_solve",
    # PyTorch's CPU kernel refuses the mixed dtypes its autocast passes (weight in the autocast
    # dtype, input cast to float32); ember's composite computes in float32
    "native_layer_norm",
))  # fmt: skip

# Ops on no list: autocast must leave them alone (their own promotion rules decide).
UNLISTED = {
    "add": lambda lib, t: lib.add(t(3), t(3)),
    "relu": lambda lib, t: _F(lib).relu(t(3)),
    "gelu": lambda lib, t: _F(lib).gelu(t(3)),
    "embedding": lambda lib, t: _F(lib).embedding(t.long([0, 2]), t(3, 2)),
    "batch_norm": lambda lib, t: _F(lib).batch_norm(t(2, 3, 2), t(3), t(3, low=0.5, high=1.0)),
    "mean": lambda lib, t: lib.mean(t(3)),
    "where": lambda lib, t: lib.where(t.long([True, False]), t(2), t(2)),
    # activations in the autocast dtype with a model's float32 parameters
    "layer_norm_float32_params": lambda lib, t: _F(lib).layer_norm(
        t(2, 4), (4,), t(4).float(), t(4).float()
    ),
    "group_norm_float32_params": lambda lib, t: _F(lib).group_norm(
        t(2, 4, 3), 2, t(4).float(), t(4).float()
    ),
    "batch_norm_float32_params": lambda lib, t: _F(lib).batch_norm(
        t(2, 3, 2), t(3).float(), t(3, low=0.5).float(), t(3).float(), t(3).float(), True
    ),
}
