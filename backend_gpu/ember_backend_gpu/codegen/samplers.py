"""The variable-draw samplers (``_standard_gamma``, ``poisson``, ``binomial``) for every GPU
target, from one description. docs/random.md ("Samplers with a variable number of draws") is the
contract and the CPU backend's samplers.c the reference: element ``i`` of a call owns the Philox
counters ``(blk, i, k)``, k = 1, 2, ..., so rejection loops of any length stay reproducible and
independent of the launch.

``ALGORITHMS`` is written in the C that CUDA C++ (nvcc, hiprtc, the emulator's g++) and OpenCL C
both accept; a target adds a few lines of ``SHIMS`` (integer types, the function qualifier,
mul-hi, NaN) and the kernels' loads and stores:

    >>> modules()["samplers"]()             # the CUDA/HIP module: (text, [(kernel, format)])
    >>> opencl_source("poisson", "f32")     # one OpenCL program (backend_intel compiles it)

The kernels take a contiguous ``out`` and contiguous parameters of its shape and dtype (the
runner, dispatcher/kinds/factory.py ``_sample``, makes them so).
"""

from __future__ import annotations

FLOATS = ("f16", "bf16", "f32", "f64")

SHIMS = {
    "cuda": r"""
typedef em_u32 smp_u32;
typedef em_u64 smp_u64;
#define SMP_FN EM_DEV
#define SMP_MULHI(a, b) __umulhi((a), (b))
#define SMP_NAN_f __int_as_float(0x7fc00000)
#define SMP_NAN_d __longlong_as_double(0x7ff8000000000000LL)
#define SMP_HAS_F64 1
""",
    "opencl": r"""
typedef uint smp_u32;
typedef ulong smp_u64;
#define SMP_FN inline
#define SMP_MULHI(a, b) mul_hi((uint)(a), (uint)(b))
#define SMP_NAN_f as_float(0x7fc00000u)
#ifdef EM_FP64
#define SMP_NAN_d as_double(0x7ff8000000000000UL)
#define SMP_HAS_F64 1
#endif
""",
}

STREAM = r"""
/* Element i's word stream: the four words of Philox4x32-10 at counter (blk lo, blk hi, i, k),
 * k = 1, 2, ... in turn, under the key made of the seed. */
typedef struct {
    smp_u32 k0, k1, c0, c1, i, k;
    smp_u32 x[4];
    int used;
} smp_stream;

SMP_FN smp_stream smp_stream_at(smp_u64 seed, smp_u64 blk, smp_u64 i) {
    smp_stream s;
    s.k0 = (smp_u32)seed;
    s.k1 = (smp_u32)(seed >> 32);
    s.c0 = (smp_u32)blk;
    s.c1 = (smp_u32)(blk >> 32);
    s.i = (smp_u32)i;
    s.k = 0;
    s.used = 4;
    return s;
}

SMP_FN smp_u32 smp_next32(smp_stream *s) {
    if (s->used == 4) {
        smp_u32 x0 = s->c0, x1 = s->c1, x2 = s->i, x3 = ++s->k, k0 = s->k0, k1 = s->k1;
        for (int round = 0; round < 10; round++) {
            smp_u32 hi0 = SMP_MULHI(0xD2511F53u, x0), lo0 = 0xD2511F53u * x0;
            smp_u32 hi1 = SMP_MULHI(0xCD9E8D57u, x2), lo1 = 0xCD9E8D57u * x2;
            x0 = hi1 ^ x1 ^ k0;
            x1 = lo1;
            x2 = hi0 ^ x3 ^ k1;
            x3 = lo0;
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        s->x[0] = x0;
        s->x[1] = x1;
        s->x[2] = x2;
        s->x[3] = x3;
        s->used = 0;
    }
    return s->x[s->used++];
}

/* The fills' transforms: a 24-bit float uniform from one word, the cosine half of Box-Muller. */
SMP_FN float smp_uniform_f(smp_stream *s) { return (float)(smp_next32(s) >> 8) * 0x1p-24f; }

SMP_FN float smp_normal_f(smp_stream *s) {
    float u1 = ((float)(smp_next32(s) >> 8) + 1) * 0x1p-24f;
    float u2 = smp_uniform_f(s);
    return sqrt(-2 * log(u1)) * cos(6.2831855f * u2);
}
"""

STREAM_F64 = r"""
/* A 53-bit double uniform from the next two words (low word first). */
SMP_FN double smp_uniform_d(smp_stream *s) {
    smp_u64 lo = smp_next32(s);
    smp_u64 w = lo | ((smp_u64)smp_next32(s) << 32);
    return (double)(w >> 11) * 0x1p-53;
}

SMP_FN double smp_normal_d(smp_stream *s) {
    double u1 = smp_uniform_d(s) + 0x1p-53;
    double u2 = smp_uniform_d(s);
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}
"""

# PyTorch's sample_gamma (Marsaglia and Tsang 2000, the boost Gamma(a) = Gamma(a + 1) U^(1/a)
# below a = 1, the result clamped to the smallest normal, alpha = 0 included; NaN for NaN or
# negative alpha, as PyTorch's CUDA kernel), once per compute type: {P} is f or d,
# {VT} the type, {L} the literal suffix (float literals stay float where OpenCL has no double).
GAMMA = r"""
SMP_FN {VT} smp_gamma_{P}({VT} alpha, smp_stream *s) {
    if (alpha != alpha || alpha < 0) return SMP_NAN_{P};
    if (isinf(alpha)) return alpha;
    {VT} scale = 1;
    if (alpha < 1) {
        if (alpha == 0) return {TINY};
        scale = pow(1 - smp_uniform_{P}(s), 1 / alpha);
        alpha += 1;
    }
    {VT} d = alpha - ({VT})1 / 3;
    {VT} c = 1 / sqrt(9 * d);
    for (;;) {
        {VT} x, y;
        do {
            x = smp_normal_{P}(s);
            y = 1 + c * x;
        } while (y <= 0);
        {VT} v = y * y * y;
        {VT} u = 1 - smp_uniform_{P}(s);
        {VT} xsq = x * x;
        if (u < 1 - 0.0331{L} * xsq * xsq || log(u) < 0.5{L} * xsq + d * (1 - v + log(v))) {
            {VT} out = scale * d * v;
            return out < {TINY} ? {TINY} : out;
        }
    }
}
"""

# PyTorch's sample_poisson and sample_binomial, in double for every dtype (as its CPU kernels).
DISCRETE = r"""
/* PTRS (Hormann 1993) from rate 10, Knuth's product of uniforms below. */
SMP_FN double smp_poisson(double lambda, smp_stream *s) {
    if (lambda >= 10) {
        double slam = sqrt(lambda), loglam = log(lambda);
        double b = 0.931 + 2.53 * slam;
        double a = -0.059 + 0.02483 * b;
        double invalpha = 1.1239 + 1.1328 / (b - 3.4);
        double vr = 0.9277 - 3.6224 / (b - 2);
        for (;;) {
            double u = smp_uniform_d(s) - 0.5;
            double v = smp_uniform_d(s);
            double us = 0.5 - fabs(u);
            double k = floor((2 * a / us + b) * u + lambda + 0.43);
            if (us >= 0.07 && v <= vr) return k;
            if (k < 0 || (us < 0.013 && v > us)) continue;
            if (log(v) + log(invalpha) - log(a / (us * us) + b) <=
                -lambda + k * loglam - lgamma(k + 1))
                return k;
        }
    }
    if (lambda == 0) return 0;
    double enlam = exp(-lambda), prod = 1, x = 0;
    for (;;) {
        prod *= smp_uniform_d(s);
        if (!(prod > enlam)) return x;
        x += 1;
    }
}

/* PyTorch's stirling_approx_tail: log(k!) - (k + 1/2) log(k + 1) + (k + 1) - log(sqrt(2 pi)). */
SMP_FN double smp_stirling_tail(double k) {
    switch ((int)(k <= 9 ? k : 10)) {
    case 0: return 0.0810614667953272;
    case 1: return 0.0413406959554092;
    case 2: return 0.0276779256849983;
    case 3: return 0.02079067210376509;
    case 4: return 0.0166446911898211;
    case 5: return 0.0138761288230707;
    case 6: return 0.0118967099458917;
    case 7: return 0.0104112652619720;
    case 8: return 0.00925546218271273;
    case 9: return 0.00833056343336287;
    }
    double kp1sq = (k + 1) * (k + 1);
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1);
}

/* Hormann's BTRS (1993), for count * prob >= 10 with prob <= 1/2. */
SMP_FN double smp_btrs(double count, double prob, smp_stream *s) {
    double stddev = sqrt(count * prob * (1 - prob));
    double b = 1.15 + 2.53 * stddev;
    double a = -0.0873 + 0.0248 * b + 0.01 * prob;
    double c = count * prob + 0.5;
    double v_r = 0.92 - 4.2 / b;
    double r = prob / (1 - prob);
    double alpha = (2.83 + 5.1 / b) * stddev;
    double m = floor((count + 1) * prob);
    for (;;) {
        double u = smp_uniform_d(s) - 0.5;
        double v = smp_uniform_d(s);
        double us = 0.5 - fabs(u);
        double k = floor((2 * a / us + b) * u + c);
        if (k < 0 || k > count) continue;
        if (us >= 0.07 && v <= v_r) return k;
        v = log(v * alpha / (a / (us * us) + b));
        double bound = (m + 0.5) * log((m + 1) / (r * (count - m + 1))) +
                       (count + 1) * log((count - m + 1) / (count - k + 1)) +
                       (k + 0.5) * log(r * (count - k + 1) / (k + 1)) + smp_stirling_tail(m) +
                       smp_stirling_tail(count - m) - smp_stirling_tail(k) -
                       smp_stirling_tail(count - k);
        if (v <= bound) return k;
    }
}

/* Inversion by geometric waiting times, for count * prob < 10. */
SMP_FN double smp_binomial_inversion(double count, double prob, smp_stream *s) {
    double logprob = log1p(-prob), geom_sum = 0, num_geom = 0;
    for (;;) {
        geom_sum += ceil(log(smp_uniform_d(s)) / logprob);
        if (geom_sum > count) return num_geom;
        num_geom += 1;
    }
}

/* The smaller of prob and 1 - prob drives BTRS or inversion. */
SMP_FN double smp_binomial(double count, double prob, smp_stream *s) {
    if (count <= 0 || prob <= 0) return 0;
    if (prob >= 1) return count;
    if (prob != prob) return SMP_NAN_d;
    double q = prob <= 0.5 ? prob : 1 - prob;
    double k = count * q >= 10 ? smp_btrs(count, q, s) : smp_binomial_inversion(count, q, s);
    return prob <= 0.5 ? k : count - k;
}
"""

# (op, kernel stem, parameters, the value of element i from its parameters x0, x1... and stream
# s; {P} is the gamma compute path: f for float16/bfloat16/float32, d for float64)
SAMPLERS = (
    ("_standard_gamma", "gamma", 1, "smp_gamma_{P}(x0, &s)"),
    ("poisson", "poisson", 1, "smp_poisson((double)x0, &s)"),
    ("binomial", "binomial", 2, "smp_binomial((double)x0, (double)x1, &s)"),
)
BY_OP = {row[0]: row for row in SAMPLERS}


def _path(token: str) -> str:
    return "d" if token == "f64" else "f"


def algorithms() -> str:
    """The target-neutral text: streams, gamma in float (and double), Poisson and binomial."""
    gamma_f = GAMMA.replace("{P}", "f").replace("{VT}", "float").replace("{L}", "f")
    gamma_d = GAMMA.replace("{P}", "d").replace("{VT}", "double").replace("{L}", "")
    gamma_f = gamma_f.replace("{TINY}", "0x1p-126f")
    gamma_d = gamma_d.replace("{TINY}", "0x1p-1022")
    return STREAM + gamma_f + "#ifdef SMP_HAS_F64\n" + STREAM_F64 + gamma_d + DISCRETE + "#endif\n"


def kernel_name(op: str, token: str) -> str:
    return f"em_sample_{BY_OP[op][1]}_{token}"


def arg_format(op: str) -> str:
    """pycuda's format of a CUDA sampler kernel: out, the parameters, seed, blk, n."""
    return "P" * (1 + BY_OP[op][2]) + "QQq"


def _cuda_kernel(op: str, token: str) -> str:
    _, _, arity, expr = BY_OP[op]
    t = f"em_{token}_t"
    params = "".join(f"const char *p{k}, " for k in range(arity))
    loads = "".join(
        f"        {t}::ct x{k} = {t}::ld((({t}::st const *)p{k})[i]);\n" for k in range(arity)
    )
    return (
        f"EM_KERNEL {kernel_name(op, token)}(char *out, {params}em_u64 seed, em_u64 blk, "
        f"em_i64 n) {{\n    EM_FOR_EACH(i, n) {{\n{loads}"
        f"        smp_stream s = smp_stream_at(seed, blk, (em_u64)i);\n"
        f"        (({t}::st *)out)[i] = {t}::sv({expr.replace('{P}', _path(token))});\n    }}\n}}\n"
    )


def _cuda_module() -> tuple[str, list]:
    parts, kernels = [SHIMS["cuda"], algorithms()], []
    for op, *_ in SAMPLERS:
        for token in FLOATS:
            parts.append(_cuda_kernel(op, token))
            kernels.append((kernel_name(op, token), arg_format(op)))
    return "".join(parts), kernels


def modules() -> dict:
    return {"samplers": _cuda_module}


def opencl_source(op: str, token: str) -> str:
    """One OpenCL program, kernel ``sample(o, oo, p0, po0, [p1, po1,] n, seed, blk)``: buffers
    with element offsets, then the element count, the seed and the Philox block. It needs
    clc/ember.h before it (backend_intel's programs prepend it)."""
    _, _, arity, expr = BY_OP[op]
    params = "".join(f"global const ST(T) *p{k}, long po{k}, " for k in range(arity))
    loads = "".join(f"        CT(T) x{k} = LD(T, p{k}, po{k} + i);\n" for k in range(arity))
    kernel = (
        f"kernel void sample(global ST(T) *o, long oo, {params}long n, ulong seed, ulong blk) {{\n"
        f"    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {{\n{loads}"
        f"        smp_stream s = smp_stream_at(seed, blk, (ulong)i);\n"
        f"        SV(T, o, oo + i, {expr.replace('{P}', _path(token))});\n    }}\n}}\n"
    )
    return f"#define T {token}\n" + SHIMS["opencl"] + algorithms() + kernel
