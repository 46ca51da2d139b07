/* Philox4x32-10 random fills: uniform_, normal_ and random_, exactly as ember's docs/random.md
 * says (the CPU plugin's random.c is the reference: uniform and integer streams agree bit for
 * bit, normal ones to the accuracy of log/sqrt/sin/cos). kernels/random.py compiles one program
 * per (fill, dtype): T, FILL (UNIFORM, NORMAL or RANDOM) and PER (elements per block: 4, or 2
 * for float64 outputs and 64-bit integer draws).
 *
 * Work-item t makes block offset + t and writes elements PER * t ... PER * t + PER - 1 of out in
 * row-major logical order, at offsets given by out's (merged) shape and strides (nd == 0: out is
 * contiguous); so element i depends only on (seed, offset, i), never on the launch.
 */
#define UNIFORM 1
#define NORMAL 2
#define RANDOM 3

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

inline uint4 philox10(ulong block, uint k0, uint k1) {
    uint x0 = (uint)block, x1 = (uint)(block >> 32), x2 = 0, x3 = 0;
    for (int round = 0; round < 10; round++) {
        ulong p0 = (ulong)PHILOX_M0 * x0;
        ulong p1 = (ulong)PHILOX_M1 * x2;
        uint y0 = (uint)(p1 >> 32) ^ x1 ^ k0;
        uint y2 = (uint)(p0 >> 32) ^ x3 ^ k1;
        x0 = y0;
        x1 = (uint)p1;
        x2 = y2;
        x3 = (uint)p0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    return (uint4)(x0, x1, x2, x3);
}

/* A draw: word l of the block, or the 64-bit pair l (x_{2l}, x_{2l+1}). */
#if PER == 4
#define DRAW(w, l) ((l) == 0 ? (w).x : (l) == 1 ? (w).y : (l) == 2 ? (w).z : (w).w)
typedef uint draw_t;
#else
#define DRAW(w, l) ((l) == 0 ? ((ulong)(w).x | ((ulong)(w).y << 32)) \
                             : ((ulong)(w).z | ((ulong)(w).w << 32)))
typedef ulong draw_t;
#endif

#if FILL == RANDOM
/* low and range (0 means 2^64) */
#define FILL_ARGS long low, ulong range
#else
#if PER == 4
#define VT float
#define SHIFT 8
#define ULP 0x1p-24f
#define TWO_PI 6.2831855f
#else
#define VT double
#define SHIFT 11
#define ULP 0x1p-53
#define TWO_PI 6.283185307179586
#endif
/* (low, high - low, bound) for uniform_, (mean, std, unused) for normal_, in VT */
#define FILL_ARGS VT a, VT b, VT h

inline void em_values(uint4 w, FILL_ARGS, VT *y) {
#if FILL == UNIFORM
    for (int l = 0; l < PER; l++) {
        VT u = (VT)(DRAW(w, l) >> SHIFT) * ULP;
        VT v = a + u * b;
        y[l] = v > h ? h : v;
    }
#elif FILL == NORMAL
    for (int l = 0; l < PER; l += 2) {
        VT u1 = ((VT)(DRAW(w, l) >> SHIFT) + 1) * ULP;
        VT u2 = (VT)(DRAW(w, l + 1) >> SHIFT) * ULP;
        VT rad = sqrt(-2 * log(u1));
        VT t = TWO_PI * u2;
        y[l] = a + b * (rad * cos(t));
        y[l + 1] = a + b * (rad * sin(t));
    }
#endif
}
#endif

inline void em_integers(uint4 w, long low, ulong range, long *y) {
    for (int l = 0; l < PER; l++) {
        draw_t d = DRAW(w, l);
        ulong off = range ? (ulong)d % range : (ulong)d;
        y[l] = (long)((ulong)low + off);
    }
}

kernel void fill(global ST(T) *o, long oo, long8 so_, long8 shape_, int nd, long n, uint k0,
                 uint k1, ulong offset, FILL_ARGS) {
    EM_UNPACK(shape, shape_);
    EM_UNPACK(so, so_);
    const long blocks = (n + PER - 1) / PER;
    for (long t = get_global_id(0); t < blocks; t += get_global_size(0)) {
        uint4 w = philox10(offset + (ulong)t, k0, k1);
#if FILL == RANDOM
        long y[PER];
        em_integers(w, low, range, y);
#else
        VT y[PER];
        em_values(w, a, b, h, y);
#endif
        for (int l = 0; l < PER; l++) {
            long i = t * PER + l;
            if (i < n) SV(T, o, oo + (nd ? em_offset(i, nd, shape, so) : i), y[l]);
        }
    }
}
