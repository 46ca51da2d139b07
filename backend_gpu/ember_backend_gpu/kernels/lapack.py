"""Glue for ember.linalg's solver primitives on the GPU: cuSOLVER (and cuBLAS's trsm) through the
runtime's ``make_solver()``. The kernel convention is the CPU backend's (see its
kernels/lapack.py): batches of column-major matrices as ``[B, cols, rows]`` tensors, outputs
first; svd and eigh return LAPACK's info per matrix as host integers.

lstsq and the LDL routines have no kernel here (cuSOLVER lacks gelsy/gelsd and a stable sytrs),
so they run through the declared CPU fallback, as everything does where the runtime has no solver
(ROCm today) or the library does not load.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ._args import TOKENS, addr, device, math_library, run_strided

SOLVER_DTYPES = ("float32", "float64")
OP_N, OP_T, OP_C = 0, 1, 2


@contextlib.contextmanager
def _temporary(rt, dev: int, nbytes: int):
    """Device memory for the duration of a call (freed once the device is done with it)."""
    handle = rt.alloc(max(nbytes, 4), dev)
    try:
        yield rt.address(handle)
    finally:
        rt.synchronize(dev)
        rt.free(handle, dev)


def _bs(t) -> int:
    return t._stride[0] if t._shape[0] > 1 else 0


def _host_info(rt, dev: int, address: int, batch: int) -> np.ndarray:
    host = np.zeros(max(batch, 1), np.int32)
    rt.read(dev, host, address)
    return host[:batch]


def build(rt) -> dict:
    solver = math_library(rt, "make_solver", "ember.linalg's factorizations")
    if solver is None:
        return {}

    # cuSOLVER refuses empty problems (a launch of no blocks fails) where LAPACK returns at once:
    # each kernel returns before calling it when there is nothing to compute, with info 0.
    def lu_factor(lu, pivots, info):
        batch, n, m = lu._shape
        if not batch * m * n:
            _clear(info)
            return
        solver.getrf(device(lu), lu._dtype.name, batch, m, n, addr(lu), addr(pivots), addr(info))

    def lu_solve(x, lu, pivots, trans):
        batch, nrhs, n = x._shape
        dev = device(x)
        if not batch * n * nrhs:
            return
        with _temporary(rt, dev, 4 * batch) as info:
            solver.getrs(dev, x._dtype.name, batch, n, nrhs, (OP_N, OP_T, OP_C)[trans], addr(lu),
                         _bs(lu), addr(pivots), _bs(pivots), addr(x), info)  # fmt: skip

    def _clear(info):
        if info._shape[0]:
            rt.memset(device(info), addr(info), 4 * info._shape[0])

    def cholesky(factor, info, upper):
        batch, n, _ = factor._shape
        dev = device(factor)
        if not batch * n:
            _clear(info)
            return
        solver.potrf(dev, factor._dtype.name, batch, n, upper, addr(factor), addr(info))
        if batch * n:  # potrf leaves the other triangle as it was
            kernel = f"em_clear_triangle_{TOKENS[factor._dtype.code]}"
            rt.launch_1d(dev, kernel, batch * n * n, addr(factor), batch, n, int(upper))

    def solve_triangular(x, a, upper, left, unitriangular):
        batch, ncols, nrows = x._shape
        row_major = a._shape[-1] > 1 and a._stride[-1] != 1  # read as the transpose
        solver.trsm(device(x), x._dtype.name, batch, nrows, ncols, left, upper != row_major,
                    row_major, unitriangular, addr(a), _bs(a), addr(x))  # fmt: skip

    def geqrf(a, tau):
        batch, n, m = a._shape
        dev = device(a)
        if not batch * min(m, n):
            return
        with _temporary(rt, dev, 4 * batch) as info:
            solver.geqrf(dev, a._dtype.name, batch, m, n, addr(a), addr(tau), info)

    def householder_product(q, tau):
        batch, n, m = q._shape
        dev = device(q)
        if not batch * m * n:
            return
        if not tau._shape[-1]:  # no reflectors: Q is the identity's first n columns
            eye = np.eye(n, m, dtype=q._dtype.np)  # column-major m x n: n rows of m
            host = np.ascontiguousarray(np.broadcast_to(eye, (batch, n, m))).view(np.uint8)
            handle = q._storage.handle
            rt.copy_in(handle, addr(q) - rt.address(handle), host.ravel(), dev)
            return
        with _temporary(rt, dev, 4 * batch) as info:
            solver.orgqr(dev, q._dtype.name, batch, m, n, tau._shape[-1], addr(q), addr(tau),
                         _bs(tau), info)  # fmt: skip

    def svd(u, s, vh, a, job):
        batch, n, m = a._shape
        dev, dtype, item = device(a), a._dtype.name, a._dtype.itemsize
        k = min(m, n)
        vcols = n if job == "A" else k
        with (
            _temporary(rt, dev, 4 * batch) as info,
            _temporary(rt, dev, batch * n * vcols * item) as v,
        ):
            vectors = job != "N"
            solver.gesvdj(dev, dtype, batch, m, n, job != "A", vectors, addr(a), addr(s),
                          addr(u) if vectors else v, v, info)  # fmt: skip
            if vectors:  # V (n x vcols) -> Vh (vcols x n), both column-major
                token = TOKENS[a._dtype.code]
                shape = (batch, n, vcols)
                dst = (addr(vh), tuple(x * item for x in (n * vcols, vcols, 1)), 0)
                src = (v, tuple(x * item for x in (n * vcols, 1, n)), 0)
                run_strided(rt, dev, f"em_copy_{token}_{token}", shape, [dst, src])
            return _host_info(rt, dev, info, batch)

    def eigh(w, v, upper, vectors):
        batch, n, _ = v._shape
        dev = device(v)
        with _temporary(rt, dev, 4 * batch) as info:
            solver.syevd(dev, v._dtype.name, batch, n, upper, vectors, addr(v), addr(w), info)
            return _host_info(rt, dev, info, batch)

    kernels = {
        "linalg_lu_factor_ex": lu_factor,
        "linalg_lu_solve": lu_solve,
        "linalg_cholesky_ex": cholesky,
        "linalg_solve_triangular": solve_triangular,
        "geqrf": geqrf,
        "linalg_householder_product": householder_product,
        "_linalg_svd": svd,
        "_linalg_eigh": eigh,
    }
    return {name: dict.fromkeys(SOLVER_DTYPES, fn) for name, fn in kernels.items()}
