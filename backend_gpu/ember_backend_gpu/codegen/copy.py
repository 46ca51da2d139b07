"""Casts between every pair of dtypes (one module per destination), fill, arange and linspace.

Conversions follow the CPU backend's copy.c: floats go to integers through int64 (so -1.0 becomes
255 in uint8), to bool by comparing with zero; a same-dtype copy moves storage bits unchanged.
"""

from __future__ import annotations

from .dtypes import DTYPES
from .elementwise import ND
from .prelude import traits

CAST_BODY = r"""
template <class S, class D, bool VIA_INT64>
EM_DEV void em_cast_loop(char *out, const char *x, const em_nd &nd) {
    EM_FOR_EACH(i, nd.n) {
        em_i64 off[2];
        em_offsets<2>(nd, i, off);
        typename S::ct v = S::ld(*(const typename S::st *)(x + off[1]));
        *(typename D::st *)(out + off[0]) = em_convert<D, VIA_INT64>::sv(v);
    }
}
template <class T>
EM_DEV void em_same_loop(char *out, const char *x, const em_nd &nd) {
    EM_FOR_EACH(i, nd.n) {
        em_i64 off[2];
        em_offsets<2>(nd, i, off);
        *(typename T::st *)(out + off[0]) = *(const typename T::st *)(x + off[1]);
    }
}
"""

FILL_BODY = r"""
template <class T, bool FLOATING>
EM_DEV void em_fill_loop(char *out, const em_nd &nd, double f, em_i64 i) {
    typename T::st v = FLOATING ? T::sv(f) : T::sv(i);
    EM_FOR_EACH(k, nd.n) {
        em_i64 off[1];
        em_offsets<1>(nd, k, off);
        *(typename T::st *)(out + off[0]) = v;
    }
}
template <class T, bool FLOATING>
EM_DEV void em_arange_loop(char *out, em_i64 n, double start, double step, em_i64 istart,
                           em_i64 istep) {
    typename T::st *o = (typename T::st *)out;
    EM_FOR_EACH(k, n) {
        if (FLOATING)
            o[k] = T::sv(start + step * (double)k);
        else
            o[k] = T::sv((em_i64)((em_u64)istart + (em_u64)istep * (em_u64)k));
    }
}
/* PyTorch's linspace: the first half steps up from start, the second down from end. */
template <class T, bool FLOATING>
EM_DEV void em_linspace_loop(char *out, em_i64 n, double start, double end, double step,
                             em_i64 half) {
    typename T::st *o = (typename T::st *)out;
    EM_FOR_EACH(k, n) {
        double v = k < half ? start + step * (double)k : end - step * (double)(n - 1 - k);
        o[k] = FLOATING ? T::sv(v) : T::sv((em_i64)v);
    }
}
"""

CAST_ARGS = "PP" + ND
FILL_ARGS = "P" + ND + "dq"
ARANGE_ARGS = "Pqddqq"
LINSPACE_ARGS = "Pqdddq"


def cast_name(src: str, dst: str) -> str:
    return f"em_copy_{src}_{dst}"


def _cast_module(dst) -> tuple[str, list]:
    parts, kernels = [CAST_BODY], []
    for src in DTYPES:
        name = cast_name(src.token, dst.token)
        if src is dst:
            call = f"em_same_loop<{traits(dst.token)}>(out, x, nd)"
        else:
            via = "true" if src.floating and not dst.floating and dst.token != "b" else "false"
            call = f"em_cast_loop<{traits(src.token)}, {traits(dst.token)}, {via}>(out, x, nd)"
        parts.append(f"EM_KERNEL {name}(char *out, const char *x, em_nd nd) {{\n    {call};\n}}\n")
        kernels.append((name, CAST_ARGS))
    return "".join(parts), kernels


def _fill_module() -> tuple[str, list]:
    parts, kernels = [FILL_BODY], []
    for d in DTYPES:
        t, floating = traits(d.token), "true" if d.floating else "false"
        parts.append(
            f"EM_KERNEL em_fill_{d.token}(char *out, em_nd nd, double f, em_i64 i) {{\n"
            f"    em_fill_loop<{t}, {floating}>(out, nd, f, i);\n}}\n"
        )
        kernels.append((f"em_fill_{d.token}", FILL_ARGS))
        if d.token == "b":
            continue  # arange and linspace have no bool version
        parts.append(
            f"EM_KERNEL em_arange_{d.token}(char *out, em_i64 n, double start, double step, "
            f"em_i64 istart, em_i64 istep) {{\n"
            f"    em_arange_loop<{t}, {floating}>(out, n, start, step, istart, istep);\n}}\n"
            f"EM_KERNEL em_linspace_{d.token}(char *out, em_i64 n, double start, double end, "
            f"double step, em_i64 half) {{\n"
            f"    em_linspace_loop<{t}, {floating}>(out, n, start, end, step, half);\n}}\n"
        )
        kernels += [
            (f"em_arange_{d.token}", ARANGE_ARGS),
            (f"em_linspace_{d.token}", LINSPACE_ARGS),
        ]
    return "".join(parts), kernels


def modules() -> dict:
    found = {f"copy.{d.token}": (lambda d=d: _cast_module(d)) for d in DTYPES}
    found["fill"] = _fill_module
    return found
