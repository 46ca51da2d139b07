/* Elementwise kernels. kernels/elementwise.py compiles one program per op holding the kernels of
 * every dtype the op has on the device: this file's second part is repeated once per dtype, and
 * PoCL builds one program with ten dtypes in about twice the time of one with one dtype. It
 * defines, once per program:
 *   ARITY  1, 2 or 3
 * and before each dtype's part (which undefines them at its end):
 *   T      the operands' dtype token (compute type ct = CT_T); the kernels are named ew_T and
 *          ew_strided_T (ew_f32...)
 *   A      the first operand's token: T, or b for where's condition
 *   OUT    the result's token: T, or b for comparisons and tests
 *   EXPR   the op's expression (the CPU plugin's .def line): it reads x (unary) or a, b, c, the
 *          parameters p->f[0..2], and may report an error through p->status (HAS_STATUS)
 * The expressions' helpers are ewmath.cl's (the glue prepends it). Each operand is a (buffer,
 * element offset) pair or, when bit k of `scalars` is set, the scalar argument next to it.
 */

/* ---- what every dtype's kernels share (once per program) ------------------------------------- */
#ifndef EM_ELEMENTWISE_SHARED
#define EM_ELEMENTWISE_SHARED
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
 * `ew_T` for contiguous operands (n elements from each offset, no index arithmetic) and
 * `ew_strided_T` for any strides over `shape` (up to 8 merged dims: the glue splits what has more).
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

#endif /* EM_ELEMENTWISE_SHARED */

/* ---- one dtype's kernels -------------------------------------------------------------------- */
#ifdef HAS_STATUS
#define REPORT() if (P.status) em_fail(status, P.status, 0)
#else
#define REPORT() (void)status
#endif

kernel void EM_CAT(ew_, T)(global ST(OUT) *o, global const ST(A) *pa, global const ST(T) *pb,
                           global const ST(T) *pc, long16 meta, global long *status) {
    EW_PROLOGUE
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        OPERANDS_IN(ao + i, bo + i, co + i)
        STORE(o, oo + i, (EXPR));
    }
    REPORT();
}

kernel void EM_CAT(ew_strided_, T)(global ST(OUT) *o, global const ST(A) *pa,
                                    global const ST(T) *pb, global const ST(T) *pc, long16 meta,
                                    long8 shape, long8 s0, long8 s1, long8 s2, long8 s3,
                                    global long *status) {
    EW_PROLOGUE
    const int narrow = n <= UINT_MAX;
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        EM_OFFSETS4(i, narrow);
        OPERANDS_IN(ao + o1, bo + o2, co + o3)
        STORE(o, oo + o0, (EXPR));
    }
    REPORT();
}

#undef REPORT
#undef HAS_STATUS
#undef EXPR
#undef OUT
#undef A
#undef T
