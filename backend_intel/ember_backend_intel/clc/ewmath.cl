/* The helpers of the elementwise expressions (the CPU plugin's .def lines, kernels/_shared.py):
 * PyTorch's integer division and powers, erf/GELU as the CPU computes them, the em_* names of
 * its vmath.h. Shared by the elementwise kernels (elementwise.cl) and the fused kernels that
 * ember.compile generates (fused.py), so a fused step computes what the eager op computes.
 */

/* ---- helpers with PyTorch's semantics (as in the CPU plugin's elementwise.c) ----------------- */
inline long em_div_trunc_i(long a, long b, em_params *p) {
    if (b == 0) { p->status = EM_ZERO_DIVISION; return 0; }
    if (b == -1) return (long)(0UL - (ulong)a); /* INT_MIN / -1 wraps instead of trapping */
    return a / b;
}

inline long em_div_floor_i(long a, long b, em_params *p) {
    if (b == 0) { p->status = EM_ZERO_DIVISION; return 0; }
    if (b == -1) return (long)(0UL - (ulong)a);
    long q = a / b, r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) q--;
    return q;
}

inline long em_remainder_i(long a, long b, em_params *p) {
    if (b == 0) { p->status = EM_ZERO_DIVISION; return 0; }
    if (b == -1) return 0;
    long r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

inline long em_fmod_i(long a, long b, em_params *p) {
    if (b == 0) { p->status = EM_ZERO_DIVISION; return 0; }
    if (b == -1) return 0;
    return a % b;
}

inline long em_pow_i(long a, long b, em_params *p) {
    if (b < 0) {
        if (a == 1) return 1;
        if (a == -1) return (b & 1) ? -1 : 1;
        p->status = EM_NEGATIVE_POWER;
        return 0;
    }
    ulong result = 1, base = (ulong)a; /* unsigned: overflow wraps, as in PyTorch */
    while (b) {
        if (b & 1) result *= base;
        base *= base;
        b >>= 1;
    }
    return (long)result;
}

inline long em_shl_i(long a, long b, int bits) {
    if (b < 0 || b >= bits) return 0;
    return (long)((ulong)a << b);
}

inline long em_shr_i(long a, long b, int bits) {
    if (b < 0 || b >= bits) return a < 0 ? -1 : 0;
    return a >> b;
}

/* erf and erfc of float arguments as the CPU plugin computes them (its vmath.h), where the device
 * has doubles: erfc(z) = exp(-z^2) P((z - 3) / (z + 3)) / (z + 3) in double, with z^2 exact for a
 * float z, and erf(z) = z S(z^2) below 1. Same results as the CPU, and 4x faster than PoCL's
 * float erfc (32 ns an element). Doubles keep the built-ins. */
#ifdef EM_FP64
constant double EM_ERF_P[8] = {0x1.20dd7504045d6p+0,  -0x1.81274665754c3p-2,
                               0x1.ce2f08fec14fdp-4,  -0x1.b829c897922e5p-6,
                               0x1.562a60ddba6e6p-8,  -0x1.bccf664d7f763p-11,
                               0x1.d887505de3ba6p-14, -0x1.445f47d33d87bp-17};
constant double EM_ERFC_P[10] = {
    0x1.12f21dd8476b8p+0,  -0x1.c44c477688cdcp-1, 0x1.2e326c4bce711p-1,  -0x1.3deaef557a924p-2,
    0x1.e995399ac424dp-4,  -0x1.b7b452787c55fp-6, -0x1.3f1588efa4d73p-10, 0x1.93a74eb5bf6f7p-9,
    -0x1.04a54d3835a20p-11, -0x1.5d555e147488ep-12};

inline double em_horner(double t, constant double *c, int n) {
    double r = c[n - 1];
    for (int i = n - 2; i >= 0; i--) r = r * t + c[i];
    return r;
}

/* erfc(z) for z >= 0 to float accuracy (0 beyond 10.5, where float underflows); NaN stays NaN */
inline double em_erfc_pos(double z) {
    double zc = z > 10.5 ? 10.5 : z;
    double t = (zc - 3) / (zc + 3);
    double y = exp(-zc * zc) * ((1 - t) * (1.0 / 6) * em_horner(t, EM_ERFC_P, 10));
    return z > 10.5 ? 0.0 : y;
}

inline double em_erfc_fa(double z) { /* any z, float accuracy */
    double tail = em_erfc_pos(fabs(z));
    return z < 0 ? 2 - tail : tail;
}

inline float __attribute__((overloadable)) em_erf(float x) {
    double z = x, a = fabs(z);
    return (float)(a < 1 ? z * em_horner(z * z, EM_ERF_P, 8) : copysign(1 - em_erfc_pos(a), z));
}
inline float __attribute__((overloadable)) em_erfc(float x) { return (float)em_erfc_fa(x); }
inline double __attribute__((overloadable)) em_erf(double x) { return erf(x); }
inline double __attribute__((overloadable)) em_erfc(double x) { return erfc(x); }

/* x Phi(x) = x erfc(-x / sqrt 2) / 2, the argument formed in double (a float one would cost
 * about x^2 ulp for x << 0) */
inline float __attribute__((overloadable)) em_gelu_erf(float x) {
    double xd = x;
    return (float)(0.5 * xd * em_erfc_fa(-xd * 0x1.6a09e667f3bcdp-1));
}
inline double __attribute__((overloadable)) em_gelu_erf(double x) {
    return 0.5 * x * erfc(-x * 0.70710678118654752440);
}
#else
#define em_erf(x) erf(x)
#define em_erfc(x) erfc(x)
inline float em_gelu_erf(float x) { return 0.5f * x * erfc(-x * 0.70710678118654752440f); }
#endif

#define EM_FLOAT_HELPERS(F)                                                                       \
    inline F __attribute__((overloadable)) em_floordiv_f(F a, F b) {                            \
        if (b == 0) return a / b;                                                                 \
        F mod = fmod(a, b);                                                                       \
        F div = (a - mod) / b;                                                                    \
        if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;                                        \
        if (div == 0) return copysign((F)0, a / b);                                               \
        F fl = floor(div);                                                                        \
        if (div - fl > (F)0.5) fl += 1;                                                           \
        return fl;                                                                                \
    }                                                                                             \
    inline F __attribute__((overloadable)) em_remainder_f(F a, F b) {                           \
        F r = fmod(a, b);                                                                         \
        if (r != 0 && ((b < 0) != (r < 0))) r += b;                                               \
        return r;                                                                                 \
    }                                                                                             \
    inline F __attribute__((overloadable)) em_logaddexp(F a, F b) {                             \
        if (a != a || b != b) return a + b;                                                       \
        F m = a > b ? a : b;                                                                      \
        if (isinf(m)) return m;                                                                   \
        return m + log1p(exp(-fabs(a - b)));                                                      \
    }                                                                                             \
    inline F __attribute__((overloadable)) em_sigmoid(F x) { return 1 / (1 + exp(-x)); }         \
    inline F __attribute__((overloadable)) em_silu(F x) { return x / (1 + exp(-x)); }            \
    /* log(1 + e^x) without overflow; fmax drops a NaN x but log1p(exp(NaN)) keeps it */          \
    inline F __attribute__((overloadable)) em_softplus(F x) {                                    \
        return fmax(x, (F)0) + log1p(exp(-fabs(x)));                                              \
    }                                                                                             \
    inline F __attribute__((overloadable)) em_mish(F x) { return x * tanh(em_softplus(x)); }     \
    /* x Phi(x) as x erfc(-x / sqrt 2) / 2 (1 + erf would cancel), or the tanh form */            \
    inline F __attribute__((overloadable)) em_gelu(F x, int tanh_form) {                         \
        if (tanh_form)                                                                            \
            return (F)0.5 * x * (1 + tanh((F)0.79788456080286535588 * (x + (F)0.044715 * x * x * x))); \
        return em_gelu_erf(x);                                                                    \
    }                                                                                             \
    inline F __attribute__((overloadable)) em_gelu_tanh(F x) { return em_gelu(x, 1); }          \
    /* the activations' derivatives (binary.def's backward loops): gelu' = Phi + x phi, the tanh \
     * form's s + x s (1 - s) (2u)', s = sigmoid(2u); silu' = s (1 + x (1 - s)) */                \
    inline F __attribute__((overloadable)) em_gelu_erf_grad(F x) {                               \
        return (F)0.5 * erfc(-x * (F)0.70710678118654752440) +                                    \
               x * exp((F)-0.5 * x * x) * (F)0.39894228040143267794;                              \
    }                                                                                             \
    inline F __attribute__((overloadable)) em_gelu_tanh_grad(F x) {                              \
        F s = em_sigmoid((F)1.59576912160573071176 * (x + (F)0.044715 * x * x * x));              \
        return s + x * s * (1 - s) * (F)1.59576912160573071176 * (1 + (F)0.134145 * x * x);       \
    }                                                                                             \
    inline F __attribute__((overloadable)) em_silu_grad(F x) {                                   \
        F s = em_sigmoid(x);                                                                      \
        return s * (1 + x * (1 - s));                                                             \
    }
EM_FLOAT_HELPERS(float)
#ifdef EM_FP64
EM_FLOAT_HELPERS(double)
#endif
/* The CPU plugin's expressions (its csrc .def files) call its vmath.h functions, which exist so
 * that GCC can vectorise them; OpenCL's own built-ins play that part here. */
#define em_sel(c, a, b) ((c) ? (a) : (b))
#define em_exp(x) exp(x)
#define em_expm1(x) expm1(x)
#define em_log(x) log(x)
#define em_log1p(x) log1p(x)
#define em_sin(x) sin(x)
#define em_cos(x) cos(x)
#define em_tanh(x) tanh(x)
/* min(max(a, lo), hi) with NaN from any operand propagating, as in PyTorch. */
#define em_clamp(a, lo, hi) \
    ((lo) != (lo) ? (lo) : (hi) != (hi) ? (hi) : (a) < (lo) ? ((lo) > (hi) ? (hi) : (lo)) \
     : (a) > (hi) ? (hi) : (a))
