/* Copies with casts, fill, arange and linspace. kernels/copy.py compiles one program per source
 * dtype S for copies, this file repeated once per destination D (kernels copy_to_D; the glue
 * undefines D between them), and one per dtype T for the rest. Conversions follow the CPU plugin's copy.c: floats reach integers through int64
 * (-1.0 -> uint8 gives 255), bool tests against zero (0.5 -> true).
 */
#ifdef S
#if ISF(S)
#define CONVERT(v) EM_CAT(FCVT_, D)(v)
#else
#define CONVERT(v) (v)
#endif
/* Float to D: a bool is v != 0, an integer goes through int64 first. */
#define FCVT_b(v) (v)
#define FCVT_u8(v) em_f2l(v)
#define FCVT_i8(v) em_f2l(v)
#define FCVT_i16(v) em_f2l(v)
#define FCVT_i32(v) em_f2l(v)
#define FCVT_i64(v) em_f2l(v)
#define FCVT_f16(v) (v)
#define FCVT_bf16(v) (v)
#define FCVT_f32(v) (v)
#define FCVT_f64(v) (v)

/* nd == 0: both contiguous with n elements; else any strides over `shape`. */
kernel void EM_CAT(copy_to_, D)(global ST(D) *o, long oo, long8 so_, global const ST(S) *x,
                                long xo, long8 sx_, long8 shape_, int nd, long n) {
    if (nd == 0) {
        for (long i = get_global_id(0); i < n; i += get_global_size(0))
            SV(D, o, oo + i, CONVERT(LD(S, x, xo + i)));
        return;
    }
    const long8 shape = shape_, s0 = so_, s1 = sx_, s2 = 0, s3 = 0; /* o2, o3 go unused */
    const int narrow = n <= UINT_MAX;
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        EM_OFFSETS4(i, narrow);
        SV(D, o, oo + o0, CONVERT(LD(S, x, xo + o1)));
    }
}
#endif

#ifdef T
/* `value` arrives as T's storage (half types as their bits). */
kernel void fill(global ST(T) *o, long oo, long8 so_, long8 shape_, int nd, long n,
                 ST(T) value) {
    if (nd == 0) {
        for (long i = get_global_id(0); i < n; i += get_global_size(0)) o[oo + i] = value;
        return;
    }
    const long8 shape = shape_, s0 = so_, s1 = 0, s2 = 0, s3 = 0; /* o1..o3 go unused */
    const int narrow = n <= UINT_MAX;
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        EM_OFFSETS4(i, narrow);
        o[oo + o0] = value;
    }
}

#ifdef EM_FP64
typedef double em_wide;
#else
typedef float em_wide;
#endif

/* out[k] = start + k * step: floats in double (float without fp64), integers in int64. */
kernel void arange(global ST(T) *o, long oo, em_real start, em_real step, long istart, long istep,
                   long n) {
    for (long k = get_global_id(0); k < n; k += get_global_size(0)) {
#if ISF(T)
        SV(T, o, oo + k, (em_wide)start + (em_wide)step * (em_wide)k);
#else
        SV(T, o, oo + k, istart + istep * k);
#endif
    }
}

/* PyTorch's linspace: the first half steps up from start, the second half down from end. */
kernel void linspace(global ST(T) *o, long oo, em_real start, em_real end, long n) {
    em_wide step = n > 1 ? ((em_wide)end - (em_wide)start) / (em_wide)(n - 1) : 0;
    long mid = n / 2;
    for (long k = get_global_id(0); k < n; k += get_global_size(0)) {
        em_wide v = k < mid ? (em_wide)start + step * (em_wide)k
                             : (em_wide)end - step * (em_wide)(n - 1 - k);
#if ISF(T)
        SV(T, o, oo + k, v);
#else
        SV(T, o, oo + k, em_f2l(v));
#endif
    }
}
#endif
