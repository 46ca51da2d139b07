"""Indexing kernels: gather (also index_select), scatter/scatter_add (also index_add), take,
put_, and the pieces of nonzero. One module, ``index``, every dtype.

All of them walk an iteration space (``em_ix.shape``) and read an int64 index per position.
index_select and index_add are gather and scatter_add whose index has stride 0 on every dim but
the indexed one, so one kernel serves both. An out-of-range index sets the status word to
EM_INDEX_OUT_OF_RANGE and is skipped: nothing out of bounds is ever touched.
"""

from __future__ import annotations

from .dtypes import DTYPES
from .elementwise import ND
from .prelude import traits

IX = "16q16q16q16q16q" + "qq" + "iiii"  # struct em_ix
GATHER_ARGS = "PPPP" + IX
SCATTER_ARGS = "PPPP" + IX + "dqi"  # ... alpha_f, alpha_i, add (then padding)
TAKE_ARGS = "PPPP" + IX
PUT_ARGS = "PPPP" + IX + "i"
CHECK_ARGS = "PP" + IX
FLAGS_ARGS = "PP" + ND
WRITE_ARGS = "PP" + ND

COMMON = r"""
struct em_ix {
    em_i64 shape[EM_MAXD]; /* the iteration space */
    em_i64 a[EM_MAXD];     /* bytes: the indexed tensor (x of gather/take, out of scatter/put) */
    em_i64 i[EM_MAXD];     /* bytes: the index */
    em_i64 s[EM_MAXD];     /* bytes: the other tensor (out of gather/take, src of scatter/put) */
    em_i64 xshape[EM_MAXD]; /* take/put: the indexed tensor's shape (flat positions) */
    em_i64 n, size;        /* positions; size of the indexed dim (numel for take/put) */
    em_i32 ndim, dim, xndim, pad;
};

/* Offsets of position p: a (all dims but `dim`), index, other. */
EM_DEV void em_ix_offsets(const em_ix &x, em_i64 p, em_i64 &a, em_i64 &i, em_i64 &s) {
    a = i = s = 0;
    for (int d = x.ndim - 1; d >= 0; d--) {
        em_i64 sz = x.shape[d], c = p % sz;
        p /= sz;
        if (d != x.dim) a += c * x.a[d];
        i += c * x.i[d];
        s += c * x.s[d];
    }
}

/* The byte offset of flat position f (row-major over xshape) in the indexed tensor. */
EM_DEV em_i64 em_flat_offset(const em_ix &x, em_i64 f) {
    em_i64 off = 0;
    for (int d = x.xndim - 1; d >= 0; d--) {
        em_i64 sz = x.xshape[d], c = f % sz;
        f /= sz;
        off += c * x.a[d];
    }
    return off;
}

template <class T>
EM_DEV void em_gather(char *out, const char *x, const char *index, int *st, const em_ix &g) {
    typedef typename T::st sty;
    EM_FOR_EACH(p, g.n) {
        em_i64 a, i, s;
        em_ix_offsets(g, p, a, i, s);
        em_i64 k = *(const em_i64 *)(index + i);
        if (k < 0 || k >= g.size) {
            *st = EM_INDEX_OUT_OF_RANGE;
            continue;
        }
        *(sty *)(out + s) = *(const sty *)(x + a + k * g.a[g.dim]);
    }
}

/* out[p with p[dim] = index[p]] = src[p], or += alpha * src[p] (atomically) when add. */
template <class T>
EM_DEV void em_scatter(char *out, const char *src, const char *index, int *st, const em_ix &g,
                       double alpha_f, em_i64 alpha_i, int add) {
    typedef typename T::st sty;
    typedef typename T::ct ct;
    const bool floating = (ct)0.5 != (ct)0;
    const ct alpha = floating ? (ct)alpha_f : (ct)alpha_i;
    EM_FOR_EACH(p, g.n) {
        em_i64 a, i, s;
        em_ix_offsets(g, p, a, i, s);
        em_i64 k = *(const em_i64 *)(index + i);
        if (k < 0 || k >= g.size) {
            *st = EM_INDEX_OUT_OF_RANGE;
            continue;
        }
        sty *target = (sty *)(out + a + k * g.a[g.dim]);
        if (add) {
            ct v = T::ld(*(const sty *)(src + s));
            em_atomic_add<T>(target, alpha == 1 ? v : (ct)(alpha * v));
        } else {
            *target = *(const sty *)(src + s);
        }
    }
}

/* Flat indices (negative ones wrap) into a tensor of g.size elements. */
EM_DEV bool em_flat_index(const em_ix &g, const char *index, em_i64 i, em_i64 &k) {
    k = *(const em_i64 *)(index + i);
    if (k < 0) k += g.size;
    return k >= 0 && k < g.size;
}

template <class T>
EM_DEV void em_take(char *out, const char *x, const char *index, int *st, const em_ix &g) {
    typedef typename T::st sty;
    EM_FOR_EACH(p, g.n) {
        em_i64 a, i, s, k;
        em_ix_offsets(g, p, a, i, s);
        if (!em_flat_index(g, index, i, k)) {
            *st = EM_INDEX_OUT_OF_RANGE;
            continue;
        }
        *(sty *)(out + s) = *(const sty *)(x + em_flat_offset(g, k));
    }
}

template <class T>
EM_DEV void em_put(char *x, const char *src, const char *index, int *st, const em_ix &g,
                   int accumulate) {
    typedef typename T::st sty;
    EM_FOR_EACH(p, g.n) {
        em_i64 a, i, s, k;
        em_ix_offsets(g, p, a, i, s);
        if (!em_flat_index(g, index, i, k)) {
            *st = EM_INDEX_OUT_OF_RANGE;
            continue;
        }
        sty *target = (sty *)(x + em_flat_offset(g, k));
        if (accumulate)
            em_atomic_add<T>(target, T::ld(*(const sty *)(src + s)));
        else
            *target = *(const sty *)(src + s);
    }
}

/* put_ writes nothing when an index is bad (the CPU's rule): the host checks first. */
EM_KERNEL em_check_flat(const char *index, int *st, em_ix g) {
    EM_FOR_EACH(p, g.n) {
        em_i64 a, i, s, k;
        em_ix_offsets(g, p, a, i, s);
        if (!em_flat_index(g, index, i, k)) *st = EM_INDEX_OUT_OF_RANGE;
    }
}

/* nonzero: flags (x != 0) in row-major order, an inclusive scan of them (scan.cumsum), then
 * each non-zero element writes its coordinates at row (scan - 1). */
template <class T>
EM_DEV void em_nz_flags(em_i64 *flags, const char *x, const em_nd &nd) {
    EM_FOR_EACH(p, nd.n) {
        em_i64 off[2];
        em_offsets<2>(nd, p, off);
        flags[p] = T::ld(*(const typename T::st *)(x + off[1])) != 0;
    }
}
EM_KERNEL em_nz_write(em_i64 *out, const em_i64 *incl, em_nd nd) {
    EM_FOR_EACH(p, nd.n) {
        em_i64 before = p ? incl[p - 1] : 0;
        if (incl[p] == before) continue;
        em_i64 *row = out + before * nd.ndim, q = p;
        for (int d = nd.ndim - 1; d >= 0; d--) {
            row[d] = q % nd.shape[d];
            q /= nd.shape[d];
        }
    }
}
"""


def name(kind: str, token: str) -> str:
    return f"em_{kind}_{token}"


def _module() -> tuple[str, list]:
    parts, kernels = [COMMON], [("em_check_flat", CHECK_ARGS), ("em_nz_write", WRITE_ARGS)]
    for d in DTYPES:
        t, k = traits(d.token), d.token
        parts.append(
            f"EM_KERNEL em_gather_{k}(char *out, const char *x, const char *index, int *st, "
            f"em_ix g) {{\n    em_gather<{t}>(out, x, index, st, g);\n}}\n"
            f"EM_KERNEL em_scatter_{k}(char *out, const char *src, const char *index, int *st, "
            f"em_ix g, double alpha_f, em_i64 alpha_i, int add) {{\n"
            f"    em_scatter<{t}>(out, src, index, st, g, alpha_f, alpha_i, add);\n}}\n"
            f"EM_KERNEL em_take_{k}(char *out, const char *x, const char *index, int *st, "
            f"em_ix g) {{\n    em_take<{t}>(out, x, index, st, g);\n}}\n"
            f"EM_KERNEL em_put_{k}(char *x, const char *src, const char *index, int *st, "
            f"em_ix g, int accumulate) {{\n    em_put<{t}>(x, src, index, st, g, accumulate);\n}}\n"
            f"EM_KERNEL em_nz_flags_{k}(em_i64 *flags, const char *x, em_nd nd) {{\n"
            f"    em_nz_flags<{t}>(flags, x, nd);\n}}\n"
        )
        kernels += [
            (name("gather", k), GATHER_ARGS),
            (name("scatter", k), SCATTER_ARGS),
            (name("take", k), TAKE_ARGS),
            (name("put", k), PUT_ARGS),
            (name("nz_flags", k), FLAGS_ARGS),
        ]
    return "".join(parts), kernels


def modules() -> dict:
    return {"index": _module}
