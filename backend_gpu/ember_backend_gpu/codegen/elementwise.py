"""Elementwise ops: ONE description per op, from which every kernel and the glue's table come.

Each op lists its loops as ``(dtype family, output, C++ expression)``, transcribed from the CPU
backend's reference expressions (backend_cpu/.../csrc/unary.def, binary.def, ternary.def). The
expression reads ``x`` (unary) or ``a, b`` (binary) or ``a, b, c`` (ternary) of compute type
``ct``, the float parameters ``p0 p1 p2`` (doubles; binary and ternary loops get ``p0``), and
may set the status word through ``st`` (integer division by zero, negative integer powers).
``output`` is ``"SAME"`` (the operand dtype) or ``"BOOL"``.

One kernel module per op (``ew.<op>``), so first use compiles only what is used.
"""

from __future__ import annotations

from dataclasses import dataclass

from .dtypes import BY_TOKEN, family
from .prelude import traits

ND = "16q64q4Qqii"  # struct em_nd, field by field (see prelude.COMMON)


@dataclass(frozen=True)
class Loop:
    family: str
    output: str  # "SAME" or "BOOL"
    expr: str
    checked: bool = False  # the glue reads the status word after the launch


@dataclass(frozen=True)
class Ew:
    name: str
    arity: int
    loops: tuple[Loop, ...]

    def dtypes(self) -> dict[str, Loop]:
        """dtype token -> the loop that handles it."""
        found = {}
        for loop in self.loops:
            for d in family(loop.family):
                if d.token in found:
                    raise ValueError(f"{self.name}: two loops for {d.token}")
                found[d.token] = loop
        return found


def _u(name, *loops):
    return Ew(name, 1, tuple(Loop(*loop) for loop in loops))


def _b(name, *loops):
    return Ew(name, 2, tuple(Loop(*loop) for loop in loops))


def _t(name, *loops):
    return Ew(name, 3, tuple(Loop(*loop) for loop in loops))


S, B = "SAME", "BOOL"
GELU = (
    "p0 == 0 ? (ct)0.5 * x * (1 + erf(x * (ct)0.70710678118654752440))"
    " : (ct)0.5 * x * (1 + tanh((ct)0.79788456080286535588 * (x + (ct)0.044715 * x * x * x)))"
)
NAN_TO_NUM = "x != x ? (ct)p0 : (isinf(x) ? (x > 0 ? (ct)p1 : (ct)p2) : x)"
SOFTPLUS = "x * (ct)p0 > (ct)p1 ? x : log1p(exp(x * (ct)p0)) / (ct)p0"
SELU = "(ct)1.0507009873554804934 * (x > 0 ? x : (ct)1.6732632423543772848 * expm1(x))"

UNARY = (
    _u("neg", ("NUM", S, "-x")),
    _u("abs", ("FLOAT", S, "fabs(x)"), ("INT", S, "x < 0 ? -x : x")),
    _u("sign", ("NUM", S, "(x > 0) - (x < 0)"), ("b", S, "x")),
    _u("relu", ("NUM", S, "(x > 0 || x != x) ? x : 0")),
    _u("floor", ("FLOAT", S, "floor(x)"), ("INT", S, "x")),
    _u("ceil", ("FLOAT", S, "ceil(x)"), ("INT", S, "x")),
    _u("round", ("FLOAT", S, "nearbyint(x)"), ("INT", S, "x")),
    _u("trunc", ("FLOAT", S, "trunc(x)"), ("INT", S, "x")),
    _u("frac", ("FLOAT", S, "x - trunc(x)")),
    _u("exp", ("FLOAT", S, "exp(x)")),
    _u("exp2", ("FLOAT", S, "exp2(x)")),
    _u("expm1", ("FLOAT", S, "expm1(x)")),
    _u("log", ("FLOAT", S, "log(x)")),
    _u("log2", ("FLOAT", S, "log2(x)")),
    _u("log10", ("FLOAT", S, "log10(x)")),
    _u("log1p", ("FLOAT", S, "log1p(x)")),
    _u("sqrt", ("FLOAT", S, "sqrt(x)")),
    _u("rsqrt", ("FLOAT", S, "1 / sqrt(x)")),
    _u("sin", ("FLOAT", S, "sin(x)")),
    _u("cos", ("FLOAT", S, "cos(x)")),
    _u("tan", ("FLOAT", S, "tan(x)")),
    _u("asin", ("FLOAT", S, "asin(x)")),
    _u("acos", ("FLOAT", S, "acos(x)")),
    _u("atan", ("FLOAT", S, "atan(x)")),
    _u("sinh", ("FLOAT", S, "sinh(x)")),
    _u("cosh", ("FLOAT", S, "cosh(x)")),
    _u("tanh", ("FLOAT", S, "tanh(x)")),
    _u("asinh", ("FLOAT", S, "asinh(x)")),
    _u("acosh", ("FLOAT", S, "acosh(x)")),
    _u("atanh", ("FLOAT", S, "atanh(x)")),
    _u("sigmoid", ("FLOAT", S, "1 / (1 + exp(-x))")),
    _u("erf", ("FLOAT", S, "erf(x)")),
    _u("erfc", ("FLOAT", S, "erfc(x)")),
    _u("reciprocal", ("FLOAT", S, "1 / x")),
    _u("gelu", ("FLOAT", S, GELU)),
    _u("silu", ("FLOAT", S, "x / (1 + exp(-x))")),
    _u("logical_not", ("ALL", B, "!x")),
    _u("bitwise_not", ("INT", S, "~x"), ("b", S, "!x")),
    _u("isnan", ("FLOAT", B, "x != x"), ("INTB", B, "0")),
    _u("isinf", ("FLOAT", B, "isinf(x)"), ("INTB", B, "0")),
    _u("isfinite", ("FLOAT", B, "isfinite(x)"), ("INTB", B, "1")),
    _u("nan_to_num", ("FLOAT", S, NAN_TO_NUM), ("INTB", S, "x")),
    _u("square", ("NUM", S, "x * x")),
    _u("elu", ("FLOAT", S, "x > 0 ? x : (ct)p0 * expm1(x)")),
    _u("leaky_relu", ("FLOAT", S, "x > 0 ? x : x * (ct)p0")),
    _u("softplus", ("FLOAT", S, SOFTPLUS)),
    _u("mish", ("FLOAT", S, "x * tanh(x > 20 ? x : log1p(exp(x)))")),
    _u("hardswish", ("FLOAT", S, "x <= -3 ? 0 : (x >= 3 ? x : x * (x + 3) / 6)")),
    _u("hardsigmoid", ("FLOAT", S, "x <= -3 ? 0 : (x >= 3 ? 1 : x / 6 + (ct)0.5)")),
    _u("hardtanh", ("NUM", S, "x < (ct)p0 ? (ct)p0 : (x > (ct)p1 ? (ct)p1 : x)")),
    _u("logsigmoid", ("FLOAT", S, "x < 0 ? x - log1p(exp(x)) : -log1p(exp(-x))")),
    _u("selu", ("FLOAT", S, SELU)),
    _u("celu", ("FLOAT", S, "x > 0 ? x : (ct)p0 * expm1(x / (ct)p0)")),
    _u("softsign", ("FLOAT", S, "x / (1 + fabs(x))")),
    _u("relu6", ("NUM", S, "x <= 0 ? (x != x ? x : 0) : (x > 6 ? 6 : x)")),
)

MINIMUM = "a != a ? a : (b != b ? b : (a < b ? a : b))"
MAXIMUM = "a != a ? a : (b != b ? b : (a > b ? a : b))"
BINARY = (
    _b("add", ("ALL", S, "a + b")),
    _b("sub", ("NUM", S, "a - b")),
    _b("mul", ("NUM", S, "a * b"), ("b", S, "a && b")),
    _b("div", ("FLOAT", S, "a / b")),
    _b("div_trunc", ("FLOAT", S, "trunc(a / b)"), ("INT", S, "em_div_trunc_i(a, b, st)", True)),
    _b(
        "floor_divide",
        ("FLOAT", S, "em_floordiv_f(a, b)"),
        ("INT", S, "em_div_floor_i(a, b, st)", True),
    ),
    _b(
        "remainder",
        ("FLOAT", S, "em_remainder_f(a, b)"),
        ("INT", S, "em_remainder_i(a, b, st)", True),
    ),
    _b("fmod", ("FLOAT", S, "fmod(a, b)"), ("INT", S, "em_fmod_i(a, b, st)", True)),
    _b("pow", ("FLOAT", S, "pow(a, b)"), ("INT", S, "em_pow_i(a, b, st)", True)),
    _b("atan2", ("FLOAT", S, "atan2(a, b)")),
    _b("minimum", ("ALL", S, MINIMUM)),
    _b("maximum", ("ALL", S, MAXIMUM)),
    _b("eq", ("ALL", B, "a == b")),
    _b("ne", ("ALL", B, "a != b")),
    _b("lt", ("ALL", B, "a < b")),
    _b("le", ("ALL", B, "a <= b")),
    _b("gt", ("ALL", B, "a > b")),
    _b("ge", ("ALL", B, "a >= b")),
    _b("logical_and", ("ALL", B, "(a != 0) && (b != 0)")),
    _b("logical_or", ("ALL", B, "(a != 0) || (b != 0)")),
    _b("logical_xor", ("ALL", B, "(a != 0) != (b != 0)")),
    _b("bitwise_and", ("INTB", S, "a & b")),
    _b("bitwise_or", ("INTB", S, "a | b")),
    _b("bitwise_xor", ("INTB", S, "a ^ b")),
    _b("bitwise_left_shift", ("INT", S, "em_shl_i(a, b, 8 * (int)sizeof(ct))")),
    _b("bitwise_right_shift", ("INT", S, "em_shr_i(a, b, 8 * (int)sizeof(ct))")),
    _b("hypot", ("FLOAT", S, "hypot(a, b)")),
    _b("copysign", ("FLOAT", S, "copysign(a, b)")),
    _b("xlogy", ("FLOAT", S, "b != b ? b : (a == 0 ? 0 : a * log(b))")),
    _b("logaddexp", ("FLOAT", S, "em_logaddexp(a, b)")),
    _b("fmax", ("FLOAT", S, "fmax(a, b)")),
    _b("fmin", ("FLOAT", S, "fmin(a, b)")),
    _b("nextafter", ("FLOAT", S, "nextafter(a, b)")),
    # the activations' input gradients (issue 20): a = grad_output, b = the forward's input or
    # output; p0 = gelu's form (1 tanh) or threshold's value
    _b("gelu_backward", ("FLOAT", S, "a * em_gelu_grad(b, p0)")),
    _b("silu_backward", ("FLOAT", S, "a * em_silu_grad(b)")),
    _b("sigmoid_backward", ("FLOAT", S, "a * (1 - b) * b")),
    _b("tanh_backward", ("FLOAT", S, "a * (1 - b * b)")),
    _b("threshold_backward", ("NUM", S, "b <= (ct)p0 ? (ct)0 : a")),
)

LERP = "fabs(c) < (ct)0.5 ? a + c * (b - a) : b - (b - a) * (1 - c)"
TERNARY = (
    # where(cond, a, b): cond is bool storage; the loop copies a's or b's bits (WHERE below).
    _t("where", ("ALL", S, "")),
    _t("lerp", ("FLOAT", S, LERP)),
    _t("clamp", ("NUM", S, "em_clamp(a, b, c)")),
    _t("addcmul", ("NUM", S, "a + (ct)p0 * b * c")),
    _t("addcdiv", ("FLOAT", S, "a + (ct)p0 * b / c")),
)

OPS = {op.name: op for op in UNARY + BINARY + TERNARY}

# The loop bodies; F is the op's functor, T the operand traits, O the output traits.
BODIES = r"""
template <class T, class O, class F>
EM_DEV void em_unary_loop(char *out, const char *x, const em_nd &nd, F f) {
    if (nd.ndim == 1) {
        const em_i64 so = nd.stride[0][0], sx = nd.stride[1][0];
        EM_FOR_EACH_UNROLLED(i0, nd.n) {
            typename T::ct vx[EM_UNROLL];
#pragma unroll
            for (int u = 0; u < EM_UNROLL; u++)
                if (EM_UNROLLED_AT(i0, u) < nd.n)
                    vx[u] = T::ld(*(const typename T::st *)(x + EM_UNROLLED_AT(i0, u) * sx));
#pragma unroll
            for (int u = 0; u < EM_UNROLL; u++)
                if (EM_UNROLLED_AT(i0, u) < nd.n)
                    *(typename O::st *)(out + EM_UNROLLED_AT(i0, u) * so) = O::sv(f(vx[u]));
        }
        return;
    }
    EM_FOR_EACH(i, nd.n) {
        em_i64 off[2];
        em_offsets<2>(nd, i, off);
        *(typename O::st *)(out + off[0]) = O::sv(f(T::ld(*(const typename T::st *)(x + off[1]))));
    }
}
template <class T, class O, class F>
EM_DEV void em_binary_loop(char *out, const char *a, const char *b, const em_nd &nd, F f) {
    if (nd.ndim == 1) {
        const em_i64 so = nd.stride[0][0], sa = nd.stride[1][0], sb = nd.stride[2][0];
        EM_FOR_EACH_UNROLLED(i0, nd.n) {
            typename T::ct va[EM_UNROLL], vb[EM_UNROLL];
#pragma unroll
            for (int u = 0; u < EM_UNROLL; u++) {
                const em_i64 i = EM_UNROLLED_AT(i0, u);
                if (i < nd.n) {
                    va[u] = em_load<T>(a, i * sa, nd.scalar[1]);
                    vb[u] = em_load_c<T>(b, i * sb, nd.scalar[2]);
                }
            }
#pragma unroll
            for (int u = 0; u < EM_UNROLL; u++)
                if (EM_UNROLLED_AT(i0, u) < nd.n)
                    *(typename O::st *)(out + EM_UNROLLED_AT(i0, u) * so) = O::sv(f(va[u], vb[u]));
        }
        return;
    }
    EM_FOR_EACH(i, nd.n) {
        em_i64 off[3];
        em_offsets<3>(nd, i, off);
        typename T::ct va = em_load<T>(a, off[1], nd.scalar[1]);
        typename T::ct vb = em_load_c<T>(b, off[2], nd.scalar[2]);
        *(typename O::st *)(out + off[0]) = O::sv(f(va, vb));
    }
}
template <class T, class O, class F>
EM_DEV void em_ternary_loop(char *out, const char *a, const char *b, const char *c,
                            const em_nd &nd, F f) {
    EM_FOR_EACH(i, nd.n) {
        em_i64 off[4];
        em_offsets<4>(nd, i, off);
        typename T::ct va = em_load<T>(a, off[1], nd.scalar[1]);
        typename T::ct vb = em_load<T>(b, off[2], nd.scalar[2]);
        typename T::ct vc = em_load<T>(c, off[3], nd.scalar[3]);
        *(typename O::st *)(out + off[0]) = O::sv(f(va, vb, vc));
    }
}
/* where copies the chosen operand's storage bits: no round trip through the compute type. */
template <class T>
EM_DEV void em_where_loop(char *out, const char *cond, const char *a, const char *b,
                          const em_nd &nd) {
    typedef typename T::st st;
    EM_FOR_EACH(i, nd.n) {
        em_i64 off[4];
        em_offsets<4>(nd, i, off);
        em_u8 c = cond ? *(const em_u8 *)(cond + off[1]) : (em_u8)nd.scalar[1];
        const char *p = c ? a : b;
        *(st *)(out + off[0]) = p ? *(const st *)(p + off[c ? 2 : 3])
                                  : em_bits<st>(nd.scalar[c ? 2 : 3]);
    }
}
"""

# Kernel argument formats (pycuda's struct characters), in the order of the signatures below.
ARGS = {
    1: "PPP" + ND + "ddd",
    2: "PPPP" + ND + "d",
    3: "PPPPP" + ND + "d",
    "where": "PPPP" + ND,
}
PARAMS = {1: ("x",), 2: ("a", "b"), 3: ("a", "b", "c")}
SIGNATURES = {
    1: "char *out, const char *x, int *st, em_nd nd, double p0, double p1, double p2",
    2: "char *out, const char *a, const char *b, int *st, em_nd nd, double p0",
    3: "char *out, const char *a, const char *b, const char *c, int *st, em_nd nd, double p0",
}
CALLS = {
    1: "em_unary_loop<{t}, {o}>(out, x, nd, {f}{{p0, p1, p2, st}})",
    2: "em_binary_loop<{t}, {o}>(out, a, b, nd, {f}{{p0, 0, 0, st}})",
    3: "em_ternary_loop<{t}, {o}>(out, a, b, c, nd, {f}{{p0, 0, 0, st}})",
}


def kernel_name(op: str, token: str) -> str:
    return f"em_ew_{op}_{token}"


def _functor(op: Ew, index: int, loop: Loop) -> tuple[str, str]:
    name = f"em_f_{op.name}_{index}"
    params = ", ".join(f"ct {p}" for p in PARAMS[op.arity])
    text = (
        f"struct {name} {{\n"
        "    double p0, p1, p2;\n"
        "    int *st;\n"
        "    template <class ct>\n"
        f"    EM_DEV auto operator()({params}) const {{ return ({loop.expr}); }}\n"
        "};\n"
    )
    return name, text


def module(op: Ew) -> tuple[str, list[tuple[str, str]]]:
    """(C++ text, [(kernel name, argument format)]) of the kernel module of ``op``."""
    parts, kernels = [BODIES], []
    if op.name == "where":
        for token in op.dtypes():
            name = kernel_name(op.name, token)
            parts.append(
                f"EM_KERNEL {name}(char *out, const char *cond, const char *a, const char *b, "
                f"em_nd nd) {{\n    em_where_loop<{traits(token)}>(out, cond, a, b, nd);\n}}\n"
            )
            kernels.append((name, ARGS["where"]))
        return "".join(parts), kernels
    functors = {}
    for index, loop in enumerate(op.loops):
        functors[loop], text = _functor(op, index, loop)
        parts.append(text)
    for token, loop in op.dtypes().items():
        name = kernel_name(op.name, token)
        out = traits("b" if loop.output == "BOOL" else token)
        call = CALLS[op.arity].format(t=traits(token), o=out, f=functors[loop])
        parts.append(f"EM_KERNEL {name}({SIGNATURES[op.arity]}) {{\n    {call};\n}}\n")
        kernels.append((name, ARGS[op.arity if op.name != "where" else "where"]))
    return "".join(parts), kernels


def modules() -> dict:
    return {f"ew.{op.name}": (lambda op=op: module(op)) for op in OPS.values()}


def is_float(token: str) -> bool:
    return BY_TOKEN[token].floating
