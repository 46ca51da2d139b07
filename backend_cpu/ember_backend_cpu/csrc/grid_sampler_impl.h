/* The grid sampler's loops for one dtype, included by grid_sampler.c once per dtype with GS_T
 * (the element type) and GS_(name) (the name with the dtype's suffix) defined. No include guard:
 * this is the body of a generator, not a header of declarations.
 *
 * 2-D follows ATen's vectorised kernel (cpu/GridSamplerKernel.cpp) operation by operation: its
 * un-normalisation (g + 1) * scale - 0.5, the clip that sends NaN to 0 in the forward, the
 * reflection by truncated division, weights from the fractions (nw = s * e), and values read as 0
 * outside the input and multiplied by their weight (a NaN weight gives NaN, as ATen's). 3-D
 * follows ATen's scalar loops (GridSampler.cpp): ((g + 1) * size - 1) / 2, std::min/max clips
 * (NaN goes to size - 1 in the forward), fmod reflection, weights from the corners, and only the
 * corners inside the input added. Sums run in ATen's order (channels in turn, corners in turn).
 * Unlike ATen, every index is bounds-checked: its 2-D border/reflection backward trusts its
 * clip, which NaN passes (ATen reads out of bounds there; here such a point adds nothing). */

#define T GS_T

static inline T GS_(scale)(int64_t size, int align) {
    return align ? (T)(size - 1) / 2 : (T)size / 2;
}

/* an index of a floor/round/clip result: v itself, or -2 (outside, as is -2 + 1) where ATen's
 * conversion overflows (NaN, infinities, |v| past any size) */
static inline int64_t GS_(index)(T v) {
    return (v > (T)-2 && v < (T)GS_BIG) ? (int64_t)v : -2;
}

/* ---- 2-D coordinates (ATen's ComputeLocation) ----------------------------------------------- */
static inline T GS_(unnormalize2)(T g, int64_t size, int align) {
    T scale = GS_(scale)(size, align);
    return align ? (g + 1) * scale : (g + 1) * scale - (T)0.5;
}

/* clamp to [0, size - 1]; NaN -> 0 */
static inline T GS_(clip2)(T x, int64_t size) {
    T low = x > 0 ? x : 0;
    T high = (T)(size - 1);
    return low < high ? low : high;
}

/* mirrored into [low, low + span] by the truncated number of double flips; *grad: the sign */
static inline T GS_(reflect2)(T x, int64_t size, int align, T *grad) {
    if (align && size <= 1) {
        *grad = 0;
        return 0;
    }
    T low = align ? 0 : (T)-0.5;
    T twice_span = align ? (T)(size - 1) * 2 : (T)size * 2;
    T shifted = align ? x : x - low;
    T a = fabs(shifted);
    T extra = a - trunc(a / twice_span) * twice_span;
    T reflected = twice_span - extra;
    int flip = extra > reflected; /* NaN: no flip, NaN kept */
    *grad = (flip ^ (shifted < 0)) ? -1 : 1;
    T r = flip ? reflected : extra;
    return align ? r : r + low;
}

/* the forward's location after padding (ATen's compute_coordinates) */
static inline T GS_(pad2)(T x, int64_t size, int padding, int align) {
    T unused;
    if (padding == GS_REFLECTION) x = GS_(reflect2)(x, size, align, &unused);
    return padding == GS_ZEROS ? x : GS_(clip2)(x, size);
}

/* the backward's location and d location / d grid (ATen's apply_get_grad): the clip's edges
 * count as outside for the gradient; NaN passes the clip with the gradient kept */
static inline T GS_(locate2_grad)(T g, int64_t size, int padding, int align, T *mult) {
    T x = GS_(unnormalize2)(g, size, align);
    T grad = GS_(scale)(size, align);
    if (padding == GS_REFLECTION) {
        T sign;
        x = GS_(reflect2)(x, size, align, &sign);
        grad = sign * grad;
    }
    if (padding != GS_ZEROS) {
        T high = (T)(size - 1);
        int nan = x != x;
        if (!((x > 0 && x < high) || nan)) grad = 0;
        if (!nan) x = x > 0 ? (x < high ? x : high) : 0;
    }
    *mult = grad;
    return x;
}

/* ---- 3-D coordinates (ATen's GridSampler.h, scalar) ---------------------------------------- */
static inline T GS_(clip3)(T x, int64_t size, T *grad) {
    T high = (T)(size - 1);
    if (grad) { /* clip_coordinates_set_grad: NaN passes with gradient 1 */
        *grad = (x <= 0 || x >= high) ? 0 : 1;
        return x <= 0 ? 0 : (x >= high ? high : x);
    }
    T low = x < 0 ? 0 : x;          /* std::max(x, 0): NaN kept */
    return low < high ? low : high; /* std::min(size - 1, .): NaN -> size - 1 */
}

static inline T GS_(reflect3)(T x, int64_t twice_low, int64_t twice_high, T *grad) {
    if (twice_low == twice_high) {
        if (grad) *grad = 0;
        return 0;
    }
    T low = (T)twice_low / 2;
    T span = (T)(twice_high - twice_low) / 2;
    T shifted = x - low;
    T sign = shifted < 0 ? -1 : 1;
    shifted = fabs(shifted);
    T extra = fmod(shifted, span);
    T flips = floor(shifted / span);
    /* (int)flips, whose overflow (NaN too) is INT_MIN on x86: even */
    int even = !(flips < (T)2147483648.0) || ((int64_t)flips % 2 == 0);
    if (grad) *grad = even ? sign : -sign;
    return even ? extra + low : span - extra + low;
}

/* grid_sampler_compute_source_index(_set_grad): *grad NULL for the forward's */
static inline T GS_(locate3)(T g, int64_t size, int padding, int align, T *grad) {
    T x = align ? ((g + 1) / 2) * (size - 1) : ((g + 1) * size - 1) / 2;
    T scale = GS_(scale)(size, align), refl = 1, clip = 1;
    if (padding == GS_REFLECTION)
        x = align ? GS_(reflect3)(x, 0, 2 * (size - 1), grad ? &refl : NULL)
                  : GS_(reflect3)(x, -1, 2 * size - 1, grad ? &refl : NULL);
    if (padding != GS_ZEROS) x = GS_(clip3)(x, size, grad ? &clip : NULL);
    if (grad) *grad = padding == GS_ZEROS ? scale : (padding == GS_BORDER ? scale * clip : scale * refl * clip);
    return x;
}

/* ---- bicubic (A = -0.75, ATen's get_cubic_coefficients and their derivatives) ------------- */
static inline void GS_(cubic)(T c[4], T t) {
    const T A = (T)-0.75;
    T x = t + 1;
    c[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
    x = 1 - t;
    c[2] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 2 - t;
    c[3] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}

static inline void GS_(cubic_grad)(T c[4], T t) {
    const T A = (T)-0.75;
    T x = -1 - t;
    c[0] = (-3 * A * x - 10 * A) * x - 8 * A;
    x = 0 - t;
    c[1] = (-3 * (A + 2) * x - 2 * (A + 3)) * x;
    x = 1 - t;
    c[2] = (3 * (A + 2) * x - 2 * (A + 3)) * x;
    x = 2 - t;
    c[3] = (3 * A * x - 10 * A) * x + 8 * A;
}

/* tap (x, y) of a bicubic window: its offset in the (H, W) plane by (sh, sw), or -1 outside */
static inline int64_t GS_(tap)(const gs_geom *g, T x, T y, int64_t sh, int64_t sw) {
    int64_t ix = GS_(index)(GS_(pad2)(x, g->iw, g->padding, g->align));
    int64_t iy = GS_(index)(GS_(pad2)(y, g->ih, g->padding, g->align));
    return (ix >= 0 && ix < g->iw && iy >= 0 && iy < g->ih) ? iy * sh + ix * sw : -1;
}

/* ---- 2-D, one output point: every channel -------------------------------------------------- */
/* in: the sample's input; out: its output at this point (channels g->os[1] apart); gin: the
 * sample's grad_input (contiguous) or NULL; ggrid: this point's two grid gradients */
static void GS_(bilinear2)(const gs_geom *g, const T *in, const T *gout, T *out, T *gin,
                           T *ggrid, T gx, T gy) {
    int64_t H = g->ih, W = g->iw, C = g->c;
    T mx = 0, my = 0, x, y;
    if (ggrid) {
        x = GS_(locate2_grad)(gx, W, g->padding, g->align, &mx);
        y = GS_(locate2_grad)(gy, H, g->padding, g->align, &my);
    } else {
        x = GS_(pad2)(GS_(unnormalize2)(gx, W, g->align), W, g->padding, g->align);
        y = GS_(pad2)(GS_(unnormalize2)(gy, H, g->align), H, g->padding, g->align);
    }
    T xw = floor(x), yn = floor(y);
    T w = x - xw, e = 1 - w, n = y - yn, s = 1 - n;
    T nw = s * e, ne = s * w, sw = n * e, se = n * w;
    int64_t ix = GS_(index)(xw), iy = GS_(index)(yn);
    int west = ix >= 0 && ix < W, east = ix + 1 >= 0 && ix + 1 < W;
    int north = iy >= 0 && iy < H, south = iy + 1 >= 0 && iy + 1 < H;
    int64_t sh = g->is[3], sx = g->is[4];
    int64_t at = iy * sh + ix * sx, gat = iy * W + ix;
    T dx = 0, dy = 0;
    for (int64_t c = 0; c < C; c++) {
        const T *p = in + c * g->is[1];
        T vnw = north && west ? p[at] : 0;
        T vne = north && east ? p[at + sx] : 0;
        T vsw = south && west ? p[at + sh] : 0;
        T vse = south && east ? p[at + sh + sx] : 0;
        if (!ggrid) {
            out[c * g->os[1]] = vnw * nw + vne * ne + vsw * sw + vse * se;
            continue;
        }
        T go = gout[c * g->os[1]];
        if (gin) {
            T *q = gin + c * H * W;
            if (north && west) q[gat] += nw * go;
            if (north && east) q[gat + 1] += ne * go;
            if (south && west) q[gat + W] += sw * go;
            if (south && east) q[gat + W + 1] += se * go;
        }
        dx = dx + ((vne - vnw) * s + (vse - vsw) * n) * go;
        dy = dy + ((vsw - vnw) * e + (vse - vne) * w) * go;
    }
    if (ggrid) {
        ggrid[0] = dx * mx;
        ggrid[1] = dy * my;
    }
}

static void GS_(nearest2)(const gs_geom *g, const T *in, const T *gout, T *out, T *gin,
                          T *ggrid, T gx, T gy) {
    int64_t H = g->ih, W = g->iw, C = g->c;
    T x = GS_(pad2)(GS_(unnormalize2)(gx, W, g->align), W, g->padding, g->align);
    T y = GS_(pad2)(GS_(unnormalize2)(gy, H, g->align), H, g->padding, g->align);
    int64_t ix = GS_(index)(nearbyint(x)), iy = GS_(index)(nearbyint(y));
    int inside = ix >= 0 && ix < W && iy >= 0 && iy < H;
    for (int64_t c = 0; c < C; c++) {
        if (!ggrid)
            out[c * g->os[1]] = inside ? in[c * g->is[1] + iy * g->is[3] + ix * g->is[4]] : 0;
        else if (gin && inside)
            gin[c * H * W + iy * W + ix] += gout[c * g->os[1]];
    }
    if (ggrid) ggrid[0] = ggrid[1] = 0; /* the grid's gradient is zero under nearest */
}

static void GS_(bicubic2)(const gs_geom *g, const T *in, const T *gout, T *out, T *gin,
                          T *ggrid, T gx, T gy) {
    int64_t H = g->ih, W = g->iw, C = g->c;
    T x = GS_(unnormalize2)(gx, W, g->align), y = GS_(unnormalize2)(gy, H, g->align);
    T ix = floor(x), iy = floor(y);
    T cx[4], cy[4], dcx[4], dcy[4];
    GS_(cubic)(cx, x - ix);
    GS_(cubic)(cy, y - iy);
    int64_t at[4][4], gat[4][4]; /* [row j][column i] */
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++) {
            at[j][i] = GS_(tap)(g, ix + (T)(i - 1), iy + (T)(j - 1), g->is[3], g->is[4]);
            gat[j][i] = GS_(tap)(g, ix + (T)(i - 1), iy + (T)(j - 1), W, 1);
        }
    if (!ggrid) {
        for (int64_t c = 0; c < C; c++) {
            const T *p = in + c * g->is[1];
            T row[4];
            for (int j = 0; j < 4; j++) {
                T v[4];
                for (int i = 0; i < 4; i++) v[i] = at[j][i] >= 0 ? p[at[j][i]] : 0;
                row[j] = cx[0] * v[0] + cx[1] * v[1] + cx[2] * v[2] + cx[3] * v[3];
            }
            out[c * g->os[1]] = cy[0] * row[0] + cy[1] * row[1] + cy[2] * row[2] + cy[3] * row[3];
        }
        return;
    }
    GS_(cubic_grad)(dcx, x - ix);
    GS_(cubic_grad)(dcy, y - iy);
    T dx = 0, dy = 0;
    for (int64_t c = 0; c < C; c++) {
        const T *p = in + c * g->is[1];
        T go = gout[c * g->os[1]];
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                if (gin && gat[j][i] >= 0) gin[c * H * W + gat[j][i]] += go * cx[i] * cy[j];
                T v = at[j][i] >= 0 ? p[at[j][i]] : 0;
                dx = dx - v * go * dcx[i] * cy[j];
                dy = dy - v * go * dcy[j] * cx[i];
            }
    }
    ggrid[0] = dx * GS_(scale)(W, g->align);
    ggrid[1] = dy * GS_(scale)(H, g->align);
}

/* ---- 3-D, one output point ----------------------------------------------------------------- */
static void GS_(trilinear3)(const gs_geom *g, const T *in, const T *gout, T *out, T *gin,
                            T *ggrid, const T *coord) {
    int64_t D = g->id, H = g->ih, W = g->iw, C = g->c;
    T m[3] = {0, 0, 0};
    T *grad = ggrid ? m : NULL;
    T x = GS_(locate3)(coord[0], W, g->padding, g->align, grad ? &m[0] : NULL);
    T y = GS_(locate3)(coord[1], H, g->padding, g->align, grad ? &m[1] : NULL);
    T z = GS_(locate3)(coord[2], D, g->padding, g->align, grad ? &m[2] : NULL);
    T x0 = floor(x), y0 = floor(y), z0 = floor(z);
    int64_t ix = GS_(index)(x0), iy = GS_(index)(y0), iz = GS_(index)(z0);
    /* the distances to the far (index 0) and near (index 1) corner along each dim */
    T wx[2] = {(x0 + 1) - x, x - x0}, wy[2] = {(y0 + 1) - y, y - y0};
    T wz[2] = {(z0 + 1) - z, z - z0};
    int64_t at[8], gat[8];
    T weight[8];
    for (int k = 0; k < 8; k++) { /* tnw, tne, tsw, tse, bnw, bne, bsw, bse */
        int bx = k & 1, by = (k >> 1) & 1, bz = k >> 2;
        int64_t cx = ix + bx, cy = iy + by, cz = iz + bz;
        int inside = cx >= 0 && cx < W && cy >= 0 && cy < H && cz >= 0 && cz < D;
        at[k] = inside ? cz * g->is[2] + cy * g->is[3] + cx * g->is[4] : -1;
        gat[k] = inside ? (cz * H + cy) * W + cx : -1;
        weight[k] = wx[bx] * wy[by] * wz[bz];
    }
    T dx = 0, dy = 0, dz = 0;
    for (int64_t c = 0; c < C; c++) {
        const T *p = in + c * g->is[1];
        if (!ggrid) {
            T acc = 0;
            for (int k = 0; k < 8; k++)
                if (at[k] >= 0) acc += p[at[k]] * weight[k];
            out[c * g->os[1]] = acc;
            continue;
        }
        T go = gout[c * g->os[1]];
        if (gin)
            for (int k = 0; k < 8; k++)
                if (gat[k] >= 0) gin[c * D * H * W + gat[k]] += weight[k] * go;
        for (int k = 0; k < 8; k++) {
            if (at[k] < 0) continue;
            int bx = k & 1, by = (k >> 1) & 1, bz = k >> 2;
            T v = p[at[k]];
            T tx = v * wy[by] * wz[bz] * go, ty = v * wx[bx] * wz[bz] * go;
            T tz = v * wx[bx] * wy[by] * go;
            dx = bx ? dx + tx : dx - tx;
            dy = by ? dy + ty : dy - ty;
            dz = bz ? dz + tz : dz - tz;
        }
    }
    if (ggrid) {
        ggrid[0] = m[0] * dx;
        ggrid[1] = m[1] * dy;
        ggrid[2] = m[2] * dz;
    }
}

static void GS_(nearest3)(const gs_geom *g, const T *in, const T *gout, T *out, T *gin,
                          T *ggrid, const T *coord) {
    int64_t D = g->id, H = g->ih, W = g->iw, C = g->c;
    T unused;
    T *grad = ggrid ? &unused : NULL; /* the backward locates as ATen's, with _set_grad */
    int64_t ix = GS_(index)(nearbyint(GS_(locate3)(coord[0], W, g->padding, g->align, grad)));
    int64_t iy = GS_(index)(nearbyint(GS_(locate3)(coord[1], H, g->padding, g->align, grad)));
    int64_t iz = GS_(index)(nearbyint(GS_(locate3)(coord[2], D, g->padding, g->align, grad)));
    int inside = ix >= 0 && ix < W && iy >= 0 && iy < H && iz >= 0 && iz < D;
    int64_t at = iz * g->is[2] + iy * g->is[3] + ix * g->is[4];
    for (int64_t c = 0; c < C; c++) {
        if (!ggrid)
            out[c * g->os[1]] = inside ? in[c * g->is[1] + at] : 0;
        else if (gin && inside)
            gin[c * D * H * W + (iz * H + iy) * W + ix] += gout[c * g->os[1]];
    }
    if (ggrid) ggrid[0] = ggrid[1] = ggrid[2] = 0;
}

/* ---- the loops over output points ---------------------------------------------------------- */
/* one output row (n, d, h): every w; forward when ggrid is NULL */
static void GS_(row)(const gs_geom *g, int64_t n, int64_t d, int64_t h, const T *input,
                     const T *grid, const T *gout, T *out, T *gin, T *ggrid) {
    const T *in = input + n * g->is[0];
    int dims = g->dims;
    for (int64_t w = 0; w < g->ow; w++) {
        const T *p = grid + n * g->gs[0] + d * g->gs[1] + h * g->gs[2] + w * g->gs[3];
        T coord[3] = {p[0], p[g->gs[4]], dims == 3 ? p[2 * g->gs[4]] : 0};
        int64_t point = (d * g->oh + h) * g->ow + w;
        T *o = out ? out + n * g->os[0] + point : NULL;
        const T *go = gout ? gout + n * g->os[0] + d * g->os[2] + h * g->os[3] + w * g->os[4] : NULL;
        T *gg = ggrid ? ggrid + (n * g->od * g->oh * g->ow + point) * dims : NULL;
        T *gi = gin ? gin + n * g->c * g->id * g->ih * g->iw : NULL;
        if (dims == 3) {
            if (g->mode == GS_BILINEAR) GS_(trilinear3)(g, in, go, o, gi, gg, coord);
            else GS_(nearest3)(g, in, go, o, gi, gg, coord);
        } else if (g->mode == GS_BILINEAR) {
            GS_(bilinear2)(g, in, go, o, gi, gg, coord[0], coord[1]);
        } else if (g->mode == GS_NEAREST) {
            GS_(nearest2)(g, in, go, o, gi, gg, coord[0], coord[1]);
        } else {
            GS_(bicubic2)(g, in, go, o, gi, gg, coord[0], coord[1]);
        }
    }
}

static void GS_(forward)(const gs_geom *g, T *out, const T *input, const T *grid) {
    int64_t rows = g->n * g->od * g->oh;
    int64_t work = rows * g->ow * g->c;
    _Pragma("omp parallel for schedule(static) if (work > EM_PARALLEL_THRESHOLD)")
    for (int64_t r = 0; r < rows; r++)
        GS_(row)(g, r / (g->od * g->oh), (r / g->oh) % g->od, r % g->oh, input, grid, NULL, out,
                 NULL, NULL);
}

/* With grad_input, a sample's points scatter into its own slice: the samples are shared out;
 * without, every output row is independent. */
static void GS_(backward)(const gs_geom *g, T *gin, T *ggrid, const T *gout, const T *input,
                          const T *grid) {
    int64_t plane = g->od * g->oh;
    int64_t work = g->n * plane * g->ow * g->c;
    if (gin) {
        memset(gin, 0, (size_t)(g->n * g->c * g->id * g->ih * g->iw) * sizeof(T));
        _Pragma("omp parallel for schedule(static) if (work > EM_PARALLEL_THRESHOLD)")
        for (int64_t n = 0; n < g->n; n++)
            for (int64_t r = 0; r < plane; r++)
                GS_(row)(g, n, r / g->oh, r % g->oh, input, grid, gout, NULL, gin, ggrid);
        return;
    }
    int64_t rows = g->n * plane;
    _Pragma("omp parallel for schedule(static) if (work > EM_PARALLEL_THRESHOLD)")
    for (int64_t r = 0; r < rows; r++)
        GS_(row)(g, r / plane, (r / g->oh) % g->od, r % g->oh, input, grid, gout, NULL, NULL,
                 ggrid);
}

#undef T
