/* Elementwise kernels. kernels/elementwise.py compiles one program per (op, dtype), defining:
 *   T      the operands' dtype token (compute type ct = CT_T)
 *   A      the first operand's token: T, or b for where's condition
 *   OUT    the result's token: T, or b for comparisons and tests
 *   ARITY  1, 2 or 3
 *   EXPR   the op's expression (the CPU plugin's .def line): it reads x (unary) or a, b, c, the
 *          parameters p->f[0..2], and may report an error through p->status (HAS_STATUS)
 * Each operand is a (buffer, element offset) pair or, when bit k of `scalars` is set, the scalar
 * argument next to it.
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
        return (F)0.5 * x * erfc(-x * (F)0.70710678118654752440);                                \
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
#define em_erf(x) erf(x)
#define em_erfc(x) erfc(x)
/* min(max(a, lo), hi) with NaN from any operand propagating, as in PyTorch. */
#define em_clamp(a, lo, hi) \
    ((lo) != (lo) ? (lo) : (hi) != (hi) ? (hi) : (a) < (lo) ? ((lo) > (hi) ? (hi) : (lo)) \
     : (a) > (hi) ? (hi) : (a))

/* ---- the kernels ----------------------------------------------------------------------------- */
#define ct CT(T)
#define act CT(A)
#define LDA(p, i) LD(A, p, i)
#define LDT(p, i) LD(T, p, i)
#define STORE(p, i, v) SV(OUT, p, i, v)

#if ARITY == 1
#define OPERANDS_IN(ia, ib, ic) act x = (scalars & 1) ? sa : LDA(pa, ia);
#else
#define FIRST(ia) act a = (scalars & 1) ? sa : LDA(pa, ia);
#if ARITY == 2
#define OPERANDS_IN(ia, ib, ic) FIRST(ia) ct b = (scalars & 2) ? sb : LDT(pb, ib);
#else
#define OPERANDS_IN(ia, ib, ic)                                                                   \
    FIRST(ia) ct b = (scalars & 2) ? sb : LDT(pb, ib);                                            \
    ct c = (scalars & 4) ? sc : LDT(pc, ic);
#endif
#endif

#ifdef HAS_STATUS
#define REPORT() if (P.status) em_fail(status, P.status, 0)
#else
#define REPORT() (void)status
#endif

/* A scalar travelling in an 8-byte slot of `meta` (the glue packs float in the low 4 bytes,
 * double whole, integers as long), read back in the type of `like`. */
inline float __attribute__((overloadable)) em_slot(long v, float like) { return as_float((int)v); }
#ifdef EM_FP64
inline double __attribute__((overloadable)) em_slot(long v, double like) { return as_double(v); }
#endif
inline long __attribute__((overloadable)) em_slot(long v, long like) { return v; }
inline int __attribute__((overloadable)) em_slot(long v, int like) { return (int)v; }
inline short __attribute__((overloadable)) em_slot(long v, short like) { return (short)v; }
inline char __attribute__((overloadable)) em_slot(long v, char like) { return (char)v; }
inline uchar __attribute__((overloadable)) em_slot(long v, uchar like) { return (uchar)v; }

/* `meta` holds what changes from call to call: element offsets oo ao bo co, n, nd, the
 * scalar-operand bits, the scalar operands sa sb sc, the op parameters p0 p1 p2. Two kernels:
 * `ew` for contiguous operands (n elements from each offset, no index arithmetic) and
 * `ew_strided` for any strides over `shape` (up to 8 merged dims: the glue splits what has more).
 * They are separate because PoCL's launch cost grows with the argument count (its copies each
 * one per launch): a contiguous call sets six arguments, and only the five that change. PoCL
 * compiles each kernel's work-group function on its first launch, so a program that only ever
 * sees contiguous operands never compiles the strided one. */
#define EW_PROLOGUE                                                                               \
    long m[16];                                                                                   \
    vstore16(meta, 0, m);                                                                         \
    const long oo = m[0], ao = m[1], bo = m[2], co = m[3], n = m[4];                              \
    const int nd = (int)m[5], scalars = (int)m[6];                                                \
    const act sa = em_slot(m[7], (act)0);                                                         \
    const ct sb = em_slot(m[8], (ct)0), sc = em_slot(m[9], (ct)0);                                \
    em_params P = {{em_slot(m[10], (em_real)0), em_slot(m[11], (em_real)0),                       \
                    em_slot(m[12], (em_real)0), 0}, {0, 0, 0, 0}, 0};                             \
    em_params *p = &P;                                                                            \
    (void)p;                                                                                      \
    (void)nd;                                                                                     \
    (void)sb;                                                                                     \
    (void)sc;

kernel void ew(global ST(OUT) *o, global const ST(A) *pa, global const ST(T) *pb,
               global const ST(T) *pc, long16 meta, global long *status) {
    EW_PROLOGUE
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        OPERANDS_IN(ao + i, bo + i, co + i)
        STORE(o, oo + i, (EXPR));
    }
    REPORT();
}

kernel void ew_strided(global ST(OUT) *o, global const ST(A) *pa, global const ST(T) *pb,
                       global const ST(T) *pc, long16 meta, long8 shape_, long8 so_, long8 sa_,
                       long8 sb_, long8 sc_, global long *status) {
    EW_PROLOGUE
    EM_UNPACK(shape, shape_);
    EM_UNPACK(so, so_);
    EM_UNPACK(s1, sa_);
    EM_UNPACK(s2, sb_);
    EM_UNPACK(s3, sc_);
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        long at[8];
        em_unravel(i, nd, shape, at);
        OPERANDS_IN(ao + em_dot(nd, at, s1), bo + em_dot(nd, at, s2), co + em_dot(nd, at, s3))
        STORE(o, oo + em_dot(nd, at, so), (EXPR));
    }
    REPORT();
}
