/* Reductions (sum, prod, amax, amin, all, any over any set of dims), max/min/argmax/argmin along
 * one dim, and the cumsum/cumprod scans. kernels/reduce.py compiles one program per (op, dtype),
 * defining T (input token), OUT (output token), OP, LOCAL (the work-group size) and, for max/min
 * and the arg variants, INDEXED with CMP (greater or less).
 *
 * Layout: output m (the outputs are fresh and contiguous, row-major over the kept dims) reads x at
 * xo + unravel(m over kshape) . kst; the reduced elements j at unravel(j over rshape) . rst. Three
 * kernels share that walk: *_items (one work-item per output, for short reductions), *_groups
 * (a work-group per output, or per chunk of one: with S > 1 chunks, partial results go to a
 * scratch buffer) and *_partials (folds the S partials of each output, in order).
 *
 * Accumulation: bool and integers in int64 (wrapping, as the CPU), float16/bfloat16/float32 in
 * float, float64 in double. The tree combines in a fixed order, so results do not depend on the
 * timing of the device, though they may differ from the CPU's order in the last bits.
 */
#if ISF(T)
#define ISNAN(v) ((v) != (v))
#define SACC CT(T)
#else
#define ISNAN(v) 0
#define SACC long
#endif

#define LO_b 0
#define LO_u8 0
#define LO_i8 CHAR_MIN
#define LO_i16 SHRT_MIN
#define LO_i32 INT_MIN
#define LO_i64 LONG_MIN
#define LO_f16 (-INFINITY)
#define LO_bf16 (-INFINITY)
#define LO_f32 (-INFINITY)
#define LO_f64 (-INFINITY)
#define HI_b 1
#define HI_u8 UCHAR_MAX
#define HI_i8 CHAR_MAX
#define HI_i16 SHRT_MAX
#define HI_i32 INT_MAX
#define HI_i64 LONG_MAX
#define HI_f16 INFINITY
#define HI_bf16 INFINITY
#define HI_f32 INFINITY
#define HI_f64 INFINITY

/* Per op R_<name> (prefixed: all, any, max and min are OpenCL built-ins): ACC the accumulator
 * type, ID its identity, VAL(v) an element (compute type) as one, COMB the combination. */
#define ACC_R_sum SACC
#define ID_R_sum 0
#define VAL_R_sum(v) ((SACC)(v))
#define COMB_R_sum(a, b) ((a) + (b))
#define ACC_R_prod SACC
#define ID_R_prod 1
#define VAL_R_prod(v) ((SACC)(v))
#define COMB_R_prod(a, b) ((a) * (b))
/* amax/amin propagate NaN: a NaN b always wins, a NaN a is never replaced. */
#define ACC_R_amax CT(T)
#define ID_R_amax EM_CAT(LO_, T)
#define VAL_R_amax(v) (v)
#define COMB_R_amax(a, b) ((((b) > (a)) | ISNAN(b)) ? (b) : (a))
#define ACC_R_amin CT(T)
#define ID_R_amin EM_CAT(HI_, T)
#define VAL_R_amin(v) (v)
#define COMB_R_amin(a, b) ((((b) < (a)) | ISNAN(b)) ? (b) : (a))
#define ACC_R_all uchar
#define ID_R_all 1
#define VAL_R_all(v) ((uchar)((v) != 0))
#define COMB_R_all(a, b) ((a) & (b))
#define ACC_R_any uchar
#define ID_R_any 0
#define VAL_R_any(v) ((uchar)((v) != 0))
#define COMB_R_any(a, b) ((a) | (b))

/* Where output m reads x, and where its j-th reduced element is. */
#define X_BASE(m) (xo + (nk ? em_offset((m), nk, kshape, kst) : 0))
#define X_AT(base, j) ((base) + (nr == 1 ? (j) * rst[0] : em_offset((j), nr, rshape, rst)))
#define WALK_ARGS long8 kshape_, long8 kst_, int nk, long8 rshape_, long8 rst_, int nr, long R
#define WALK_UNPACK EM_UNPACK(kshape, kshape_); EM_UNPACK(kst, kst_); EM_UNPACK(rshape, rshape_); \
    EM_UNPACK(rst, rst_)

#ifdef OP
#define ACC EM_OPCAT(ACC_, OP)
#define ID EM_OPCAT(ID_, OP)
#define VAL(v) EM_OPCAT(VAL_, OP)(v)
#define COMB(a, b) EM_OPCAT(COMB_, OP)(a, b)

kernel void reduce_items(global ST(OUT) *o, long oo, global const ST(T) *x, long xo, WALK_ARGS,
                         long M) {
    WALK_UNPACK;
    for (long m = get_global_id(0); m < M; m += get_global_size(0)) {
        long base = X_BASE(m);
        ACC acc = ID;
        for (long j = 0; j < R; j++) acc = COMB(acc, VAL(LD(T, x, X_AT(base, j))));
        SV(OUT, o, oo + m, acc);
    }
}

kernel void reduce_groups(global ST(OUT) *o, long oo, global ACC *partial, global const ST(T) *x,
                          long xo, WALK_ARGS, long chunk, int S) {
    local ACC scratch[LOCAL];
    WALK_UNPACK;
    const long g = get_group_id(0), m = g / S, begin = (g % S) * chunk;
    const long end = min(begin + chunk, R);
    const int lid = get_local_id(0);
    long base = X_BASE(m);
    ACC acc = ID;
    for (long j = begin + lid; j < end; j += get_local_size(0))
        acc = COMB(acc, VAL(LD(T, x, X_AT(base, j))));
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (lid < s) scratch[lid] = COMB(scratch[lid], scratch[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        if (S == 1)
            SV(OUT, o, oo + m, scratch[0]);
        else
            partial[g] = scratch[0];
    }
}

kernel void reduce_partials(global ST(OUT) *o, long oo, global const ACC *partial, int S, long M) {
    for (long m = get_global_id(0); m < M; m += get_global_size(0)) {
        ACC acc = partial[m * S];
        for (int s = 1; s < S; s++) acc = COMB(acc, partial[m * S + s]);
        SV(OUT, o, oo + m, acc);
    }
}
#endif

#ifdef INDEXED
/* max/min/argmax/argmin: does v replace the running extreme b? Strict, so the first occurrence
 * wins; the first NaN wins and stays. Partial results from different ranges break ties by the
 * lower index. Values go to ov only when `values` is set (argmax/argmin have none). */
#define BETTER_greater(v, b) (((v) > (b)) | (ISNAN(v) & !ISNAN(b)))
#define BETTER_less(v, b) (((v) < (b)) | (ISNAN(v) & !ISNAN(b)))
#define BETTER(v, b) EM_OPCAT(BETTER_, CMP)(v, b)
#define TAKES(v2, i2, v1, i1) (BETTER(v2, v1) || (!BETTER(v1, v2) && (i2) < (i1)))
#define STORE(m, v, i) do { if (values) SV(T, ov, oo + (m), v); oi[oio + (m)] = (i); } while (0)

kernel void index_items(global ST(T) *ov, long oo, global long *oi, long oio, int values,
                        global const ST(T) *x, long xo, WALK_ARGS, long M) {
    WALK_UNPACK;
    for (long m = get_global_id(0); m < M; m += get_global_size(0)) {
        long base = X_BASE(m), at = 0;
        CT(T) best = LD(T, x, base);
        for (long j = 1; j < R; j++) {
            CT(T) v = LD(T, x, X_AT(base, j));
            if (BETTER(v, best)) {
                best = v;
                at = j;
            }
        }
        STORE(m, best, at);
    }
}

kernel void index_groups(global ST(T) *ov, long oo, global long *oi, long oio, int values,
                         global CT(T) *pv, global long *pi, global const ST(T) *x, long xo,
                         WALK_ARGS, long chunk, int S) {
    local CT(T) sv[LOCAL];
    local long si[LOCAL];
    WALK_UNPACK;
    const long g = get_group_id(0), m = g / S, begin = (g % S) * chunk;
    const long end = min(begin + chunk, R);
    const int lid = get_local_id(0);
    long base = X_BASE(m), at = -1;
    CT(T) best = 0;
    for (long j = begin + lid; j < end; j += get_local_size(0)) {
        CT(T) v = LD(T, x, X_AT(base, j));
        if (at < 0 || BETTER(v, best)) {
            best = v;
            at = j;
        }
    }
    sv[lid] = best;
    si[lid] = at;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (lid < s && si[lid + s] >= 0 &&
            (si[lid] < 0 || TAKES(sv[lid + s], si[lid + s], sv[lid], si[lid]))) {
            sv[lid] = sv[lid + s];
            si[lid] = si[lid + s];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        if (S == 1) {
            STORE(m, sv[0], si[0]);
        } else {
            pv[g] = sv[0];
            pi[g] = si[0];
        }
    }
}

kernel void index_partials(global ST(T) *ov, long oo, global long *oi, long oio, int values,
                           global const CT(T) *pv, global const long *pi, int S, long M) {
    for (long m = get_global_id(0); m < M; m += get_global_size(0)) {
        CT(T) best = pv[m * S];
        long at = pi[m * S];
        for (int s = 1; s < S; s++) {
            if (pi[m * S + s] >= 0 && TAKES(pv[m * S + s], pi[m * S + s], best, at)) {
                best = pv[m * S + s];
                at = pi[m * S + s];
            }
        }
        STORE(m, best, at);
    }
}
#endif

#ifdef SCAN
/* cumsum/cumprod: one work-item per line along the dim, accumulating as the CPU does (int64 for
 * integers; double for floats where the device has it) and storing each running value. */
#if ISF(T) && defined(EM_FP64)
#define SCAN_ACC double
#else
#define SCAN_ACC ACC_R_sum
#endif

kernel void scan_lines(global ST(T) *o, long oo, global const ST(T) *x, long xo, long8 lshape_,
                       long8 lxs_, long8 los_, int nl, long lines, long n, long xd, long od) {
    EM_UNPACK(lshape, lshape_);
    EM_UNPACK(lxs, lxs_);
    EM_UNPACK(los, los_);
    for (long l = get_global_id(0); l < lines; l += get_global_size(0)) {
        long at[8];
        em_unravel(l, nl, lshape, at);
        long xb = xo + em_dot(nl, at, lxs), ob = oo + em_dot(nl, at, los);
        SCAN_ACC acc = EM_OPCAT(ID_, SCAN);
        for (long i = 0; i < n; i++) {
            acc = EM_OPCAT(COMB_, SCAN)(acc, (SCAN_ACC)LD(T, x, xb + i * xd));
            SV(T, o, ob + i * od, acc);
        }
    }
}
#endif
