"""The parametrizations PyTorch ships: orthogonal, weight_norm and spectral_norm
(torch.nn.utils.parametrizations), registered through parametrize.

orthogonal needs a matrix exponential and a product of Householder reflectors, written here as
nn-local compositions of matmuls (differentiable, every device; candidates for core linalg ops);
the Cayley map needs ``ember.linalg.solve`` and orthogonalising a weight needs a QR, taken from
``ember.linalg`` when it has one and from numpy's LAPACK otherwise (a no-grad setup step).
"""

from __future__ import annotations

import math
from enum import Enum, auto

import numpy as np

import ember

from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _eye_like(n, x):
    return ember.eye(n, dtype=x.dtype, device=x.device)


def _matrix_exp(a):
    """exp(A) by scaling and squaring a degree-18 Taylor series: ||A / 2^s||_1 <= 1/2 keeps the
    truncation below 1e-22, then s squarings. A differentiable composition of matmuls."""
    norm = float(a.detach().abs().sum(-2).amax()) if a.numel() else 0.0
    squarings = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0
    x = a / (2.0**squarings)
    result = _eye_like(a.shape[-1], a) + x
    term = x
    for k in range(2, 19):
        term = ember.matmul(term, x) / k
        result = result + term
    for _ in range(squarings):
        result = ember.matmul(result, result)
    return result


def _householder_product(a, tau):
    """The first n columns of H_1 ... H_n, H_i = I - tau_i v_i v_i^T with v_i the i-th column of
    ``a`` below the diagonal and 1 on it (PyTorch's linalg.householder_product)."""
    m, n = a.shape[-2], a.shape[-1]
    unit = ember.eye(m, n, dtype=a.dtype, device=a.device)
    vectors = a.tril(-1) + unit
    q = _eye_like(m, a).expand(*a.shape[:-2], m, m)
    for i in range(n):
        v = vectors[..., :, i : i + 1]
        q = q - tau[..., i].unsqueeze(-1).unsqueeze(-1) * ember.matmul(
            ember.matmul(q, v), v.transpose(-2, -1)
        )
    return q[..., :n]


def _qr_host(a, raw: bool = False):
    """QR through numpy's LAPACK (geqrf/orgqr) on a host copy: the Q factor, or geqrf's
    compact (A, tau) with ``raw``."""
    array = a.detach().cpu().numpy()
    batch = array.reshape(-1, *array.shape[-2:])
    if raw:
        pairs = [np.linalg.qr(m, mode="raw") for m in batch]
        compact = np.stack([h.T for h, _ in pairs]).reshape(array.shape)
        taus = np.stack([t for _, t in pairs]).reshape(*array.shape[:-2], -1)
        return (
            ember.tensor(compact, dtype=a.dtype, device=a.device),
            ember.tensor(taus, dtype=a.dtype, device=a.device),
        )
    qs, rs = zip(*(np.linalg.qr(m) for m in batch))
    q = np.stack(qs).reshape(*array.shape[:-1], qs[0].shape[-1])
    signs = np.sign(np.stack([np.diagonal(r) for r in rs])).reshape(*array.shape[:-2], -1)
    return ember.tensor(q * signs[..., None, :], dtype=a.dtype, device=a.device)


def _make_orthogonal(a):
    """The Q of A = QR with diag(R) >= 0 (PyTorch's _make_orthogonal)."""
    linalg = getattr(ember, "linalg", None)
    if linalg is not None and hasattr(linalg, "qr"):
        q, r = linalg.qr(a)
        return q * r.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)
    return _qr_host(a)


def _is_orthogonal(q) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    eps = 10.0 * n * float(np.finfo(q.dtype.np).eps)
    gram = ember.matmul(q.transpose(-2, -1), q)
    # PyTorch's allclose(Q^H Q, I, atol=eps) with its default rtol of 1e-5
    identity = _eye_like(k, q)
    return bool(((gram - identity).abs() <= eps + 1e-5 * identity.abs()).all())


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x):
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x = x.transpose(-2, -1)
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            x = x.tril()
            if n != k:
                x = ember.cat([x, x.new_zeros(n, n - k).expand(*x.shape[:-2], -1, -1)], -1)
            a = x - x.transpose(-2, -1)
            q = _matrix_exp(a) if self.orthogonal_map == _OrthMaps.matrix_exp else _cayley(a)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(-1)
            tau = 2.0 / (1.0 + (a * a).sum(-2))
            q = _householder_product(a, tau)
            q = q * x.diagonal(dim1=-2, dim2=-1).to(ember.int32).to(q.dtype).unsqueeze(-2)
        if hasattr(self, "base"):
            q = ember.matmul(self.base, q)
        return q.transpose(-2, -1) if transposed else q

    def right_inverse(self, q):
        with ember.no_grad():
            return self._right_inverse(q)

    def _right_inverse(self, q):
        if tuple(q.shape) != tuple(self.shape):
            raise ValueError(
                f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of "
                f"shape {q.shape}."
            )
        q_init = q
        n, k = q.shape[-2], q.shape[-1]
        transpose = n < k
        if transpose:
            q = q.transpose(-2, -1)
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map != _OrthMaps.householder:
                raise NotImplementedError(
                    "It is not possible to assign to the matrix exponential or the Cayley "
                    "parametrizations when use_trivialization=False."
                )
            # geqrf's compact form with the diagonal of R as signs (tau = 0: flipped)
            a, tau = _qr_host(q, raw=True)
            diagonal = a.diagonal(dim1=-2, dim2=-1).sign()
            a = _with_diagonal(a, ember.where(tau == 0.0, -diagonal, diagonal))
            return a.transpose(-2, -1) if transpose else a
        if n == k:
            q = q.clone() if _is_orthogonal(q) else _make_orthogonal(q)
        else:
            extra = ember.randn(*q.shape[:-2], n, n - k, dtype=q.dtype, device=q.device)
            q = _make_orthogonal(ember.cat([q, extra], -1))
        self.base = q
        rows, cols = q_init.shape[-2], q_init.shape[-1]
        minus_eye = -ember.eye(rows, cols, dtype=q.dtype, device=q.device)
        return minus_eye.expand(*q_init.shape).contiguous()  # forward gives the base itself


def _with_diagonal(a, diagonal):
    """``a`` with its (batched) main diagonal replaced by ``diagonal`` (min(m, n) values)."""
    m, n = a.shape[-2], a.shape[-1]
    eye = ember.eye(m, n, dtype=a.dtype, device=a.device)
    columns = ember.ops.constant_pad_nd(diagonal, (0, n - diagonal.shape[-1]), 0)
    return a * (1 - eye) + eye * columns.unsqueeze(-2)


def _cayley(a):
    linalg = getattr(ember, "linalg", None)
    if linalg is None or not hasattr(linalg, "solve"):
        raise NotImplementedError(
            "orthogonal(orthogonal_map='cayley') needs ember.linalg.solve, which this build "
            "lacks; use 'matrix_exp' or 'householder'"
        )
    identity = _eye_like(a.shape[-1], a)
    return linalg.solve(identity - a * 0.5, identity + a * 0.5)


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Keep ``module.<name>`` orthogonal (its columns or rows orthonormal): computed from the
    original by ``orthogonal_map`` ("matrix_exp", "cayley" or "householder"; the default is
    matrix_exp for square matrices, householder otherwise), relative to a base (the weight
    orthogonalised at registration) with ``use_trivialization``.

    Example:
        >>> layer = orthogonal(ember.nn.Linear(20, 40))
        >>> ember.dist(layer.weight.T @ layer.weight, ember.eye(20)) < 1e-5
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, ember.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions."
        )
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square else "householder"
    kind = getattr(_OrthMaps, orthogonal_map, None)
    if kind is None:
        raise ValueError(
            'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: '
            f"{orthogonal_map}"
        )
    parametrization = _Orthogonal(weight, kind, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, parametrization, unsafe=True)
    return module


def _norm_except_dim(v, dim: int):
    """The 2-norm of ``v`` over every dim but ``dim`` (kept, size 1 elsewhere); over all of v
    when ``dim`` is -1 (PyTorch's norm_except_dim)."""
    if dim == -1:
        return v.norm(2)
    dims = [d for d in range(v.ndim) if d != dim]
    return v.norm(2, dims, keepdim=True) if dims else v.abs()


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module, name: str = "weight", dim: int = 0):
    """Reparametrize ``module.<name>`` as magnitude times direction, ``g * v / ||v||``
    (norms over every dim but ``dim``); the originals are ``original0`` (g) and ``original1``
    (v), and checkpoints of the old ``weight_norm`` (``<name>_g``/``<name>_v``) still load."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def compat(state_dict, prefix, *args):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(compat)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but "
                f"got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            matrix = self._reshape_weight_to_matrix(weight)
            h, w = matrix.shape
            u = ember.empty(h, dtype=weight.dtype, device=weight.device).normal_(0, 1)
            v = ember.empty(w, dtype=weight.dtype, device=weight.device).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=eps))
            self._power_method(matrix, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, matrix, iterations: int) -> None:
        """Power iteration for the top singular vectors, in place in the _u/_v buffers."""
        with ember.no_grad():
            for _ in range(iterations):
                self._u.copy_(F.normalize(ember.mv(matrix, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(ember.mv(matrix.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        matrix = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(matrix, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = ember.dot(u, ember.mv(matrix, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its spectral norm (largest singular value), estimated by
    ``n_power_iterations`` of power iteration per training forward; ``dim`` is the output dim
    (1 for transposed convolutions, else 0)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, ember.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        transposed = (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
        dim = 1 if isinstance(module, transposed) else 0
    parametrization = _SpectralNorm(weight, n_power_iterations, dim, eps)
    parametrize.register_parametrization(module, name, parametrization)
    return module
