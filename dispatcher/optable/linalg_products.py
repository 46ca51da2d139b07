"""The product-shaped ops of ember.linalg: cross, vecdot, multi_dot, matrix_power, tensorinv,
tensorsolve, vander, diagonal, tensordot and kron; composites of matmul, elementwise ops and the
solves.
"""

# ruff: noqa: N803, N806 - matrices keep their mathematical names (A, B), as in PyTorch
from __future__ import annotations

import math

import ember
from ember import _dtype as dt

from ..kinds._common import OPS, broadcast_shapes, missing_kernel, wrap_dim
from ..kinds.matrices import SCALAR_NAMES, check_tensor
from ..opdef import DTYPES_NUMERIC, Promotion
from . import linalg_reference as ref
from .linalg_rows import composite
from .linalg_solve import inv_checked

FLOATS = frozenset(dt.FLOATS)
NUMERIC = frozenset(DTYPES_NUMERIC) | frozenset(dt.COMPLEX_TYPES)


# float8 products run through matmul's float8 twins (optable/limited.py), as PyTorch's do
PRODUCTS = NUMERIC | frozenset(dt.FLOAT8)


def _check_numeric(kernel: str, allowed: frozenset, *tensors) -> None:
    """PyTorch's NotImplementedError for a dtype its kernel has no loop for (bool, uint16...)."""
    for t in tensors:
        if t.dtype not in allowed:
            raise missing_kernel(kernel, t.dtype)


def _cross(A, B, dim=-1):
    name = "linalg.cross"
    check_tensor(name, A, "input")
    check_tensor(name, B, "other")
    _check_numeric("cross", NUMERIC, A, B)
    if A.ndim != B.ndim:
        raise RuntimeError(f"{name}: inputs must have the same number of dimensions.")
    shape = broadcast_shapes(name, tuple(A.shape), tuple(B.shape))
    d = wrap_dim(dim, len(shape), name)
    if A.shape[d] != 3 or B.shape[d] != 3:
        raise RuntimeError(
            f"{name}: inputs dimension {dim} must have length 3. Got {A.shape[d]} and {B.shape[d]}"
        )
    a = [A.select(d, i) for i in range(3)]
    b = [B.select(d, i) for i in range(3)]
    parts = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    return ember.stack(parts, d)


def _cross_old(A, B, dim=None):
    if dim is None:
        import warnings

        warnings.warn(
            "Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass "
            "the dim explicitly or simply use torch.linalg.cross.\nThe default value of dim will "
            "change to agree with that of linalg.cross in a future release.",
            UserWarning,
            stacklevel=3,
        )
        shape = broadcast_shapes("cross", tuple(A.shape), tuple(B.shape))
        sizes = [i for i, n in enumerate(shape) if n == 3]
        if not sizes:
            raise RuntimeError(f"no dimension of size 3 in input (shape {list(shape)})")
        dim = sizes[0]
    return _cross(A, B, dim)


def _vecdot(x, y, dim=-1):
    name = "linalg.vecdot"
    check_tensor(name, x, "x")
    check_tensor(name, y, "y")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(
            f"{name}: Expected a floating point or complex tensor as input. Got "
            f"{SCALAR_NAMES[x.dtype.name]}"
        )
    if x.dtype is not y.dtype:
        raise RuntimeError(
            f"{name}: Expected x and y to have the same dtype, but found x of type "
            f"{SCALAR_NAMES[x.dtype.name]} and y of type {SCALAR_NAMES[y.dtype.name]} instead."
        )
    return ((x.conj() if x.dtype.is_complex else x) * y).sum(dim)  # conj(x) . y, as PyTorch


# ---- multi_dot: the cheapest order of a chain of products ----------------------------------------


def _check_chain(tensors) -> None:
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        check_tensor("multi_dot()", t, f"tensors[{i}]")
        end = i in (0, n - 1)
        if not (t.ndim == 2 or (end and t.ndim == 1)):
            where = "the first tensor" if i == 0 else "the last tensor" if i == n - 1 else None
            if where:
                raise RuntimeError(f"multi_dot(): {where} must be 1D or 2D but got {t.ndim}D")
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
        _check_numeric("addmm_impl_cpu_", PRODUCTS, t)
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError(
                f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                f"{tensors[0].dtype.name} and tensor {i} {t.dtype.name}"
            )


def _chain_order(dims: list[int]):
    """The matrix-chain dynamic programme: split[i][j] is where the best product of matrices
    i..j splits (matrix k is dims[k] x dims[k + 1])."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _multi_dot(tensors):
    tensors = list(tensors)
    _check_chain(tensors)
    first_vector, last_vector = tensors[0].ndim == 1, tensors[-1].ndim == 1
    mats = list(tensors)
    if first_vector:
        mats[0] = mats[0].unsqueeze(0)
    if last_vector:
        mats[-1] = mats[-1].unsqueeze(1)
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} and "
                f"{list(tensors[i + 1].shape)} cannot be multiplied"
            )
    split = _chain_order([m.shape[0] for m in mats] + [mats[-1].shape[1]])

    def product(i, j):
        if i == j:
            return mats[i]
        k = split[i][j]
        return ember.mm(product(i, k), product(k + 1, j))

    result = product(0, len(mats) - 1)
    if first_vector:
        result = result.squeeze(0)
    if last_vector:
        result = result.squeeze(-1)
    return result


# ---- powers, tensor inverses, Vandermonde --------------------------------------------------------


def _matrix_power(A, n):
    name = "linalg.matrix_power"
    check_tensor(name, A)
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    _check_numeric("addmm_impl_cpu_", PRODUCTS, A)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by "
            f"{A.shape[-1]} matrices"
        )
    if n == 0:
        # A copy of A overwritten, so that the result is in A's graph (a zero gradient), as in
        # PyTorch.
        eye = ember.eye(A.shape[-1], dtype=A.dtype, device=A.device)
        return A.clone().copy_(eye.expand(*A.shape))
    if n < 0:
        A = OPS["linalg_inv"](A)
        n = -n
    result, square = None, A
    while n:  # binary powering: log2(n) squarings
        if n & 1:
            result = square if result is None else result @ square
        n >>= 1
        if n:
            square = square @ square
    return result


def _tensorinv(A, ind=2):
    check_tensor("linalg.tensorinv", A)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = A.shape[:ind], A.shape[ind:]
    p, q = math.prod(rows), math.prod(cols)
    if p != q:
        raise RuntimeError(
            "Expected self to satisfy the requirement prod(self.shape[ind:]) == "
            f"prod(self.shape[:ind]), but got {q} != {p}"
        )
    return inv_checked(A.reshape(p, q), "inv").inverse.reshape(*cols, *rows)


def _tensorsolve(A, B, dims=None):
    check_tensor("linalg.tensorsolve", A)
    check_tensor("linalg.tensorsolve", B, "other")
    if dims is not None:
        moved = [wrap_dim(d, A.ndim, "linalg.tensorsolve") for d in dims]
        A = A.movedim(moved, list(range(A.ndim - len(moved), A.ndim)))
    result_shape = A.shape[B.ndim :]
    rows, cols = math.prod(B.shape), math.prod(result_shape)
    if math.prod(A.shape[: B.ndim]) != rows or rows != cols:
        raise RuntimeError(
            "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
            f"prod(self.shape[:other.ndim]), but got {cols} != {math.prod(A.shape[: B.ndim])}"
        )
    solution = OPS["linalg_solve"](A.reshape(rows, cols), B.reshape(rows), True)
    return solution.reshape(result_shape)


def _check_vander(x, N=None):
    if x.dtype is dt.bool_:
        raise RuntimeError(
            "linalg.vander supports floating point, complex, and integer tensors, but got Bool"
        )


def _vander(x, N=None):
    check_tensor("linalg.vander", x, "x")
    _check_vander(x)
    x = x.unsqueeze(-1) if x.ndim == 0 else x  # a 0-d x is one point, as in PyTorch
    N = x.shape[-1] if N is None else N
    if N <= 1:
        raise RuntimeError("N must be greater than 1.")
    # cumprod accumulates integers in int64, so int8/16/32 inputs give int64 (as PyTorch's).
    powers = x.unsqueeze(-1).expand(*x.shape, N - 1).cumprod(-1)
    return ember.cat([powers.new_ones(*x.shape, 1), powers], -1)


def _diagonal(A, offset=0, dim1=-2, dim2=-1):
    return A.diagonal(offset, dim1, dim2)


def _tensordot(a, b, dims_self, dims_other):
    """PyTorch's (ATen's tensordot): contracted dims of size 1 against another size summed
    first, then the permuted operands folded to one mm, or to one dot when neither keeps more
    than one element (its graph: DotBackward0)."""
    if len(dims_self) != len(dims_other):
        raise RuntimeError("both dimension lists should have same length")
    if a.dtype is not b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    name = "tensordot"
    da = [wrap_dim(d, a.ndim, name) for d in dims_self]
    db = [wrap_dim(d, b.ndim, name) for d in dims_other]
    for i, j in zip(da, db):
        # a size 1 against another size is summed right away, in the dtype, as PyTorch does
        if b.shape[j] == 1:
            a = a.sum(i, keepdim=True, dtype=a.dtype)
        elif a.shape[i] == 1:
            b = b.sum(j, keepdim=True, dtype=b.dtype)
        elif a.shape[i] != b.shape[j]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {a.shape[i]} in dim {i} "
                f"and second has size {b.shape[j]} in dim {j}"
            )
    keep_a = [d for d in range(a.ndim) if d not in da]
    keep_b = [d for d in range(b.ndim) if d not in db]
    size_a = math.prod(a.shape[d] for d in keep_a)
    size_b = math.prod(b.shape[d] for d in keep_b)
    left, right = a.permute(keep_a + da), b.permute(db + keep_b)
    if size_a == 1 and size_b == 1:
        out = ember.dot(left.flatten(), right.flatten())
    else:
        k = math.prod(a.shape[d] for d in da)
        left, right = left.reshape(size_a, k), right.reshape(k, size_b)
        if left.numel() and right.numel():  # PyTorch's mm returns an empty product first
            _check_numeric("addmm_impl_cpu_", PRODUCTS, left, right)
        out = ember.mm(left, right)
    return out.reshape(*[a.shape[d] for d in keep_a], *[b.shape[d] for d in keep_b])


def _kron(a, b):
    """Each element of a scales a copy of b: a's dims interleaved with b's, then merged."""
    name = "kron"
    check_tensor(name, a, "input")
    check_tensor(name, b, "other")
    ndim = max(a.ndim, b.ndim)
    sa = (1,) * (ndim - a.ndim) + tuple(a.shape)
    sb = (1,) * (ndim - b.ndim) + tuple(b.shape)
    left = a.reshape([n for size in sa for n in (size, 1)])
    right = b.reshape([n for size in sb for n in (1, size)])
    return (left * right).reshape([x * y for x, y in zip(sa, sb)])


ROWS = [
    composite("linalg_cross(Tensor input, Tensor other, *, int dim=-1) -> Tensor", _cross,
              ref.cross, "cross", dtypes=NUMERIC),
    composite("cross(Tensor input, Tensor other, int? dim=None) -> Tensor", _cross_old,
              ref.cross_old, "cross", old=True, dtypes=NUMERIC, display="linalg.cross"),
    composite("linalg_vecdot(Tensor x, Tensor y, *, int dim=-1) -> Tensor", _vecdot,
              ref.vecdot, "vecdot", dtypes=FLOATS),
    composite("linalg_multi_dot(Tensor[] tensors) -> Tensor", _multi_dot, ref.multi_dot,
              "multi_dot", dtypes=NUMERIC, display="multi_dot"),
    composite("linalg_matrix_power(Tensor input, int n) -> Tensor", _matrix_power,
              ref.matrix_power, "matrix_power", dtypes=NUMERIC),
    composite("matrix_power(Tensor input, int n) -> Tensor", _matrix_power, ref.matrix_power,
              "matrix_power", old=True, dtypes=NUMERIC, display="linalg.matrix_power"),
    composite("linalg_tensorinv(Tensor input, int ind=2) -> Tensor", _tensorinv, ref.tensorinv,
              "tensorinv", display="linalg.inv"),
    composite("linalg_tensorsolve(Tensor input, Tensor other, int[]? dims=None) -> Tensor",
              _tensorsolve, ref.tensorsolve, "tensorsolve", display="linalg.solve"),
    composite("linalg_vander(Tensor x, *, int? N=None) -> Tensor", _vander, ref.vander,
              "vander", dtypes=NUMERIC | FLOATS, promotion=Promotion.BOOL_TO_LONG,
              check=_check_vander),
    composite("linalg_diagonal(Tensor A, *, int offset=0, int dim1=-2, int dim2=-1) -> Tensor",
              _diagonal, ref.diagonal, "diagonal", dtypes=dt.ALL),
    composite("tensordot(Tensor input, Tensor other, int[] dims_self, int[] dims_other) "
              "-> Tensor", _tensordot, ref.tensordot, "tensordot", display="tensordot",
              dtypes=NUMERIC),
    composite("kron(Tensor input, Tensor other) -> Tensor", _kron, ref.kron, "kron", old=True,
              dtypes=dt.ALL, display="kron"),
]  # fmt: skip
