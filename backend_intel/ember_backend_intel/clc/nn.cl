/* Fused nn kernels: softmax and log_softmax along a dim, im2col/col2im (unfold/fold, the halves
 * of a convolution around its GEMM) and max_pool2d with indices. kernels/nn.py compiles one
 * program per dtype (T, LOCAL), for floating dtypes only; arithmetic in float (double for
 * float64).
 */
#define ACC CT(T)

/* ---- softmax / log_softmax: out = exp(x - max) / sum, or (x - max) - log(sum) ---------------- *
 * One work-group per line (lines of x along dim: base offsets from the other dims' merged shape
 * and strides), or one work-item per line when lines are short. The maximum propagates NaN, as
 * amax does in the decomposition. */
#define LINE_ARGS long8 lshape_, long8 xl_, long8 ol_, int nl, long lines, long n, long xd, long od
#define LINE_UNPACK EM_UNPACK(lshape, lshape_); EM_UNPACK(xl, xl_); EM_UNPACK(ol, ol_)
#define MAX_NAN(a, b) ((((b) > (a)) | ((b) != (b))) ? (b) : (a))

inline void em_softmax_write(global ST(T) *o, long ob, long od, global const ST(T) *x, long xb,
                             long xd, long j, ACC m, ACC total, int log_out) {
    ACC shifted = LD(T, x, xb + j * xd) - m;
    SV(T, o, ob + j * od, log_out ? shifted - log(total) : exp(shifted) / total);
}

kernel void softmax_items(global ST(T) *o, long oo, global const ST(T) *x, long xo, LINE_ARGS,
                          int log_out) {
    LINE_UNPACK;
    for (long l = get_global_id(0); l < lines; l += get_global_size(0)) {
        const long xb = xo + em_offset(l, nl, lshape, xl), ob = oo + em_offset(l, nl, lshape, ol);
        ACC m = -INFINITY, total = 0;
        for (long j = 0; j < n; j++) m = MAX_NAN(m, LD(T, x, xb + j * xd));
        for (long j = 0; j < n; j++) total += exp(LD(T, x, xb + j * xd) - m);
        for (long j = 0; j < n; j++) em_softmax_write(o, ob, od, x, xb, xd, j, m, total, log_out);
    }
}

kernel void softmax_groups(global ST(T) *o, long oo, global const ST(T) *x, long xo, LINE_ARGS,
                           int log_out) {
    local ACC part[LOCAL];
    LINE_UNPACK;
    const int lid = get_local_id(0), width = get_local_size(0);
    for (long l = get_group_id(0); l < lines; l += get_num_groups(0)) {
        const long xb = xo + em_offset(l, nl, lshape, xl), ob = oo + em_offset(l, nl, lshape, ol);
        ACC m = -INFINITY;
        for (long j = lid; j < n; j += width) m = MAX_NAN(m, LD(T, x, xb + j * xd));
        part[lid] = m;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = width / 2; s > 0; s >>= 1) {
            if (lid < s) part[lid] = MAX_NAN(part[lid], part[lid + s]);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        m = part[0];
        barrier(CLK_LOCAL_MEM_FENCE);
        ACC total = 0;
        for (long j = lid; j < n; j += width) total += exp(LD(T, x, xb + j * xd) - m);
        part[lid] = total;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = width / 2; s > 0; s >>= 1) {
            if (lid < s) part[lid] += part[lid + s];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        total = part[0];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (long j = lid; j < n; j += width)
            em_softmax_write(o, ob, od, x, xb, xd, j, m, total, log_out);
    }
}

/* ---- im2col / col2im ------------------------------------------------------------------------- *
 * Images (N, C, H, W) with strides (sn, sc, sh, sw); columns (N, C*kh*kw, oh*ow). */
#define WINDOW_ARGS long C, long H, long W, int kh, int kw, int dh, int dw, int ph, int pw, \
    int sth, int stw, long oh, long ow, long total

/* out[n, (c, ki, kj), (y, x)] = image[n, c, y*sth - ph + ki*dh, x*stw - pw + kj*dw] or 0. */
kernel void im2col(global ST(T) *o, long oo, global const ST(T) *x, long xo, long sn, long sc,
                   long sh, long sw, WINDOW_ARGS) {
    for (long i = get_global_id(0); i < total; i += get_global_size(0)) {
        long r = i;
        const long px = r % ow; r /= ow;
        const long py = r % oh; r /= oh;
        const int kj = r % kw; r /= kw;
        const int ki = r % kh; r /= kh;
        const long c = r % C, n = r / C;
        const long h = py * sth - ph + ki * dh, w = px * stw - pw + kj * dw;
        o[oo + i] = (h >= 0 && h < H && w >= 0 && w < W) ? x[xo + n * sn + c * sc + h * sh + w * sw]
                                                         : (ST(T))0;
    }
}

/* out[n, c, h, w] = the sum of the columns' entries that im2col took from (h, w), in the order
 * (ki, kj) the CPU's decomposition adds them; a gather, so no two work-items write one pixel. */
kernel void col2im(global ST(T) *o, long oo, global const ST(T) *cols, long co, long s0, long s1,
                   long s2, WINDOW_ARGS) {
    for (long i = get_global_id(0); i < total; i += get_global_size(0)) {
        long r = i;
        const long w = r % W; r /= W;
        const long h = r % H; r /= H;
        const long c = r % C, n = r / C;
        ACC acc = 0;
        for (int ki = 0; ki < kh; ki++) {
            const long hy = h + ph - ki * dh;
            if (hy < 0 || hy % sth) continue;
            const long py = hy / sth;
            if (py >= oh) continue;
            for (int kj = 0; kj < kw; kj++) {
                const long wx = w + pw - kj * dw;
                if (wx < 0 || wx % stw) continue;
                const long px = wx / stw;
                if (px >= ow) continue;
                const long row = (c * kh + ki) * kw + kj;
                acc += LD(T, cols, co + n * s0 + row * s1 + (py * ow + px) * s2);
            }
        }
        SV(T, o, oo + i, acc);
    }
}

/* ---- max_pool2d with indices ----------------------------------------------------------------- *
 * Planes p < N*C of x at (p / C) * sn + (p % C) * sc; out[p, y, x] = the window's first maximum
 * (a NaN wins), and its flat position h * W + w in the plane. Padding never wins. */
kernel void max_pool2d(global ST(T) *ov, long vo, global long *oi, long io, global const ST(T) *x,
                       long xo, long sn, long sc, long sh, long sw, WINDOW_ARGS) {
    for (long i = get_global_id(0); i < total; i += get_global_size(0)) {
        long r = i;
        const long px = r % ow; r /= ow;
        const long py = r % oh; r /= oh;
        const long plane = xo + (r / C) * sn + (r % C) * sc;
        ACC best = -INFINITY;
        long at = -1;
        for (int ki = 0; ki < kh; ki++) {
            const long h = py * sth - ph + ki * dh;
            if (h < 0 || h >= H) continue;
            for (int kj = 0; kj < kw; kj++) {
                const long w = px * stw - pw + kj * dw;
                if (w < 0 || w >= W) continue;
                ACC v = LD(T, x, plane + h * sh + w * sw);
                if (at < 0 || v > best || (v != v && best == best)) {
                    best = v;
                    at = h * W + w;
                }
            }
        }
        SV(T, ov, vo + i, best);
        oi[io + i] = at;
    }
}
