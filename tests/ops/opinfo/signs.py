"""Singular vectors and eigenvectors compared up to sign: each is unique only up to sign, and
other algorithms choose differently (cuSOLVER's Jacobi SVD against LAPACK's gesdd; PyTorch's MKL
and ember's OpenBLAS agree on syevd's lower-triangle path but not on its upper one,
``UPLO='U'``). Values and every other entry are still compared as they are.
"""

from __future__ import annotations

import torch

# Records returning (eigenvalues, eigenvectors as columns).
EIGENVECTOR_RECORDS = frozenset({"linalg.eigh"})


def _phase(mine, theirs):
    """Per column, the unit factor (a sign; a phase for complex vectors, unique only up to one)
    that turns ``mine`` towards ``theirs``: sgn of their inner product."""
    return torch.sgn((mine.conj() * theirs).sum(-2, keepdim=True))


def align_eigenvectors(actual, expected):
    """``actual`` (torch tensors L, V) with each column of V flipped to the sign of PyTorch's."""
    values, vectors = (t.detach().clone() for t in actual)
    theirs = expected[1].detach()
    if vectors.numel() and vectors.shape == theirs.shape:
        sign = _phase(vectors, theirs)
        sign[sign == 0] = 1
        vectors *= sign
    return (values, vectors)


# Records whose singular vectors are unique only up to sign (and, past min(m, n) columns, up to a
# basis of the null space): another algorithm (cuSOLVER's Jacobi SVD) picks other signs than
# LAPACK's gesdd. The value is where V sits: "V" as columns (svd), "Vh" as rows (linalg.svd).
SIGN_FREE = {"svd": "V", "linalg.svd": "Vh"}


def align_singular_vectors(actual, expected, layout: str):
    """``actual`` (U, S, V or Vh, as torch) with each singular pair's sign flipped to PyTorch's,
    and its columns past min(m, n) replaced by PyTorch's once checked to be an orthonormal
    completion; values that differ otherwise still differ."""
    u, s, v = (t.detach().clone() for t in actual)
    eu, ev = expected[0].detach(), expected[2].detach()
    if layout == "Vh":
        v, ev = v.mH, ev.mH
    k = s.shape[-1]
    if u.numel() and k:
        sign = _phase(u[..., :, :k], eu[..., :, :k])
        sign[sign == 0] = 1
        u[..., :, :k] *= sign
        v[..., :, :k] *= sign
        for mine, theirs in ((u, eu), (v, ev)):
            extra = mine[..., :, k:]
            if extra.shape[-1]:
                gram = mine.mH @ mine
                eye = torch.eye(gram.shape[-1], dtype=gram.dtype).expand_as(gram)
                if torch.allclose(gram, eye, atol=1e-3 if mine.dtype == torch.float32 else 1e-9):
                    mine[..., :, k:] = theirs[..., :, k:]
    return (u, s, v.mH if layout == "Vh" else v)
