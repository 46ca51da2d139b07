/* Indexing kernels: gather/scatter, index_select/index_add, take/put_, nonzero. kernels/index.py
 * compiles one program per dtype (T, and LOCAL for nonzero's work-group).
 *
 * Index values are checked where they are read: a bad one is reported through `status` (with
 * its value) and never dereferenced. Pure data movement copies storage as it is (the bits of
 * half types, NaN payloads included); adds go through the compute type. The accumulating kernels
 * take dim out of the iteration space and walk it inside one work-item, as the CPU's loops do,
 * so work-items never write the same element and duplicates add up in order: no atomics.
 *
 * The accumulating kernels write into ST(OT): T itself, or with WIDE (half T, only for adds) a
 * float32 copy of the destination that the glue narrows once at the end, as the CPU does, so
 * repeated adds do not round at every step.
 */
#ifdef WIDE
#define OT f32
#else
#define OT T
#endif

/* out[p] = x[p with p[dim] = index[p]] for p over index's shape; out contiguous. */
kernel void gather(global ST(T) *o, long oo, long8 os_, global const ST(T) *x, long xo,
                   long8 xs_, global const long *ix, long io, long8 is_, long8 shape_, int nd,
                   long n, int dim, long size, global long *status) {
    EM_UNPACK(shape, shape_);
    EM_UNPACK(os, os_);
    EM_UNPACK(xs, xs_);
    EM_UNPACK(is, is_);
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        long at[8];
        em_unravel(i, nd, shape, at);
        long v = ix[io + em_dot(nd, at, is)];
        if (v < 0 || v >= size) {
            em_fail(status, EM_INDEX_OUT_OF_RANGE, v);
            continue;
        }
        const long to = oo + em_dot(nd, at, os); /* before at[dim] becomes the index */
        at[dim] = v;
        o[to] = x[xo + em_dot(nd, at, xs)];
    }
}

/* out[p with p[dim] = index[p]] = src[p] (add: +=): one work-item per line along dim. */
kernel void scatter(global ST(OT) *o, long oo, long8 os_, global const long *ix, long io,
                    long8 is_, global const ST(T) *s, long so, long8 ss_, long8 shape_, int nd,
                    long lines, int dim, long count, long size, int add, global long *status) {
    EM_UNPACK(shape, shape_);
    EM_UNPACK(os, os_);
    EM_UNPACK(is, is_);
    EM_UNPACK(ss, ss_);
    for (long l = get_global_id(0); l < lines; l += get_global_size(0)) {
        long at[8];
        em_unravel(l, nd, shape, at); /* shape[dim] is 1: at[dim] = 0 */
        const long ob = oo + em_dot(nd, at, os), ib = io + em_dot(nd, at, is);
        const long sb = so + em_dot(nd, at, ss);
        for (long k = 0; k < count; k++) {
            long v = ix[ib + k * is[dim]];
            if (v < 0 || v >= size) {
                em_fail(status, EM_INDEX_OUT_OF_RANGE, v);
                break;
            }
            const long d = ob + v * os[dim], from = sb + k * ss[dim];
            if (add)
                SV(OT, o, d, LD(OT, o, d) + LD(T, s, from));
            else
                o[d] = s[from];
        }
    }
}

/* out[..., index[k], ...] += alpha * src[..., k, ...]: one work-item per line along dim. */
kernel void index_add(global ST(OT) *o, long oo, long8 os_, global const long *ix, long io,
                      long istep, global const ST(T) *s, long so, long8 ss_, long8 shape_, int nd,
                      long lines, int dim, long count, long size, em_real alpha_f, long alpha_i,
                      global long *status) {
    EM_UNPACK(shape, shape_);
    EM_UNPACK(os, os_);
    EM_UNPACK(ss, ss_);
    for (long l = get_global_id(0); l < lines; l += get_global_size(0)) {
        long at[8];
        em_unravel(l, nd, shape, at); /* shape[dim] is 1: at[dim] = 0 */
        const long ob = oo + em_dot(nd, at, os), sb = so + em_dot(nd, at, ss);
        for (long k = 0; k < count; k++) {
            long v = ix[io + k * istep];
            if (v < 0 || v >= size) {
                em_fail(status, EM_INDEX_OUT_OF_RANGE, v);
                break;
            }
            const long d = ob + v * os[dim];
#if ISF(T)
            const CT(T) add = (CT(T))(alpha_f * LD(T, s, sb + k * ss[dim]));
#else
            const CT(T) add = (CT(T))(alpha_i * LD(T, s, sb + k * ss[dim]));
#endif
            SV(OT, o, d, LD(OT, o, d) + add);
        }
    }
}

/* Flat indices into x's row-major order (x any strides, merged dims); negative ones wrap. */
#define FLAT_ARGS long8 xshape_, long8 xs_, int xnd, long size
#define FLAT_UNPACK EM_UNPACK(xshape, xshape_); EM_UNPACK(xs, xs_)
#define FLAT(v) em_offset((v) < 0 ? (v) + size : (v), xnd, xshape, xs)
#define BAD(v) ((v) < -size || (v) >= size)

kernel void take(global ST(T) *o, long oo, global const ST(T) *x, long xo, FLAT_ARGS,
                 global const long *ix, long io, long8 ishape_, long8 is_, int ind, long n,
                 global long *status) {
    FLAT_UNPACK;
    EM_UNPACK(ishape, ishape_);
    EM_UNPACK(is, is_);
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        long v = ix[io + em_offset(i, ind, ishape, is)];
        if (BAD(v)) {
            em_fail(status, EM_INDEX_OUT_OF_RANGE, v);
            continue;
        }
        o[oo + i] = x[xo + FLAT(v)];
    }
}

/* put_ checks every index before anything is written (it works in place). */
kernel void put_check(global const long *ix, long io, long8 ishape_, long8 is_, int ind, long n,
                      long size, global long *status) {
    EM_UNPACK(ishape, ishape_);
    EM_UNPACK(is, is_);
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        long v = ix[io + em_offset(i, ind, ishape, is)];
        if (BAD(v)) em_fail(status, EM_INDEX_OUT_OF_RANGE, v);
    }
}

/* x.flatten()[index[p]] = src[p], or += in order by one work-item when accumulating (duplicate
 * indices must all count). src has index's shape and strides ss. */
kernel void put(global ST(OT) *x, long xo, FLAT_ARGS, global const long *ix, long io,
                long8 ishape_, long8 is_, global const ST(T) *s, long so, long8 ss_, int ind,
                long n, int accumulate) {
    FLAT_UNPACK;
    EM_UNPACK(ishape, ishape_);
    EM_UNPACK(is, is_);
    EM_UNPACK(ss, ss_);
    if (accumulate) {
        if (get_global_id(0) != 0) return;
        for (long i = 0; i < n; i++) {
            long v = ix[io + em_offset(i, ind, ishape, is)];
            const long d = xo + FLAT(v);
            SV(OT, x, d, LD(OT, x, d) + LD(T, s, so + em_offset(i, ind, ishape, ss)));
        }
        return;
    }
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        long v = ix[io + em_offset(i, ind, ishape, is)];
        x[xo + FLAT(v)] = s[so + em_offset(i, ind, ishape, ss)];
    }
}

/* Row-major coordinates of the non-zero elements of x into o [count, nd]: one work-group; each
 * work-item counts a contiguous run of positions, a scan gives each run its first row. */
kernel void nonzero(global long *o, long oo, global const ST(T) *x, long xo, long8 shape_,
                    long8 xs_, int nd, long n, long count, int flat) {
    local long first[LOCAL];
    EM_UNPACK(shape, shape_);
    EM_UNPACK(xs, xs_);
    const int lid = get_local_id(0), width = get_local_size(0);
    const long chunk = (n + width - 1) / width, begin = lid * chunk;
    const long end = min(begin + chunk, n);
    long found = 0;
    for (long i = begin; i < end; i++) found += LD(T, x, xo + em_offset(i, nd, shape, xs)) != 0;
    first[lid] = found;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        long run = 0;
        for (int t = 0; t < width; t++) {
            long c = first[t];
            first[t] = run;
            run += c;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    long row = first[lid];
    for (long i = begin; i < end && row < count; i++) {
        if (LD(T, x, xo + em_offset(i, nd, shape, xs)) != 0) {
            if (flat) { /* the row-major position; `unravel` makes coordinates of it */
                o[oo + row++] = i;
                continue;
            }
            long at[8];
            em_unravel(i, nd, shape, at);
            for (int d = 0; d < nd; d++) o[oo + row * nd + d] = at[d];
            row++;
        }
    }
}

/* Columns col..col+nd-1 of `count` rows of `width` coordinates: those of the dims of `shape`
 * (a run of a tensor's dims, `inner` elements after it) at row-major positions lin[r]. */
kernel void unravel(global long *o, long oo, int width, int col, global const long *lin,
                    long inner, long8 shape_, int nd, long count) {
    EM_UNPACK(shape, shape_);
    for (long r = get_global_id(0); r < count; r += get_global_size(0)) {
        long at[8];
        em_unravel(lin[r] / inner, nd, shape, at);
        for (int d = 0; d < nd; d++) o[oo + r * width + col + d] = at[d];
    }
}
