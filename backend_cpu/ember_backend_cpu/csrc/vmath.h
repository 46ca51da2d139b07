/* Vectorisable elementary functions for the elementwise loops (unary.def, binary.def).
 *
 * glibc computes exp, log, tanh... one element at a time behind a call, which stops GCC from
 * vectorising a loop. These versions are EM_VINLINE, loop-free and branch-free, so the AVX2
 * clone (EM_CLONES) runs them 8 floats or 4 doubles wide. Every path is computed and the result
 * picked with em_sel, a bit-mask select: a plain `c ? f(x) : g(x)` lets GCC sink f and g into
 * branches, and with -ftrapping-math it cannot if-convert them back. No FMA: the build has
 * -ffp-contract=off so that both clones give the same bits.
 *
 * Accuracy (tests/backend_cpu/test_vmath.py): float results within 2 ulp of the correctly rounded
 * value (erfc: 4), double within 4 ulp; special values as numpy and PyTorch. Float exp, log, tanh,
 * sigmoid, silu, erf and erfc work in float, 8 wide (they are the hot ones); the other float
 * functions evaluate in double, which makes 2 ulp easy at half the width. Double sin, cos, erf, erfc and the erf form of
 * gelu stay in libm: a vector version is not worth it for a dtype this rarely used in bulk.
 *
 * Polynomials are least-squares fits on Chebyshev nodes (mpmath), rounded to the working type;
 * each comment names the function fitted and the interval. A function for both types is written
 * once as a macro over (type, suffix, ...) and instantiated as em_<name>_f32 and em_<name>_f64.
 */
#ifndef EMBER_VMATH_H
#define EMBER_VMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Every function here is inlined: a call in a loop body stops vectorisation, and GCC's size
 * heuristics would leave the larger ones (gelu, sin) out of line in a file with this many loops. */
#if defined(__GNUC__)
#define EM_VINLINE static inline __attribute__((always_inline))
#else
#define EM_VINLINE static inline
#endif

/* ---- bits, selects, small helpers, for float (f32) and double (f64) -------------------------- */
#define EM_VMATH_BASICS(T, S, U)                                                                   \
    EM_VINLINE U em_bits_##S(T x) {                                                                \
        U u;                                                                                       \
        memcpy(&u, &x, sizeof u);                                                                  \
        return u;                                                                                  \
    }                                                                                              \
    EM_VINLINE T em_from_bits_##S(U u) {                                                           \
        T x;                                                                                       \
        memcpy(&x, &u, sizeof x);                                                                  \
        return x;                                                                                  \
    }                                                                                              \
    /* c ? a : b on values already computed */                                                     \
    EM_VINLINE T em_sel_##S(int c, T a, T b) {                                                     \
        U m = (U)0 - (U)(c != 0);                                                                  \
        return em_from_bits_##S((em_bits_##S(a) & m) | (em_bits_##S(b) & ~m));                     \
    }                                                                                              \
    /* a with its sign flipped where s is negative (s = -0 included) */                            \
    EM_VINLINE T em_mulsign_##S(T a, T s) {                                                        \
        U sign = (U)1 << (8 * sizeof(U) - 1);                                                      \
        return em_from_bits_##S(em_bits_##S(a) ^ (em_bits_##S(s) & sign));                         \
    }                                                                                              \
    EM_VINLINE T em_abs_##S(T x) {                                                                 \
        return em_from_bits_##S(em_bits_##S(x) & ~((U)1 << (8 * sizeof(U) - 1)));                  \
    }                                                                                              \
    /* clamp to [lo, hi]; NaN passes through */                                                    \
    EM_VINLINE T em_clamp_##S(T x, T lo, T hi) {                                                   \
        return em_sel_##S(x < lo, lo, em_sel_##S(x > hi, hi, x));                                  \
    }                                                                                              \
    /* c[0] + c[1] x + ... + c[n-1] x^(n-1), n <= 16, by Estrin's scheme: pairs, then pairs of     \
     * pairs with x^2, x^4, x^8. Without FMA these loops are latency bound, and Horner's chain     \
     * of n multiply-adds would be the critical path. n is a constant: the loops unroll and the    \
     * conditions fold. */                                                                         \
    EM_VINLINE T em_poly_##S(T x, const T *c, int n) {                                             \
        T q[8], r[4], s[2];                                                                        \
        int nq = (n + 1) / 2, nr = (nq + 1) / 2, ns = (nr + 1) / 2;                                \
        T x2 = x * x, x4 = x2 * x2;                                                                \
        for (int i = 0; i < nq; i++)                                                               \
            q[i] = 2 * i + 1 < n ? c[2 * i] + c[2 * i + 1] * x : c[2 * i];                         \
        for (int i = 0; i < nr; i++)                                                               \
            r[i] = 2 * i + 1 < nq ? q[2 * i] + q[2 * i + 1] * x2 : q[2 * i];                       \
        for (int i = 0; i < ns; i++)                                                               \
            s[i] = 2 * i + 1 < nr ? r[2 * i] + r[2 * i + 1] * x4 : r[2 * i];                       \
        return ns > 1 ? s[0] + s[1] * (x4 * x4) : s[0];                                            \
    }
EM_VMATH_BASICS(float, f32, uint32_t)
EM_VMATH_BASICS(double, f64, uint64_t)
/* polynomial with the coefficient array c, for suffix S */
#define EM_POLY(S, x, c) em_poly_##S(x, c, (int)(sizeof(c) / sizeof((c)[0])))

/* ---- exp ---------------------------------------------------------------------------------------
 * exp(x + xlo) = (1 + s) 2^k: Cody-Waite reduction r = x - k ln2 (the high part of ln2 has few
 * bits, so k hi and x - k hi are exact) and a polynomial for s = exp(r) - 1 on |r| <= ln2/2. x is
 * clamped to +-150 (float) or +-800 (double): beyond, the scaled result is 0 or inf, and the margin
 * past the underflow threshold leaves room for callers that scale x exp(x) late (silu). xlo
 * (|xlo| <= ulp(x)) carries the low part of an argument known to more precision than T holds. */
#define EM_LN2_HI_F32 0x1.62e4p-1f
#define EM_LN2_LO_F32 0x1.7f7d1cp-20f
#define EM_LN2_HI_F64 0x1.62e42feep-1
#define EM_LN2_LO_F64 0x1.a39ef35793c76p-33

/* (exp(r) - 1 - r) / r^2 on |r| <= ln2/2 */
static const float EM_EXP_P_f32[] = {0x1.000000p-1f, 0x1.555556p-3f,  0x1.5554eap-5f,
                                     0x1.1110e0p-7f, 0x1.6d4316p-10f, 0x1.a124e4p-13f};
static const double EM_EXP_P_f64[] = {
    0x1.0000000000001p-1,  0x1.5555555555556p-3,  0x1.5555555553d68p-5,  0x1.11111111109b5p-7,
    0x1.6c16c17889ef1p-10, 0x1.a01a01a7c2efep-13, 0x1.a019b9149a41cp-16, 0x1.71de0db2f6b19p-19,
    0x1.28917c89a43a7p-22, 0x1.af389ecfc4b9cp-26};

/* T, suffix, integer type of k, its unsigned twin, exponent bias, mantissa bits, clamp, log2(e).
 * The integer k comes out of the low bits of x * log2(e) + 1.5 * 2^mant (no float-to-int
 * conversion, which AVX2 lacks for 64 bits). em_ldexpk scales by 2^k in two steps so that neither
 * factor overflows and a subnormal result is rounded once. */
#define EM_EXP_CORE(T, S, K, UK, BIAS, MANT, LIM, LOG2E, LN2_HI, LN2_LO)                           \
    /* s and k with exp(x + xlo) = (1 + s) 2^k */                                                  \
    EM_VINLINE T em_expm1k_##S(T x, T xlo, K *k) {                                                 \
        const T shift = (T)1.5 * (T)((UK)1 << MANT);                                               \
        T t = x * LOG2E + shift;                                                                   \
        T kf = t - shift;                                                                          \
        *k = (K)(em_bits_##S(t) - em_bits_##S(shift));                                             \
        T r = (x - kf * LN2_HI) - kf * LN2_LO + xlo;                                               \
        return r + r * r * EM_POLY(S, r, EM_EXP_P_##S);                                            \
    }                                                                                              \
    EM_VINLINE T em_expk_##S(T x, K *k) { return 1 + em_expm1k_##S(x, -(T)0, k); }                 \
    EM_VINLINE T em_ldexpk_##S(T p, K k) {                                                         \
        K k1 = (K)((UK)(k + 4096) >> 1) - 2048; /* floor(k / 2), logical shift only */             \
        T s1 = em_from_bits_##S((UK)(k1 + BIAS) << MANT);                                          \
        T s2 = em_from_bits_##S((UK)(k - k1 + BIAS) << MANT);                                      \
        return p * s1 * s2;                                                                        \
    }                                                                                              \
    /* 2^k for k in the normal exponent range */                                                   \
    EM_VINLINE T em_pow2k_##S(K k) { return em_from_bits_##S((UK)(k + BIAS) << MANT); }            \
    EM_VINLINE T em_exp_##S(T x) {                                                                 \
        K k;                                                                                       \
        T p = em_expk_##S(em_clamp_##S(x, -LIM, LIM), &k);                                         \
        return em_ldexpk_##S(p, k);                                                                \
    }
EM_EXP_CORE(float, f32, int32_t, uint32_t, 127, 23, 150.0f, 0x1.715476p0f, EM_LN2_HI_F32,
            EM_LN2_LO_F32)
EM_EXP_CORE(double, f64, int64_t, uint64_t, 1023, 52, 800.0, 0x1.71547652b82fep0, EM_LN2_HI_F64,
            EM_LN2_LO_F64)

/* ---- log ------------------------------------------------------------------------------------- */
/* x = 2^e m with m in [sqrt(1/2), sqrt(2)), f = m - 1; subnormals are scaled up first. */
#define EM_LN2_HI_LOG_F32 0x1.63p-1f /* 9 bits: e * it is exact */
#define EM_LN2_LO_LOG_F32 -0x1.bd0106p-13f

/* float: (log1p(f) - f + f^2/2) / f^3 on [sqrt(1/2) - 1, sqrt(2) - 1] */
static const float EM_LOG_P_f32[] = {0x1.555554p-2f,  -0x1.fffffcp-3f, 0x1.999d5ap-3f,
                                     -0x1.555b4ap-3f, 0x1.23d21ap-3f,  -0x1.fcf4c6p-4f,
                                     0x1.dea282p-4f,  -0x1.d635bcp-4f, 0x1.1d8ea6p-4f};
/* double: (2 atanh(s) - 2s) / s^3 as a function of z = s^2, s = f / (2 + f) <= 3 - 2 sqrt(2) */
static const double EM_LOG_P_f64[] = {0x1.5555555555558p-1, 0x1.99999999952e2p-2,
                                      0x1.2492492df148dp-2, 0x1.c71c62e5800a1p-3,
                                      0x1.7462b4ab2ef6bp-3, 0x1.39fe606542ddep-3,
                                      0x1.2b584aae78a57p-3};

/* log(x) for finite x > 0 */
EM_VINLINE float em_log_finite_f32(float x) {
    int sub = x < 0x1p-126f;
    uint32_t ix = em_bits_f32(em_sel_f32(sub, x * 0x1p23f, x));
    int32_t e = (int32_t)(ix - 0x3f3504f3u) >> 23; /* 0x3f3504f3: sqrt(1/2) */
    float f = em_from_bits_f32(ix - ((uint32_t)e << 23)) - 1.0f;
    float ef = (float)(e - 23 * sub);
    float z = f * f;
    float y = f * z * EM_POLY(f32, f, EM_LOG_P_f32) +
              ef * EM_LN2_LO_LOG_F32;
    return (f + (y - 0.5f * z)) + ef * EM_LN2_HI_LOG_F32;
}

/* fdlibm's scheme: log(1 + f) = f - (f^2/2 - s (f^2/2 + R(s^2))). AVX2 has neither 64-bit
 * arithmetic shifts nor int64-to-double conversion, so e is biased positive and converted with the
 * 2^52 trick. */
EM_VINLINE double em_log_finite_f64(double x) {
    int sub = x < 0x1p-1022;
    uint64_t ix = em_bits_f64(em_sel_f64(sub, x * 0x1p54, x));
    uint64_t eb = (ix + (0x3ff0000000000000u - 0x3fe6a09e667f3bcdu)) >> 52; /* sqrt(1/2) */
    double f = em_from_bits_f64(ix - ((eb - 1023) << 52)) - 1.0;
    uint64_t e = 64 + eb - 54 * (uint64_t)sub; /* exponent + 1087, positive */
    double ef = em_from_bits_f64(0x4330000000000000u + e) - (0x1p52 + 1087);
    double hfsq = 0.5 * f * f;
    double s = f / (2.0 + f);
    double z = s * s;
    double r = z * EM_POLY(f64, z, EM_LOG_P_f64);
    return ef * EM_LN2_HI_F64 - ((hfsq - (s * (hfsq + r) + ef * EM_LN2_LO_F64)) - f);
}

#define EM_LOG(T, S)                                                                               \
    EM_VINLINE T em_log_##S(T x) {                                                                 \
        T y = em_log_finite_##S(x);                                                                \
        y = em_sel_##S(x == (T)INFINITY, x, y);                                                    \
        y = em_sel_##S(x == 0, -(T)INFINITY, y);                                                   \
        return em_sel_##S(!(x >= 0), (T)NAN, y); /* x < 0, NaN */                                  \
    }
EM_LOG(float, f32)
EM_LOG(double, f64)

/* ---- functions of exp(-|x|): tanh, sigmoid, silu --------------------------------------------- */
/* (tanh(x) - x) / x^3 as a function of x^2 <= 0.625^2 */
static const float EM_TANH_P_f32[] = {-0x1.555556p-2f, 0x1.1110eap-3f,  -0x1.ba08c4p-5f,
                                      0x1.64a976p-6f,  -0x1.116a16p-7f, 0x1.2c83c0p-9f};
static const double EM_TANH_P_f64[] = {
    -0x1.5555555555553p-2, 0x1.11111111107acp-3,  -0x1.ba1ba1b92a52cp-5, 0x1.664f4836ffb5ep-6,
    -0x1.226e29216080bp-7, 0x1.d6d17faac7499p-9,  -0x1.7d80275a99754p-10, 0x1.33fc7f7473d21p-11,
    -0x1.e3f90249802dbp-13, 0x1.4ddd5fb800f82p-14, -0x1.21522c06d082ap-16};

/* T, suffix, type of k, where tanh rounds to 1, em_expk's clamp. tanh(|x|) is x + x^3 P(x^2) below
 * 0.625 and (1 - e) / (1 + e), e = exp(-2|x|), above. m sigmoid(a) = m / (1 + exp(-a)), exp(-a) =
 * 2^k (1 + s): for a >= 0 (k <= 0) the denominator is (1 + 2^k) + 2^k s; for a < 0 it is
 * 2^k ((1 + 2^-k) + s) and 2^-k is applied to the quotient last, so that a subnormal result is
 * rounded once. Beyond the clamp the result underflows to 0 m. alo: a low part of a, as for
 * em_expm1k. */
#define EM_EXP_FUNCS(T, S, K, BIAS, TANH_ONE, EXP_LIM)                                             \
    EM_VINLINE T em_tanh_##S(T x) {                                                                \
        T a = em_abs_##S(x);                                                                       \
        T z = a * a;                                                                               \
        T small = a + a * z * EM_POLY(S, z, EM_TANH_P_##S);                                        \
        K k;                                                                                       \
        T p = em_expk_##S(-2 * em_sel_##S(a > TANH_ONE, TANH_ONE, a), &k);                         \
        T e = p * em_pow2k_##S(k); /* k >= -58: one step */                                        \
        T large = (1 - e) / (1 + e);                                                               \
        return em_mulsign_##S(em_sel_##S(a < (T)0.625, small, large), x);                          \
    }                                                                                              \
    EM_VINLINE T em_xsigmoid_##S(T m, T a, T alo) {                                                \
        K k;                                                                                       \
        int pos = a >= 0;                                                                          \
        T s = em_expm1k_##S(em_clamp_##S(-a, -EXP_LIM, EXP_LIM), -alo, &k);                        \
        K nk = k < 0 ? k : -k; /* -|k| */                                                          \
        T tau = em_pow2k_##S(nk < 2 - BIAS ? 2 - BIAS : nk); /* 1 + tau: smaller ones vanish */    \
        T q = m / ((1 + tau) + em_sel_##S(pos, tau * s, s));                                       \
        T y = em_sel_##S(pos, q, em_ldexpk_##S(q, nk));                                            \
        y = em_sel_##S(a < -EXP_LIM, 0 * m, y);                                                    \
        return em_sel_##S(m == -(T)INFINITY, (T)NAN, y); /* -inf * 0, as PyTorch */                \
    }                                                                                              \
    EM_VINLINE T em_sigmoid_##S(T x) { return em_xsigmoid_##S(1, x, 0); }                          \
    EM_VINLINE T em_silu_##S(T x) { return em_xsigmoid_##S(x, x, 0); }                            \
    /* silu'(x) = s (1 + x (1 - s)), s = sigmoid(x) */                                             \
    EM_VINLINE T em_silu_grad_##S(T x) {                                                           \
        T s = em_sigmoid_##S(x);                                                                   \
        return s * (1 + x * (1 - s));                                                              \
    }
EM_EXP_FUNCS(float, f32, int32_t, 127, 10.0f, 150.0f)
EM_EXP_FUNCS(double, f64, int64_t, 1023, 20.0, 800.0)

/* ---- expm1, log1p and their compositions: double; float goes through double ------------------ */
/* expm1 = 2^k (1 + s) - 1: for k <= 56 as 2^k s + (2^k - 1), where 2^k - 1 is exact; above with
 * the two-step scale. */
EM_VINLINE double em_expm1_f64(double x) {
    int64_t k;
    double s = em_expm1k_f64(em_clamp_f64(x, -40.0, 710.0), -0.0, &k);
    int64_t kc = k < 56 ? k : 56;
    double two_k = em_pow2k_f64(kc);
    double y = em_sel_f64(k > 56, em_ldexpk_f64(1 + s, k) - 1, two_k * s + (two_k - 1));
    return em_sel_f64(x == 0, x, y); /* keeps -0 */
}

/* log(u) + c / u, u = 1 + x rounded and c its rounding error (exact: Fast2Sum) */
EM_VINLINE double em_log1p_f64(double x) {
    double u = 1 + x;
    double c = em_sel_f64(x > 1, 1 - (u - x), x - (u - 1));
    double y = em_log_finite_f64(u) + c / u;
    y = em_sel_f64(x == INFINITY, x, y);
    y = em_sel_f64(x == -1, -INFINITY, y);
    y = em_sel_f64((x < -1) | (x != x), NAN, y);
    return em_sel_f64(em_abs_f64(x) < 0x1p-54, x, y); /* keeps -0 and subnormals */
}

/* log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)) */
EM_VINLINE double em_softplus_f64(double x) {
    return em_sel_f64(x > 0, x, 0) + em_log1p_f64(em_exp_f64(-em_abs_f64(x)));
}

EM_VINLINE double em_logaddexp_f64(double a, double b) {
    double m = em_sel_f64(a > b, a, b);
    double y = m + em_log1p_f64(em_exp_f64(-em_abs_f64(a - b)));
    y = em_sel_f64(em_abs_f64(m) == INFINITY, m, y); /* inf - inf would give NaN */
    return em_sel_f64((a != a) | (b != b), a + b, y);
}

/* x tanh(softplus(x)). With E = exp(x), tanh(log(1 + E)) = E (E + 2) / (E (E + 2) + 2). For x < 0,
 * E = 2^k (1 + s) and E (E + 2) = 2^k n with n = 2 + 2s + E (1 + s) (no rounding of E + 2), and
 * 2^k is applied last (subnormal results). For x >= 0, in e = exp(-x): 1 - 2e^2 / (1 + 2e + 2e^2). */
EM_VINLINE double em_mish_f64(double x) {
    int64_t k;
    double a = em_abs_f64(x);
    double s = em_expm1k_f64(-em_sel_f64(a > 800, 800, a), -0.0, &k);
    double e = em_ldexpk_f64(1 + s, k);
    double n = 2 + (2 * s + e * (1 + s));
    double neg = em_ldexpk_f64(x * n / (em_ldexpk_f64(n, k) + 2), k);
    double pos = x * (1 - 2 * e * e / ((1 + 2 * e) + 2 * e * e));
    double y = em_sel_f64(x >= 0, pos, neg);
    y = em_sel_f64(x < -800, -0.0, y);
    return em_sel_f64(x == -INFINITY, NAN, y);
}

#define EM_VIA_DOUBLE(name)                                                                        \
    EM_VINLINE float em_##name##_f32(float x) { return (float)em_##name##_f64(x); }
EM_VIA_DOUBLE(expm1)
EM_VIA_DOUBLE(log1p)
EM_VIA_DOUBLE(softplus)
EM_VIA_DOUBLE(mish)
EM_VINLINE float em_logaddexp_f32(float a, float b) { return (float)em_logaddexp_f64(a, b); }

/* ---- erf, erfc, gelu: float in float, 8 wide; double erf, erfc in libm ---------------------- */
/* Exact products (Dekker, no FMA in this build): a b = p + *e for |a|, |b| below 2^(emax/2). SPLIT
 * is 2^(ceil(mant / 2)) + 1: a * SPLIT - (a * SPLIT - a) keeps the top half of a's bits. */
#define EM_TWO_PROD(T, S, SPLIT)                                                                   \
    EM_VINLINE T em_split_hi_##S(T a) {                                                            \
        T t = SPLIT * a;                                                                           \
        return t - (t - a);                                                                        \
    }                                                                                              \
    EM_VINLINE T em_two_prod_##S(T a, T b, T *e) {                                                 \
        T p = a * b, ah = em_split_hi_##S(a), bh = em_split_hi_##S(b), al = a - ah, bl = b - bh;   \
        *e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;                                        \
        return p;                                                                                  \
    }                                                                                              \
    /* (hi, lo) times the constant ch + cl */                                                      \
    EM_VINLINE T em_dd_mul_##S(T hi, T lo, T ch, T cl, T *e) {                                     \
        T p = em_two_prod_##S(hi, ch, e);                                                          \
        *e += hi * cl + lo * ch;                                                                   \
        return p;                                                                                  \
    }
EM_TWO_PROD(float, f32, 0x1.002p12f)
EM_TWO_PROD(double, f64, 0x1.0000002p27)

/* erf(z) / z - 2 / sqrt(pi), over z^2, as a function of z^2 <= 1; the leading coefficient
 * 2 / sqrt(pi) is applied as a float-float pair (EM_ERF_C0), its rounding alone would cost an ulp */
static const float EM_ERF_P[] = {-0x1.81274665754c3p-2, 0x1.ce2f08fec14fdp-4,
                                 -0x1.b829c897922e5p-6, 0x1.562a60ddba6e6p-8,
                                 -0x1.bccf664d7f763p-11, 0x1.d887505de3ba6p-14,
                                 -0x1.445f47d33d87bp-17};
#define EM_ERF_C0_HI 0x1.20dd76p+0f
#define EM_ERF_C0_LO -0x1.f7ac92p-25f
/* exp(z^2) erfc(z) (z + 3) D as a function of t = (z - 3) / (z + 3), z in [0, 10.5]; the float
 * table has the division by 6 folded in (one rounding less) */
#define EM_ERFC_FIT(D) \
    0x1.12f21dd8476b8p+0 D, -0x1.c44c477688cdcp-1 D, 0x1.2e326c4bce711p-1 D, \
    -0x1.3deaef557a924p-2 D, 0x1.e995399ac424dp-4 D, -0x1.b7b452787c55fp-6 D, \
    -0x1.3f1588efa4d73p-10 D, 0x1.93a74eb5bf6f7p-9 D, -0x1.04a54d3835a20p-11 D, \
    -0x1.5d555e147488ep-12 D
static const float EM_ERFC_P[] = {EM_ERFC_FIT(/ 6)};
static const double EM_ERFC_P_f64[] = {EM_ERFC_FIT()};

/* erfc(z) / exp(-z^2) for 0 <= z <= 10.5, with 1 / (z + 3) = (1 - t) / 6 */
EM_VINLINE float em_erfcx_f32(float z) {
    float t = (z - 3) / (z + 3);
    return (1 - t) * EM_POLY(f32, t, EM_ERFC_P);
}
/* erf(x) for |x| <= 1 */
EM_VINLINE float em_erf_small_f32(float x) {
    float z = x * x;
    return x * EM_ERF_C0_HI + x * (EM_ERF_C0_LO + z * EM_POLY(f32, z, EM_ERF_P));
}
/* erfc(a) for a >= 0: exp(-a^2) with a^2 exact as a (high, low) pair; 2^k applied last, so that a
 * subnormal result is rounded once. Beyond 10.5 erfc underflows in float. */
EM_VINLINE float em_erfc_pos_f32(float a) {
    float ac = em_sel_f32(a > 10.5f, 10.5f, a);
    float lo, hi = em_two_prod_f32(ac, ac, &lo);
    int32_t k;
    float s = em_expm1k_f32(-hi, -lo, &k);
    return em_ldexpk_f32((1 + s) * em_erfcx_f32(ac), k);
}
/* erf(x) by the series near 0, where 1 - erfc would cancel */
EM_VINLINE float em_erf_f32(float x) {
    float a = em_abs_f32(x);
    float y = em_mulsign_f32(1 - em_erfc_pos_f32(a), x);
    y = em_sel_f32(a < 1, em_erf_small_f32(em_sel_f32(a < 1, x, 0.0f)), y);
    return em_sel_f32(x == 0, x, y); /* -0 */
}
/* 1 - erf(x) below 0.7, where erfcx's polynomial is least accurate (t near -1) and 1 - erf does
 * not cancel */
EM_VINLINE float em_erfc_f32(float x) {
    float a = em_abs_f32(x);
    float tail = em_erfc_pos_f32(a);
    float y = em_sel_f32(x < 0, 2 - tail, tail);
    return em_sel_f32(a < 0.7f, 1 - em_erf_small_f32(em_sel_f32(a < 0.7f, x, 0.0f)), y);
}
EM_VINLINE double em_erf_f64(double x) { return erf(x); }
EM_VINLINE double em_erfc_f64(double x) { return erfc(x); }

/* gelu(x) = x F(x): F = Phi(x) = erfc(-x / sqrt 2) / 2 for the erf form (0.5 (1 + erf) would cancel
 * for x << 0), F = sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3), for the tanh form. Each form
 * has a loop of its own (unary.def gelu and gelu__tanh: the glue picks one by `approximate`), so
 * that each vectorises 8 (16) floats wide, in float.
 * erf form: the tail Phi(-|x|) = exp(-x^2 / 2) erfcx(|x| / sqrt 2) / 2 feeds x^2 / 2 to the exp
 * as an exact Dekker pair (halved), so that only erfcx, which is flat, sees the rounding of
 * |x| / sqrt 2; x and 2^k multiply last (a subnormal result is rounded once). Below |x| / sqrt 2
 * = 0.7, where erfcx's polynomial is least accurate, 0.5 (1 + erf) by erf's series (no
 * cancellation there). tanh form: 2u is formed in float-float (x^2 exact, the constants as
 * pairs) and its low part goes to em_xsigmoid, so that exp(-2u), which multiplies the rounding
 * of 2u by |2u|, sees none.
 * The gradients share the pieces: gelu'(x) = Phi(x) + x phi(x), phi = exp(-x^2 / 2) / sqrt(2 pi),
 * and d/dx x sigmoid(2u) = s + x s (1 - s) (2u)', s = sigmoid(2u). */
#define EM_GELU_C1_HI 0x1.988454p+0f /* 2 sqrt(2 / pi) */
#define EM_GELU_C1_LO -0x1.857936p-25f
#define EM_GELU_C2_HI 0x1.2444f2p-4f /* 2 sqrt(2 / pi) 0.044715 */
#define EM_GELU_C2_LO 0x1.49b16ap-29f
#define EM_INV_SQRT_2PI_F32 0x1.988454p-2f
/* Phi(-|x|) for the erf form, and *e = exp(-x^2 / 2): erfcx serves every |x| (no separate
 * series near 0: within 4 ulp there, t near -1) and x^2 is rounded once, which costs x^2 / 2
 * roundings of the tail: relative 1e-6 at |x| = 5, where the tail is 3e-7, far inside PyTorch's
 * float32 tolerance (rtol 1.3e-6, atol 1e-5; its own erf is within 1.5e-7 absolute). */
EM_VINLINE float em_gelu_erf_tail_f32(float xc, float *e) {
    *e = em_exp_f32(-0.5f * (xc * xc));
    return 0.5f * *e * em_erfcx_f32(em_abs_f32(xc) * 0x1.6a09e6p-1f); /* |x| / sqrt 2 */
}
#define EM_GELU_ERF_LIM 14.9f /* beyond, x Phi(x) is x or -0 in float */
EM_VINLINE float em_gelu_erf_f32(float x) {
    float xc = em_clamp_f32(x, -EM_GELU_ERF_LIM, EM_GELU_ERF_LIM), e;
    float xt = xc * em_gelu_erf_tail_f32(xc, &e); /* x Phi(-|x|) */
    float y = em_sel_f32(xc <= 0, xt, xc - xt);   /* -0 stays -0 */
    y = em_sel_f32(x > EM_GELU_ERF_LIM, x, y);
    return em_sel_f32(x == -INFINITY, NAN, y); /* -inf * 0, as PyTorch */
}
/* gelu'(x) = Phi(x) + x phi(x) */
EM_VINLINE float em_gelu_erf_grad_f32(float x) {
    float xc = em_clamp_f32(x, -EM_GELU_ERF_LIM, EM_GELU_ERF_LIM), e;
    float tail = em_gelu_erf_tail_f32(xc, &e);
    float xphi = xc * e * EM_INV_SQRT_2PI_F32;
    float y = em_sel_f32(xc < 0, tail + xphi, (1 - tail) + xphi);
    y = em_sel_f32(x > EM_GELU_ERF_LIM, 1.0f, em_sel_f32(x < -EM_GELU_ERF_LIM, 0.0f, y));
    return em_sel_f32(x - x != 0, NAN, y); /* +-inf: inf * 0, as PyTorch; NaN */
}
/* 2u = x (c1 + c2 x^2) as hi + *lo */
EM_VINLINE float em_gelu_u2_f32(float x, float *lo) {
    float x2l, x2 = em_two_prod_f32(x, x, &x2l);
    float bl, b = em_dd_mul_f32(x2, x2l, EM_GELU_C2_HI, EM_GELU_C2_LO, &bl); /* c2 x^2 */
    float v = EM_GELU_C1_HI + b, bb = v - EM_GELU_C1_HI; /* TwoSum */
    float vl = ((EM_GELU_C1_HI - (v - bb)) + (b - bb)) + (bl + EM_GELU_C1_LO);
    return em_dd_mul_f32(v, vl, x, 0, lo);
}
#define EM_GELU_TANH_LIM 1e4f /* beyond, sigmoid(2u) is 0 or 1; x^2 stays finite below it */
EM_VINLINE float em_gelu_tanh_f32(float x) {
    float lo, u2 = em_gelu_u2_f32(em_clamp_f32(x, -EM_GELU_TANH_LIM, EM_GELU_TANH_LIM), &lo);
    return em_xsigmoid_f32(x, u2, lo);
}
EM_VINLINE float em_gelu_tanh_grad_f32(float x) {
    float xc = em_clamp_f32(x, -EM_GELU_TANH_LIM, EM_GELU_TANH_LIM);
    float lo, u2 = em_gelu_u2_f32(xc, &lo);
    float s = em_xsigmoid_f32(1, u2, lo);
    float t = em_xsigmoid_f32(1, -u2, -lo); /* 1 - s without cancelling where s nears 1 */
    float du2 = EM_GELU_C1_HI + 3 * EM_GELU_C2_HI * xc * xc; /* (2u)' */
    float y = s + xc * (s * t) * du2;
    return em_sel_f32(x - x != 0, NAN, y); /* +-inf: inf * 0, as PyTorch; NaN */
}
/* Double: gelu'(x) in libm, for the gradient checks (float64 is not the hot dtype). */
EM_VINLINE double em_gelu_erf_grad_f64(double x) {
    double phi = exp(-0.5 * x * x) * 0x1.9884533d43651p-2; /* 1 / sqrt(2 pi) */
    return 0.5 * erfc(-x * 0x1.6a09e667f3bcdp-1) + x * phi;
}
EM_VINLINE double em_gelu_tanh_grad_f64(double x) {
    double u2 = 2 * 0x1.9884533d43651p-1 * (x + 0.044715 * x * x * x);
    double s = 1 / (1 + exp(-u2));
    double du2 = 2 * 0x1.9884533d43651p-1 * (1 + 3 * 0.044715 * x * x);
    return s + x * (s * (1 - s)) * du2;
}
/* Double versions: the rounding of u or of x / sqrt 2 would cost about u^2 or x^2 ulp for x << 0,
 * so both are formed in double-double (Dekker's exact product, no FMA), with the constants too. */
EM_VINLINE double em_gelu_f64(double x, int tanh_form) {
    double xc = em_clamp_f64(x, -40, 40); /* beyond, the result is x or -0 either way */
    double e, x3l, bl, ul;
    double x2 = em_two_prod_f64(xc, xc, &e);
    double x3 = em_dd_mul_f64(x2, e, xc, 0, &x3l);
    double b = em_dd_mul_f64(x3, x3l, 0x1.6e4e26d4801f7p-5, 0x1.441355475a31ap-59, &bl); /* 0.044715 */
    double v = xc + b, bb = v - xc; /* TwoSum */
    double vl = ((xc - (v - bb)) + (b - bb)) + bl;
    double u = em_dd_mul_f64(v, vl, 0x1.9884533d43651p+0, -0x1.cbc0d30ebfd15p-54, &ul); /* 2u */
    if (tanh_form) return em_xsigmoid_f64(x, u, ul);
    /* x Phi(x) = x erfc(z) / 2, z = -x / sqrt 2 = zh + zl: erfc(zh + zl) ~ erfc(zh) - zl erfc'(zh) */
    double zl, zh = em_dd_mul_f64(-xc, 0, 0x1.6a09e667f3bcdp-1, -0x1.bdd3413b26456p-55, &zl);
    double y = erfc(zh) - zl * 0x1.20dd750429b6dp+0 * exp(-zh * zh); /* 2 / sqrt(pi) */
    return em_sel_f64(x == xc, 0.5 * x * y, em_sel_f64(x > 0, x, 0 * x));
}
EM_VINLINE double em_gelu_erf_f64(double x) { return em_gelu_f64(x, 0); }
EM_VINLINE double em_gelu_tanh_f64(double x) { return em_gelu_f64(x, 1); }

/* ---- sin, cos: float through double; double in libm ------------------------------------------ */
/* Payne-Hanek reduction in integers (after ARM's optimized-routines sinf): x = m 2^(e - 150);
 * x 2/pi mod 4 as a 2.62 fixed-point number is bits 32..95 of m 2^(e mod 8) times a 96-bit window
 * of 2/pi picked by e / 8 (the table: bits of 2/pi, sliding by 8). The result has at most 29
 * leading zeros for any float, so the double remainder keeps more than 30 bits. Windows start at
 * e = 96 (|x| >= 2^-31); below, sin x = x and cos x = 1. */
static const uint32_t EM_INV_PIO2_BITS[28] = {
    0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x000000a2, 0x0000a2f9, 0x00a2f983,
    0xa2f9836e, 0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529, 0x441529fc, 0x1529fc27,
    0x29fc2757, 0xfc2757d1, 0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0, 0x34ddc0db,
    0xddc0db62, 0xc0db6295, 0xdb629599, 0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041};
/* (sin(r) - r) / r^3 and (cos(r) - 1 + r^2/2) / r^4 as functions of r^2 <= (pi/4)^2 */
static const double EM_SIN_P[] = {-0x1.555555545e0acp-3, 0x1.11110def2e1c9p-7,
                                  -0x1.a013a793b98cep-13, 0x1.6dbe0838a06e9p-19};
static const double EM_COS_P[] = {0x1.5555555502cf4p-5, -0x1.6c16bf54e7232p-10,
                                  0x1.a015c47d920acp-16, -0x1.25244e23e6e3ap-22};

/* |x| = n pi/2 + r, |r| <= pi/4, for finite |x| >= 2^-31 */
EM_VINLINE double em_reduce_pio2_f32(float x, uint32_t *n) {
    uint32_t ix = em_bits_f32(x) & 0x7fffffffu;
    uint32_t e = ix >> 23;
    uint32_t j = ((e < 96 ? 96 : e) >> 3) - 12; /* tiny x: any window, the result is not used */
    uint32_t m = ((ix & 0x7fffffu) | 0x800000u) << (e & 7);
    uint64_t hi = (uint64_t)(m * EM_INV_PIO2_BITS[j]) << 32;
    uint64_t mid = (uint64_t)m * EM_INV_PIO2_BITS[j + 4];
    uint64_t lo = ((uint64_t)m * EM_INV_PIO2_BITS[j + 8]) >> 32;
    uint64_t v = hi + mid + lo;
    uint64_t q = (v + (1ull << 61)) >> 62;
    v -= q << 62; /* now signed, in [-2^61, 2^61) */
    *n = (uint32_t)q;
    /* int64 to double through two int32 halves (no vector int64 conversion in AVX2) */
    double hi_d = (double)(int32_t)(uint32_t)(v >> 32) * 0x1p32;
    double d = hi_d + (double)(int32_t)((uint32_t)v >> 1) * 2;
    return d * 0x1.921fb54442d18p-62; /* pi/2 2^-62 */
}

/* sin for cos_shift 0, cos for 1: quadrant n + cos_shift picks +-sin(r) or +-cos(r) */
EM_VINLINE float em_sincos_f32(float x, uint32_t cos_shift) {
    uint32_t n;
    double r = em_reduce_pio2_f32(x, &n);
    double w = r * r;
    double s = r + r * w * EM_POLY(f64, w, EM_SIN_P);
    double c = 1 - 0.5 * w + w * w * EM_POLY(f64, w, EM_COS_P);
    n += cos_shift;
    double y = em_sel_f64(n & 1, c, s);
    y = em_sel_f64(n & 2, -y, y);
    float tiny = cos_shift ? 1.0f : em_abs_f32(x); /* |x| < 2^-31: sin |x| = |x|, cos 1 */
    float v = em_sel_f32(em_abs_f32(x) < 0x1p-31f, tiny, (float)y);
    return em_sel_f32(x - x != 0, NAN, v); /* inf, NaN */
}
EM_VINLINE float em_sin_f32(float x) { return em_mulsign_f32(em_sincos_f32(x, 0), x); }
EM_VINLINE float em_cos_f32(float x) { return em_sincos_f32(x, 1); }
EM_VINLINE double em_sin_f64(double x) { return sin(x); }
EM_VINLINE double em_cos_f64(double x) { return cos(x); }

/* ---- type-generic names for the .def expressions --------------------------------------------- */
#define EM_GENERIC(name, x) _Generic((x), float: em_##name##_f32, default: em_##name##_f64)
#define em_sel(c, a, b) EM_GENERIC(sel, (a) + (b))(c, a, b) /* the common type of a and b */
#define em_exp(x) EM_GENERIC(exp, x)(x)
#define em_expm1(x) EM_GENERIC(expm1, x)(x)
#define em_log(x) EM_GENERIC(log, x)(x)
#define em_log1p(x) EM_GENERIC(log1p, x)(x)
#define em_tanh(x) EM_GENERIC(tanh, x)(x)
#define em_sigmoid(x) EM_GENERIC(sigmoid, x)(x)
#define em_silu(x) EM_GENERIC(silu, x)(x)
#define em_silu_grad(x) EM_GENERIC(silu_grad, x)(x)
#define em_gelu_erf(x) EM_GENERIC(gelu_erf, x)(x)
#define em_gelu_tanh(x) EM_GENERIC(gelu_tanh, x)(x)
#define em_gelu_erf_grad(x) EM_GENERIC(gelu_erf_grad, x)(x)
#define em_gelu_tanh_grad(x) EM_GENERIC(gelu_tanh_grad, x)(x)
#define em_erf(x) EM_GENERIC(erf, x)(x)
#define em_erfc(x) EM_GENERIC(erfc, x)(x)
#define em_sin(x) EM_GENERIC(sin, x)(x)
#define em_cos(x) EM_GENERIC(cos, x)(x)
#define em_softplus(x) EM_GENERIC(softplus, x)(x)
#define em_mish(x) EM_GENERIC(mish, x)(x)
#define em_logaddexp(a, b) EM_GENERIC(logaddexp, a)(a, b)

#endif
