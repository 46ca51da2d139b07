/* Sorting kernels: stable sort along a dim (values and indices), and searchsorted.
 * kernels/sort.py compiles one program per dtype (T).
 *
 * Sort maps every element to an unsigned 64-bit key whose order is the order wanted, as the CPU
 * plugin's radix sort does (integers: flip the sign bit; floats: flip every bit of negatives, NaN
 * to the largest key, both zeros equal; descending: complement), pads each line to a power of two
 * P with keys that sort last, and runs a bitonic network over (key, position) pairs. Comparing
 * positions on equal keys makes the network stable. The values are then gathered by position, so
 * NaN payloads and the sign of zero survive.
 */
inline ulong em_float_key(ulong u, int bits, ulong inf) {
    const ulong sign = 1UL << (bits - 1);
    const ulong mag = u & (sign - 1);
    const ulong all = bits == 64 ? ~0UL : (1UL << bits) - 1;
    if (mag > inf) return all;
    if (mag == 0) return sign;
    return (u & sign) ? (~u & all) : (u | sign);
}

#define KEY_b(v) ((ulong)(v))
#define KEY_u8(v) ((ulong)(v))
#define KEY_i8(v) ((ulong)((uchar)(v) ^ 0x80u))
#define KEY_i16(v) ((ulong)((ushort)(v) ^ 0x8000u))
#define KEY_i32(v) ((ulong)((uint)(v) ^ 0x80000000u))
#define KEY_i64(v) ((ulong)(v) ^ 0x8000000000000000UL)
#define KEY_f16(v) em_float_key((ulong)(v), 16, 0x7c00UL)
#define KEY_bf16(v) em_float_key((ulong)(v), 16, 0x7f80UL)
#define KEY_f32(v) em_float_key((ulong)as_uint(v), 32, 0x7f800000UL)
#define KEY_f64(v) em_float_key(as_ulong(v), 64, 0x7ff0000000000000UL)
#define KEY(v) EM_CAT(KEY_, T)(v)

#define LINE_ARGS long8 lshape_, int nl
#define LINE_OFFSET(line, strides) em_offset((line), nl, lshape, strides)

/* keys/pos [lines, P]: line l's element j (its position along the dim), or padding. */
kernel void sort_keys(global ulong *keys, global long *pos, global const ST(T) *x, long xo,
                      long8 xl_, long xd, LINE_ARGS, long n, long P, long lines,
                      int descending) {
    EM_UNPACK(lshape, lshape_);
    EM_UNPACK(xl, xl_);
    const ulong flip = descending ? ~0UL : 0UL;
    for (long g = get_global_id(0); g < lines * P; g += get_global_size(0)) {
        const long line = g / P, j = g - line * P;
        if (j < n) {
            keys[g] = KEY(x[xo + LINE_OFFSET(line, xl) + j * xd]) ^ flip;
        } else {
            keys[g] = ~0UL;
        }
        pos[g] = j;
    }
}

/* One step (k, j) of the bitonic network, over every line at once. */
kernel void bitonic_step(global ulong *keys, global long *pos, long P, long k, long j,
                         long pairs) {
    const long half_p = P / 2;
    for (long t = get_global_id(0); t < pairs; t += get_global_size(0)) {
        const long line = t / half_p, r = t - line * half_p;
        const long i = (r / j) * 2 * j + (r % j), other = i + j;
        const long a = line * P + i, b = line * P + other;
        const ulong ka = keys[a], kb = keys[b];
        const long pa = pos[a], pb = pos[b];
        const int greater = ka > kb || (ka == kb && pa > pb);
        if (greater == ((i & k) == 0)) {
            keys[a] = kb;
            keys[b] = ka;
            pos[a] = pb;
            pos[b] = pa;
        }
    }
}

/* values/indices along each line, from the sorted positions. */
kernel void sort_gather(global ST(T) *ov, long vo, long8 vl_, long vd, global long *oi, long io,
                        long8 il_, long id, global const ST(T) *x, long xo, long8 xl_, long xd,
                        LINE_ARGS, global const long *pos, long n, long P, long lines) {
    EM_UNPACK(lshape, lshape_);
    EM_UNPACK(vl, vl_);
    EM_UNPACK(il, il_);
    EM_UNPACK(xl, xl_);
    for (long g = get_global_id(0); g < lines * n; g += get_global_size(0)) {
        const long line = g / n, j = g - line * n;
        const long p = pos[line * P + j];
        ov[vo + LINE_OFFSET(line, vl) + j * vd] = x[xo + LINE_OFFSET(line, xl) + p * xd];
        oi[io + LINE_OFFSET(line, il) + j * id] = p;
    }
}

/* out[i] = the insertion point of values[i] in its sequence row (PyTorch's comparisons: a NaN
 * value lands at the end of the row). Row of value i: so + unravel(i) . srow (0: one shared). */
#define SEARCH(NAME, OT)                                                                          \
    kernel void NAME(global OT *o, long oo, global const ST(T) *v, long vo, long8 vs_,           \
                     global const ST(T) *seq, long so, long8 srow_, long len, long step,          \
                     long8 shape_, int nd, long n, int right) {                                   \
        EM_UNPACK(shape, shape_);                                                                 \
        EM_UNPACK(vs, vs_);                                                                       \
        EM_UNPACK(srow, srow_);                                                                   \
        for (long i = get_global_id(0); i < n; i += get_global_size(0)) {                         \
            long at[8];                                                                           \
            em_unravel(i, nd, shape, at);                                                         \
            const CT(T) value = LD(T, v, vo + em_dot(nd, at, vs));                                \
            const long row = so + em_dot(nd, at, srow);                                           \
            long lo = 0, hi = len;                                                                \
            while (lo < hi) {                                                                     \
                long mid = lo + ((hi - lo) >> 1);                                                 \
                CT(T) m = LD(T, seq, row + mid * step);                                           \
                if (right ? !(m > value) : !(m >= value))                                         \
                    lo = mid + 1;                                                                 \
                else                                                                              \
                    hi = mid;                                                                     \
            }                                                                                     \
            o[oo + i] = (OT)lo;                                                                   \
        }                                                                                         \
    }
SEARCH(searchsorted64, long)
SEARCH(searchsorted32, int)
